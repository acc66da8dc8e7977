"""The cyclic garbage collector around the engine's imports (issue 30, item 4).

A run imports about 350 modules, and nearly every object they make (functions, classes,
their dataclasses' generated methods) lives until the process exits. With the collector
on, each young-generation collection during the imports walks the objects made since the
last one and moves them on, and each middle-generation one walks them again: about a
fifteenth of a one-attempt run's CPU (benchmarks/parent_costs.py, docs/performance.md),
spent proving that module-level objects are alive.

The command line's process holds the collector off while it imports and sets up (`hold`),
then freezes what it made (`gc.freeze`: left out of every later walk, never freed) and turns
the collector back on before the first attempt (`release`): a run of 65,536 cells makes
cyclic garbage (exceptions with their tracebacks, parsed documents) that only it frees.
Imports later in the run (the outputs' libraries, `importing`) are made with the collector
off too, but nothing is frozen after them: by then the run's own cyclic garbage (results,
tracebacks) is among the young objects, and a search that runs many probes in one process
would keep each probe's for good.

A caller of the Python API keeps its own collector as it was: nothing of its is frozen.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Set by `hold`: the process is the command line's, whose imported objects live as long as
# it does, so freezing them frees nothing they would have freed.
_held = False


def hold() -> None:
    """The command line, before its verb's imports: the collector off until `release`."""
    global _held
    _held = True
    gc.disable()


def release() -> None:
    """Before the attempts: what the imports made frozen, the collector on again (a no-op
    but for the first call in a process `hold` held, and for every API caller)."""
    if _held and not gc.isenabled():
        gc.freeze()
        gc.enable()


@contextmanager
def importing() -> Iterator[None]:
    """Imports in the middle of a run: the collector off while they run, as it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
