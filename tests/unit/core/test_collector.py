"""The collector held off through the command line's imports and back on for the attempts.

"Nothing frozen" is read as "the freeze count did not grow", never as "it stayed equal": a
frozen object leaves the count when it is freed, and the test process's other threads
(xdist's execnet receiver) free theirs whenever they run, so on a loaded machine the count
fell between two reads (failed 1 in 20 runs of tests/unit/core at load 8). Only a freeze
makes it grow, and a freeze takes every object made since, `made`'s 1,000 lists among them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from reprospec.core import collector


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    """The test process's collector as it was: on, nothing frozen, no command line's hold."""
    was = gc.isenabled()
    yield
    collector._held = False
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_command_line_holds_the_collector_until_the_attempts() -> None:
    gc.enable()
    collector.hold()
    assert not gc.isenabled()
    made: list[list[int]] = [[] for _ in range(1000)]  # what imports make: objects that live on
    collector.release()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)
    # Released once: a second probe's release changes nothing.
    frozen = gc.get_freeze_count()
    again: list[list[int]] = [[] for _ in range(1000)]
    collector.release()
    assert gc.isenabled()
    assert gc.get_freeze_count() <= frozen, len(again)


def test_imports_in_the_middle_of_a_run_freeze_nothing() -> None:
    # By then the run's own garbage is among the young objects: a search's probes, each
    # with its imports at the end, would keep every probe's for good (review).
    collector.hold()
    collector.release()
    frozen = gc.get_freeze_count()
    with collector.importing():
        assert not gc.isenabled()
        made: list[list[int]] = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() <= frozen, len(made)


def test_an_api_caller_keeps_its_collector_as_it_was() -> None:
    for enabled in (True, False):
        gc.enable() if enabled else gc.disable()
        frozen = gc.get_freeze_count()
        collector.release()
        assert gc.isenabled() is enabled
        with collector.importing():
            assert not gc.isenabled()
            made: list[list[int]] = [[] for _ in range(1000)]
        assert gc.isenabled() is enabled
        # Nothing of the caller's is frozen out of its collections.
        assert gc.get_freeze_count() <= frozen, len(made)
