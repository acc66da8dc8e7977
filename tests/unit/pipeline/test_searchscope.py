"""Every search holds the same things for its whole run (pipeline/searchscope.py): one
environment capture, the store held open, and (but for bisect) the preload servers.

The holds were three decorators pasted on each driver, bisect's two: a new search could
take one and forget another. Each entry point is now `search_scope`'s, and inside it
each hold is open."""

from __future__ import annotations

from reprospec.amplify.driver import amplify_spec
from reprospec.bisect.driver import bisect_spec
from reprospec.environment import probe
from reprospec.isolation.driver import isolate_spec
from reprospec.minimize.driver import minimize_spec
from reprospec.pipeline.searchscope import search_scope
from reprospec.store import db
from reprospec.venvs import build


def test_inside_a_search_its_captures_are_shared_and_its_stores_held() -> None:
    seen: list[tuple[bool, bool]] = []

    @search_scope(servers=False)
    def search(n: int) -> int:
        probe._SHARED.keep(("key",), {"python": "3"})
        seen.append((db._HELD is not None, probe._SHARED.get(("key",)) is not None))
        remembering.append(bool(build._scopes))
        return n + 1

    remembering: list[bool] = []
    assert search(1) == 2
    assert seen == [(True, True)]
    # A python not here is searched for once a search, not once a probe's run (review).
    assert remembering == [True]
    assert not build._scopes
    assert db._HELD is None
    assert probe._SHARED.get(("key",)) is None


def test_every_search_entry_point_is_held_by_the_scope() -> None:
    for search, servers in (
        (isolate_spec, True),
        (minimize_spec, True),
        (amplify_spec, True),
        (bisect_spec, False),
    ):
        assert getattr(search, "search_scope", None) == {"servers": servers}, search


def test_servers_true_holds_the_preload_servers_open_and_false_does_not() -> None:
    from reprospec.runners import local

    @search_scope(servers=True)
    def scoped() -> bool:
        return local.servers_kept()

    @search_scope(servers=False)
    def unscoped() -> bool:
        return local.servers_kept()

    assert scoped() is True
    assert unscoped() is False
    assert local.servers_kept() is False
