"""What squeue and sacct answer, and what a run's status makes of their silence
(slurm/queue.py): sacct refusing (no accounting database) adds nothing to squeue's
entries; squeue refusing, or not there, is no answer at all (None), never "no jobs".
This machine has no Slurm: each tool is a fake on PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.slurm.queue import query_queue
from tests.support.fakeslurm import fake_tool


def test_a_refusing_sacct_leaves_squeues_entries_and_a_refusing_squeue_is_no_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert query_queue(["42"]) is None  # neither tool on PATH
    fake_tool(tmp_path, "squeue", "printf '42|1|43|RUNNING|None\\n'")
    fake_tool(tmp_path, "sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1")
    entries = query_queue(["42", "44"])
    assert entries is not None
    assert [(key, entry.state) for key, entry in entries.items()] == [(("42", 1), "RUNNING")]
    fake_tool(tmp_path, "squeue", "echo 'slurm_load_jobs error: timeout' >&2; exit 1")
    assert query_queue(["42"]) is None
    assert query_queue([""]) is None  # no job asked of
