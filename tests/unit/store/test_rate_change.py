"""compare's rule for a cell's failure rate (store/compare.py's `rate_apart`): a change is
told where the two rates' Wilson 95% intervals do not overlap, not a count that chance
makes (runs of a different `--repeat`, a flaky failure seen a few times more)."""

from __future__ import annotations

import pytest

from reprospec.store.compare import rate_apart


@pytest.mark.parametrize(
    ("a", "b", "apart"),
    [
        ((4, 30), (16, 30), True),  # 0.05-0.30 against 0.36-0.70: a user's race, amplified
        ((16, 30), (4, 30), True),
        ((2, 20), (4, 20), False),  # within chance
        ((0, 1), (3, 3), False),  # one attempt against three: nothing to tell
        ((0, 20), (20, 20), True),
        ((1, 1), (1, 3), False),
        ((0, 0), (5, 5), False),  # a run whose attempts could not run: no rate
    ],
)
def test_a_rate_changed_only_where_the_intervals_are_apart(
    a: tuple[int, int], b: tuple[int, int], apart: bool
) -> None:
    assert rate_apart(a, b) is apart


def test_a_cell_an_interrupted_run_never_reached_is_not_said_to_have_changed_outcome() -> None:
    # `reproduced -> not-run (outcome changed)`: read as the code's change, where the second
    # run was stopped before the cell ran.
    from dataclasses import replace

    from reprospec.store.compare import _cell_change
    from tests.support.runs import error_run

    cell = error_run().cells[1]
    stopped = replace(cell, verdict="not-run", attempts=())
    change = _cell_change(cell, stopped)
    assert change is not None
    assert change["change"] == "the second run was interrupted before it"
    back = _cell_change(stopped, cell)
    assert back is not None
    assert back["change"] == "the first run was interrupted before it"
    assert _cell_change(stopped, stopped) is None
