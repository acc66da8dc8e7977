"""sincerun.py: why a run's program files could not be checked against today's."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from reprospec.core.jsontypes import JsonObject
from reprospec.export.sincerun import since_run
from reprospec.store.digests import FILES_FIELD


def test_a_run_no_store_lists_is_not_said_moved_from_its_store(tmp_path: Path) -> None:
    """`reprospec merge` writes its run into `--out`'s runs/ with no store listing it, its
    digests its first shard's under that shard's store's key: bundle of it said "the run
    folder was moved from its store, or its digest.key was removed", neither of which
    happened."""
    (tmp_path / "prog.py").write_text("print(1)\n")
    run_dir = tmp_path / "merged" / "runs" / "20260101-000000-tiny-abcd"
    run_dir.mkdir(parents=True)
    environment: JsonObject = {FILES_FIELD: {"store": "0123abcd", "of": [["prog.py", "f" * 32]]}}
    since = since_run(environment, run_dir, tmp_path, [tmp_path / "prog.py"])
    assert since.changed == ()
    assert since.unchecked is not None
    assert "no store there lists the run: a run merge made" in since.unchecked
    assert "moved from its store, or its digest.key" not in since.unchecked


def _store_listing(out: Path, *run_ids: str) -> None:
    """A results.db under `out` whose runs table lists `run_ids` (no digest.key beside it)."""
    with closing(sqlite3.connect(out / "results.db")) as conn, conn:
        conn.execute("CREATE TABLE runs (run_id TEXT, spec_path TEXT, options TEXT, status TEXT)")
        conn.executemany(
            "INSERT INTO runs VALUES (?, 'spec.yaml', '{}', 'finished')",
            [(run_id,) for run_id in run_ids],
        )


def test_a_run_its_store_lists_or_may_list_is_said_moved_or_its_key_removed(
    tmp_path: Path,
) -> None:
    """Only a store read to hold no run of the folder's exact id is "no store there lists
    the run": one that cannot be read, or that holds it, keeps "moved from its store, or
    its digest.key was removed"; a run whose id only begins another's is in no store."""
    (tmp_path / "prog.py").write_text("print(1)\n")
    environment: JsonObject = {FILES_FIELD: {"store": "0123abcd", "of": [["prog.py", "f" * 32]]}}
    moved = "the run folder was moved from its store, or its digest.key was removed"
    none = "no store there lists the run: a run merge made"

    def unchecked(out: str, run_id: str = "20260101-000000-tiny-abcd") -> str:
        run_dir = tmp_path / out / "runs" / run_id
        run_dir.mkdir(parents=True)
        since = since_run(environment, run_dir, tmp_path, [tmp_path / "prog.py"])
        assert since.unchecked is not None
        return since.unchecked

    (tmp_path / "listed").mkdir()
    _store_listing(tmp_path / "listed", "20260101-000000-tiny-abcd")
    assert moved in unchecked("listed")
    # A results.db that cannot be read may list the run.
    (tmp_path / "unreadable").mkdir()
    (tmp_path / "unreadable" / "results.db").write_bytes(b"not a database\n" * 100)
    assert moved in unchecked("unreadable")
    # A store whose one run's id begins with the folder's lists another run, not this one.
    (tmp_path / "other").mkdir()
    _store_listing(tmp_path / "other", "20260101-000000-tiny-abcdef")
    assert none in unchecked("other")
