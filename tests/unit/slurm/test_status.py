"""`reprospec slurm status` from the folders alone: never-submitted runs, unknown shards,
slurmstepd lines."""

from __future__ import annotations

from pathlib import Path

from reprospec.slurm import (
    ShardArgs,
    SlurmOptions,
    SlurmRun,
    cancel_time,
    death_cause,
    load,
    new_run,
    run_status,
)
from tests.support.cli import ROOT, SPECS

# Real-engine tests (a running slurmctld/slurmd): `-m "not docker and not slurm"` skips them.


# Real slurmstepd lines, from the Slurm 22.05 test cluster's output files.
TIME_LIMIT_LINE = (
    "slurmstepd-vm: error: *** JOB 13 ON vm CANCELLED AT 2026-11-23T14:42:40 DUE TO TIME LIMIT ***"
)


SCANCEL_LINE = "slurmstepd-vm: error: *** JOB 21 ON vm CANCELLED AT 2026-11-23T15:02:11 ***"


def test_slurmstepd_lines_name_why_a_task_died() -> None:
    assert death_cause(f"[1/1] x\n{TIME_LIMIT_LINE}\n") == "time limit"
    assert death_cause(SCANCEL_LINE) == "cancelled"
    assert death_cause(TIME_LIMIT_LINE.replace("TIME LIMIT", "NODE FAILURE")) == "node failure"
    assert death_cause("reprospec-slurm: exit 0\n") is None
    killed = cancel_time(TIME_LIMIT_LINE)
    assert killed is not None
    assert killed.strftime("%H:%M:%S") == "14:42:40"


def _two_shards(tmp_path: Path) -> SlurmRun:
    """The plan of segfault-command.yaml in two shards of 2 attempts, in tmp_path (nothing
    written)."""
    return new_run(
        SPECS / "segfault-command.yaml",
        "x",
        tmp_path,
        SlurmOptions(shards=2),
        ShardArgs(),
        (2, 2),
        chdir=ROOT,
    )


def test_status_of_a_run_never_submitted_reads_the_folders(tmp_path: Path) -> None:
    """A plan written but not submitted: status says so without asking Slurm."""
    from reprospec.slurm import save, write_scripts

    run = _two_shards(tmp_path)
    write_scripts(run)
    save(run)
    status = run_status(load(run.run_dir), ask_queue=False)
    assert [s.state for s in status.shards] == ["not-submitted", "not-submitted"]
    assert status.missing == (1, 2)
    assert status.merge.state == "not-submitted"


def test_a_shard_folder_the_store_never_heard_of_is_set_aside(tmp_path: Path) -> None:
    """Killed between making its run folder and its first store write: it cannot --resume."""
    from reprospec.slurm import set_aside_unresumable
    from reprospec.store.db import Store

    run = _two_shards(tmp_path)
    orphan = run.shard_dir(1) / "runs" / "20260101-000000-x-0000"
    orphan.mkdir(parents=True)
    Store(run.shard_dir(1)).close()  # the store exists, without that run
    moved = set_aside_unresumable(run, 1)
    assert moved is not None
    assert moved.parent == run.run_dir / "stale"
    assert (moved / "runs" / orphan.name).is_dir()
    assert not run.shard_dir(1).exists()
    assert set_aside_unresumable(run, 2) is None  # nothing there: nothing to move


def test_a_resumed_shard_counts_its_attempts_not_the_interrupted_results(tmp_path: Path) -> None:
    """While a resume of an interrupted shard ran, status read the results.json
    the interruption wrote (what it had then: no attempt) and said `running 0/2
    attempts` throughout; the attempts under way are read from the run folder."""
    import json

    from reprospec.slurm import save, write_scripts

    run = _two_shards(tmp_path)
    write_scripts(run)
    save(run)
    folder = run.shard_dir(1) / "runs" / "20260101-000000-x-0000"
    for attempt in ("1", "2"):
        (folder / "cells" / "c" / attempt).mkdir(parents=True)
    stopped = {"interrupted": True, "shard": "1/2", "cells": []}
    (folder / "results.json").write_text(json.dumps(stopped))
    status = run_status(load(run.run_dir), ask_queue=False)
    assert status.shards[0].attempts_started == 2


def _ended(run: SlurmRun, finished: str) -> SlurmRun:
    """Shard 1 of `run` submitted, its task stopped by a time limit at 14:42:40 (the log),
    its results written complete with one attempt that ended at `finished`."""
    import json
    from dataclasses import replace

    from reprospec.slurm import Submission, save, write_scripts

    run = replace(run, submissions=(Submission("13", "14", (1, 2), "2026-11-23T14:41:00"),))
    write_scripts(run)
    save(run)
    log = run.shard_log(1, "13")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"reprospec-slurm: shard 1/2 job 13_1 on vm\n{TIME_LIMIT_LINE}\n")
    folder = run.shard_dir(1) / "runs" / "20261123-144100-x-0000"
    folder.mkdir(parents=True)
    attempt = {"attempt": 1, "outcome": {"kind": "pass"}, "finished": finished}
    results = {
        "interrupted": False,
        "shard": "1/2",
        "summary": {"cells": 1, "reproduced": 1},
        "cells": [{"id": "part=hold", "attempts": [attempt]}],
    }
    (folder / "results.json").write_text(json.dumps(results))
    return load(run.run_dir)


def test_an_attempt_that_ended_as_the_time_limit_came_leaves_its_shard_to_resume(
    tmp_path: Path,
) -> None:
    """CI, stop 62: the time limit's SIGTERM killed the attempt's `sleep` before it reached
    the engine, its shell went on to exit 0, and the engine wrote the run complete with a
    `pass` that was the stop's: the shard read `done`, and `slurm resume` left it so."""
    # The log's stamp is the node's local time, as the engine's `finished` is read.
    stopped = cancel_time(TIME_LIMIT_LINE)
    assert stopped is not None
    cut = _ended(_two_shards(tmp_path / "cut"), stopped.isoformat(timespec="milliseconds"))
    status = run_status(cut, ask_queue=False)
    assert status.shards[0].state == "died", status.shards[0]
    assert status.shards[0].detail == (
        "time limit: 1 attempt ended as Slurm stopped the task (part=hold #1), run again on "
        "resume (*** JOB 13 ON vm CANCELLED AT 2026-11-23T14:42:40 DUE TO TIME LIMIT ***)"
    )
    assert 1 in status.missing
    earlier = stopped.replace(minute=stopped.minute - 1).isoformat(timespec="milliseconds")
    whole = _ended(_two_shards(tmp_path / "whole"), earlier)
    assert run_status(whole, ask_queue=False).shards[0].state == "done"


def test_slurmstepds_stop_is_read_at_the_nodes_offset(tmp_path: Path) -> None:
    """`CANCELLED AT` is the node's local time; read at the reader's own zone, an
    attempt the stop cut short on a node at UTC-5 read as ended 5 hours before it."""
    line = "reprospec-slurm: shard 1/2 job 13_1 on vm CUDA_VISIBLE_DEVICES=unset utc-0500"
    stopped = cancel_time(f"{line}\n{TIME_LIMIT_LINE}\n")
    assert stopped is not None
    assert stopped.isoformat() == "2026-11-23T14:42:40-05:00"
    cut = _ended(_two_shards(tmp_path / "cut"), "2026-11-23T19:42:40.500+00:00")
    log = cut.shard_log(1, "13")
    log.write_text(
        log.read_text().replace("on vm\n", "on vm CUDA_VISIBLE_DEVICES=unset utc-0500\n")
    )
    assert run_status(cut, ask_queue=False).shards[0].state == "died"
    whole = _ended(_two_shards(tmp_path / "whole"), "2026-11-23T14:42:40.500+00:00")
    log = whole.shard_log(1, "13")
    log.write_text(
        log.read_text().replace("on vm\n", "on vm CUDA_VISIBLE_DEVICES=unset utc-0500\n")
    )
    assert run_status(whole, ask_queue=False).shards[0].state == "done"


def test_a_spec_changed_or_removed_since_its_plan_is_said(tmp_path: Path) -> None:
    """What `slurm resume` refuses to send again: every task would refuse that spec."""
    from reprospec.slurm import spec_changed

    spec = tmp_path / "s.yaml"
    spec.write_text((SPECS / "segfault-command.yaml").read_text())
    run = new_run(spec, "x", tmp_path, SlurmOptions(shards=1), ShardArgs(), (4,), chdir=ROOT)
    assert spec_changed(run) is None
    spec.write_text(spec.read_text() + "# edited\n")
    assert spec_changed(run) == "changed"
    spec.unlink()
    assert spec_changed(run) == "removed"


def test_latest_of_an_out_with_runs_but_no_slurm_run_says_no_slurm_runs(tmp_path: Path) -> None:
    """`slurm status latest` under an --out of plain runs said `.reprospec has no runs`,
    though `history` lists them: it is the Slurm runs under OUT/slurm/ it counts."""
    import pytest

    from reprospec.errors import UsageError
    from reprospec.slurm.plan import find

    run = tmp_path / "runs" / "20261201-000001-own-aaaa"
    run.mkdir(parents=True)
    (run / "results.json").write_text("{}")
    with pytest.raises(UsageError) as no_slurm:
        find("latest", tmp_path)
    assert str(no_slurm.value) == f"latest: {tmp_path} has no Slurm runs"
    (tmp_path / "slurm" / "20261201-000002-s-bbbb").mkdir(parents=True)
    (tmp_path / "slurm" / "20261201-000002-s-bbbb" / "slurm.json").write_text("{}")
    assert find("latest", tmp_path) == tmp_path / "slurm" / "20261201-000002-s-bbbb"
    with pytest.raises(UsageError) as one:
        find("latest~1", tmp_path)
    assert str(one.value) == f"latest~1: {tmp_path} has only 1 Slurm run"
