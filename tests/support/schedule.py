"""The order the suite's tests are handed to pytest-xdist's workers: the long modules first,
spread over the workers.

`scripts/test.sh` runs `pytest -n N --dist worksteal`. Worksteal gives worker k the k-th of
N equal slices of the collection (by count, in collection order), and an idle worker takes
the back half of the longest queue. In collection order a few modules hold most of the time
(the pytest plugin's, minimize's, the docs' and the examples' runs: a fifth of the suite's
time in 4 of 250 modules), and where they fall is chance: two in one slice, or one last in
its slice, leaves a worker running a two-minute test alone at the end (seen: 1.5 minutes of
one busy worker at `-n 3`). Here each slice starts with its share of the long modules (the
longest first, each to the slice with the least time so far) and is filled up to its count
with the other modules in collection order; what is stolen, the back of a queue, is then
short tests. Modules stay whole, so a module's fixtures are set up once per worker, as
before.

The times are a record, tests/durations.json (seconds per module file, from a quiet full
run; `scripts/test_durations.py` writes it from `pytest --junitxml`): a stale or missing
entry only makes the order less good, never a test wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")

DURATIONS = Path(__file__).resolve().parent.parent / "durations.json"

# Below this a module is "short": it is left in collection order to fill the slices.
LONG_S = 10.0


def recorded() -> dict[str, float]:
    """Seconds per module file (`tests/...py`), as recorded; empty when there is no record."""
    try:
        loaded = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def slice_sizes(count: int, workers: int) -> list[int]:
    """How many of `count` items worksteal's first distribution gives each worker."""
    sizes = []
    left = count
    for i in range(workers):
        size = left // (workers - i)
        sizes.append(size)
        left -= size
    return sizes


def spread(
    items: Sequence[_T],
    module_of: Callable[[_T], str],
    seconds: Mapping[str, float],
    workers: int,
) -> list[_T]:
    """`items` reordered so that each of `workers` slices starts with its share of the long
    modules; the same items, each module's in their own order."""
    if workers < 2 or not items:
        return list(items)
    modules: dict[str, list[_T]] = {}
    for item in items:
        modules.setdefault(module_of(item), []).append(item)
    long = sorted((m for m in modules if seconds.get(m, 0.0) >= LONG_S), key=lambda m: -seconds[m])
    slices: list[list[_T]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for module in long:  # the longest first, each where the least time is so far
        k = load.index(min(load))
        slices[k].extend(modules[module])
        load[k] += seconds[module]
    short = [item for m, group in modules.items() if m not in long for item in group]
    for k, size in enumerate(slice_sizes(len(items), workers)):
        need = max(0, size - len(slices[k]))
        slices[k].extend(short[:need])
        del short[:need]
    slices[-1].extend(short)  # a slice over its size (a long module bigger than it) leaves these
    return [item for part in slices for item in part]


__all__ = ["DURATIONS", "LONG_S", "recorded", "slice_sizes", "spread"]
