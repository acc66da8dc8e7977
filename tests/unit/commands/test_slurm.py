"""`reprospec slurm status`'s table: the next step it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.commands.slurm import _print_status
from reprospec.slurm import MergeStatus, RunStatus, ShardArgs, ShardStatus, SlurmOptions, new_run
from tests.support.cli import ROOT, SPECS


def _done(shard: int) -> ShardStatus:
    return ShardStatus(shard, "done", "1 of 2 cells reproduced", f"7_{shard}", 2, 2, None, None)


def test_a_failed_merge_of_done_shards_names_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A merge job cancelled (scancel) after every shard finished: status exited 3 and said
    # `merge failed ... Slurm state CANCELLED`, naming no next step.
    run = new_run(
        SPECS / "segfault-command.yaml",
        "x",
        tmp_path,
        SlurmOptions(shards=2),
        ShardArgs(),
        (2, 2),
        chdir=ROOT,
    )
    merge = MergeStatus("failed", "Slurm state CANCELLED", "8", None, None)
    _print_status(RunStatus(run, (_done(1), _done(2)), merge, queue_answered=True))
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == (
        "every shard has its results, the merge failed: reprospec slurm resume "
        f"{run.run_dir} submits it again"
    )
