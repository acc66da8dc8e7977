"""The warnings the children printed, once each, and the toggles a warning says did nothing.

torch says "'pin_memory' argument is set as true but no accelerator is found, then
device pinned memory won't be used" in every cell with `pin_memory: true` on a
machine without a GPU. If those cells are also the failing ones, the analysis of
what separates them credits `pin_memory=true` with a value that had no effect.
A warning that names a matrix axis (or the option the axis feeds in the spec)
and says it was not used marks the axis's value in the cells that printed it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.results import CellResult, ChildWarning, RunResult
from reprospec.report.markup import show_value

# How a warning says that what it names did not happen.
_NO_EFFECT = Lazy(
    r"won't be used|will not be used|not be used|(?:is|are|will be|being) ignored|no effect"
    r"|has been disabled|is disabled|[Dd]isabling|no accelerator|not available"
    r"|falling back|fall back|is not supported|not supported on",
)
_QUOTED = Lazy(r"['\"`](?P<name>[A-Za-z_][\w.-]*)['\"`]")
_IDENTIFIER = Lazy(r"[A-Za-z_][\w-]*")
# A spec line that feeds an axis into an option: `pin_memory: ${{ matrix.pin }}`, `--pin ...`.
_FEEDS = Lazy(
    r"(?:^|\s|-)(?P<option>[A-Za-z_][\w-]*)\s*[:=]?\s*['\"]?\$\{\{\s*matrix\.(?P<axis>[\w-]+)"
)


@frozen
class WarningRow:
    """One warning of the run: what it says, where it came from, the cells that printed it."""

    warning: ChildWarning
    cells: tuple[CellResult, ...]
    # (axis, value as shown) the warning says had no effect, in the cells that printed it.
    nullifies: tuple[tuple[str, str], ...] = ()


def warning_rows(run: RunResult) -> list[WarningRow]:
    """Every distinct warning of the run, those that nullify a toggle first, then by cells."""
    seen: dict[tuple[str, str], tuple[ChildWarning, dict[str, CellResult]]] = {}
    for cell in run.cells:
        for attempt in cell.attempts:
            for warning in attempt.child_warnings:
                _, cells = seen.setdefault(warning.key, (warning, {}))
                cells.setdefault(cell.cell.id, cell)
    feeds = _fed_options(run.spec_text)
    rows = [
        WarningRow(warning, tuple(cells.values()), _nullified(warning, list(cells.values()), feeds))
        for warning, cells in seen.values()
    ]
    order = list(seen)
    return sorted(rows, key=lambda r: (not r.nullifies, -len(r.cells), order.index(r.warning.key)))


def nullified(rows: Sequence[WarningRow]) -> dict[tuple[str, str], ChildWarning]:
    """(axis, value as shown) -> the warning that says the value had no effect."""
    out: dict[tuple[str, str], ChildWarning] = {}
    for row in rows:
        for value in row.nullifies:
            out.setdefault(value, row.warning)
    return out


def _fed_options(spec_text: str) -> dict[str, set[str]]:
    """axis -> the options the spec sets from it (`pin_memory: ${{ matrix.pin }}`: pin)."""
    feeds: dict[str, set[str]] = {}
    for match in _FEEDS.finditer(spec_text):
        feeds.setdefault(match["axis"], set()).add(_norm(match["option"]))
    return feeds


def _norm(name: str) -> str:
    return name.lower().replace("-", "_").lstrip("_")


def _nullified(
    warning: ChildWarning, cells: Sequence[CellResult], feeds: dict[str, set[str]]
) -> tuple[tuple[str, str], ...]:
    """The (axis, value) the warning says did nothing, when it names the axis or its option.

    Only a value that every printing cell shares counts: the warning was printed
    because of that value, not of another axis.
    """
    if not _NO_EFFECT.search(warning.message):
        return ()
    quoted = {_norm(m["name"]) for m in _QUOTED.finditer(warning.message)}
    words = {_norm(w) for w in _IDENTIFIER.compiled.findall(warning.message)}
    out: list[tuple[str, str]] = []
    axes = dict.fromkeys(axis for cell in cells for axis in cell.cell.matrix)
    for axis in axes:
        names = {_norm(axis)} | feeds.get(axis, set())
        # An axis named like a common word (`device`) must be quoted to count.
        named = names & quoted or {n for n in names & words if "_" in n or len(n) > 8}
        if not named:
            continue
        values = {json.dumps(c.cell.matrix.get(axis), sort_keys=True, default=str) for c in cells}
        if len(values) == 1 and all(axis in c.cell.matrix for c in cells):
            out.append((axis, show_value(cells[0].cell.matrix[axis])))
    return tuple(out)


__all__ = ["WarningRow", "nullified", "warning_rows"]
