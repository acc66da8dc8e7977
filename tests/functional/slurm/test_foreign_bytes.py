"""Slurm's tools' words in bytes that are not UTF-8 (a site's plugin, a job's reason in a
latin-1 locale): read replaced, never a UnicodeDecodeError that ends the verb with a
traceback. This machine has no Slurm: each tool is a fake on PATH that prints such a byte,
as a real one cannot be made to here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprospec.errors import InfraError
from reprospec.slurm.queue import query_queue
from reprospec.slurm.submit import _sbatch
from tests.support.fakeslurm import fake_tool


def test_sbatchs_refusal_in_foreign_bytes_is_an_infra_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path, "sbatch", r"printf 'sbatch: error: r\351pertoire \200\n' >&2; exit 1")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(InfraError, match="sbatch refused the job: sbatch: error: r\ufffdpertoire"):
        _sbatch(["sbatch", "--parsable", "job.sh"])


def test_squeue_and_saccts_foreign_bytes_are_read_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path, "squeue", r"printf '42|1|43|PENDING|Priorit\351\200\n'")
    fake_tool(tmp_path, "sacct", r"printf '44|FAILED \200\n'")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    entries = query_queue(["42", "44"])
    assert entries is not None
    assert entries[("42", 1)].reason == "Priorit\ufffd"  # \351\200: one cut sequence
    assert entries[("44", None)].state.startswith("FAILED")
