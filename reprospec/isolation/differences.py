"""What differs between two configurations of one spec, and the overrides that build a mix.

A configuration is a flat mapping path -> value: matrix axis values as
`matrix.AXIS`, any other spec field by its dotted path (`--set` style, list
indexes as numbers: `workload.phases.1.steps`). `differences(passing, failing)`
lists the paths whose values differ; `mix(passing, diffs, chosen)` is the
passing configuration with some of them set to the failing side's values;
`overrides(config)` is the `--set` list that makes a spec run exactly that
configuration as one cell.

Pure functions on plain values: no spec loading, no processes.
"""

from __future__ import annotations

import enum
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, TypeAlias

from reprospec.core.expr import same
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonValue
from reprospec.spec.matrix import all_axes

MATRIX = "matrix."


class _Missing(enum.Enum):
    """The path is absent on that side (applying the difference deletes or adds the key).

    A one-member enum: a singleton that pickles and copies as itself, and that
    `value is MISSING` narrows away for the type checker.
    """

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING

# A configuration's value at one path: what the spec holds there, or MISSING.
Setting: TypeAlias = "JsonValue | _Missing"
# A configuration: path -> its value (`matrix.AXIS` for axes, dotted paths for fields).
Config: TypeAlias = "Mapping[str, Setting]"


@frozen
class Difference:
    """One path whose value differs: `base` on the passing side, `value` on the failing one."""

    path: str
    base: Setting
    value: Setting

    @property
    def is_axis(self) -> bool:
        return self.path.startswith(MATRIX)

    @property
    def name(self) -> str:
        """How a person reads it: the axis name for matrix axes, the dotted path otherwise."""
        return self.path[len(MATRIX) :] if self.is_axis else self.path

    def describe(self, value: Setting = None) -> str:
        """`num_workers=2` (or `PATH unset`)."""
        return self._named(self.value if value is None else value)

    def describe_base(self) -> str:
        """The passing side's value as `describe` says the failing one's: `num_workers=0`,
        `LOG_LEVEL=debug`, `PATH unset` (a null base is shown, not taken for no value)."""
        return self._named(self.base)

    def _named(self, shown: Setting) -> str:
        if shown is MISSING:
            return f"{self.name} unset"
        return f"{self.name}={render(shown)}"

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "path": self.path,
            "value": None if self.value is MISSING else self.value,
            "base": None if self.base is MISSING else self.base,
            **({"unset": True} if self.value is MISSING else {}),
            **({"base_unset": True} if self.base is MISSING else {}),
        }


def render(value: JsonValue) -> str:
    """A value as a person writes it in a cell id or `--set`: true, 2, fork, [1, 2].

    A string a shell would not pass as one word is quoted as one would type it (`''`,
    `'a b'`): an empty one read `with par=, it passes`, as if the value were left out.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return shlex.quote(value)
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def lookup(document: Mapping[str, JsonValue], path: str) -> Setting:
    """The value at a dotted path of a spec document, or MISSING."""
    first, *rest = path.split(".")
    if first not in document:
        return MISSING
    node = document[first]
    for part in rest:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


def configuration(
    document: Mapping[str, JsonValue],
    matrix: Mapping[str, JsonValue],
    sets: Config,
    paths: Iterable[str] = (),
) -> dict[str, Setting]:
    """One side as a flat mapping: its cell's axes, its `--set` values, `paths` from the spec.

    `paths` are fields the other side sets: this side keeps the document's value
    there (MISSING when the document has none), so the difference shows.
    """
    config: dict[str, Setting] = {MATRIX + axis: value for axis, value in matrix.items()}
    for path in paths:
        if not path.startswith(MATRIX):
            config[path] = lookup(document, path)
    for path, value in sets.items():
        config[path] = value
    return config


def differences(passing: Config, failing: Config) -> tuple[Difference, ...]:
    """Every path whose value differs, matrix axes first, each group in a stable order."""
    paths = list(dict.fromkeys([*passing, *failing]))
    axes = [p for p in paths if p.startswith(MATRIX)]
    fields = [p for p in paths if not p.startswith(MATRIX)]
    out = []
    for path in axes + fields:
        base, value = passing.get(path, MISSING), failing.get(path, MISSING)
        if not same_setting(base, value):
            out.append(Difference(path, base, value))
    return tuple(out)


def mix(passing: Config, diffs: Sequence[Difference], chosen: Iterable[int]) -> dict[str, Setting]:
    """The passing configuration with the chosen differences set to the failing side's values."""
    config = dict(passing)
    for index in chosen:
        diff = diffs[index]
        if diff.value is MISSING:
            config.pop(diff.path, None)
        else:
            config[diff.path] = diff.value
    return config


def overrides(
    config: Config, document: Mapping[str, JsonValue], *, cell: bool = True
) -> tuple[str, ...]:
    """The `--set` list that makes `document` run `config` as one cell.

    Fields are set (or `~`-deleted) where they differ from the document; the
    matrix becomes one axis value per key, so the spec expands to exactly one
    cell whose id and `${{ matrix.* }}` values are the configuration's. `cell=False`:
    the fields only, the matrix left as it is (a side's fields, its cell not yet chosen).
    """
    out: list[str] = []
    for path, value in config.items():
        if path.startswith(MATRIX):
            continue
        present = lookup(document, path)
        if value is MISSING:
            if present is not MISSING:
                out.append(f"~{path}")
        elif present is MISSING or not same_setting(present, value):
            out.append(f"{path}={json.dumps(value)}")
    if not cell:
        return tuple(out)
    axes: dict[str, JsonValue] = {
        p[len(MATRIX) :]: v for p, v in config.items() if p.startswith(MATRIX) and v is not MISSING
    }
    if any(p.startswith(MATRIX) for p in config):
        # A key only some `include` entries bring is null in the cells without it (what
        # `${{ matrix.note }}` and `when: {note: null}` read there). Left out of the one
        # cell, it was an unknown axis: a mix without the failing cell's `note` was
        # refused as a spec error (exit 2) halfway through the search, and a side given
        # `~matrix.note` ended in an internal error (MISSING is no JSON value).
        section = document.get("matrix")
        for name in all_axes(section if isinstance(section, Mapping) else None):
            axes.setdefault(name, None)
        out.append("matrix=" + json.dumps({axis: [value] for axis, value in axes.items()}))
    elif "matrix" in document:
        out.append("~matrix")
    return tuple(out)


def key(config: Config) -> str:
    """A stable text key of a configuration (for caches of results between restarts)."""
    return json.dumps(
        {p: ("<unset>" if v is MISSING else v) for p, v in sorted(config.items())},
        sort_keys=True,
    )


def same_setting(a: Setting, b: Setting) -> bool:
    """Equal settings: both unset, or the same spec value."""
    if a is MISSING or b is MISSING:
        return a is b
    return same(a, b)  # true and 1 are different spec values, 2 and 2.0 the same


def farthest(failing: Cell, passing: Sequence[Cell]) -> Cell | None:
    """The passing cell that differs from `failing` in the most matrix values (the first of
    those in matrix order), or None.

    What isolate can name is a subset of the differences between the two cells, so a
    passing cell one value away could only ever name that value: a crash that needs
    `USE_NATIVE=1` and `fast_path=true`, against the nearest passing cell, read "crashes
    when fast_path=true". The farthest one leaves every toggle in question (isolate's
    default passing side, and minimize's step 1).
    """
    best: Cell | None = None
    most = -1
    for cell in passing:
        count = sum(
            1
            for axis in {*failing.matrix, *cell.matrix}
            if axis not in failing.matrix
            or axis not in cell.matrix
            or render(failing.matrix[axis]) != render(cell.matrix[axis])
        )
        if count > most:
            best, most = cell, count
    return best
