"""The shapes of the values the harness handles: the cell's JSON, the shared int64 arrays.

The cell (`$REPROSPEC_CELL`) is JSON the engine wrote from a spec its schema had
validated: a section the schema makes an object is a `dict` here, narrowed with
`isinstance`. The engine's own `reprospec.core.jsontypes` says the same; this package
cannot import the engine (stdlib and torch only), so it has these few lines of its own.

Stdlib only (imported before torch).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeAlias, overload

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"


def obj(value: JsonValue) -> JsonObject:
    """A section of the cell: the JSON object, or `{}` where it is absent or null."""
    return value if isinstance(value, dict) else {}


def array(value: JsonValue) -> list[JsonValue]:
    """A list of the cell: the JSON array, or `[]` where it is absent or null."""
    return value if isinstance(value, list) else []


def to_int(value: JsonValue) -> int:
    """`int(value)` of a JSON number or of the text of one (what `${{ }}` may give), else the
    TypeError `int()` raises."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(
        "int() argument must be a string, a bytes-like object or a real number, "
        f"not {type(value).__name__!r}"
    )


class Int64Array(Protocol):
    """A `multiprocessing` RawArray of typecode `q`, as the harness reads and writes it.

    (typeshed types a RawArray made from a typecode as `Any`, and a ctypes array's items
    as `Any`: this says what they are.)
    """

    def __len__(self) -> int: ...

    @overload
    def __getitem__(self, key: int, /) -> int: ...
    @overload
    def __getitem__(self, key: slice, /) -> list[int]: ...

    @overload
    def __setitem__(self, key: int, value: int, /) -> None: ...
    @overload
    def __setitem__(self, key: slice, value: Iterable[int], /) -> None: ...
