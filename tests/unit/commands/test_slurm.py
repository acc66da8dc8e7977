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


@pytest.mark.parametrize(
    ("words", "named"),
    [
        (["resume", "RUN", "--dry-run"], "not --dry-run:"),
        (["RUN", "--resume", "--dry-run"], "not --dry-run:"),
        (["resume", "RUN", "--timeout", "10m", "-j", "2"], "not --timeout, -j/--jobs:"),
        (
            ["resume", "RUN", "--partition", "gpu", "--set", "run.repeat=2"],
            "not --set, --partition",
        ),
        (["status", "RUN", "--time", "5"], "not --time:"),
    ],
)
def test_status_and_resume_refuse_the_options_they_would_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], named: str
) -> None:
    # `slurm resume RUN --dry-run` submitted the shards; `--timeout 10m` sent them with the
    # run's old timeout, without a word. Refused before the run is even looked up.
    from reprospec.cli import main

    code = main(["slurm", *words, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "slurm").exists()


def test_resume_takes_time_and_status_takes_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reprospec.cli import main

    for words in (["resume", "RUN", "--time", "5"], ["status", "RUN", "--format", "json"]):
        assert main(["slurm", *words, "--out", str(tmp_path)]) == 2
        assert "no Slurm run 'RUN'" in capsys.readouterr().err
