"""The spec's values as the API's callers hold them."""

from __future__ import annotations

from reprospec.core.inputs import Cell


def test_a_cell_is_a_key() -> None:
    """`{cell: ...}` raised "unhashable type: 'dict'" (its matrix)."""
    a, same = (Cell("w=2", 1, {"w": 2}) for _ in range(2))
    verdicts = {a: "reproduced", Cell("w=0", 0, {"w": 0}): "not-reproduced"}
    assert verdicts[same] == "reproduced"
    assert hash(a) == hash(same)
    # The matrix still counts for equality, as it did.
    assert Cell("w=2", 1, {"w": 3}) != a
