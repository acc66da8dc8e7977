"""Reproduction rates: matched/attempts with a Wilson 95% score interval, and bounds on them.

A bound is judged on the interval, not on the observed fraction: `>=0.3` is
met when the whole interval lies at or above 0.3, failed when the whole
interval lies below it, and undecided while the interval straddles it (more
attempts narrow it). `==` is exact (`==1`: every attempt): it is judged on the
observed fraction, since no interval is ever a single point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from reprospec.core.results import Rate
from reprospec.core.units import RateBound

RateJudgement = Literal["met", "failed", "undecided"]


def log_sum(logs: Sequence[float]) -> float:
    """log(sum(exp(v) for v in logs)), without overflow: the log weights of competing
    readings of a failure's rate (bisect's and isolate's searches), added."""
    top = max(logs)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in logs))


def wilson(matched: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for matched/n; (0, 1) when nothing was observed.

    Counts may be fractional (isolate weighs attempts by the belief that they count).
    """
    if n <= 0:
        return 0.0, 1.0
    p = matched / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0/n the low end is 0 and at n/n the high end 1 exactly; center - half rounds to
    # 1e-17 or 1 - 1e-16 at some n, which judged 0/11 as meeting `>0` (reproduced with no
    # failure seen) and 6/6 as meeting `<1`.
    low = 0.0 if matched <= 0 else max(0.0, center - half)
    high = 1.0 if matched >= n else min(1.0, center + half)
    return low, high


def rate_floor(bound: RateBound | None) -> float | None:
    """`expect.rate: ">=0.3"` says a reproducing configuration fails at least that often."""
    if bound is not None and bound.op in (">=", ">") and 0 < bound.value < 1:
        return float(bound.value)
    return None


def rate_of(matched: int, n: int) -> Rate:
    """matched/n with its Wilson 95% interval."""
    low, high = wilson(matched, n)
    return Rate(matched=matched, attempts=n, low=low, high=high)


def clearly_more(rate: Rate, than: Rate) -> bool:
    """`rate` fails clearly more often than `than`: its lower bound above the other's
    upper bound, their 95% intervals apart (no failure seen is never more). minimize's
    result against the original, compare's two runs of a cell, amplify's arm against its
    base."""
    return rate.matched > 0 and than.attempts > 0 and rate.low > than.high


def rate_satisfied(rate: Rate, bound: RateBound) -> bool:
    """Whether the observed fraction meets the bound (no attempts: never)."""
    if rate.attempts == 0:
        return False
    return bound.holds(rate.matched / rate.attempts)


def judge_rate(rate: Rate, bound: RateBound) -> RateJudgement:
    """`met` or `failed` when the whole 95% interval is on one side of the bound, else `undecided`.

    `==` bounds compare the observed fraction (always decided once something ran).
    """
    if rate.attempts == 0:
        return "undecided"
    if bound.op == "==":
        return "met" if rate_satisfied(rate, bound) else "failed"
    low, high, value = rate.low, rate.high, bound.value
    met = {">=": low >= value, ">": low > value, "<=": high <= value, "<": high < value}[bound.op]
    failed = {">=": high < value, ">": high <= value, "<=": low > value, "<": low >= value}[
        bound.op
    ]
    if met:
        return "met"
    if failed:
        return "failed"
    return "undecided"


def rate_decided(rate: Rate, bound: RateBound) -> bool:
    """Whether the interval lies wholly on one side of the threshold: more attempts won't flip it.

    For `run.repeat: auto`: keep adding attempts while this is False (up to a cap).
    """
    return judge_rate(rate, bound) != "undecided"


def rate_at(seen: float, attempts: int) -> Rate:
    """The rate `attempts` would show at the fraction `seen`: the interval of that fraction
    itself (a fractional count, which `wilson` takes), the count rounded. Where more
    attempts at the rate seen would leave a cell. At one fraction the interval only narrows
    as attempts grow, so a bound it is decided against stays decided, which the interval of
    a rounded count was not (2 of 5 read 1/3 as 0.4; 2% decided `<=0.01` at 275 attempts,
    not at 276 to 374)."""
    low, high = wilson(seen * attempts, attempts)
    return Rate(matched=round(seen * attempts), attempts=attempts, low=low, high=high)


def attempts_to_decide(
    seen: float, bound: RateBound, ran: int, limit: int
) -> tuple[int, RateJudgement] | None:
    """The fewest attempts, more than `ran` and at most `limit`, after which a cell at the
    fraction `seen` is decided against `bound` (`rate_at`), and which way: what `--repeat`
    (or `run.repeat: auto`) takes to settle an undecided cell. None where none up to
    `limit` does, the rate seen at or near the bound, and where none ever does: no failure
    seen against `>0` (one failure meets it, no clean attempts refute it), no clean attempt
    against `<1`. Found by doubling, then halving (`rate_at` stays decided once it is): a
    walk of every count to 10,000 took 20 ms a cell at the end of a run."""
    if (seen <= 0 and bound.op == ">" and bound.value <= 0) or (
        seen >= 1 and bound.op == "<" and bound.value >= 1
    ):
        return None

    def judged(attempts: int) -> RateJudgement:
        return judge_rate(rate_at(seen, attempts), bound)

    if limit <= ran or judged(limit) == "undecided":
        return None
    below, step = ran, 1  # `below`: undecided (the cell's own count, or one found so)
    while (above := min(ran + step, limit)) < limit and judged(above) == "undecided":
        below, step = above, step * 2
    while above - below > 1:
        middle = (below + above) // 2
        if judged(middle) == "undecided":
            below = middle
        else:
            above = middle
    return above, judged(above)


def refuting_bound(matched: int, attempts: int) -> tuple[float, int]:
    """For a failure seen in `matched` of `attempts`, where `expect.rate: '>0'` (met by one
    match, refuted by no count of clean attempts) cannot tell a fix: a bound half the
    observed rate (at least 0.01) and the clean attempts that would refute it (the 95%
    interval's high end of 0/n below it). capture's note beside `rate`, and amplify's
    beside the amplified spec's."""
    floor = max(0.01, int(matched / attempts * 50) / 100)
    return floor, math.ceil(3.84 * (1 - floor) / floor) + 1


def attempts_to_see(rate: float, error: float) -> int:
    """Attempts after which a failure at `rate` per attempt has shown itself with
    probability 1 - `error`: the smallest n with (1 - rate)^n <= error, and so the clean
    attempts that rule it out at that error. Isolate's, minimize's and bisect's (each its
    own error); a rate of 0 is never seen (100,000, beyond any budget)."""
    if rate >= 1:
        return 1
    if rate <= 0:
        return 100_000
    return max(1, math.ceil(math.log(error) / math.log(1 - rate) - 1e-9))
