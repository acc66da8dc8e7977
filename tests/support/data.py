"""Reading JSON-like data in tests without casts: `at(doc, "matrix", "include", 1)`."""

from __future__ import annotations

from reprospec.core.jsontypes import JsonValue


def at(value: JsonValue, *path: str | int) -> JsonValue:
    """`value[path[0]][path[1]]...`: a str steps into a mapping, an int into a list (asserted)."""
    for key in path:
        if isinstance(key, str):
            assert isinstance(value, dict), f"{key!r} of a {type(value).__name__}, not a mapping"
            value = value[key]
        else:
            assert isinstance(value, list), f"[{key}] of a {type(value).__name__}, not a list"
            value = value[key]
    return value
