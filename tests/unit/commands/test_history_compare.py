"""Run ids for `history` and `compare`: the order of runs begun in one second, `latest` of Slurm
runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reprospec.errors import UsageError
from reprospec.store.refs import recent_run_ids, resolve_run_id


def test_recent_run_ids_order_runs_of_one_second_as_begun(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY)")
    # Begun in this order within one second; their random suffixes sort the other way.
    conn.executemany(
        "INSERT INTO runs VALUES (?)", [("20261121-214512-x-ffff",), ("20261121-214512-x-0000",)]
    )
    conn.commit()
    conn.close()
    (tmp_path / "runs" / "20261121-214513-x-merged").mkdir(parents=True)
    # A merge made in the same second as the runs it merged (no store row of its own).
    (tmp_path / "runs" / "20261121-214512-x-1111").mkdir(parents=True)
    assert recent_run_ids(tmp_path) == [
        "20261121-214513-x-merged",
        "20261121-214512-x-1111",
        "20261121-214512-x-0000",
        "20261121-214512-x-ffff",
    ]
    assert resolve_run_id("latest~3", tmp_path) == "20261121-214512-x-ffff"
    assert resolve_run_id("20261121", tmp_path) == "20261121"  # not a `latest`: as given
    with pytest.raises(UsageError, match="has no runs"):
        resolve_run_id("latest", tmp_path / "empty")


def test_slurm_runs_take_latest_too(tmp_path: Path) -> None:
    from reprospec import slurm

    for run_id in ("20261121-214512-x-aaaa", "20261121-214600-x-bbbb"):
        (tmp_path / "slurm" / run_id).mkdir(parents=True)
        (tmp_path / "slurm" / run_id / slurm.PLAN_FILE).write_text("{}")
    assert slurm.find("latest", tmp_path).name == "20261121-214600-x-bbbb"
    assert slurm.find("latest~1", tmp_path).name == "20261121-214512-x-aaaa"
