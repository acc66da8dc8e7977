"""A set of matrix cells in a few words: `num_workers=2, pin_memory=true`, not 64 cell ids.

A large matrix cannot list its cells row by row in a report a person reads. A set
of cells (those with one outcome, those with a warning) is written as a union of
patterns, each fixing some axes to one or a few values and leaving the others
free: `lr=0.1|1.0, batch=8` holds every cell with lr 0.1 or 1.0 and batch 8,
whatever the other axes. The patterns say exactly which cells of the run are
meant, no more (a free axis ranges over the values the run has).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence

from reprospec.core.lazysequence import LazySequence
from reprospec.core.results import CellResult
from reprospec.report.markup import inline_code, show_value

# Above this many patterns, the cell ids say it as well.
MAX_PATTERNS = 8
_ABSENT = "\0absent"  # an include-only axis the cell does not have


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def describe_cells(chosen: Iterable[CellResult], every: Sequence[CellResult]) -> list[str]:
    """`chosen` (cells of the run `every`) as patterns, one string each; [] for no cell.

    `["every cell"]` when it is all of them; the cell ids themselves when the
    patterns would not be shorter.
    """
    if not isinstance(chosen, Sequence):
        chosen = list(chosen)
    if not chosen:
        return []
    if len(chosen) == len(every):
        return ["every cell"]
    axes = list(dict.fromkeys(axis for cell in every for axis in cell.cell.matrix))
    shown: dict[tuple[str, str], str] = {}
    universe: list[set[str]] = [set() for _ in axes]
    for cell in every:
        for i, axis in enumerate(axes):
            key = _key(cell.cell.matrix[axis]) if axis in cell.cell.matrix else _ABSENT
            universe[i].add(key)
            shown[axis, key] = show_value(cell.cell.matrix[axis]) if key != _ABSENT else "—"
    order = {
        (axis, key): n for n, (axis, key) in enumerate(shown)
    }  # values in the order the run first has them
    items = {
        tuple(frozenset({_key(c.cell.matrix[a]) if a in c.cell.matrix else _ABSENT}) for a in axes)
        for c in chosen
    }
    items = _merge(items, len(axes))
    if not axes or len(items) > min(MAX_PATTERNS, len(chosen) - 1):
        return [cell.cell.id for cell in chosen]

    def rank(item: tuple[frozenset[str], ...]) -> list[list[int]]:
        return [sorted(order[a, k] for k in values) for a, values in zip(axes, item, strict=True)]

    patterns = []
    for item in sorted(items, key=rank):
        parts = []
        for i, (axis, values) in enumerate(zip(axes, item, strict=True)):
            if values == universe[i]:
                continue  # any value the run has
            names = sorted((order[axis, key], shown[axis, key]) for key in values)
            parts.append(f"{axis}={'|'.join(name for _, name in names)}")
        patterns.append(", ".join(parts) or "every cell")
    return patterns


class Picked(LazySequence[CellResult]):
    """Some of a run's cells, by position, each read from the run's cells when it is read:
    a group of a large run's cells, whose cells are made as they are read, without holding
    them (report/tables.py)."""

    def __init__(self, cells: Sequence[CellResult], positions: Sequence[int]) -> None:
        self._cells = cells
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    def _item(self, index: int) -> CellResult:
        return self._cells[self._positions[index]]


def separating_patterns(
    inside: Sequence[CellResult], outside: Sequence[CellResult], every: Sequence[CellResult]
) -> list[str]:
    """Patterns that hold every cell of `inside` and no cell of `outside`, each as wide as it
    can be; [] when `inside` needs more than two of them (or there is nothing to tell apart).

    What a single value cannot say (`num_workers` 1, 2 or 4, not 0, with float16) a
    pattern can. Cells in neither group (a flaky cell) may fall either way.
    """
    if not inside or not outside:
        return []
    axes = list(dict.fromkeys(axis for cell in every for axis in cell.cell.matrix))
    if not axes or not all(axis in c.cell.matrix for c in every for axis in axes):
        return []
    universe = [frozenset(_key(c.cell.matrix[a]) for c in every) for a in axes]
    inside_keys = [tuple(_key(c.cell.matrix[a]) for a in axes) for c in inside]
    outside_keys = [tuple(_key(c.cell.matrix[a]) for a in axes) for c in outside]

    def holds_outside(item: tuple[frozenset[str], ...]) -> bool:
        return any(all(k in s for k, s in zip(key, item, strict=True)) for key in outside_keys)

    items = _merge({tuple(frozenset({k}) for k in key) for key in inside_keys}, len(axes))
    if len(items) > 2:
        # The merge joins in one order of the axes and can miss a pair another order finds:
        # `a=1, b=1 or a=0, c=1` merged on `a` first joins (1,1,1) with (0,1,1), and no
        # two patterns were left (nu-b o2).
        items = _two_patterns(inside_keys, universe, holds_outside, len(outside_keys)) or items
    if len(items) > 2 or any(holds_outside(item) for item in items):
        return []
    widened = []
    for item in items:
        for i in range(len(axes)):
            wider = (*item[:i], universe[i], *item[i + 1 :])
            if not holds_outside(wider):
                item = wider
        widened.append(item)
    shown = {
        (axis, _key(c.cell.matrix[axis])): show_value(c.cell.matrix[axis])
        for c in every
        for axis in axes
    }
    order = {key: n for n, key in enumerate(shown)}

    def rank(item: tuple[frozenset[str], ...]) -> list[tuple[bool, list[int]]]:
        # An axis the pattern leaves free sorts after one it fixes: `a=1, b=1` first.
        return [
            (values == free, sorted(order[a, k] for k in values))
            for a, values, free in zip(axes, item, universe, strict=True)
        ]

    patterns = []
    # In the order the run first has the values, not the set's (its order changes with the
    # process's hash seed: one run read `a=1, c=1 or a=1, b=1`, the next the other way).
    for item in sorted(widened, key=rank):
        parts = []
        for axis, values, every_value in zip(axes, item, universe, strict=True):
            if values != every_value:
                names = sorted((order[axis, k], shown[axis, k]) for k in values)
                parts.append(f"{axis}={'|'.join(name for _, name in names)}")
        patterns.append(", ".join(parts))
    return [p for p in dict.fromkeys(patterns) if p]


# The most patterns times cells outside `_two_patterns` checks: past it, a large matrix's
# report would wait seconds for an explanation the merge did not find.
_TWO_PATTERNS_WORK = 200_000


def _two_patterns(
    inside: Sequence[tuple[str, ...]],
    universe: Sequence[frozenset[str]],
    holds_outside: Callable[[tuple[frozenset[str], ...]], bool],
    outside: int,
) -> set[tuple[frozenset[str], ...]] | None:
    """At most two patterns that hold every cell of `inside` and none outside, or None.

    The first cell inside lies in one of them: a pattern that fixes some axes to its values
    and leaves the rest free (the widest first). The cells it leaves out must lie in the
    other, and any pattern that holds them holds the smallest one that does (each axis the
    values they have): where that one holds a cell outside, no pattern holding them does.
    """
    width = len(universe)
    if not inside or (2**width) * max(outside, 1) > _TWO_PATTERNS_WORK:
        return None
    first = inside[0]
    for free in sorted(itertools.product((False, True), repeat=width), key=sum, reverse=True):
        one = tuple(universe[i] if free[i] else frozenset({first[i]}) for i in range(width))
        if holds_outside(one):
            continue
        rest = [key for key in inside if not all(k in s for k, s in zip(key, one, strict=True))]
        if not rest:
            return {one}
        other = tuple(frozenset(key[i] for key in rest) for i in range(width))
        if not holds_outside(other):
            return {one, other}
    return None


def patterns_line(patterns: Sequence[str], every: str, none: str, code: bool = True) -> str:
    """`patterns` (from `separating_patterns`) as one statement: `EVERY is one of these, NONE
    is`, and for two `P or Q: EVERY is one or the other, NONE is either`.

    Two patterns are one statement, not two: each bullet of "`a=1, b=1`: every failing cell
    is one of these" and "`a=1, c=1`: ..." read as covering every failing cell alone, where
    only the two together do (a failure of `a=1 and (b=1 or c=1)`).
    """
    # Plain text brackets a pattern of several values: "a=1, b=1 or a=1, c=1" reads as a
    # list of three.
    plain = [f"({p})" if ", " in p and len(patterns) > 1 else p for p in patterns]
    shown = " or ".join(inline_code(p) for p in patterns) if code else " or ".join(plain)
    if len(patterns) == 1:
        return f"{shown}: {every} is one of these, {none} is"
    return f"{shown}: {every} is one or the other, {none} is either"


def _merge(items: set[tuple[frozenset[str], ...]], width: int) -> set[tuple[frozenset[str], ...]]:
    """Join patterns that differ on one axis only, until none do: the union stays exact."""
    changed = True
    while changed:
        changed = False
        for axis in range(width):
            groups: dict[tuple[frozenset[str], ...], set[str]] = {}
            for item in items:
                rest = item[:axis] + item[axis + 1 :]
                groups.setdefault(rest, set()).update(item[axis])
            merged = {
                (*rest[:axis], frozenset(values), *rest[axis:]) for rest, values in groups.items()
            }
            if len(merged) < len(items):
                items, changed = merged, True
    return items


__all__ = ["Picked", "describe_cells", "patterns_line", "separating_patterns"]
