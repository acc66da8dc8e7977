"""sincerun.py: why a run's program files could not be checked against today's."""

from __future__ import annotations

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
