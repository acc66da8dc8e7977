"""core.lazysequence: the indexing and equality the lazy cells and attempt plans share."""

from __future__ import annotations

import pytest

from reprospec.core.lazysequence import LazySequence


class Squares(LazySequence[int]):
    def __init__(self, size: int) -> None:
        self.size = size
        self.made: list[int] = []

    def __len__(self) -> int:
        return self.size

    def _item(self, index: int) -> int:
        self.made.append(index)
        return index * index


def test_items_are_made_when_read_negative_indexes_and_slices_included() -> None:
    squares = Squares(5)
    assert squares.made == []
    assert squares[2] == 4
    assert squares[-1] == 16
    assert squares[1:4] == (1, 4, 9)
    assert squares[::-2] == (16, 4, 0)
    assert squares.made == [2, 4, 1, 2, 3, 4, 2, 0]
    for index in (5, -6):
        with pytest.raises(IndexError, match="Squares index out of range"):
            squares[index]


def test_equal_by_content_to_any_sequence_of_the_same_items_and_unhashable() -> None:
    assert Squares(3) == [0, 1, 4]
    assert Squares(3) == (0, 1, 4)
    assert Squares(3) == Squares(3)
    assert Squares(3) != [0, 1]
    assert Squares(3) != [0, 1, 5]
    assert Squares(0) != ""
    assert Squares(1) != 0
    with pytest.raises(TypeError):
        hash(Squares(1))
