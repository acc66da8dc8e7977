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
    module imported when a search runs."""
    from reprospec.amplify.driver import amplify_spec
    from reprospec.isolation.driver import isolate_spec
    from reprospec.minimize.driver import minimize_spec
    from reprospec.runners import kept_servers, local

    @kept_servers
    def search(python: str) -> bool:
        """A search."""
        return local._kept(python) is not None  # something kept: the block is open

    assert search("python3") is True
    assert local._kept("python3") is None  # and closed after it
    assert search.__doc__ == "A search."
    kept = search.__code__  # functools.wraps copies the name, not the code
    for verb in (isolate_spec, minimize_spec, amplify_spec):
        layer: object = verb
        codes = []
        while layer is not None:
            codes.append(getattr(layer, "__code__", None))
            layer = getattr(layer, "__wrapped__", None)
        assert kept in codes, verb
