"""A sequence whose items are made when they are read, not held.

A large run holds neither its cells nor its attempts' plans: `spec.matrix.MatrixCells`
makes cell i from the axes, `spec.matrix.CellView` reads the positions `-m` or a shard
keeps, and `plan.run.PlannedAttempts` plans attempt i from its index. What they share as
sequences is here once: indexing (negative indexes and slices, a slice as a tuple of the
items made), and equality by content with any sequence of the same items, as the list or
tuple each replaced (so unhashable, like a list).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class LazySequence(Sequence[T]):
    """Item i made by `_item(i)` when read; reading it twice makes it twice, to equal items."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _item(self, index: int) -> T:
        """Item `index`, with 0 <= index < len(self)."""

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._item(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return False
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # (equal by content, like the list it was)


__all__ = ["LazySequence"]
