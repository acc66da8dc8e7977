"""A search's probe runs open and close the store once each: opening a store of the current
schema writes nothing, and inside `held_open` no probe's close checkpoints the store."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from reprospec.store.db import RESERVE_BYTES, RESERVE_SUFFIX, Store, held_open


def _allocated(reserve: Path) -> bool:
    """Whether the reserve the store kept holds its room; skips where this file system gives
    none: without flock no reserve is made, and ZFS's fallocate allocates no blocks ahead."""
    if not reserve.is_file():
        pytest.skip(f"{reserve.parent}'s file system gives no flock: no reserve is kept")
    if reserve.stat().st_size == RESERVE_BYTES and reserve.stat().st_blocks == 0:
        pytest.skip(f"{reserve.parent}'s file system allocates no blocks ahead (ZFS)")
    return reserve.stat().st_blocks * 512 >= RESERVE_BYTES


def test_opening_a_store_of_the_current_schema_commits_nothing(tmp_path: Path) -> None:
    with Store(tmp_path):
        pass  # made, with its schema
    watcher = sqlite3.connect(tmp_path / "results.db")
    try:
        # data_version changes when another connection commits to the file.
        before = watcher.execute("PRAGMA data_version").fetchone()[0]
        with Store(tmp_path):
            pass
        assert watcher.execute("PRAGMA data_version").fetchone()[0] == before
    finally:
        watcher.close()


def test_held_open_checkpoints_the_store_once_as_it_ends(tmp_path: Path) -> None:
    wal = tmp_path / "results.db-wal"
    with held_open():
        for n in range(3):
            with Store(tmp_path) as store:
                store.begin_run(f"r{n}", "s", "/s.yaml", "name: s", "local", [], {})
            # Not the last connection: the probe's rows stay in the WAL, uncheckpointed.
            assert wal.is_file()
            assert wal.stat().st_size > 0
        with held_open(), Store(tmp_path):  # nested: the outer block's
            pass
        assert wal.is_file()
    # The block's end closed the last connection: checkpointed, the WAL gone.
    assert not wal.exists()
    with Store(tmp_path) as store:
        assert sorted(str(r["run_id"]) for r in store.runs()) == ["r0", "r1", "r2"]
    # Outside a block, the last close checkpoints as it always did.
    assert not wal.exists()


def test_held_open_keeps_the_reserve_until_it_ends(tmp_path: Path) -> None:
    # Each probe run of a search opens and closes its store: each made and removed the
    # reserve (RESERVE_BYTES allocated), where the search's block keeps the one.
    reserve = tmp_path / f"results.db{RESERVE_SUFFIX}"
    with held_open():
        with Store(tmp_path, reserve=True):
            assert _allocated(reserve)
            kept = reserve.stat()
        for _ in range(2):
            with Store(tmp_path, reserve=True):
                pass
            assert reserve.stat().st_ino == kept.st_ino
            assert reserve.stat().st_blocks * 512 >= RESERVE_BYTES
    assert not reserve.exists()
    with Store(tmp_path, reserve=True):
        assert reserve.is_file()
    assert not reserve.exists()  # outside a block, its last engine removes it


def test_a_store_reached_by_a_symlink_keeps_one_reserve_beside_its_file(tmp_path: Path) -> None:
    # sqlite writes a symlinked results.db's target (its -wal goes there): the reserve is
    # kept on that disk, and a search held a second, empty file there while the engine's
    # was beside the link, removed as each probe closed.
    disk, out = tmp_path / "disk", tmp_path / "out"
    Store(disk).close()
    out.mkdir()
    (out / "results.db").symlink_to(disk / "results.db")
    reserve = disk / f"results.db{RESERVE_SUFFIX}"
    with held_open():
        with Store(out, reserve=True):
            assert _allocated(reserve)
        assert sorted(tmp_path.rglob(f"*{RESERVE_SUFFIX}")) == [reserve]
        assert reserve.stat().st_blocks * 512 >= RESERVE_BYTES  # the search's, still room
    assert list(tmp_path.rglob(f"*{RESERVE_SUFFIX}")) == []


def test_a_ctrl_c_while_the_reserve_is_allocated_leaves_no_reserve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C in Store(reserve=True), before a run holds the store to close it, left the
    # reserve held and the file there until the next run or reader. A KeyboardInterrupt
    # raised by the allocation itself: no real SIGINT can be timed to land inside it.
    def interrupted(*_: int) -> None:
        raise KeyboardInterrupt

    with Store(tmp_path, reserve=True):
        assert _allocated(tmp_path / f"results.db{RESERVE_SUFFIX}")
    monkeypatch.setattr(os, "posix_fallocate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Store(tmp_path, reserve=True)
    assert list(tmp_path.glob(f"*{RESERVE_SUFFIX}")) == []
