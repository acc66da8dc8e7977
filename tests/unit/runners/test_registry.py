"""The runner registry and the names RunOptions checks are the same list."""

from __future__ import annotations

from reprospec.core.runoptions import RUNNER_NAMES
from reprospec.runners import RUNNERS


def test_the_registry_builds_every_runner_the_options_accept_and_no_other() -> None:
    # core cannot import the runners (a later stage), so the names are written twice; a runner
    # added to one and not the other would be refused by one side and offered by the other.
    assert tuple(RUNNERS) == RUNNER_NAMES


def test_a_search_runs_inside_one_keep_servers_block() -> None:
    """lo40: isolate, minimize and amplify each opened `keep_servers()` around their search
    with the same three lines; `kept_servers` does it for all three, the local runner's
    module imported when a search runs. Each entry point takes it from `search_scope`
    (servers=True: tests/unit/pipeline/test_searchscope.py)."""
    from reprospec.runners import kept_servers, local

    @kept_servers
    def search() -> bool:
        """A search."""
        return local.servers_kept()

    assert search() is True
    assert local.servers_kept() is False  # closed after it
    assert search.__doc__ == "A search."
