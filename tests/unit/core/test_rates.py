"""rates.attempts_to_decide: how many attempts at the rate seen settle an undecided cell."""

from __future__ import annotations

import pytest

from reprospec.core import rates
from reprospec.core.rates import attempts_to_decide, judge_rate, rate_at, rate_decided
from reprospec.core.units import RateBound, parse_rate


def test_the_fewest_attempts_that_decide_a_rate_at_the_rate_seen() -> None:
    at_least = RateBound(">=", 0.1)
    decided = attempts_to_decide(1 / 3, at_least, 3, 10_000)
    assert decided is not None
    needed, judged = decided
    assert needed > 3
    assert judged == "met" == judge_rate(rate_at(1 / 3, needed), at_least)
    assert not any(rate_decided(rate_at(1 / 3, n), at_least) for n in range(4, needed))


def test_none_decides_a_rate_seen_at_the_bound_or_past_the_limit() -> None:
    assert attempts_to_decide(0.5, RateBound(">=", 0.5), 2, 10_000) is None
    decided = attempts_to_decide(1 / 3, RateBound(">=", 0.1), 3, 10_000)
    assert decided is not None
    assert attempts_to_decide(1 / 3, RateBound(">=", 0.1), 3, decided[0] - 1) is None


@pytest.mark.parametrize(
    ("seen", "bound", "ran"),
    [(0.02, "<=0.01", 50), (0.23, ">=0.2", 100), (0.98, ">0.99", 50), (0.0125, "<0.01", 400)],
)
def test_the_search_is_the_walk_of_every_count(seen: float, bound: str, ran: int) -> None:
    # The interval at the fraction seen only narrows as attempts grow: halving finds what
    # walking each count finds. (Of a rounded count's, 2% decided `<=0.01` at 275 attempts,
    # not at 276 to 374.)
    at = parse_rate(bound)
    walked = next((n for n in range(ran + 1, 10_001) if rate_decided(rate_at(seen, n), at)), None)
    found = attempts_to_decide(seen, at, ran, 10_000)
    assert (found[0] if found else None) == walked
    assert walked is None or all(
        rate_decided(rate_at(seen, n), at) for n in range(walked, min(10_001, walked * 2))
    )


def test_the_search_reads_few_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every count up to 10,000 was read, 20 ms a cell, at the end of every run with one.
    calls: list[int] = []
    wilson = rates.wilson

    def counted(matched: float, n: float) -> tuple[float, float]:
        calls.append(1)
        return wilson(matched, n)

    monkeypatch.setattr(rates, "wilson", counted)
    assert attempts_to_decide(21 / 200, RateBound(">=", 0.1), 200, 10_000) is None
    decided = attempts_to_decide(43 / 400, RateBound(">=", 0.1), 400, 10_000)
    assert decided == (6147, "met")
    assert len(calls) < 60
