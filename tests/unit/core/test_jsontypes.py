"""The readers of JSON values every stage narrows a document with."""

from __future__ import annotations

from reprospec.core.jsontypes import integer, is_int


def test_a_boolean_is_no_integer_though_python_counts_it_as_one() -> None:
    # The spec's checks (a fault's rank and step, a phase's steps) and the readers of
    # results.json share the one test: `true` is never a count.
    assert all(is_int(value) for value in (0, 7, -1))
    for value in (True, False, 1.0, "1", None, [1]):
        assert not is_int(value), value
    assert integer(True) is None
    assert integer(3) == 3
