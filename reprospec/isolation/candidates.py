"""What isolation runs and what it concludes: probes, tallies, candidates, the passing rule.

Plain frozen values and pure functions; the search that uses them is `search.py`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from reprospec.rates import wilson

AttemptKind = Literal["match", "pass", "other", "infra"]
Level = Literal["rate", "search", "final"]
Role = Literal["failing", "base", "search", "minimal", "one-smaller"]
Status = Literal[
    "isolated",  # culprits found and checked
    "refused",  # the failing configuration does not reproduce often enough
    "budget",  # the attempt budget ran out before the answer was checked
    "base-reproduces",  # the passing configuration fails the same way
    "inconclusive",  # the observations contradict differences acting together
    "infra-error",  # a candidate could not be run
    "interrupted",  # stopped (Ctrl-C) before the answer was checked
]
ATTEMPT_KINDS: tuple[AttemptKind, ...] = ("match", "pass", "other", "infra")
_CHECK_ROLES = ("minimal", "one-smaller")


@dataclass(frozen=True)
class Settings:
    """The budget and error levels of one isolation."""

    budget: int = 100  # attempts in all, infra errors included
    alpha: float = 0.003  # error of one passing verdict of the answer's checks
    search_alpha: float = 0.1  # error of one passing verdict inside the search
    rate_matches: int = 1  # the failing configuration runs until this many matches...
    rate_attempts: int = 20  # ...or this many attempts
    chunk: int | None = None  # chunk size of step 2; None: sized for a pair
    max_infra: int = 3  # infra errors of one candidate in a row before giving up
    step: int = 4  # attempts per candidate per round: a pass is decided on the rate
    # measured by then, and a round's candidates run concurrently (the executor may
    # run more attempts at once than one candidate's step)


@dataclass(frozen=True)
class Tally:
    """What the attempts of one candidate did."""

    matched: int = 0
    passed: int = 0
    other: int = 0  # failed, but not as expected: not the bug, so clean
    infra: int = 0

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
            other=self.other + counts["other"],
            infra=self.infra + counts["infra"],
        )

    def to_dict(self) -> dict[str, Any]:
        low, high = wilson(self.matched, self.ran)
        return {
            "attempts": self.attempts,
            "matched": self.matched,
            "passed": self.passed,
            "other": self.other,
            "infra": self.infra,
            "rate": {"matched": self.matched, "attempts": self.ran, "low": low, "high": high},
        }


@dataclass(frozen=True)
class Probe:
    """Run up to `attempts` attempts of `candidate`; stop after `stop_after` matching failures."""

    candidate: frozenset[int]
    attempts: int
    stop_after: int = 1
    role: Role = "search"


@dataclass(frozen=True)
class Candidate:
    """One candidate set: the differences it applies, what its attempts did, its verdict."""

    applied: tuple[int, ...]
    role: Role
    tally: Tally
    reproduces: bool | None  # None: not decided
    clean_evidence: int = 0  # clean attempts its passing verdict rests on (see Isolation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": list(self.applied),
            "role": self.role,
            "reproduces": self.reproduces,
            "clean_evidence": self.clean_evidence,
            **self.tally.to_dict(),
        }


@dataclass(frozen=True)
class Rate:
    """The reproduction rate over the configurations known to reproduce."""

    matched: int
    attempts: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.matched / self.attempts if self.attempts else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "matched": self.matched,
            "attempts": self.attempts,
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True)
class IsolationResult:
    """The answer and everything it rests on."""

    status: Status
    culprits: tuple[int, ...]
    message: str
    attempts: int
    rate: Rate
    # 1 - sum over the one-smaller sets of P(that many clean attempts | it reproduces):
    # the probability that no passing check of the answer is wrong. 0 unless isolated.
    confidence: float
    clean_needed: int  # clean attempts a check's passing verdict needed at the end
    alpha: float
    failing: Candidate | None
    base: Candidate | None
    minimal: Candidate | None
    one_smaller: tuple[Candidate, ...]
    tested: tuple[Candidate, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "culprits": list(self.culprits),
            "message": self.message,
            "attempts": self.attempts,
            "rate": self.rate.to_dict(),
            "confidence": self.confidence,
            "rule": pass_rule(self.alpha, self.clean_needed),
            "failing": self.failing.to_dict() if self.failing else None,
            "base": self.base.to_dict() if self.base else None,
            "minimal": self.minimal.to_dict() if self.minimal else None,
            "one_smaller": [e.to_dict() for e in self.one_smaller],
            "tested": [e.to_dict() for e in self.tested],
        }


def clean_probability(matched: int, clean: int, n: int) -> float:
    """E[(1 - p)^n] for p ~ Beta(1 + matched, 1 + clean): n clean attempts from a reproducer."""
    a, b = 1 + matched, 1 + clean
    # B(a, b + n) / B(a, b) = prod_{i < n} (b + i) / (a + b + i)
    probability = 1.0
    for i in range(n):
        probability *= (b + i) / (a + b + i)
    return probability


def clean_needed(matched: int, clean: int, alpha: float, cap: int = 100_000) -> int:
    """Smallest n with E[(1 - p)^n] <= alpha for p ~ Beta(1 + matched, 1 + clean)."""
    a, b = 1 + matched, 1 + clean
    probability = 1.0
    for n in range(cap):
        if probability <= alpha:
            return n
        probability *= (b + n) / (a + b + n)
    return cap


def clean_needed_at(rate: float, alpha: float) -> int:
    """Smallest n with (1 - rate)^n <= alpha."""
    if rate >= 1:
        return 1
    if rate <= 0:
        return 100_000
    return max(1, math.ceil(math.log(alpha) / math.log(1 - rate) - 1e-9))


def pass_rule(alpha: float, needed: int) -> str:
    """The passing rule of the answer's checks in words, for reports."""
    return (
        f"a candidate fails at its first matching failure; a check passes after {needed} "
        f"clean attempts, the fewest n with (1-p)^n <= {alpha:g} for the measured rate p "
        f"(averaged over its uncertainty), so a check of a configuration that does reproduce "
        f"passes with probability at most {alpha:g}; infra errors count neither way"
    )


def chunk_size(count: int, culprits: int = 2) -> int:
    """Hwang's generalized binary splitting group size for `culprits` among `count`."""
    if count <= 2 * culprits - 2:
        return 1
    return int(2 ** max(0, math.floor(math.log2((count - culprits + 1) / culprits))))
