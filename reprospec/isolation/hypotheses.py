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
while S is possible. The next configuration to try is the one whose attempt
tells most about S (mutual information), searched by flipping one difference at
a time from two starts; `choose` explains why that is the right measure here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

# Past this many hypotheses the largest size is lowered (the choice is O(hypotheses)).
MAX_HYPOTHESES = 5000
EMPTY_PRIOR = 0.01  # "the passing side fails too": possible, and cheap to rule out
NEGLIGIBLE = 1e-9  # posterior below this plays no part in choosing a configuration


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


@dataclass(frozen=True)
class Belief:
    """The posterior at one rate: (hypothesis index, probability), most probable first."""

    ranked: tuple[tuple[int, float], ...]

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

    def record(self, candidate: int, matched: int, clean: int) -> None:
        """Attempts of `candidate`: `matched` matching failures and `clean` clean ones."""
        if matched:
            self.alive = [i for i in self.alive if self.masks[i] & ~candidate == 0]
        if clean:
            for i in self.alive:
                if self.masks[i] & ~candidate == 0:
                    self.clean[i] += clean

    def belief(self, rate: float, clean: Sequence[int] | None = None) -> Belief:
        """The posterior: prior(S) x (1 - rate)^(clean attempts of the sets holding S).

        `clean` replaces the counts (the search's what-if, a round of passes ahead).
        """
        counts = self.clean if clean is None else clean
        log_pass = math.log(1 - rate)
        logs = [(i, self.log_prior[i] + counts[i] * log_pass) for i in self.alive]
        best = max(w for _, w in logs)
        weights = [(i, math.exp(w - best)) for i, w in logs]
        total = sum(w for _, w in weights)
        # Ties (equal weights) go to the smaller set, then to the lower numbers.
        ranked = sorted(
            ((i, w / total) for i, w in weights), key=lambda t: (-t[1], len(self.bits[t[0]]), t[0])
        )
        return Belief(tuple(ranked))

    def inside(self, belief: Belief, candidate: int) -> float:
        """The probability that `candidate` holds the culprit: it would reproduce."""
        return sum(p for i, p in belief.ranked if self.masks[i] & ~candidate == 0)

    def choose(self, belief: Belief, rate: float, universe: int) -> int:
        """The configuration (a subset of `universe`) whose next attempt tells most.

        Mutual information between one attempt and the culprit, which depends only on
        the mass m of the belief inside the configuration: h(p m) - m h(p). At p = 1
        it is largest at m = 1/2 (bisection); at lower rates below 1/2 (0.39 at p =
        0.3), since a pass says little and a failure much. One attempt at a time is
        the greedy rule of adaptive group testing; the stopping rule, not this choice,
        carries the error guarantee. Hill-climbing on single flips from the most
        probable set and from the universe; the smaller configuration wins ties (its
        failure rules out more).
        """
        top_mask = self.masks[belief.top[0]]
        live = [(self.masks[i], self.bits[i], p) for i, p in belief.ranked if p >= NEGLIGIBLE]
        flips = [i for i in range(self.count) if universe >> i & 1]
        best: tuple[float, int, int] | None = None
        for start in dict.fromkeys((top_mask & universe, universe)):
            value, candidate = self._climb(start, live, flips, rate)
            key = (value, -bin(candidate).count("1"), -candidate)
            if best is None or key > best:
                best = key
        assert best is not None
        return -best[2]

    def _climb(
        self,
        candidate: int,
        live: Sequence[tuple[int, tuple[int, ...], float]],
        flips: Sequence[int],
        rate: float,
    ) -> tuple[float, int]:
        # Live hypotheses lie inside the universe (every failing set holds them), so
        # every difference they name is one of `flips`.
        while True:
            inside = 0.0
            lose = [0.0] * self.count  # mass leaving if the difference is dropped
            gain = [0.0] * self.count  # mass entering if it is added
            for mask, bits, p in live:
                outside = mask & ~candidate
                if outside == 0:
                    inside += p
                    for i in bits:
                        lose[i] += p
                elif outside & (outside - 1) == 0:
                    gain[outside.bit_length() - 1] += p
            value = information(inside, rate)
            best_value, best_flip = value, -1
            for i in flips:
                held = candidate >> i & 1
                moved = information(inside - lose[i] if held else inside + gain[i], rate)
                # Strictly better; or, while nothing is, dropping what no live set needs.
                if moved > best_value + 1e-12 or (
                    held and best_flip < 0 and lose[i] == 0.0 and moved >= best_value - 1e-12
                ):
                    best_value, best_flip = moved, i
            if best_flip < 0:
                return value, candidate
            candidate ^= 1 << best_flip
