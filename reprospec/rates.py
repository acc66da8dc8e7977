"""Reproduction rates: matched/attempts with a Wilson 95% score interval, and bounds on them."""

from __future__ import annotations

import math

from reprospec.models import Rate
from reprospec.units import RateBound


def wilson(matched: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for matched/n; (0, 1) when nothing was observed."""
    if n <= 0:
        return 0.0, 1.0
    p = matched / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def rate_of(matched: int, n: int) -> Rate:
    """matched/n with its Wilson 95% interval."""
    low, high = wilson(matched, n)
    return Rate(matched=matched, attempts=n, low=low, high=high)


def rate_satisfied(rate: Rate, bound: RateBound) -> bool:
    """Whether the observed fraction meets the bound (no attempts: never)."""
    if rate.attempts == 0:
        return False
    return bound.holds(rate.matched / rate.attempts)


def rate_decided(rate: Rate, bound: RateBound) -> bool:
    """Whether the interval lies wholly on one side of the threshold: more attempts won't flip it.

    For `run.repeat: auto`: keep adding attempts while this is False (up to a cap).
    """
    return bound.value < rate.low or bound.value > rate.high


