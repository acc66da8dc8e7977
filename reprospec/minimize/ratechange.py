"""Whether the minimized program fails clearly more or less often than the original.

The search accepts a candidate at its first failure that matches the expect with the
original's signature; where the original is flaky, a few more attempts then reject one
that fails clearly more often (search.py's point 7), and this check of the result is the
safety net for what they miss (a rate only somewhat higher, each step adding a little).
a user's race (two threads losing updates, 6 failures in 20) was cut down to
`raise RuntimeError(...)`, which fails every time: 5/5 read as "minimized", the threads
gone; a spec with no passing cell lets
the passes keep any program that fails so. The other way, a variable that made a race
frequent was dropped on one lucky failure and the result failed five times less often
than the original. The final check measures the result's rate and the search the
original's: where their Wilson 95% intervals do not overlap, the answer says so.

"Clearly" is the rule unperturbed.py compares the result with the original by, and
amplify a perturbation with its base: one's lower bound above the other's upper bound.
It cannot tell a race at 80% from a program failing every time: 20 of 20 (84%-100%)
overlaps 16 of 20 (58%-92%), and a user's race, whose `--lock false` branch the passes
cut out, read 20/20 against the original's 4/5 as nothing. So a flaky original (it came
back clean at times) whose result failed in every final attempt is said too (`every`):
where the original's measured rate r makes that many failures in a row unlikely,
r^n <= `EVERY_TIME_CHANCE` (5%, the intervals' own 95%): 16 of 20 against 20 of 20,
0.8^20 = 1%; not 18 of 20 (0.9^20 = 12%), which any 20 attempts could match.
"""

from __future__ import annotations

from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.rates import clearly_more
from reprospec.core.results import Rate
from reprospec.core.words import PrintedInterval, percent_bounds

# every: a flaky original's result failed in every final attempt (see above).
Direction = Literal["more", "less", "every"]
# The chance, at the original's rate, of the result's failures in a row, at most, that
# says a flaky failure became one that fails every time.
EVERY_TIME_CHANCE = 0.05


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
        if self.direction == "every":
            r = self.original.matched / self.original.attempts
            chance = r**self.result.attempts
            return (
                f"the result failed in EVERY one of its {self.result.attempts} final attempts "
                f"({rate_text(self.result)}), where the original came back clean in "
                f"{self.original.attempts - self.original.matched} of its "
                f"{self.original.attempts} ({rate_text(self.original)}; at its {r:.0%}, "
                f"{self.result.attempts} failures in a row happen {_chance(chance)} of the "
                "time): a flaky failure became one that fails every time, a strong sign that "
                "the passes cut out the bug (a race, a condition) and kept another failure of "
                "the same signature; compare the diff and the failure messages (where it "
                "printed any) in minimize.md"
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
    if every_time(original, result):
        return RateChange("every", original, result)
    return None


def every_time(original: Rate, result: Rate) -> bool:
    """A flaky original (failing, and clean at times) whose result failed in every one of
    its attempts, that many in a row being unlikely at the original's rate (at most
    `EVERY_TIME_CHANCE`)."""
    if not 0 < original.matched < original.attempts or result.matched != result.attempts:
        return False
    return result.attempts > 0 and (
        (original.matched / original.attempts) ** result.attempts <= EVERY_TIME_CHANCE
    )


def _chance(value: float) -> str:
    """`1%`, `<1%`: a small chance in whole percents."""
    return f"{value:.0%}" if value >= 0.005 else "<1%"


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
