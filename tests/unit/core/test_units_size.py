"""core/units.format_size: the docker runner's memory-limit messages and doctor's sizes, in the
unit that fits, by the rule of `envs` (venvs/cache.human_size, the same function's labels)."""

from __future__ import annotations

import pytest

from reprospec.core.units import format_size


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1023.6, "1.0 KiB"),  # rounds to 1024 B
        (1024 * 1024 - 1, "1.0 MiB"),  # rounds to 1024.0 KiB: said in the next unit
        (64 * 2**20, "64.0 MiB"),
        (2**30 - 1, "1.0 GiB"),
        (1.5 * 2**30, "1.5 GiB"),
        (3 * 2**40, "3.0 TiB"),
        ("64m", ""),
        (True, ""),
    ],
)
def test_a_size_is_said_in_the_unit_that_fits(size: object, shown: str) -> None:
    assert format_size(size) == shown
