"""The runner registry and the names RunOptions checks are the same list."""

from __future__ import annotations

from reprospec.core.runoptions import RUNNER_NAMES
from reprospec.runners import RUNNERS


def test_the_registry_builds_every_runner_the_options_accept_and_no_other() -> None:
    # core cannot import the runners (a later stage), so the names are written twice; a runner
    # added to one and not the other would be refused by one side and offered by the other.
    assert tuple(RUNNERS) == RUNNER_NAMES
