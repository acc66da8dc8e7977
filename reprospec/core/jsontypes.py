"""The values a spec document holds: JSON data, as `yamlsource` and `json.loads` read it.

One alias for every stage that handles a document before (or instead of) its
typed form: the validated spec, a cell's matrix values, `${{ }}` results,
results.json and slurm.json as read back. Narrow with `isinstance` (a
`dict` is a JSON object, a `list` an array), never with a cast.
"""

from __future__ import annotations

from typing import TypeAlias, TypeGuard

JsonScalar: TypeAlias = "str | int | float | bool | None"
JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
# Where a value is in a document: mapping keys and list indexes, from the top.
JsonPath: TypeAlias = "tuple[str | int, ...]"


# Reading a document back (results.json, the store's JSON columns): each accessor takes
# whatever is at a key and gives the type the reader needs, or the default when the value
# is absent or of another JSON type. A file written by an older or newer engine, or edited
# by hand, is read as far as it makes sense, never trusted to hold the right types.


def text(value: JsonValue, default: str = "") -> str:
    """A JSON string, else `default`."""
    return value if isinstance(value, str) else default


def text_or_none(value: JsonValue) -> str | None:
    """A JSON string, else None."""
    return value if isinstance(value, str) else None


def is_int(value: object) -> TypeGuard[int]:
    """Whether `value` is a JSON integer: an int, not a bool, which Python counts as one
    (`True == 1`): a spec's `true` is never read as a count, a rank or a step. The one test
    the spec's checks (checks/cells.py, checks/expect.py) and `integer` make."""
    return isinstance(value, int) and not isinstance(value, bool)


def integer(value: JsonValue) -> int | None:
    """A JSON integer (a boolean is none), else None."""
    return value if is_int(value) else None


def number(value: JsonValue) -> float | None:
    """A JSON number as a float (a boolean is none), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def texts(value: JsonValue) -> tuple[str, ...]:
    """The strings of a JSON array (other items are skipped); () for anything else."""
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def array(value: JsonValue) -> list[JsonValue]:
    """A JSON array, else []."""
    return value if isinstance(value, list) else []


def obj(value: JsonValue) -> JsonObject:
    """A JSON object, else {}."""
    return value if isinstance(value, dict) else {}


def objects(value: JsonValue) -> list[JsonObject]:
    """The objects of a JSON array (other items are skipped)."""
    return [item for item in array(value) if isinstance(item, dict)]


# Reading back a file the engine wrote for itself (slurm.json, native-stacks.json, a bisect's
# state): there a value of another type is a damaged file, not a difference of versions, so
# these raise TypeError (the readers turn it into their "cannot read" error) where the
# accessors above give a default. An absent value (None) is empty.


def checked_object(value: JsonValue) -> JsonObject:
    """A JSON object; TypeError for anything else."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a mapping, got {type(value).__name__}")
    return value


def checked_array(value: JsonValue) -> list[JsonValue]:
    """A JSON array, [] for None; TypeError for anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def checked_integer(value: JsonValue) -> int | None:
    """A JSON integer (a boolean is none), None for None; TypeError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def as_text(value: JsonValue) -> str | None:
    """Any value as its text (`str()`), None for None."""
    return None if value is None else str(value)


def as_texts(value: JsonValue) -> tuple[str, ...]:
    """The items of a JSON array as texts, () for None; TypeError for a non-array."""
    return tuple(str(item) for item in checked_array(value))
