"""minimize's first step, the settings: what isolate found the failure needs, and whether
the program's passes can keep it."""

from __future__ import annotations

from reprospec.core.inputs import Cell
from reprospec.isolation.differences import Difference
from reprospec.minimize.settings import Reduced

FAILING = Cell("b=1,d=1", 0, {"b": 1, "d": 1})
NONE_SET = Cell("b=0,d=0", 1, {"b": 0, "d": 0})
D_ALONE = Cell("b=0,d=1", 2, {"b": 0, "d": 1})
B_ALONE = Cell("b=1,d=0", 3, {"b": 1, "d": 0})
PAIR = (Difference("matrix.b", 0, 1), Difference("matrix.d", 0, 1))


def test_an_and_no_passing_cell_guards_is_a_caveat() -> None:
    """isolate: b=1 AND d=1; the passing cells set neither, so a candidate that stops
    reading `b` (crashing with d=1 alone) passes every check."""
    reduced = Reduced(FAILING, FAILING, NONE_SET, needed=PAIR)
    caveat = reduced.unguarded([NONE_SET])
    assert caveat.startswith(
        "isolate found the failure needs b=1 AND d=1, and no passing cell sets all of them "
        "but b, nor all of them but d, so"
    )
    assert "the result may fail where the original does not" in caveat
    # d=1 alone passing holds candidates to b, not to d (a candidate that stops reading d,
    # passes it): still said, of d alone. Both one-smaller cells: no caveat.
    assert "sets all of them but d, so" in reduced.unguarded([NONE_SET, D_ALONE])
    assert reduced.unguarded([NONE_SET, D_ALONE, B_ALONE]) == ""
    # One needed value, or none found, is no AND to lose.
    assert Reduced(FAILING, FAILING, NONE_SET, needed=PAIR[:1]).unguarded([NONE_SET]) == ""
    assert Reduced(FAILING, FAILING, NONE_SET).unguarded([NONE_SET]) == ""
