"""rates.attempts_to_decide: how many attempts at the rate seen settle an undecided cell."""

from __future__ import annotations

from reprospec.core.rates import attempts_to_decide, rate_at, rate_decided
from reprospec.core.units import RateBound


def test_the_fewest_attempts_that_decide_a_rate_at_the_rate_seen() -> None:
    at_least = RateBound(">=", 0.1)
    needed = attempts_to_decide(1 / 3, at_least, 3, 10_000)
    assert needed is not None
    assert needed > 3
    assert rate_decided(rate_at(1 / 3, needed), at_least)
    assert not any(rate_decided(rate_at(1 / 3, n), at_least) for n in range(4, needed))


def test_none_decides_a_rate_seen_at_the_bound_or_past_the_limit() -> None:
    assert attempts_to_decide(0.5, RateBound(">=", 0.5), 2, 10_000) is None
    needed = attempts_to_decide(1 / 3, RateBound(">=", 0.1), 3, 10_000)
    assert needed is not None
    assert attempts_to_decide(1 / 3, RateBound(">=", 0.1), 3, needed - 1) is None
