"""Read-only JSON values: a mapping and a list that refuse to change, for the values at seams.

A loaded `Spec` is checked once, as it is loaded; everything after (plan, run, report,
a search's probes) trusts that check. Its `document` was a plain dict, so a caller of the
API could edit it after the check (`spec.document["command"] = [...]`) and plan and run a
document nothing had checked, and `hash(spec)` raised "unhashable type: 'dict'", where
every other value between stages is frozen. `freeze` makes such a value read-only, deep.

`FrozenDict` and `FrozenList` are subclasses of `dict` and `list`, not views: the engine's
readers ask `isinstance(value, dict)` / `list` of a spec's values throughout (the schema's
own checks among them), and `json.dumps` writes them as it writes their bases. What they
refuse is every change in place (`TypeError`, as a tuple's item assignment says it); they
hash by their contents. A copy is the caller's to change: `dict(d)`, `d.copy()`,
`copy.copy` and `copy.deepcopy` give plain, mutable values (a deep copy deeply so), and
`thaw` does so explicitly; pickling keeps them frozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar

_K = TypeVar("_K")
_V = TypeVar("_V")
_T = TypeVar("_T")


def _refused(self: object, *_args: object, **_kwargs: object) -> NoReturn:
    raise TypeError(
        f"'{type(self).__name__}' is read-only: a loaded spec's document and a result's "
        "mappings are checked values; change a copy (dict(value), copy.deepcopy(value))"
    )


class FrozenDict(dict[_K, _V]):
    """A dict that cannot change; hashable where its values are."""

    __slots__ = ()

    __setitem__ = _refused
    __delitem__ = _refused
    __ior__ = _refused
    clear = _refused
    pop = _refused
    popitem = _refused
    setdefault = _refused
    update = _refused

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        # The default rebuilds a dict subclass item by item through __setitem__.
        return (type(self), (dict(self),))

    def __copy__(self) -> dict[_K, _V]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, object]) -> dict[_K, _V]:
        return thaw(self)

    def __repr__(self) -> str:
        return dict.__repr__(self)


class FrozenList(list[_T]):
    """A list that cannot change; hashable where its items are."""

    __slots__ = ()

    __setitem__ = _refused
    __delitem__ = _refused
    __iadd__ = _refused
    __imul__ = _refused
    append = _refused
    extend = _refused
    insert = _refused
    pop = _refused
    remove = _refused
    clear = _refused
    sort = _refused
    reverse = _refused

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __copy__(self) -> list[_T]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, object]) -> list[_T]:
        return thaw(self)

    def __repr__(self) -> str:
        return list.__repr__(self)


def freeze(value: _T) -> _T:
    """`value` with every dict and list in it, deep, made read-only (tuples' items too);
    a value frozen already is returned as it is (it is frozen all the way down)."""
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, dict):
        return FrozenDict((k, freeze(v)) for k, v in value.items())  # type: ignore[return-value]
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)  # type: ignore[return-value]
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(freeze(v) for v in value)  # type: ignore[return-value]
    return value


def freeze_mapping(value: Mapping[_K, _V]) -> FrozenDict[_K, _V]:
    """`freeze` of a mapping field (any Mapping: a dict, a view, another's FrozenDict)."""
    if isinstance(value, FrozenDict):
        return value
    return FrozenDict((k, freeze(v)) for k, v in value.items())


def thaw(value: _T) -> _T:
    """A plain, mutable deep copy of a (frozen) JSON value: dicts and lists, tuples kept."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [thaw(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(thaw(v) for v in value)  # type: ignore[return-value]
    return value
