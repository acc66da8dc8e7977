"""What isolation runs and what it concludes: probes, tallies, candidates, the passing rule.

Plain frozen values and pure functions; the search that uses them is `search.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from reprospec.core.caller import argument, said
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.rates import attempts_to_see, wilson
from reprospec.core.results import Rate
from reprospec.core.words import missed_chance, plural

# `hang`: failed otherwise by hanging, counted as `other` too (`Tally.hung` of them), so
# that a refusal names the timeout only where an attempt hung.
AttemptKind = Literal["match", "pass", "other", "hang", "infra"]
Role = Literal["failing", "base", "search", "minimal", "one-smaller"]
Status = Literal[
    "isolated",  # culprits found and checked
    "refused",  # the failing configuration does not reproduce often enough
    "budget",  # the attempt budget ran out before the answer was checked
    "base-reproduces",  # the passing configuration fails the same way
    "infra-error",  # a candidate could not be run
    "interrupted",  # stopped (Ctrl-C) before the answer was checked
]
ATTEMPT_KINDS: tuple[AttemptKind, ...] = ("match", "pass", "other", "hang", "infra")
DEFAULT_ERROR = 0.005  # as bisect's
# As bisect's: the culprits fail in at least 30% of attempts unless the spec's
# expect.rate says otherwise; raised when the sets known to fail show clearly more.
DEFAULT_MIN_RATE = 0.3
RATE_Z = 2.576  # the measured rate raises the assumed one from its 99% lower bound


@frozen
class Settings:
    """The budget, the stated error and the rate assumption of one isolation."""

    budget: int = 100  # attempts in all, infra errors included
    error: float = DEFAULT_ERROR  # the answer is given at posterior probability 1 - error
    min_rate: float = DEFAULT_MIN_RATE  # the culprits fail at least this often per attempt
    max_culprits: int = 3  # the largest culprit set considered (lowered for many differences)
    rate_matches: int = 1  # the failing configuration runs until this many matches...
    rate_attempts: int = 20  # ...or this many attempts
    max_infra: int = 3  # infra errors of one candidate in a row before giving up
    step: int = 1  # attempts per round: -j of them run at once, on distinct candidates


def otherwise(kind: str) -> AttemptKind:
    """The kind of an attempt that ran and failed otherwise, by its outcome's `kind`: `hang`
    for a hang (the timeout may be the question), else `other`."""
    return "hang" if kind == "hang" else "other"


def failed_otherwise(kind: AttemptKind) -> bool:
    """Whether an attempt of that kind ran and failed, not as expected (`otherwise`'s two,
    which `Tally.other` counts)."""
    return kind in ("other", "hang")


@frozen
class Tally:
    """What the attempts of one candidate did."""

    matched: int = 0
    passed: int = 0
    other: int = 0  # failed, but not as expected: not the bug, so clean
    infra: int = 0
    hung: int = 0  # those of `other` that hung (no attempt, on its own, of the rate's)

    @property
    def attempts(self) -> int:
        return self.matched + self.passed + self.other + self.infra

    @property
    def ran(self) -> int:
        """Attempts that ran (infra errors excluded): the rate's denominator."""
        return self.matched + self.passed + self.other

    @property
    def clean(self) -> int:
        return self.passed + self.other

    def never_matched(self, what: str, search: str) -> str:
        """A search's refusal where `what` (its failing side) never failed as expected in
        its attempts, with what they did instead: passing is "it does not reproduce here",
        failing otherwise (a wrong `signal` in expect, a hang at a --timeout too short) is
        not, and both read as a bare 0/20. Isolate's and minimize's."""
        return (
            f"{what} did not fail as expected in {plural(self.ran, 'attempt')} "
            f"({self.figure()}); nothing to {search}"
        )

    def seek_short(self, rate_attempts: int, most: int) -> int:
        """How many more attempts a search's failing side runs before its first match, 0
        where it stops there: its first `rate_attempts` in all, and past them, where it
        passed more than it failed otherwise, on to `most` passes (those that make a miss
        at the assumed minimum rate unlikely), the first `rate_attempts`' passes counted
        too. Isolate's and minimize's one rule (each its own `most`), which each had written
        for itself and which drifted apart.

        Passes, not attempts: one that failed otherwise cannot show the failure (11 passed
        / 9 otherwise per 20 stopped at 130 ran, ~72 passes, "a chance of 0.053"). Only
        where it passed more: one that failed otherwise as often is no rarer failure, its
        expect is the question (1 pass among 19 such ran on to 130 at --min-rate 0.04). Past
        the first match (0 here) the rate is measured as each search measures it: isolate
        on to `rate_matches` within `rate_attempts`; minimize stops at it unless its rate
        is still being measured (`rate_attempts`, `rate_matches`), since a match seen
        past `rate_attempts` already says the original fails, and its rate, read high,
        is said to have been sought."""
        if self.matched:
            return 0
        short = rate_attempts - self.ran
        if self.passed > self.other:
            short = max(short, most - self.passed)
        return max(short, 0)

    def missed_at(self, what: str, search: str, min_rate: float, options: str) -> str:
        """`never_matched`, where `what` mostly passed adding how likely that miss was at
        the assumed `min_rate` and the ways on for a rarer failure (amplify it first, or a
        lower --min-rate): either it does not fail here or more rarely than assumed, and
        "nothing to isolate" alone read as the former. One that failed otherwise as often
        as it passed is told to check the expect or --timeout instead: there they, not the
        rate, are the question (core/words.missed_chance, which bisect's bad end words too; 1 pass
        among 129 such read "130 clean attempts had a chance of 0.005"). Isolate's and
        minimize's (`options`: the API's options class, `IsolateOptions`)."""
        amplify = said(
            f"`reprospec amplify` it first (then {search} --amplify)",
            f"amplify_spec it first (then {options}(amplified=...))",
        )
        return self.never_matched(what, search) + missed_chance(
            self.passed,
            self.other,
            min_rate,
            f"{amplify}, or give a lower {argument('--min-rate', 'min_rate')}",
            hung=self.hung,
            timeout=said("--timeout", "RunOptions(timeout_s=...)"),
        )

    def figure(self) -> str:
        """The rate with what the clean attempts did: "0/32: 30 passed, 2 failed
        otherwise" ("3/3" where every one failed as expected)."""
        did = self.did()
        return f"{self.matched}/{self.ran}{': ' + did if did else ''}"

    def did(self) -> str:
        """What the clean attempts did, "30 passed, 2 failed otherwise" ("" for none):
        `figure`'s words, which isolate's sentence and table say a set's tally in."""
        did = [f"{self.passed} passed"] if self.passed else []
        did += [f"{self.other} failed otherwise"] if self.other else []
        return ", ".join(did)

    def add(self, kinds: Iterable[AttemptKind]) -> Tally:
        """This tally plus some attempts."""
        counts = dict.fromkeys(ATTEMPT_KINDS, 0)
        for kind in kinds:
            if kind not in counts:
                raise ValueError(f"unknown attempt kind {kind!r}")
            counts[kind] += 1
        return Tally(
            matched=self.matched + counts["match"],
            passed=self.passed + counts["pass"],
            other=self.other + counts["other"] + counts["hang"],
            infra=self.infra + counts["infra"],
            hung=self.hung + counts["hang"],
        )

    def to_dict(self) -> JsonObject:
        low, high = wilson(self.matched, self.ran)
        return {
            "attempts": self.attempts,
            "matched": self.matched,
            "passed": self.passed,
            "other": self.other,
            "infra": self.infra,
            "rate": {"matched": self.matched, "attempts": self.ran, "low": low, "high": high},
        }


@frozen
class Probe:
    """Run up to `attempts` attempts of `candidate`; stop after `stop_after` matching failures."""

    candidate: frozenset[int]
    attempts: int
    stop_after: int = 1
    role: Role = "search"


@frozen
class Candidate:
    """One candidate set: the differences it applies, what its attempts did, its verdict."""

    applied: tuple[int, ...]
    role: Role
    tally: Tally
    reproduces: bool | None  # None: not decided
    clean_evidence: int = 0  # clean attempts its passing verdict rests on (see Isolation)
    clean_other: int = 0  # those of them that failed otherwise

    def rests_on(self) -> Tally:
        """What its verdict rests on: its own attempts, or, never run itself, the clean
        attempts of the sets that hold it (`clean_evidence`, of which `clean_other` failed
        otherwise)."""
        if self.tally.attempts:
            return self.tally
        other = self.clean_other
        return Tally(passed=self.clean_evidence - other, other=other)

    def to_dict(self) -> JsonObject:
        return {
            "applied": list(self.applied),
            "role": self.role,
            "reproduces": self.reproduces,
            "clean_evidence": self.clean_evidence,
            "clean_other": self.clean_other,
            **self.tally.to_dict(),
        }


@frozen
class IsolationResult:
    """The answer and everything it rests on."""

    status: Status
    culprits: tuple[int, ...]  # isolated: the answer; otherwise the smallest set seen failing
    message: str
    attempts: int
    rate: Rate  # measured over the tested sets known to reproduce (Wilson 95%)
    # Isolated: the posterior probability of the answer (>= 1 - error). Otherwise 0.
    confidence: float
    error: float
    min_rate: float
    rate_used: float  # the p that weighed clean attempts at the end
    max_culprits: int  # the largest culprit set the search considered
    failing: Candidate | None
    base: Candidate | None
    minimal: Candidate | None
    one_smaller: tuple[Candidate, ...]
    tested: tuple[Candidate, ...]
    guess: tuple[int, ...] = ()  # not isolated: the most probable culprit set...
    guess_probability: float = 0.0  # ...and its posterior probability
    # Not isolated, the guess sure enough: what the search still had to see before naming it
    # ("confidence 0.998" beside "no answer yet" read as a contradiction).
    pending: str = ""
    warnings: tuple[str, ...] = ()
    # The budget ended it (status budget, or refused as too small for it): a larger --budget
    # goes on (isolation.state.check_out_to_go_on).
    budget_spent: bool = False

    @property
    def rule(self) -> str:
        return rule_text(self.error, self.min_rate, self.rate_used, self.max_culprits)

    def to_dict(self) -> JsonObject:
        return {
            "status": self.status,
            "culprits": list(self.culprits),
            "message": self.message,
            "attempts": self.attempts,
            "rate": self.rate.to_dict(),
            "confidence": self.confidence,
            "error": self.error,
            "min_rate": self.min_rate,
            "rate_used": self.rate_used,
            "max_culprits": self.max_culprits,
            "rule": self.rule,
            "guess": {
                "culprits": list(self.guess),
                "probability": self.guess_probability,
                "pending": self.pending,
            },
            "warnings": list(self.warnings),
            "failing": self.failing.to_dict() if self.failing else None,
            "base": self.base.to_dict() if self.base else None,
            "minimal": self.minimal.to_dict() if self.minimal else None,
            "one_smaller": [e.to_dict() for e in self.one_smaller],
            "tested": [e.to_dict() for e in self.tested],
        }


def clean_needed_at(rate: float, alpha: float) -> int:
    """Smallest n with (1 - rate)^n <= alpha: the clean attempts that rule out a failure at
    `rate` (core.rates.attempts_to_see, the one formula)."""
    return attempts_to_see(rate, alpha)


def rule_text(error: float, min_rate: float, rate_used: float, max_culprits: int) -> str:
    """The rule the answer rests on, in words, for reports."""
    raised = (
        f"p = {rate_used:.2f}, the 99% lower bound of the rate measured on the sets known to "
        f"reproduce (above the assumed minimum {min_rate:g})"
        if rate_used > min_rate
        else f"p = {min_rate:g}, the assumed minimum rate"
    )
    return (
        f"a candidate fails at its first matching failure; each clean attempt of a set "
        f"multiplies the odds of every culprit set it holds by 1 - p, {raised}; the answer "
        f"is the set of at most {plural(max_culprits, 'difference')} "
        f"whose posterior probability reached 1 - {error:g} (fewer differences likelier a "
        f'priori), that was itself seen failing, and against which "the passing side fails '
        f'too" had odds of at most {error:g} at any rate of at least p (the passing side '
        f"shown to pass); infra errors count neither way"
    )
