"""Bisect an ordered list of versions for the first bad one, with a flaky oracle.

Pure: no processes, no engine. The caller gives the versions (oldest first:
the known-good end first, the known-bad end last) and an oracle that runs one
version up to N attempts and stops at the first failure matching the spec's
`expect`. This module decides which version to try next, how many attempts,
and when the answer is known well enough.

The rule, the same as `isolate`'s:
  - a version is **bad** at its first matching failure: a good version never
    shows the matching failure (a different failure is not the bug and counts
    as a clean attempt);
  - a version is **good** only after enough clean attempts for the rate, and the
    rate is learned from the attempts (`LearnedRate`). Three readings of the failure
    compete in the posterior: deterministic (a bad version always fails: one clean
    attempt rules a version out, as `git bisect` assumes), flaky at a high rate
    (0.9) and flaky at p. While every attempt of the versions known bad has failed,
    each failure multiplies the deterministic reading's odds by 1/p, so a bug that
    never flaked costs about a binary search and a retest; the first clean attempt
    of a version a hypothesis calls bad (a failure that looked deterministic, then
    flaked) removes that reading from it, and the flaky readings weigh every
    attempt again, earlier ones included. p is `min_rate`, the assumption that a
    bad version fails in at least that fraction of attempts (the spec's
    `expect.rate: ">=0.3"`, else 0.3), raised only when the versions known bad have
    flaked and show clearly more (the 99% Wilson lower bound of their measured
    rate). These readings alone were not true to the stated error at every rate
    above min_rate: one several times higher has no reading of its own, a few
    failures in a row weigh the deterministic one, and a clean attempt or two then
    ruled the first bad version out (min_rate 0.1 at a true 0.4: 92.8% right over 64
    versions), so an answer must also hold under a second model with readings at
    every rate above p (`SpreadRate`; performance.md, "A rate far above the assumed
    one"). Neither was true to it at p itself where p is high (`--min-rate 0.5` at a true
    0.5: 98.5-99.6% right by seed over 64 versions): a few failures in a row are likely
    there, and a wrong answer whose versions all failed kept its deterministic and high
    readings, which the truth, seen clean, had lost. So the answer must also hold under
    a third model with most of its weight at p (`AssumedRate`). The clean
    attempts at every version at or above a candidate count against it, so evidence is
    shared instead of re-gathered per step;
  - **infra errors** (a version with no wheel for this Python) are skipped and
    reported, never judged. The first one has the good end run next (below).

The search is Bayesian bisection (as BBChop, "a Bayesian git bisect"):
hypothesis j = "the j-th testable version is the first bad one", uniform
prior; the posterior of j is prior x [no matching failure below j] x the
likelihood of the attempts at versions >= j under the two readings of the rate.
Each step tests the version whose next attempt is expected to lower the
posterior's entropy most, for as many attempts as that choice would stay the
same while they come back clean (one oracle call, same decisions). It stops
when one hypothesis holds at least 1 - `error` of the posterior and of
`SpreadRate`'s posterior of the same attempts (the stated error probability: 0.5%
by default), and 1 - 4/5 of `error` of `AssumedRate`'s (the bad end's check spent the
other fifth at the assumed rate); the lowest of the three is the answer's confidence.
Or when the attempt budget is spent (then
the answer is "undecided", with the best guess and its
probability). `benchmarks/bisect_simulation.py` measures it.

The bad end is checked first: it must show the matching failure (refused, with
what was seen, when it does not within `end_attempts`). The good end is not:
hypothesis 0 ("the good end is already bad") stays in the posterior, and every
clean attempt of any version counts against it, so the search runs the good end
when that attempt teaches most (the answer near it), like any other version,
and refuses when hypothesis 0 is the answer (a matching failure at the good end
rules out every other). Once some version could not be installed, the good end runs
next (one attempt), so a range whose old end cannot be installed at all is refused
at once instead of skipped a candidate at a time. It used to run the good end once
before the search,
and earlier as often as the bad end needed: one attempt of every search that the
posterior seldom needed (12.0 attempts to 11.1 at p = 1 over 64 versions, 1,000
trials).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from reprospec.core import rates
from reprospec.core.caller import argument
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue, as_texts
from reprospec.core.rates import log_sum, wilson
from reprospec.core.words import missed_chance, plural

Status = Literal["found", "refused", "undecided"]
State = Literal["bad", "good", "unsure", "untested", "skipped"]

DEFAULT_ERROR = 0.005
DEFAULT_BUDGET = 150
DEFAULT_MIN_RATE = 0.3
# z of the lower bound of the measured rate that may raise the assumed one (99%).
RATE_Z = 2.576
MAX_BATCH = 30
# The prior weights of the readings of the rate (LearnedRate): "the failure is
# deterministic", "flaky at a high rate" (HIGH_RATE); the rest is "flaky at the assumed
# minimum rate".
DETERMINISTIC_PRIOR = 0.5
HIGH_RATE = 0.9
HIGH_PRIOR = 0.1
# The stop's second model (SpreadRate): little deterministic weight, the assumed rate,
# HIGH_RATE, and the rest spread evenly over SPREAD_POINTS rates above the assumed one, the
# last of them HIGH_RATE itself (an assumed rate at or above HIGH_RATE: that rate alone).
SPREAD_DETERMINISTIC_PRIOR = 0.1
SPREAD_LOW_PRIOR = 0.4
SPREAD_POINTS = 20
# The stop's third model (AssumedRate): LearnedRate's readings with the deterministic one at
# this weight (HIGH_RATE at HIGH_PRIOR, the rest at the assumed rate), and the share of the
# stated error an answer may spend under it (the bad end's check, at
# `attempts_to_see(min_rate, error / 5)`, spent the rest at that rate).
ASSUMED_DETERMINISTIC_PRIOR = 0.1
ASSUMED_SHARE = 0.8


@frozen
class Trial:
    """What the oracle saw at one version in one call (or several, merged)."""

    version: str
    attempts: int = 0  # attempts that ran (infra-error attempts not counted)
    matched: int = 0  # of those, how many failed as `expect` says
    infra_error: str | None = None  # why the version could not be tested at all
    signatures: tuple[str, ...] = ()  # outcome signatures seen, one per attempt
    runs: tuple[str, ...] = ()  # where the attempts are stored (run ids)
    # A version that could not be installed: the file in its run's folder that keeps the
    # installer's whole output (the console and the table say one line of it).
    build_log: str | None = None

    def merged(self, other: Trial) -> Trial:
        """This trial and a later one at the same version, as one."""
        untested = other.attempts == 0 and self.attempts == 0
        return Trial(
            self.version,
            self.attempts + other.attempts,
            self.matched + other.matched,
            other.infra_error if untested else None,
            self.signatures + other.signatures,
            self.runs + other.runs,
            other.build_log if untested else None,
        )

    def to_dict(self) -> JsonObject:
        return {
            "version": self.version,
            "attempts": self.attempts,
            "matched": self.matched,
            "infra_error": self.infra_error,
            "signatures": list(self.signatures),
            "runs": list(self.runs),
            "build_log": self.build_log,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> Trial:
        """What `to_dict` wrote; KeyError or TypeError when it is not that."""
        infra_error = data.get("infra_error")
        build_log = data.get("build_log")  # absent from a state saved before it was kept
        return cls(
            version=str(data["version"]),
            attempts=count(data.get("attempts", 0)),
            matched=count(data.get("matched", 0)),
            infra_error=None if infra_error is None else str(infra_error),
            signatures=as_texts(data.get("signatures")),
            runs=as_texts(data.get("runs")),
            build_log=None if build_log is None else str(build_log),
        )


def rate_used(min_rate: float, failed: int, attempts: int) -> float:
    """The low flaky rate clean attempts are weighed with, given the versions known bad
    failed `failed` times in `attempts`: the assumed minimum, or the 99% lower bound of
    their rate where that is more and they flaked at least once.

    The bound is rounded down (one model per rate is built and kept): to a thousandth, or
    to two figures below 0.01, so that a rate under a thousandth is not lost. Rounded to
    nearest, 10 failures in 8,000 attempts (a bound of 0.000565) was a rate of 0.001, and
    clean attempts counted for more than they show. The assumed rate is never rounded:
    `--min-rate 0.0004` was a rate of 0, and the search an internal error after the bad
    end had run.
    """
    bound = wilson_lower(failed, attempts, RATE_Z) if attempts > failed else 0.0
    if bound > 0:
        step = min(0.001, 10.0 ** (math.floor(math.log10(bound)) - 1))
        bound = round(math.floor(bound / step) * step, 12)  # 12: no 0.00066000000000001
    return min(0.99, max(min_rate, bound))


def count(value: JsonValue) -> int:
    """A stored count (a JSON integer, not a boolean); TypeError for anything else: what
    state.json's readers take as a number of attempts."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a count, got {value!r}")
    return value


# (version, max_attempts) -> what ran; stops at the first matching failure.
Oracle = Callable[[str, int], Trial]


@frozen
class VersionEvidence:
    """One version in the result: what was seen and what it was judged."""

    version: str
    state: State
    attempts: int
    matched: int
    # The lowest of LearnedRate's, SpreadRate's and AssumedRate's posterior probabilities
    # that the regression comes after this version.
    p_good: float
    infra_error: str | None = None
    signatures: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    build_log: str | None = None  # Trial.build_log

    @property
    def rate(self) -> float:
        return self.matched / self.attempts if self.attempts else 0.0

    def signature_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for signature in self.signatures:
            counts[signature] = counts.get(signature, 0) + 1
        return counts

    def to_dict(self) -> JsonObject:
        return {
            "version": self.version,
            "state": self.state,
            "attempts": self.attempts,
            "matched": self.matched,
            "rate": round(self.rate, 4),
            "p_good": round(self.p_good, 6),
            "infra_error": self.infra_error,
            "signatures": dict(self.signature_counts()),
            "runs": list(self.runs),
            "build_log": self.build_log,
        }


@frozen
class BisectResult:
    """The answer, or why there is none, with the evidence for every version."""

    status: Status
    first_bad: str | None
    last_good: str | None
    # The lowest of LearnedRate's, SpreadRate's and AssumedRate's posterior probabilities of
    # (last_good, first_bad).
    confidence: float
    attempts: int
    reason: str
    versions: tuple[VersionEvidence, ...]
    # Versions between last_good and first_bad that could not be tested (skipped).
    untestable_between: tuple[str, ...] = ()
    rate: tuple[int, int] = (0, 0)  # matching failures / attempts at versions known bad
    error: float = DEFAULT_ERROR
    min_rate: float = DEFAULT_MIN_RATE
    warnings: tuple[str, ...] = ()

    @property
    def tested(self) -> tuple[VersionEvidence, ...]:
        return tuple(v for v in self.versions if v.state != "untested")

    def to_dict(self) -> JsonObject:
        return {
            "status": self.status,
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "confidence": round(self.confidence, 6),
            "error": self.error,
            "min_rate": self.min_rate,
            "attempts": self.attempts,
            "reason": self.reason,
            "rate": {"matched": self.rate[0], "attempts": self.rate[1]},
            "untestable_between": list(self.untestable_between),
            "warnings": list(self.warnings),
            "tested": [v.to_dict() for v in self.tested],
        }


# ---- the posterior -------------------------------------------------------------------------


class RateModel:
    """The reproduction rate p a bad version is assumed to fail at, for the likelihoods.

    `marginal(f, s)` is log p^f (1-p)^s (f matching failures and s clean attempts
    at versions that are bad under one hypothesis); `mean` is p. Memoized.
    """

    def __init__(self, rate: float) -> None:
        if not 0.0 < rate < 1.0:
            raise ValueError(f"rate must be in (0, 1), got {rate}")
        self.rate = rate
        self._log_p, self._log_q = math.log(rate), math.log1p(-rate)
        self._marginal: dict[tuple[int, int], float] = {}

    def marginal(self, f: int, s: int) -> float:
        key = (f, s)
        value = self._marginal.get(key)
        if value is None:
            value = self._marginal[key] = f * self._log_p + s * self._log_q
        return value


class RateMixture:
    """A prior over the rate: a deterministic atom and flaky readings, integrated out.

    `marginal(f, s)` is log of w_det [s = 0] + sum w_i p_i^f (1 - p_i)^s over the
    readings (f matching failures and s clean attempts at the versions one hypothesis
    calls bad). Memoized per (f, s).
    """

    def __init__(
        self, rate: float, deterministic: float, readings: Sequence[tuple[float, float]]
    ) -> None:
        self.rate = rate
        # (log prior weight, log p, log 1-p) per flaky reading.
        self._flaky = [(math.log(w), math.log(p), math.log1p(-p)) for w, p in readings if w]
        self._log_det = math.log(deterministic) if deterministic else -math.inf
        self._marginal: dict[tuple[int, int], float] = {}

    def marginal(self, f: int, s: int) -> float:
        key = (f, s)
        value = self._marginal.get(key)
        if value is None:
            logs = [w + f * log_p + s * log_q for w, log_p, log_q in self._flaky]
            if not s and self._log_det != -math.inf:
                logs.append(self._log_det)
            value = log_sum(logs)
            self._marginal[key] = value
        return value

    def deterministic(self, f: int, s: int) -> float:
        """The posterior probability of the deterministic reading given those counts."""
        if s or self._log_det == -math.inf:
            return 0.0
        return math.exp(self._log_det - self.marginal(f, s))


class LearnedRate(RateMixture):
    """The rate as the attempts show it: deterministic, flaky at a high rate, or at `rate`.

    Three explanations of the failure compete, per hypothesis, a prior over the rate
    with real mass at and near 1: it is deterministic (p = 1, prior weight
    `deterministic`), flaky at `high` (0.9, weight `high_prior`), or flaky at `rate`
    (the assumed minimum, raised by the measured rate's 99% lower bound once a
    version known bad came back clean; the rest of the weight). Under one hypothesis,
    f matching failures and s clean attempts at the versions it calls bad weigh
    w_det [s = 0] + w_high high^f (1 - high)^s + w_low rate^f (1 - rate)^s.

    While every attempt of a version known bad has failed, the deterministic reading
    gains a factor 1/rate per failure against the low one, and one clean attempt then
    rules a version out almost alone (as `git bisect` assumes). The high reading is
    what keeps that honest: a bad version at p = 0.9 that stayed clean once (likely in
    a binary search) is the low reading's p^f against a wrong hypothesis that is still
    deterministic, and without the high reading the search answered wrong (82% right at
    p = 0.9 in the simulation); with it, that clean attempt costs the truth a factor
    0.1, not 0.3^f, and the search retests before it answers. At p = 1 it costs the
    last good version a retest or so (0.1 per clean attempt). The first clean attempt
    of a version a hypothesis calls bad (the failure flaked after all) removes the
    deterministic reading from that hypothesis for good; the two flaky readings weigh
    everything, earlier attempts included, and a few more clean attempts leave the low
    one alone. The rates are not fitted per hypothesis: a wrong hypothesis that calls
    the versions with clean attempts good would fit a higher rate on the very failures
    that made it look right (a winner's curse; in the simulation a uniform prior over
    the flaky rates gave 94% right answers at p = 0.3 for a stated error of 0.5%): two
    fixed readings, the low one at the assumed minimum, keep the clean attempts
    counted at no more than they are worth once the failure is known to flake.
    """

    def __init__(
        self,
        rate: float,
        deterministic: float | None = None,
        high: float = HIGH_RATE,
        high_prior: float | None = None,
    ) -> None:
        if deterministic is None:
            deterministic = DETERMINISTIC_PRIOR
        if high_prior is None:
            high_prior = HIGH_PRIOR if rate < high else 0.0
        if not 0.0 < rate < 1.0 or not 0.0 < high < 1.0:
            raise ValueError(f"rate must be in (0, 1), got {rate}")
        if not 0.0 <= deterministic < 1.0:
            raise ValueError(f"the deterministic prior must be in [0, 1), got {deterministic}")
        if not 0.0 <= high_prior < 1.0 - deterministic:
            raise ValueError(f"the high rate's prior must leave room, got {high_prior}")
        # The low reading first.
        super().__init__(
            rate, deterministic, [(1.0 - deterministic - high_prior, rate), (high_prior, high)]
        )


class SpreadRate(RateMixture):
    """The stop's second model: little deterministic weight, flaky rates spread above p.

    `LearnedRate` chooses the versions and is the search's posterior, but its answer
    alone was not true to its claim at a rate well above the assumed one. It has no
    reading between p and 0.9, so a bug failing at 0.4 under `--min-rate 0.1` showed a
    few matching failures in a row, which weighed the deterministic reading (1/p per
    failure) against the low one, and one or two clean attempts at the first bad
    version then ruled it out: 92-94% right over 16 and 64 versions at 0.4-0.7 under
    `--min-rate 0.1`, and at the defaults 97.2% at a true 0.5 over 16 versions, every
    answer claiming 99.5% (performance.md, "A rate far above the assumed one"). Seen on
    a real program too: six 1.15.0 named at 0.997 where 1.14.0 failed at 0.4.

    The search answers only when the answer also holds 1 - error under this prior:
    deterministic 0.1, the assumed rate `rate` 0.4, HIGH_RATE 0.1, and 0.4 spread evenly
    over `points` rates from just above `rate` up to HIGH_RATE (where `rate` is at or above
    HIGH_RATE, 0.9 at `rate` alone, as LearnedRate drops its high reading). Every rate above the
    assumed one now has a reading near it, so a clean attempt at a version that failed
    a few times counts against it at about what it is worth, and the search retests
    (versions already built) instead of answering. It does not choose the versions:
    a grid like it as the search's own posterior counted each clean attempt for more
    than it is worth where its mass lies above the true rate (97.5-98.5% right at 0.1
    and 0.2 under `--min-rate 0.1`) and raised the attempts of a bug that never flakes
    more; as a second condition of the stop it only delays a doubtful answer.
    Measured (400-1000 trials a row): 99.1-100% right at every rate from 0.1 to 1.0
    under `--min-rate 0.1` and from 0.3 to 1.0 at the defaults, over 16 and 64
    versions, for 3 to 4.5 more attempts at rate 1.0 (14.3 over 64 at the defaults).
    """

    def __init__(self, rate: float, points: int = SPREAD_POINTS) -> None:
        if not 0.0 < rate < 1.0:
            raise ValueError(f"rate must be in (0, 1), got {rate}")
        top = HIGH_RATE
        if rate >= top:
            # Nothing lies between the assumed rate and HIGH_RATE: a grid and a high reading
            # there would sit below the assumed rate (a clean attempt counted for less), as
            # LearnedRate drops its high reading there.
            alone = [(1.0 - SPREAD_DETERMINISTIC_PRIOR, rate)]
            super().__init__(rate, SPREAD_DETERMINISTIC_PRIOR, alone)
            return
        spread = 1.0 - SPREAD_DETERMINISTIC_PRIOR - SPREAD_LOW_PRIOR - HIGH_PRIOR
        grid = [rate + (top - rate) * i / points for i in range(1, points + 1)]
        readings = [(SPREAD_LOW_PRIOR, rate), (HIGH_PRIOR, top)]
        readings += [(spread / points, p) for p in grid]
        super().__init__(rate, SPREAD_DETERMINISTIC_PRIOR, readings)


class AssumedRate(LearnedRate):
    """The stop's third model: LearnedRate's readings with most of the weight at the assumed
    rate (deterministic 0.1, HIGH_RATE 0.1, the assumed rate 0.8).

    The stated error must hold at the assumed rate itself, and there `LearnedRate` and
    `SpreadRate` were optimistic where that rate is high: `--min-rate 0.5` at a true 0.5
    over 64 versions was 98.5-99.6% right by seed (99.26% over 5,000 trials) for a claim
    of 99.5%. A few matching failures in a row are likely at 0.5, so a wrong answer above
    the truth often has every version it calls bad failing each time: its deterministic
    and high readings read those failures as likely, while the truth, seen clean at the
    versions between, has the assumed rate's reading alone (0.4 of the prior in both
    models). The answer's odds were overstated several times over: read at the rate the
    bug fails at, the answers stopped at were 94-99% likely. Under this model the truth
    keeps 0.8 of its weight at the rate it fails at, and the answer's all-failing
    versions gain 0.2 of readings above it, so the same attempts read nearly as the true
    rate reads them. The deterministic and high readings stay, with little weight, so that
    a bug failing far more often than assumed is not retested as if it failed at the
    assumed rate (that rate alone cost 33 attempts at rate 1.0 over 64 versions at the
    defaults, where this costs 14.3, and the deterministic reading alone 2 more at 0.7 and
    0.9).

    An answer may spend ASSUMED_SHARE (4/5) of the stated error under it: at the assumed
    rate the bad end's check already spends up to a fifth (it refuses a bad end that did
    not show the failure in `attempts_to_see(min_rate, error / 5)` attempts), and the
    claim is about both. At any higher rate that check spends next to nothing and the
    search's posterior and SpreadRate hold the answer first. Measured in performance.md,
    "Item 8, ninth round".
    """

    def __init__(self, rate: float) -> None:
        super().__init__(rate, ASSUMED_DETERMINISTIC_PRIOR)


@dataclass
class _Counts:
    """Per testable version: matching failures and clean attempts (mutable, search-private)."""

    fails: list[int]
    cleans: list[int]
    model: RateModel | RateMixture

    def _suffixes(self) -> list[tuple[int, int]]:
        m = len(self.fails)
        out: list[tuple[int, int]] = [(0, 0)] * m
        f = s = 0
        for k in range(m - 1, -1, -1):
            f += self.fails[k]
            s += self.cleans[k]
            out[k] = (f, s)
        return out

    def posterior(self) -> list[float]:
        """P(first bad = j | data) for every j: uniform prior, the rate integrated out."""
        m = len(self.fails)
        first_fail = next((k for k in range(m) if self.fails[k]), m - 1)
        suffix = self._suffixes()
        # A matching failure at k rules out first-bad > k; below j every version is good
        # (clean attempts there are certain), at and above j bad (the rate decides).
        logs = [self.model.marginal(*suffix[j]) for j in range(first_fail + 1)]
        top = max(logs)
        weights = [math.exp(v - top) for v in logs]
        total = sum(weights)
        return [w / total for w in weights] + [0.0] * (m - first_fail - 1)


# A distribution proportional to exp(logs) as a running sum: (top, Z, X) with
# Z = sum exp(v - top) and X = sum exp(v - top) (v - top); its entropy is log Z - X / Z.
_Sums = tuple[float, float, float]
_EMPTY: _Sums = (-math.inf, 0.0, 0.0)


def _add(a: _Sums, b: _Sums) -> _Sums:
    """The running sums of two disjoint sets of logs, as one."""
    # A weight of zero (a log of -inf: a reading a clean attempt ruled out) adds nothing,
    # and exp(-inf - -inf) would be nan.
    if a[1] == 0.0 or a[0] == -math.inf:
        return b
    if b[1] == 0.0 or b[0] == -math.inf:
        return a
    top = max(a[0], b[0])
    z = x = 0.0
    for old, zs, xs in (a, b):
        scale = math.exp(old - top)
        z += zs * scale
        x += scale * (xs + zs * (old - top))
    return top, z, x


def _entropy(sums: _Sums) -> float:
    _, z, x = sums
    return math.log(z) - x / z if z else 0.0


def _choose(counts: _Counts, post: Sequence[float]) -> int:
    """The version whose next attempt is expected to teach the most (lowest entropy after)."""
    m = len(post)
    # Only where the answer can still be: a test outside the central 99.99% of the
    # posterior (and the version just below it) teaches next to nothing.
    cdf, low, high = 0.0, 0, m - 1
    for j in range(m):
        if cdf + post[j] < 5e-5:
            low = j + 1
        cdf += post[j]
        if cdf >= 1 - 5e-5:
            high = j
            break
    low = max(0, low - 1)
    live = next((k for k in range(m) if counts.fails[k]), m - 1) + 1  # hypotheses 0..live-1
    suffix = counts._suffixes()[:live]
    marginal = counts.model.marginal
    logs = [marginal(f, s) for f, s in suffix]
    # One more attempt at k changes the hypotheses j <= k only (k is bad under them): a
    # failure leaves j <= k, each with one failure more; a clean attempt gives them one
    # clean attempt more and leaves the rest as they are. The entropies after either, for
    # every k at once, from running sums over j (one pass, not one per k).
    rest = [_EMPTY] * (live + 1)  # rest[k]: the sums of logs[k:]
    for j in range(live - 1, -1, -1):
        rest[j] = _add((logs[j], 1.0, 0.0), rest[j + 1])
    values: list[float] = []
    failed = cleaned = _EMPTY
    p_fail = 0.0
    for k in range(min(high, live - 1) + 1):
        f, s = suffix[k]
        after_fail = marginal(f + 1, s)
        failed = _add(failed, (after_fail, 1.0, 0.0))
        cleaned = _add(cleaned, (marginal(f, s + 1), 1.0, 0.0))
        # The predicted failure rate under hypothesis k, as `mean` gives it.
        if post[k]:
            p_fail += post[k] * math.exp(after_fail - logs[k])
        values.append(
            p_fail * _entropy(failed) + (1 - p_fail) * _entropy(_add(cleaned, rest[k + 1]))
        )
    best, best_value = low, math.inf
    for k in range(low, high + 1):
        value = values[min(k, live - 1)]
        if value < best_value - 1e-12:
            best, best_value = k, value
    return best


def _likeliest(post: Sequence[float]) -> int:
    return max(range(len(post)), key=post.__getitem__)


@frozen
class _Stops:
    """The stop's models over the search's attempts (the same lists as the search's)."""

    spread: _Counts  # SpreadRate's
    assumed: _Counts  # AssumedRate's


def _posteriors(
    post: list[float], stops: _Stops, best: int, error: float, needed: bool = False
) -> tuple[list[float], ...]:
    """The search's posterior and, as far as it decides anything, the stop's models' over
    the same attempts (the same lists): SpreadRate's where `best` holds 1 - `error` under
    the search's, then AssumedRate's where it holds that under SpreadRate's too (`needed`:
    all three, for the budget's best guess). Computed once per step, for the stop, the
    guess and `_result`."""
    if not needed and post[best] < 1 - error:
        return (post,)
    spread = stops.spread.posterior()
    if not needed and spread[best] < 1 - error:
        return (post, spread)
    return (post, spread, stops.assumed.posterior())


def _probability(posts: Sequence[Sequence[float]], best: int) -> float:
    """The probability `best` holds with: the lowest of the posteriors (`_posteriors`). A
    best guess, answered or not, states it."""
    return min(post[best] for post in posts)


def _answer(posts: Sequence[Sequence[float]], best: int, error: float) -> float:
    """The probability the answer holds with, when the search may stop; else 0.

    The likeliest hypothesis, `best`, must hold 1 - `error` under the search's posterior
    and SpreadRate's, and 1 - ASSUMED_SHARE x `error` under AssumedRate's (`_posteriors`).
    """
    if len(posts) < 3:  # the search's posterior or SpreadRate's did not hold it
        return 0.0
    if posts[2][best] < 1 - ASSUMED_SHARE * error:
        return 0.0
    probability = _probability(posts, best)
    return probability if probability >= 1 - error else 0.0


def _batch(counts: _Counts, stops: _Stops, k: int, limit: int, error: float) -> int:
    """How many clean attempts in a row at k the one-at-a-time search would ask for.

    Running them as one call (stopping at the first matching failure) gives the
    same decisions as asking one by one, with fewer calls to start.
    """
    n = 1
    added = 0
    while n < limit:
        counts.cleans[k] += 1
        added += 1
        post = counts.posterior()
        best = _likeliest(post)
        if _answer(_posteriors(post, stops, best, error), best, error):
            break
        if _choose(counts, post) != k:
            break
        n += 1
    counts.cleans[k] -= added
    return n


# ---- the search ----------------------------------------------------------------------------


def bisect(
    versions: Sequence[str],
    oracle: Oracle,
    *,
    error: float = DEFAULT_ERROR,
    budget: int = DEFAULT_BUDGET,
    min_rate: float = DEFAULT_MIN_RATE,
    end_attempts: int | None = None,
    known: Mapping[str, Trial] | None = None,
    on_trial: Callable[[Trial], None] | None = None,
    max_batch: int = MAX_BATCH,
) -> BisectResult:
    """Find the first bad version of `versions` (good end first, bad end last).

    `known`: trials from an earlier, interrupted search (by version); they are
    counted as if just run, so a resumed search asks for nothing twice.
    `on_trial` is called after every oracle call (for storing and progress).
    `min_rate`: the assumption that a bad version shows the failure in at least this
    fraction of attempts (the spec's `expect.rate` bound when it has one); the bad
    end gets `end_attempts` (default: enough to see such a rate with 1 - `error`).
    """
    if len(versions) < 2:
        raise ValueError("bisect needs at least the good and the bad version")
    if not 0.0 < min_rate < 1.0 or not 0.0 < error < 1.0:
        raise ValueError("min_rate and error must be between 0 and 1")
    if len(set(versions)) != len(versions):
        raise ValueError("versions must be distinct")
    trials: dict[str, Trial] = {v: Trial(v) for v in versions}
    for version, trial in (known or {}).items():
        if version in trials:
            trials[version] = trial

    def spent() -> int:  # the budget counts a resumed search's earlier attempts too
        return sum(t.attempts for t in trials.values())

    def ask(version: str, n: int) -> Trial:
        got = oracle(version, n)
        if got.attempts == 0 and not got.infra_error:
            # Nothing ran and nothing says why: never judge it, never ask again forever.
            got = replace(got, infra_error="no attempt ran")
        trials[version] = trials[version].merged(got)
        if on_trial is not None:
            on_trial(got)
        return trials[version]

    good, bad = versions[0], versions[-1]
    models: dict[float, LearnedRate] = {}
    spreads: dict[float, SpreadRate] = {}  # the stop's second model (SpreadRate)
    assumed: dict[float, AssumedRate] = {}  # and its third (AssumedRate)
    if end_attempts is None:
        # Cheap when the bad end fails early, as it should: only a passing end pays it.
        # error / 5, where isolate's failing side (isolation/search.py `_rate_attempts`)
        # asks the same question at its error itself: a bad end that does fail but was
        # not seen to refuses the whole bisect, and the fifth costs a few attempts of an
        # end that passes alone (at 0.3: 20 attempts, not 15).
        end_attempts = attempts_to_see(min_rate, error / 5)

    def finish(
        status: Status,
        reason: str,
        answer: int | None = None,
        posts: Sequence[Sequence[float]] = (),
        alive: Sequence[str] = (),
        confidence: float = 0.0,
    ) -> BisectResult:
        return _result(
            status,
            reason,
            versions,
            trials,
            alive,
            posts,
            answer,
            confidence,
            error,
            spent(),
            min_rate,
        )

    # 1. The bad end must reproduce.
    seen = trials[bad]
    if seen.matched == 0 and seen.infra_error is None and seen.attempts < end_attempts:
        # Within the budget: `--budget 3` ran the bad end's 20 attempts all the same.
        left = budget - spent()
        if left > 0:
            seen = ask(bad, min(end_attempts - seen.attempts, left))
    if seen.attempts == 0 and seen.infra_error:
        return finish("refused", f"the bad end {bad} cannot be tested: {seen.infra_error}")
    if seen.matched == 0 and seen.infra_error is None and seen.attempts < end_attempts:
        # Out of budget before the bad end showed the failure, or ran enough attempts to
        # say it does not: not a refusal, and a larger budget goes on from here.
        return finish(
            "undecided",
            f"budget of {plural(budget, 'attempt')} spent before the bad end {bad} "
            f"reproduced ({seen.matched}/{seen.attempts}; seen: {_seen(seen)})",
        )
    if seen.matched == 0:
        return finish("refused", _bad_end_refused(seen, min_rate, good))
    # 2. The good end is not run up front: "the good end is bad too" is hypothesis 0 of
    # the posterior, which every clean attempt of any version weighs against, so the
    # search runs the good end only when that is the most informative attempt (when the
    # answer is near it, or the good end's own clean attempts are what the answer
    # needs). An up-front attempt cost every search one attempt; a good end that
    # reproduces is still refused, after the search comes down to it.
    # 3. Bisect among the versions that can be tested.
    while True:
        seen = trials[good]
        if seen.attempts == 0 and seen.infra_error:
            return finish(
                "refused",
                f"the good end {good} cannot be tested: {seen.infra_error}"
                + _untestable_good_end(versions, trials),
            )
        if seen.attempts == 0 and any(t.attempts == 0 and t.infra_error for t in trials.values()):
            # A version could not be installed: the good end is asked next, once. The search
            # skips an untestable stretch one candidate at a time from its middle outwards,
            # and a stretch that reaches the good end (`--by-date` over years: the days
            # before the package's build requirements were released) is thousands of failed
            # installs with no attempt to spend the budget on; one attempt here refuses it
            # at once, and otherwise counts, clean, against "the good end is bad too".
            ask(good, 1)
            continue
        alive = [v for v in versions if not (trials[v].attempts == 0 and trials[v].infra_error)]
        # The low flaky rate the clean attempts are weighed with: the assumed minimum, or
        # more when the versions known bad show clearly more (a 99% lower bound) and
        # have flaked at least once. While they never did, the deterministic reading
        # already says "high": raising the low reading by the bound of f failures in f
        # attempts, f / (f + 6.6), would let its p^f fall no lower than e^-6.6 however
        # many failures came (at p = 1 the search paid 14.4 attempts for that, 11.0
        # without it, 64 versions).
        lowest = next(i for i, v in enumerate(alive) if trials[v].matched)
        f_bad = sum(trials[v].matched for v in alive[lowest:])
        n_bad = sum(trials[v].attempts for v in alive[lowest:])
        used = rate_used(min_rate, f_bad, n_bad)
        # Built once per rate (22 logs for SpreadRate), not once per step.
        model = models.get(used) or models.setdefault(used, LearnedRate(used))
        spread = spreads.get(used) or spreads.setdefault(used, SpreadRate(used))
        alone = assumed.get(used) or assumed.setdefault(used, AssumedRate(used))
        counts = _Counts(
            [trials[v].matched for v in alive],
            [trials[v].attempts - trials[v].matched for v in alive],
            model,
        )
        # The same lists: the stop's models see exactly the attempts the posterior saw.
        stops = _Stops(
            spread=_Counts(counts.fails, counts.cleans, spread),
            assumed=_Counts(counts.fails, counts.cleans, alone),
        )
        post = counts.posterior()
        best = _likeliest(post)
        total = spent()
        # Each version's judgement too is the lowest of the posteriors' (_result).
        posts = _posteriors(post, stops, best, error, needed=total >= budget)
        confidence = _answer(posts, best, error)
        if confidence:
            if best == 0:
                return finish(
                    "refused",
                    f"the good end {good} reproduces too: "
                    f"{plural(seen.matched, 'matching failure')} in "
                    f"{plural(seen.attempts, 'attempt')}; seen: {_seen(seen)}; "
                    + _good_end_fails(good, bad),
                    best,
                    posts,
                    alive,
                    confidence,
                )
            return finish("found", "", best, posts, alive, confidence)
        if total >= budget:
            # Not the search's posterior alone: where it held 1 - error and the stop's
            # models did not, that was 1.00 for a guess the search would not answer.
            guess = _probability(posts, best)
            reason = (
                f"budget of {plural(budget, 'attempt')} spent; best guess {alive[best]} "
                f"with probability {guess:.2f}"
            )
            return finish("undecided", reason, best, posts, alive, guess)
        k = _choose(counts, post)
        n = min(_batch(counts, stops, k, max_batch, error), budget - total)
        ask(alive[k], n)


def attempts_to_see(rate: float, error: float = DEFAULT_ERROR) -> int:
    """Attempts after which a version failing at `rate` has shown it with 1 - `error`
    (core.rates.attempts_to_see), at most 200; 30 for a rate of 0."""
    if rate <= 0.0:
        return 30
    return min(200, rates.attempts_to_see(rate, error))


def wilson_lower(matched: int, attempts: int, z: float = 1.96) -> float:
    """The lower end of the Wilson interval of matched/attempts (core.rates.wilson)."""
    return wilson(matched, attempts, z)[0]


def wilson_upper(matched: int, attempts: int, z: float = 1.96) -> float:
    """The upper end of the Wilson interval of matched/attempts (core.rates.wilson)."""
    return wilson(matched, attempts, z)[1]


def _bad_end_refused(seen: Trial, min_rate: float, good: str) -> str:
    """Why a bad end that did not reproduce is refused: what was seen, and, where it passed,
    how likely those passes were at the assumed minimum rate, and the way on for a rarer
    failure. The bad end runs only as many attempts as that rate needs (1 at `--min-rate
    0.999`, 10 at 0.5), and "did not reproduce in 1 attempt" alone read as "it does not
    fail here", where a failure rarer than assumed passes so just as well (isolate's
    refusal says the same, `Tally.missed_at`; both through core/words.missed_chance), only
    where it passed more often than it failed otherwise: else the expect (and the --timeout
    where some hung), not the rate, is the question, and the refusal says to check them (1
    pass among 9 hangs read "give a lower --min-rate", and then nothing).

    A bad end that passed every attempt most likely means a wrong range, said first: the
    ends swapped (`--good 23.2 --bad 21.3`, which bisect reads as a search for the release
    that fixed the bug), or a bad end without the bug here; "give a lower --min-rate"
    alone sent the user to rerun a swapped range with more attempts."""
    reason = (
        f"the bad end {seen.version} did not reproduce in "
        f"{plural(seen.attempts, 'attempt')}; seen: {_seen(seen)}"
    )
    passes = seen.signatures.count("pass")
    if passes and passes == seen.attempts:
        reason += "; " + _bad_end_passes(good, seen.version)
    return reason + missed_chance(
        passes,
        seen.attempts - passes,
        min_rate,
        f"give a lower {argument('--min-rate', 'min_rate')}",
        hung=seen.signatures.count("hang"),
        timeout=argument("--timeout", "timeout"),
    )


def _is_day(version: str) -> bool:
    """Whether a candidate is a `--by-date` day (`2024-03-01`), not a release."""
    import re

    return re.fullmatch(r"\d{4}-\d{2}-\d{2}", version) is not None


def _newer(one: str, other: str) -> bool | None:
    """Whether version (or `--by-date` day) `one` is newer than `other`; None where they
    cannot be told apart (not versions)."""
    if _is_day(one) and _is_day(other):
        return one > other  # ISO days sort as text
    from packaging.version import InvalidVersion, Version

    try:
        return Version(one) > Version(other)
    except InvalidVersion:
        return None


def _bad_end_passes(good: str, bad: str) -> str:
    """The likely cause of a bad end that passed every attempt: a wrong range."""
    swapped = (
        f"--by-date {bad}..{good}"
        if _is_day(good)
        else f"{argument('--good', 'good', bad)} {argument('--bad', 'bad', good)}"
    )
    if _newer(good, bad):
        return (
            f"the good end {good} is newer, which bisect reads as a search for the release "
            f"that fixed the bug: did you swap them? ({swapped}, where {good} is the one "
            "that fails); else the bad end does not have the bug here"
        )
    where = "a day" if _is_day(good) else f"a {argument('--bad', 'bad')}"
    return f"the bad end does not have the bug here: give {where} where it fails"


def _good_end_fails(good: str, bad: str) -> str:
    """The next step where the good end fails too: an end further from the bad one (older,
    or newer in a search for the fix), where the bug is not."""
    newer = _newer(good, bad)
    if _is_day(good):
        return f"the bug is there too: give {'a later' if newer else 'an earlier'} good day"
    further = "another" if newer is None else "a newer" if newer else "an older"
    return (
        f"the bug is there too: give {further} {argument('--good', 'good')} that passes "
        f"(further from the bad end {bad})"
    )


def _untestable_good_end(versions: Sequence[str], trials: Mapping[str, Trial]) -> str:
    """The next step where the good end cannot be tested: the version nearest it that ran
    (the oldest release that installs, as far as the search saw) where it passed, else any
    that installs. One that ran and reproduced is said so, never given as the good end: the
    search would refuse it (`the good end reproduces too`) and point back at this one."""
    ran = next((v for v in versions[1:] if trials[v].attempts), None)
    if ran is not None and ran != versions[-1] and trials[ran].matched:
        return (
            f"; the {'day' if _is_day(versions[0]) else 'version'} nearest it that could be "
            f"tested, {ran}, reproduces: the failure came with {ran} or before it, which "
            "cannot be tested here"
        )
    if _is_day(versions[0]):
        start = f"--by-date {ran}..{versions[-1]}" if ran and ran != versions[-1] else None
        return f"; the day nearest it that could be tested is {ran}: {start}" if start else ""
    if ran is not None and ran != versions[-1]:
        return (
            f"; the version nearest it that could be tested is {ran}: give "
            f"{argument('--good', 'good', ran)}"
        )
    return f"; give a {argument('--good', 'good')} that can be installed here"


def _seen(trial: Trial) -> str:
    counts: dict[str, int] = {}
    for signature in trial.signatures:
        counts[signature] = counts.get(signature, 0) + 1
    return ", ".join(f"{sig} x{n}" for sig, n in counts.items()) or "nothing"


def _result(
    status: Status,
    reason: str,
    versions: Sequence[str],
    trials: Mapping[str, Trial],
    alive: Sequence[str],
    posts: Sequence[Sequence[float]],
    answer: int | None,
    confidence: float,
    error: float,
    attempts: int,
    min_rate: float,
) -> BisectResult:
    # P(first bad is after this version) = the sum of the posterior above it, the lowest
    # of the posteriors given (the search's and the stop's models'): a version is judged
    # good where that is at least 1 - error under each of them (cli.md's rule). The stop
    # asks more of its answer alone, 1 - ASSUMED_SHARE x error under AssumedRate's, so a
    # version between 1 - error and 1 - ASSUMED_SHARE x error there (0.995-0.996 at the
    # default --error 0.005) is "good" in an undecided or refused table, though the stop
    # would not hold it so; a found answer's versions below it are past both (each one's
    # P(after) is at least the answer's own, which the stop held at 1 - ASSUMED_SHARE x error).
    p_after: dict[str, float] = {}
    for post in posts:
        running = 0.0
        for index, version in enumerate(alive):
            after = 1.0 - running - post[index]
            p_after[version] = min(after, p_after.get(version, after))
            running += post[index]
    evidence = []
    for version in versions:
        trial = trials[version]
        p_good = max(0.0, p_after.get(version, 0.0))
        if trial.attempts == 0 and trial.infra_error:
            state: State = "skipped"
        elif trial.matched:
            state = "bad"
        elif trial.attempts == 0:
            state = "untested"
        elif p_good >= 1 - error:
            state = "good"
        else:
            state = "unsure"
        evidence.append(
            VersionEvidence(
                version,
                state,
                trial.attempts,
                trial.matched,
                p_good,
                trial.infra_error,
                trial.signatures,
                trial.runs,
                trial.build_log,
            )
        )
    first_bad = last_good = None
    between: tuple[str, ...] = ()
    if answer is not None and alive and status != "refused":
        first_bad = alive[answer]
        last_good = alive[answer - 1] if answer > 0 else None
        if last_good is not None:
            low, high = versions.index(last_good), versions.index(first_bad)
            between = tuple(versions[low + 1 : high])
    known_bad = [
        e
        for e in evidence
        if first_bad is not None and versions.index(e.version) >= versions.index(first_bad)
    ]
    rate = (sum(e.matched for e in known_bad), sum(e.attempts for e in known_bad))
    warnings: list[str] = []
    if rate[1] and wilson_upper(*rate) < min_rate:
        warnings.append(
            f"the measured rate at the bad versions, {rate[0]}/{rate[1]}, is below the assumed "
            f"minimum rate {min_rate:g}: the error may be larger than stated; rerun with a "
            f"lower minimum rate"
        )
    result = BisectResult(
        status,
        first_bad,
        last_good,
        confidence,
        attempts,
        reason,
        tuple(evidence),
        between,
        rate,
        error,
        min_rate,
        tuple(warnings),
    )
    if status == "found" and between:
        result = replace(
            result,
            reason=(
                f"{', '.join(between)} could not be tested; the regression may have come with "
                + ("it" if len(between) == 1 else "one of them")
            ),
        )
    return result
