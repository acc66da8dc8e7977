"""A Slurm tool (squeue, sacct, sbatch) faked on PATH, for the tests that need one to say
something no cluster here could be made to say (test_foreign_bytes.py, test_queue.py).
Apart from tests/support/slurm.py, which asks sinfo whether a cluster answers as it is
imported: these tests need none."""

from __future__ import annotations

from pathlib import Path


def fake_tool(folder: Path, name: str, script: str) -> None:
    """`folder/name`, a shell script running `script`; the caller puts `folder` on PATH."""
    tool = folder / name
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)
