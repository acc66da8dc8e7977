"""The sizes `envs` shows: in the unit that fits, where the totals were MB to one decimal
and a list of small environments read "0.0 MB"."""

from __future__ import annotations

import pytest

from reprospec.venvs.cache import human_size


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (29_081, "28.4 KB"),
        (1024 * 1024 - 1, "1.0 MB"),  # rounds to 1024.0 KB: said in the next unit
        (105.2 * 2**20, "105.2 MB"),
        (1.4 * 2**30, "1.4 GB"),
        (3 * 2**40, "3072.0 GB"),
    ],
)
def test_a_size_is_shown_in_the_unit_that_fits(size: float, shown: str) -> None:
    assert human_size(size) == shown
