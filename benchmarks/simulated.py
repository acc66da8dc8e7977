"""What the search simulations (isolate_simulation.py, bisect_simulation.py) share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """A rate, or a failure deterministic for a trial's first `steady` attempts, then `rate`
    (written `1:STEADY:RATE`): how a search that learns the rate is tried on a failure that
    looked deterministic and then flakes."""

    rate: float
    steady: int = 0

    @classmethod
    def parse(cls, text: str) -> Case:
        if ":" in text:
            _, steady, rate = text.split(":")
            return cls(float(rate), int(steady))
        return cls(float(text))

    def __str__(self) -> str:
        return f"1:{self.steady}:{self.rate:g}" if self.steady else f"{self.rate:g}"
