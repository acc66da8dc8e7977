"""What squeue and sacct answer, and what a run's status makes of their silence
(slurm/queue.py): sacct refusing (no accounting database) adds nothing to squeue's
entries; squeue refusing, or not there, is no answer at all (None), never "no jobs".
This machine has no Slurm: each tool is a fake on PATH."""

from __future__ import annotations

import os
from pathlib import Path
from time import monotonic, sleep

import pytest

from reprospec.slurm.queue import jobs_of_scripts, query_queue
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


def test_a_wrapper_squeue_whose_child_holds_the_pipe_is_ended_at_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site's squeue wrapper (its child, the real squeue, hanging on a stopped
    slurmctld, holds the pipe): a stop 1 s in ends it then, child and all, where killing
    the wrapper and reading to EOF waited the child's 20 s."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    fake_tool(
        tmp_path,
        "squeue",
        f"echo $$ > {tmp_path}/pid; sleep 20 & echo $! > {tmp_path}/child; wait; exit 0",
    )
    began = monotonic()
    assert (
        jobs_of_scripts(["/x/array.sbatch"], timeout_s=60, stop=lambda: monotonic() - began > 1)
        is None
    )
    assert monotonic() - began < 5
    child = Path(f"/proc/{(tmp_path / 'child').read_text().strip()}/stat")
    # Ended with its wrapper's group: gone, or a zombie its new parent has yet to reap
    # (a SIGKILL takes a moment to land on a loaded machine).
    ended = monotonic() + 5
    while child.exists() and child.read_text().rsplit(")", 1)[1].split()[0] not in "ZX":
        assert monotonic() < ended, child.read_text()
        sleep(0.05)
