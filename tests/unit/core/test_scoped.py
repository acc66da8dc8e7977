"""Scoped: what a search's runs share lives from the outermost block's start to its end."""

from __future__ import annotations

import threading

import pytest

from reprospec.core.scoped import Scoped


def test_nothing_is_kept_outside_a_block() -> None:
    scoped: Scoped[str, list[int]] = Scoped()
    scoped.keep("a", [1])
    assert scoped.get("a") is None
    assert scoped.setdefault("a", list) is None


def test_nested_blocks_share_and_only_the_outermost_end_empties() -> None:
    ended: list[list[int]] = []
    scoped: Scoped[str, list[int]] = Scoped(end=ended.append)
    with scoped.block():
        first = scoped.setdefault("a", list)
        assert first == []
        with scoped.block():
            assert scoped.setdefault("a", list) is first  # made once, the same value
            scoped.keep("b", [2])
            scoped.keep("b", [3])  # the first kept stays
        assert ended == []  # the inner block's end stops nothing
        assert scoped.get("b") == [2]
    assert sorted(ended) == [[], [2]]
    assert scoped.get("a") is None
    with scoped.block():
        assert scoped.get("a") is None  # a new block starts empty


def test_a_block_that_raises_still_ends_its_values() -> None:
    ended: list[str] = []
    scoped: Scoped[int, str] = Scoped(end=ended.append)

    @scoped.block()
    def search() -> None:
        scoped.keep(1, "server")
        raise RuntimeError("the search failed")

    with pytest.raises(RuntimeError):
        search()
    assert ended == ["server"]
    with scoped.block():
        assert scoped.get(1) is None


def test_threads_asking_at_once_get_one_value() -> None:
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    scoped: Scoped[str, object] = Scoped()
    got: list[object | None] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        got.append(scoped.setdefault("python", make))

    with scoped.block():
        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(made) == 1
    assert got == made * 8
