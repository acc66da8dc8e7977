"""The spec format's small values, parsed once and formatted by the same module.

Durations (`90s`, `5m`), sizes (`64m`, `4g`), step ranges (`7`, `6..8`) and
rate bounds (`>=0.3`) are read here from the spec, the command line and
results.json, and written back here for reports and results, so a value
reads the same everywhere it appears.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Literal, cast

from reprospec.core.frozen import frozen

RateOp = Literal[">=", ">", "<=", "<", "=="]

# Patterns as strings, compiled on first use (re caches them): a start-up that parses none
# of these values (`validate` of most specs) compiles none.
# A number as Python and YAML write one, an exponent too (`--timeout 1e9`, a number of
# seconds as the docs say, and `1e+09s`, which format_duration writes of it), then its unit.
_DURATION = r"^\s*((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(ms|s|m|h)?\s*$"
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_SIZE = r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*"
_SIZE_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_STEP = r"^\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?$"
_RATE = r"^\s*(>=|>|<=|<|==)\s*(\d*\.?\d+)\s*$"


@frozen
class StepRange:
    """`7` or `6..8`: the steps an expectation accepts (both ends included)."""

    low: int
    high: int

    def __contains__(self, step: object) -> bool:
        return isinstance(step, int) and self.low <= step <= self.high

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}..{self.high}"

    def to_json(self) -> int | str:
        """One step stays an integer (as an outcome's step is); a range is `"A..B"`."""
        return self.low if self.low == self.high else str(self)


@frozen
class RateBound:
    """`">=0.3"`: the fraction of attempts that must match."""

    op: RateOp
    value: float

    def __str__(self) -> str:
        return f"{self.op}{self.value:g}"

    def holds(self, fraction: float) -> bool:
        """Whether `fraction` satisfies the bound."""
        return {
            ">=": fraction >= self.value,
            ">": fraction > self.value,
            "<=": fraction <= self.value,
            "<": fraction < self.value,
            "==": math.isclose(fraction, self.value, abs_tol=1e-9),
        }[self.op]


def parse_duration(value: object) -> float:
    """`'90s'`, `'5m'`, `'1h'`, `'1.5s'`, `'250ms'` or a number of seconds (`'600'`,
    `'1e9'`, an int or a float) -> seconds (>= 0). The one parser of every duration, the
    spec's and the verbs' (`--timeout`, options.timeout_seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = re.match(_DURATION, value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f"expected a duration like 90s, 5m or 1h, got {value!r}")
        seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"expected a finite duration > 0, got {value!r}")
    return seconds


def positive_duration(value: object) -> float:
    """`parse_duration`, refusing zero too: a per-attempt timeout (`--timeout`, a bundle's
    timeout) of no time would end every attempt before it starts."""
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError(f"expected a duration > 0, got {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds as the spec writes them: `250ms`, `90s`, `5m`, `1h`, `1.5s`."""
    if seconds < 1 and seconds * 1000 == int(seconds * 1000):
        return f"{int(seconds * 1000)}ms"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def utc_stamp(epoch: float) -> str:
    """A time (epoch seconds) as a listing prints it: UTC, ISO 8601 to the second
    (`2026-12-07T15:03:03+00:00`): `envs list`'s and the docker runner's image cache's."""
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


def parse_size(value: object) -> int:
    """`64m`, `4g`, `512MiB`, `1.5g` or a byte count -> bytes (binary units, as docker uses)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"not a size: {value!r}")
        return int(value)
    match = re.fullmatch(_SIZE, str(value).lower())
    if not match:
        raise ValueError(f"not a size: {value!r} (expected e.g. 64m, 4g)")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


def format_size(n: object, units: Sequence[str] = ("B", "KiB", "MiB", "GiB", "TiB")) -> str:
    """Bytes for people: `512 B`, `64.0 MiB`, `1.5 GiB` (empty for anything not a number), in
    the unit that fits: a size that rounds to 1024 of a unit is said in the next (1048575
    is `1.0 MiB`, not `1024.0 KiB`). `units`: the labels, bytes first, each 1024 of the one
    before (`envs` says `KB`, `MB`, `GB`: venvs/cache.human_size); the last has no bound."""
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return ""
    size = float(n)
    for unit in units[:-1]:
        if round(size, 0 if unit == units[0] else 1) < 1024:
            return f"{size:.0f} {unit}" if unit == units[0] else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} {units[-1]}"


def parse_step(value: object) -> StepRange:
    """`7` or `'7'` -> 7..7; `'6..8'` -> 6..8; a reversed range is an error."""
    if isinstance(value, int) and not isinstance(value, bool):
        return StepRange(value, value)
    match = re.match(_STEP, value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"expected a step N or a range A..B, got {value!r}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if high < low:
        raise ValueError(f"step range {low}..{high} is reversed (expected A..B with A <= B)")
    return StepRange(low, high)


def undecidable_rate(bound: RateBound) -> str | None:
    """Why a bound can never be judged on a Wilson interval (None: it can), and what to write.

    The interval's low end never reaches 1 and its high end never reaches 0, however
    many attempts run: `>=1` is never reproduced and `<=0` never either; `>1` and `<0`
    hold for no rate at all. The exact forms `==1` and `==0` say what is meant.
    """
    if (bound.op, bound.value) == (">=", 1.0):
        return (
            "can never be reproduced: the Wilson interval's low end never reaches 1, however "
            "many attempts run; write '==1' (every attempt matches)"
        )
    if (bound.op, bound.value) == ("<=", 0.0):
        return (
            "can never be reproduced: the Wilson interval's high end never reaches 0, however "
            "many attempts run; write '==0' (no attempt matches)"
        )
    if (bound.op, bound.value) in ((">", 1.0), ("<", 0.0)):
        exact = "==1" if bound.op == ">" else "==0"
        return f"no rate is {bound.op} {bound.value:g}; write '{exact}'"
    return None


_MEANT_RATE = r"^\s*(>=|>|<=|<|==|=|\u2265|\u2264)?\s*(\d*\.?\d+)\s*(%?)\s*$"


def rate_meant(value: object) -> str | None:
    """The rate bound a malformed `rate` most likely meant: a bare fraction or a percentage
    is a lower bound (`0.3`, `'30%'` -> `'>=0.3'`), `=` is `==`, `≥` is `>=`; None when
    there is no one reading (a fraction past 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    match = re.match(_MEANT_RATE, str(value))
    if match is None:
        return None
    op = {None: ">=", "=": "==", "\u2265": ">=", "\u2264": "<="}.get(match[1], match[1])
    fraction = float(match[2]) / (100 if match[3] else 1)
    if not 0.0 <= fraction <= 1.0:
        return None
    if fraction in (0.0, 1.0) and op in (">=", "<="):
        op = "=="  # (`>=1` and `<=0` are refused: no interval decides them)
    return f"{op}{fraction:g}"


def parse_rate(value: object) -> RateBound:
    """`'>=0.3'` -> RateBound('>=', 0.3); the fraction must be within 0..1."""
    match = re.match(_RATE, value) if isinstance(value, str) else None
    if match is None or not 0.0 <= float(match.group(2)) <= 1.0:
        raise ValueError(f"expected a rate bound like '>=0.3', got {value!r}")
    return RateBound(cast(RateOp, match.group(1)), float(match.group(2)))
