"""minimize's search driven by hand in the unit tests (tests/unit/minimize)."""

from __future__ import annotations

from collections.abc import Callable

from reprospec.minimize.program import Program
from reprospec.minimize.source import Reducer


def proposing(*candidates: Program) -> Callable[[Program], Reducer]:
    """Passes that propose `candidates` in turn, whatever the answers: each verdict is then
    the rule's alone."""

    def passes(original: Program) -> Reducer:
        best = original
        for candidate in candidates:
            if (yield candidate):
                best = candidate
        return best

    return passes
