"""A hang's reader gets more time on a loaded machine: how much, from the load average."""

from __future__ import annotations

import os

import pytest

from reprospec.native import readers


@pytest.mark.parametrize(
    ("load", "cpus", "stretch"),
    [
        (0.3, 2, 1.0),  # quiet: the deadline as it is
        (2.0, 2, 1.0),  # as many runnable tasks as CPUs: each gets one
        (5.0, 2, 2.5),
        (20.0, 2, 4.0),  # three test suites on two cores: at most 4 times
        (20.0, 16, 1.25),
    ],
)
def test_the_deadline_stretches_with_the_load_over_the_cpus(
    monkeypatch: pytest.MonkeyPatch, load: float, cpus: int, stretch: float
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    assert readers.load_stretch() == stretch


def test_without_a_load_average_the_deadline_is_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable() -> tuple[float, float, float]:
        raise OSError("no /proc/loadavg")

    monkeypatch.setattr(os, "getloadavg", unreadable)
    assert readers.load_stretch() == 1.0
