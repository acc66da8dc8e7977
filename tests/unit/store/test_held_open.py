"""A search's probe runs open and close the store once each: opening a store of the current
schema writes nothing, and inside `held_open` no probe's close checkpoints the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reprospec.store.db import RESERVE_BYTES, RESERVE_SUFFIX, Store, held_open


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
