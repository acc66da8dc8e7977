"""GitHub Actions `strategy.matrix` semantics -> ordered Cells with stable ids.

1. The cartesian product of the axes, first axis slowest.
2. `exclude` removes every combination that matches all of an entry's keys.
3. Each `include` entry is merged into every (post-exclude) original
   combination where it overwrites no original axis value (values added by
   earlier includes may be overwritten); if it fits none, it becomes a new cell,
   appended after the product.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from reprospec.errors import SpecError, UsageError
from reprospec.expr import same
from reprospec.models import Cell, Spec
from reprospec.yamlsource import JsonPath, Problem, YamlSourceError, load_value, locate

RESERVED = ("include", "exclude")
DEFAULT_ID = "default"


class MatrixError(ValueError):
    """A matrix that cannot be expanded; `path` is where in the spec the problem is."""

    def __init__(self, message: str, path: JsonPath = ("matrix",)) -> None:
        self.message = message
        self.path = path
        super().__init__(message)


def axes(section: Mapping[str, Any] | None) -> list[str]:
    """The original axes (no include-only keys), in order."""
    return [k for k in (section or {}) if k not in RESERVED]


def all_axes(section: Mapping[str, Any] | None) -> list[str]:
    """Original axes, then keys that only `include` entries bring, in order of first use."""
    names = dict.fromkeys(axes(section))
    for entry in (section or {}).get("include") or ():
        names.update(dict.fromkeys(entry))
    return list(names)


def render_value(value: Any) -> str:
    """A matrix value as it appears in a cell id: true/false, null, compact JSON for collections."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


# The name the CLI uses for the same rendering (`-m axis=VALUE` round-trips through it).
format_value = render_value


def cell_id(values: Mapping[str, Any]) -> str:
    """`axis=value,axis=value` in the given order; `default` for an empty matrix."""
    if not values:
        return DEFAULT_ID
    return ",".join(f"{key}={render_value(value)}" for key, value in values.items())


def _matches(combination: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    return all(key in combination and same(combination[key], v) for key, v in entry.items())


def expand_matrix(section: Mapping[str, Any] | None) -> list[Cell]:
    """The cells of a `matrix` section (None: one cell `default`); raise MatrixError."""
    if section is None:
        return [Cell(DEFAULT_ID, 0, {})]
    original = axes(section)
    for axis in original:
        values = section[axis]
        if not isinstance(values, list) or not values:
            raise MatrixError(f"axis '{axis}' must be a non-empty list of values", ("matrix", axis))
    include = list(section.get("include") or ())
    exclude = list(section.get("exclude") or ())
    if not original and not include:
        raise MatrixError("the matrix is empty: give at least one axis or an include entry")
    for index, entry in enumerate(exclude):
        for key in entry:
            if key not in original:
                raise MatrixError(
                    f"exclude key '{key}' is not a matrix axis", ("matrix", "exclude", index, key)
                )

    combos: list[dict[str, Any]] = []
    if original:
        for values in itertools.product(*(section[a] for a in original)):
            combo = dict(zip(original, values, strict=True))
            if not any(_matches(combo, entry) for entry in exclude):
                combos.append(combo)
    extra: list[dict[str, Any]] = []
    for entry in include:
        fitted = False
        for combo in combos:
            # Only the original axes are protected; keys from earlier includes may change.
            if all(same(combo[k], v) for k, v in entry.items() if k in original):
                combo.update(entry)
                fitted = True
        if not fitted:
            extra.append(dict(entry))

    if not combos and not extra:
        raise MatrixError("the matrix has no cells: every combination is excluded")
    order = {key: i for i, key in enumerate(all_axes(section))}
    cells: list[Cell] = []
    seen: dict[str, int] = {}
    for index, combo in enumerate(combos + extra):
        ordered = {k: combo[k] for k in sorted(combo, key=lambda k: order[k])}
        ident = cell_id(ordered)
        if ident in seen:
            raise MatrixError(
                f"cells {seen[ident] + 1} and {index + 1} have the same id '{ident}' "
                "(a repeated value, or values that render alike such as 1 and '1')"
            )
        seen[ident] = index
        cells.append(Cell(ident, index, ordered))
    return cells


def expand(spec: Spec) -> list[Cell]:
    """The cells of a loaded spec, in order; raise SpecError with a located problem."""
    try:
        return expand_matrix(spec.document.get("matrix"))
    except MatrixError as exc:
        line, col = locate(spec.locations, exc.path)
        problem = Problem(line, col, exc.path, exc.message)
        raise SpecError([problem.format(str(spec.path))]) from None


def select(cells: Sequence[Cell], filters: Sequence[str]) -> list[Cell]:
    """Keep cells matching `AXIS=VALUE` filters: same axis repeated is OR, axes combine with AND."""
    if not filters:
        return list(cells)
    known = list(dict.fromkeys(k for cell in cells for k in cell.matrix))
    wanted: dict[str, list[tuple[Any, str]]] = {}
    for text in filters:
        axis, sep, raw = text.partition("=")
        axis = axis.strip()
        if not sep or not axis:
            raise UsageError(f"-m {text}: expected AXIS=VALUE")
        if axis not in known:
            names = ", ".join(known) if known else "none (the spec has no matrix)"
            raise UsageError(f"-m {text}: unknown axis '{axis}' (axes: {names})")
        try:
            value = load_value(raw) if raw.strip() else ""
        except YamlSourceError:
            value = raw
        wanted.setdefault(axis, []).append((value, raw.strip()))
    kept = [
        cell
        for cell in cells
        if all(
            axis in cell.matrix and any(_value_matches(cell.matrix[axis], v) for v in values)
            for axis, values in wanted.items()
        )
    ]
    if not kept:
        raise UsageError(f"no cell matches {' '.join('-m ' + f for f in filters)}")
    return kept


def _value_matches(actual: Any, wanted: tuple[Any, str]) -> bool:
    # The rendered form also counts, so `-m python=3.10` finds "3.10" (YAML reads 3.1).
    value, raw = wanted
    return same(actual, value) or render_value(actual) == raw
