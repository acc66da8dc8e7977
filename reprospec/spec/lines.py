"""Each cell's own line in its spec file: where a person looks when the cell fails (the
pytest plugin's item location, GitHub's `::error file=...,line=...::` annotation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reprospec.core.expr import same
from reprospec.core.inputs import Cell, Spec
from reprospec.core.jsontypes import JsonPath, JsonValue


def cell_lines(spec: Spec, cells: Sequence[Cell]) -> dict[str, int]:
    """Each cell's own line in the spec (1-based): its `include` entry, else its last axis value.

    A spec without a matrix points at its `command` or `workload`.
    """
    locations = spec.locations
    document = spec.document.get("matrix")
    section: Mapping[str, JsonValue] = document if isinstance(document, Mapping) else {}
    listed = section.get("include")
    includes = [e for e in listed if isinstance(e, Mapping)] if isinstance(listed, list) else []
    out: dict[str, int] = {}
    for cell in cells:
        line: int | None = None
        for index, entry in enumerate(includes):
            if all(k in cell.matrix and same(cell.matrix[k], v) for k, v in entry.items()):
                line = _line(locations, ("matrix", "include", index))
        if line is None:
            for axis in reversed(list(cell.matrix)):
                values = section.get(axis)
                if isinstance(values, list):
                    found = [i for i, v in enumerate(values) if same(v, cell.matrix[axis])]
                    if found:
                        line = _line(locations, ("matrix", axis, found[0]))
                        break
        if line is None:
            for key in ("command", "workload", "matrix"):
                if key in spec.document:
                    line = _line(locations, (key,))
                    break
        out[cell.id] = line or 1
    return out


def _line(locations: Mapping[JsonPath, tuple[int, int]], path: JsonPath) -> int | None:
    found = locations.get(path)
    return found[0] if found else None
