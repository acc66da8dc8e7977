"""The belief of an isolation: which set of differences is the culprit, given what ran.

Pure arithmetic over bit masks (difference i is bit i); `search.py` drives it.

A hypothesis S is "the failure needs exactly the differences in S, together":
every configuration that holds S fails as expected with the same probability p
per attempt, every other one never does. The hypotheses are every S of at most
`size` differences (the empty set is "the passing side fails too"), a priori
each size j with weight proportional to 1/j, shared equally by the sets of that
size: one difference is the likeliest explanation, three together the least.

What an attempt of a configuration C says:
  - a matching failure: every S not inside C is impossible (no false positives:
    a configuration without the culprits never fails as expected);
  - a clean attempt (a pass, or a different failure): every S inside C is
    multiplied by (1 - p), the chance that it hid. Infra errors say nothing.

So the weight of S is prior(S) x (1 - p)^(clean attempts of sets holding S)
while S is possible, under the flaky reading. The rate is learned from the
attempts, as bisect learns it (bisect/search.py): beside "flaky at p" a second
reading, "deterministic" (every configuration holding S fails every time),
competes per hypothesis with prior weight `DETERMINISTIC_PRIOR`. Under it S
weighs prior(S) while no configuration holding S came back clean, and nothing
after: one clean attempt rules S out alone, as a deterministic search assumes.
Every matching failure lies inside every possible S, so the F failures seen
multiply the flaky reading of all of them by p^F: while the failures never
flaked, each one makes the deterministic reading 1/p likelier, and a failure
that looked deterministic and then flakes (a clean attempt of a set that
failed before) leaves every possible S with a clean attempt, so the flaky
reading alone weighs them, earlier attempts included.

The next configuration to try is the one whose attempt tells most about S
(mutual information), searched by flipping one difference at a time from two
starts; `choose` explains why that is the right measure here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from reprospec.core.frozen import frozen
from reprospec.core.rates import log_sum

# Past this many hypotheses the largest size is lowered (the choice is O(hypotheses)).
MAX_HYPOTHESES = 5000
EMPTY_PRIOR = 0.01  # "the passing side fails too": possible, and cheap to rule out
NEGLIGIBLE = 1e-9  # posterior below this plays no part in choosing a configuration
# The prior weight of "the failure is deterministic" against "flaky at p", as bisect's.
DETERMINISTIC_PRIOR = 0.5


def largest_size(count: int, wanted: int, cap: int = MAX_HYPOTHESES) -> int:
    """The largest culprit size <= `wanted` whose hypotheses (all sizes up to it) fit `cap`."""
    size = max(1, min(wanted, count))
    while size > 1 and sum(math.comb(count, j) for j in range(size + 1)) > cap:
        size -= 1
    return size


def information(mass: float, rate: float) -> float:
    """Bits an attempt tells about the culprit when `mass` of the belief lies inside it.

    Inside: it fails with probability `rate`; outside: it never does. The mutual
    information between the attempt and the culprit is h(rate * mass) - mass * h(rate).
    """
    return _entropy(rate * mass) - mass * _entropy(rate)


def _entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def mask_of(items: Sequence[int] | frozenset[int]) -> int:
    mask = 0
    for i in items:
        mask |= 1 << i
    return mask


def members(mask: int) -> frozenset[int]:
    return frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)


@frozen
class Belief:
    """The posterior at one rate: (hypothesis index, probability), most probable first.

    `fails[k]` is the chance that an attempt of a configuration holding the k-th
    ranked set fails as expected, were that set the culprit: 1 under the
    deterministic reading, p under the flaky one, mixed by their posterior odds.
    """

    ranked: tuple[tuple[int, float], ...]
    fails: tuple[float, ...] = ()

    @property
    def top(self) -> tuple[int, float]:
        return self.ranked[0]


class Hypotheses:
    """Every culprit set of at most `size` differences among `count`, with its evidence."""

    def __init__(self, count: int, size: int) -> None:
        self.count = count
        self.size = size
        self.masks: list[int] = []
        self.log_prior: list[float] = []
        # A few thousand sets: plain lists of ints beat anything fancier here.
        for j in range(size + 1):
            n_j = math.comb(count, j)
            if j == 0:
                weight = EMPTY_PRIOR
            else:
                share = (1 / j) / sum(1 / i for i in range(1, size + 1))
                weight = (1 - EMPTY_PRIOR) * share / n_j
            for combo in itertools.combinations(range(count), j):
                self.masks.append(mask_of(combo))
                self.log_prior.append(math.log(weight))
        self.bits = [tuple(i for i in range(count) if m >> i & 1) for m in self.masks]
        self.clean = [0] * len(self.masks)  # clean attempts of tested sets holding it
        self.alive = list(range(len(self.masks)))  # not ruled out by a matching failure
        self.matched = 0  # matching failures: each lies inside every possible set

    def record(self, candidate: int, matched: int, clean: int) -> None:
        """Attempts of `candidate`: `matched` matching failures and `clean` clean ones."""
        self.matched += matched
        if matched:
            self.alive = [i for i in self.alive if self.masks[i] & ~candidate == 0]
        if clean:
            for i in self.alive:
                if self.masks[i] & ~candidate == 0:
                    self.clean[i] += clean

    def belief(
        self,
        rate: float,
        clean: Sequence[int] | None = None,
        deterministic: float = DETERMINISTIC_PRIOR,
    ) -> Belief:
        """The posterior, the two readings of the rate summed per set.

        prior(S) x (w [no clean attempt holds S] + (1 - w) p^F (1 - p)^clean(S)),
        w the deterministic reading's prior weight (0: the flaky reading alone), F the
        matching failures. `clean` replaces the counts (the search's what-if, a round of
        passes ahead).
        """
        counts = self.clean if clean is None else clean
        log_pass = math.log(1 - rate)
        flaky_base = self.matched * math.log(rate) + math.log1p(-deterministic)
        log_det = math.log(deterministic) if deterministic > 0 else -math.inf
        # Under S with no clean attempt: det = w, flaky = (1 - w) p^F; the odds decide
        # how likely the next attempt of a set holding S is to fail.
        det_share = 0.0
        if log_det > -math.inf:
            det_share = 1 / (1 + math.exp(flaky_base - log_det))
        fresh = flaky_base  # the log weight of no clean attempt, both readings summed
        if log_det > -math.inf:
            fresh = log_sum((log_det, flaky_base))
        logs = [
            (
                i,
                self.log_prior[i]
                + (fresh if counts[i] == 0 else flaky_base + counts[i] * log_pass),
            )
            for i in self.alive
        ]
        best = max(w for _, w in logs)
        weights = [(i, math.exp(w - best)) for i, w in logs]
        total = sum(w for _, w in weights)
        # Ties (equal weights) go to the smaller set, then to the lower numbers.
        ranked = sorted(
            ((i, w / total) for i, w in weights), key=lambda t: (-t[1], len(self.bits[t[0]]), t[0])
        )
        fresh_fails = det_share + (1 - det_share) * rate
        fails = tuple(fresh_fails if counts[i] == 0 else rate for i, _ in ranked)
        return Belief(tuple(ranked), fails)

    def base_odds(
        self,
        answer: int,
        floor: float,
        matched: int = 0,
        clean: int = 0,
        deterministic: float = DETERMINISTIC_PRIOR,
    ) -> float:
        """The odds of "the passing side fails too" (the empty set) against `answer`.

        At even prior, on the evidence alone: the belief's prior gives the empty set
        `EMPTY_PRIOR`, cheap to rule out among many sets, but with one difference it is
        the only rival, and that prior alone named the difference after a clean attempt
        or two of the passing side, which a failure of 25% gives half the time by
        chance. And at the rate most favourable to it, any rate at or
        above `floor` (the rate the search uses: the assumed minimum, raised by what
        was measured): a flaky base at 0.5 can fail five times in a row, which the
        search's lower rate would call a 1-in-400 run. While `answer` has a clean
        attempt that worst rate is the floor and the odds are (1 - p)^n, n the clean
        attempts of sets without `answer` (the base's, and its one-smaller sets');
        while its failures may still be deterministic they are at most
        q^F (1 - q)^n over q, at least 2^-(F + n). `matched` and `clean` add what-if
        attempts: matching failures of `answer`, clean ones of the base.
        """
        empty = self.clean[self.masks.index(0)] + clean
        held = self.clean[self.masks.index(answer)]
        failures = self.matched + matched
        log_det = math.log(deterministic) if deterministic > 0 else -math.inf
        rates = {floor, *(floor + (0.99 - floor) * k / 64 for k in range(65))}
        if failures + empty:
            rates.add(min(0.99, max(floor, failures / (failures + empty))))
        worst = -math.inf
        for rate in rates:
            flaky = failures * math.log(rate) + math.log1p(-deterministic)
            logs = []
            for count in (empty, held):
                if count:
                    logs.append(flaky + count * math.log(1 - rate))
                elif log_det > -math.inf:
                    logs.append(log_sum((log_det, flaky)))
                else:
                    logs.append(flaky)
            worst = max(worst, logs[0] - logs[1])
        return math.exp(worst)

    def inside(self, belief: Belief, candidate: int) -> float:
        """The probability that `candidate` holds the culprit: it would reproduce."""
        return sum(p for i, p in belief.ranked if self.masks[i] & ~candidate == 0)

    def choose(self, belief: Belief, rate: float, universe: int) -> int:
        """The configuration (a subset of `universe`) whose next attempt tells most.

        Mutual information between one attempt and the culprit: with q the chance that
        the attempt fails (the belief inside the configuration, each set weighted by
        the chance f(S) that it fails were S the culprit) it is
        h(q) - sum over S inside of P(S) h(f(S)). For one rate p it depends only on
        the mass m inside: h(p m) - m h(p). At p = 1 it is largest at m = 1/2
        (bisection); at lower rates below 1/2 (0.39 at p = 0.3), since a pass says
        little and a failure much. A set that may still be deterministic (f near 1)
        tells most when tested again alone: that is how the search learns the rate.
        One attempt at a time is the greedy rule of adaptive group testing; the
        stopping rule, not this choice, carries the error guarantee. Hill-climbing on
        single flips from the most probable set and from the universe; the smaller
        configuration wins ties (its failure rules out more).
        """
        top_mask = self.masks[belief.top[0]]
        fails = belief.fails or (rate,) * len(belief.ranked)
        live = [
            (self.masks[i], self.bits[i], p, p * f, p * _entropy(f))
            for (i, p), f in zip(belief.ranked, fails, strict=True)
            if p >= NEGLIGIBLE
        ]
        flips = [i for i in range(self.count) if universe >> i & 1]
        best: tuple[float, int, int] | None = None
        for start in dict.fromkeys((top_mask & universe, universe)):
            value, candidate = self._climb(start, live, flips)
            key = (value, -bin(candidate).count("1"), -candidate)
            if best is None or key > best:
                best = key
        assert best is not None
        return -best[2]

    def _climb(
        self,
        candidate: int,
        live: Sequence[tuple[int, tuple[int, ...], float, float, float]],
        flips: Sequence[int],
    ) -> tuple[float, int]:
        # Live hypotheses lie inside the universe (every failing set holds them), so
        # every difference they name is one of `flips`. Per set: its mass, the mass
        # times its failure chance (q's share) and times that chance's entropy.
        n = self.count
        while True:
            mass = fail = noise = 0.0
            lose = [[0.0, 0.0, 0.0] for _ in range(n)]  # leaving if the difference is dropped
            gain = [[0.0, 0.0, 0.0] for _ in range(n)]  # entering if it is added
            for mask, bits, p, q, h in live:
                outside = mask & ~candidate
                if outside == 0:
                    mass += p
                    fail += q
                    noise += h
                    for i in bits:
                        row = lose[i]
                        row[0] += p
                        row[1] += q
                        row[2] += h
                elif outside & (outside - 1) == 0:
                    row = gain[outside.bit_length() - 1]
                    row[0] += p
                    row[1] += q
                    row[2] += h
            value = _entropy(fail) - noise
            best_value, best_flip = value, -1
            for i in flips:
                held = candidate >> i & 1
                if held:
                    moved = _entropy(fail - lose[i][1]) - (noise - lose[i][2])
                else:
                    moved = _entropy(fail + gain[i][1]) - (noise + gain[i][2])
                # Strictly better; or, while nothing is, dropping what no live set needs.
                if moved > best_value + 1e-12 or (
                    held and best_flip < 0 and lose[i][0] == 0.0 and moved >= best_value - 1e-12
                ):
                    best_value, best_flip = moved, i
            if best_flip < 0:
                return value, candidate
            candidate ^= 1 << best_flip
