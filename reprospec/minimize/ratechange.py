"""Whether the minimized program fails clearly more or less often than the original.

The search accepts a candidate at its first failure that matches the expect with the
original's signature; where the original is flaky, a few more attempts then reject one
that fails clearly more often (search.py's point 7), and this check of the result is the
safety net for what they miss (a rate only somewhat higher, each step adding a little).
nu20's race (two threads losing updates, 6 failures in 20) was cut down to
`raise RuntimeError(...)`, which fails every time: 5/5 read as "minimized", the threads
gone; a spec with no passing cell lets
the passes keep any program that fails so. The other way, a variable that made a race
frequent was dropped on one lucky failure and the result failed five times less often
than the original. The final check measures the result's rate and the search the
original's: where their Wilson 95% intervals do not overlap, the answer says so.

"Clearly" is the rule unperturbed.py compares the result with the original by, and
amplify a perturbation with its base: one's lower bound above the other's upper bound.
"""

from __future__ import annotations

from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.rates import clearly_more
from reprospec.core.results import Rate
from reprospec.core.words import PrintedInterval, percent_bounds

Direction = Literal["more", "less"]


@frozen
class RateChange:
    """The result's rate against the original's, where their intervals are apart."""

    direction: Direction
    original: Rate
    result: Rate

    def warning(self) -> str:
        """The console's `warning:` line (and minimize.md's, at its top)."""
        both = (
            f"{rate_text(self.result)} against the original's {rate_text(self.original)}, "
            "their 95% intervals apart"
        )
        if self.direction == "more":
            return (
                f"the result fails clearly MORE often than the original ({both}): a strong "
                "sign that the passes cut out the bug and kept another failure of the same "
                "signature; compare the diff and the failure messages (where it printed any) in "
                "minimize.md"
            )
        return (
            f"the result fails clearly LESS often than the original ({both}): a weaker repro; "
            "the diff in minimize.md shows what went (a variable or a line that made the "
            "failure frequent)"
        )

    def to_dict(self) -> JsonObject:
        return {
            "direction": self.direction,
            "original": self.original.to_dict(),
            "result": self.result.to_dict(),
        }


def rate_change(original: Rate, result: Rate) -> RateChange | None:
    """The clear change from the original's rate to the result's, None where the two
    intervals overlap or a side ran nothing."""
    if original.attempts == 0 or result.attempts == 0:
        return None
    if clearly_more(result, original):
        return RateChange("more", original, result)
    if clearly_more(original, result):
        return RateChange("less", original, result)
    return None


def rate_text(rate: Rate, *, named: bool = False) -> str:
    """`3/20 (5%-36%)`, minimize's words for a rate wherever it says one (the console, its
    warnings, minimize.md); `named`: the interval says what it is, `(5%-36%, Wilson 95%)`."""
    return (
        f"{rate.matched}/{rate.attempts} ({interval_text(rate)}{', Wilson 95%' if named else ''})"
    )


def printed_interval(rate: Rate) -> PrintedInterval:
    """The rate's 95% interval as printed (core.words.percent_bounds: isolate's spelling too)."""
    return percent_bounds(rate.low, rate.high)


def interval_text(rate: Rate) -> str:
    """`5%-36%`: the rate's 95% interval, in whole percents rounded outward."""
    return str(printed_interval(rate))
