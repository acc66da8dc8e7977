"""`json.dumps(value, indent=2, ensure_ascii=False)`, the same text, made faster.

The standard library encodes an indented document in pure Python, one generator per
container, yielding each token up a chain of generators (its C encoder takes no indent
on Python 3.11). results.json holds one indented object per attempt, encoded on the main
thread at a cell's end: the dearest thing a run's main thread did per attempt of `true`
(docs/performance.md). `indented` appends to one list in one recursive function, the
strings escaped by the standard library's own C function, and gives the same text 2.2x
faster (the standard library took 17 us an attempt within a run; in one process at load
12, 29 -> 13 us). A loaded spec's `FrozenDict` and `FrozenList` (core/frozenjson.py: a
matrix value) it writes as a dict and a list, as `json.dumps` does; whatever else it does
not know (another subclass, a key that is not a string, a cycle) it leaves to
`json.dumps`, which writes it, or refuses it, as it always did.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring

from reprospec.core.frozenjson import FrozenDict, FrozenList

_INFINITY = float("inf")


class _Unknown(Exception):
    """A value `indented` does not write itself: `json.dumps` does."""


def indented(value: object) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, its exact text."""
    parts: list[str] = []
    try:
        _encode(value, "\n", parts.append)
    except (_Unknown, RecursionError):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


def _encode(value: object, indent: str, put: Callable[[str], None]) -> None:
    """Append `value`'s text at the nesting whose lines start with `indent` (a newline and
    its spaces). Exact types only (`type(...) is`): a subclass may encode otherwise, but
    FrozenDict and FrozenList override no encoding."""
    kind = type(value)
    if kind is str and isinstance(value, str):
        put(encode_basestring(value))
    elif (kind is dict or kind is FrozenDict) and isinstance(value, dict):
        if not value:
            put("{}")
            return
        inner = indent + "  "
        before = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _Unknown  # json.dumps makes keys of numbers and None its own way
            put(before)
            put(encode_basestring(key))
            put(": ")
            _encode(item, inner, put)
            before = "," + inner
        put(indent)
        put("}")
    elif value is None:
        put("null")
    elif value is True:
        put("true")
    elif value is False:
        put("false")
    elif kind is int and isinstance(value, int):
        put(int.__repr__(value))
    elif kind is float and isinstance(value, float):
        put(_float(value))
    elif (kind is list or kind is tuple or kind is FrozenList) and isinstance(value, (list, tuple)):
        if not value:
            put("[]")
            return
        inner = indent + "  "
        before = "[" + inner
        for item in value:
            put(before)
            _encode(item, inner, put)
            before = "," + inner
        put(indent)
        put("]")
    else:
        raise _Unknown


def _float(value: float) -> str:
    """A float as json writes it (allow_nan, its default: `NaN`, `Infinity`)."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


__all__ = ["indented"]
