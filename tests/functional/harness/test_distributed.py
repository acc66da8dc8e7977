"""Distributed workloads through the CLI: real ranks (spawned, gloo on CPU), real hangs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reprospec import native
from reprospec.outcome import ranks
from tests.functional.harness.test_harness import Child
from tests.support.cli import Cli, ExampleRun

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]


def events(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def attempt(cell: dict[str, Any]) -> dict[str, Any]:
    outcome: dict[str, Any] = cell["attempts"][0]["outcome"]
    return outcome


def test_a_rank_that_skips_an_allreduce_hangs_at_that_step_and_is_named(
    example_run: ExampleRun,
) -> None:
    result = example_run("distributed-skipped-allreduce.yaml")  # the examples' own run
    cells = {cell["id"]: cell for cell in result.results()["cells"]}
    assert result.code == 0, {k: (c["verdict"], c["reason"]) for k, c in cells.items()}

    hang = attempt(cells["skip=true"])
    assert (hang["kind"], hang["phase"], hang["step"]) == ("hang", "train", 3)
    # `run.stall` called it 10 s after the ranks' last step, not at the 60 s timeout, and
    # only after the harness had written `ranks_stuck` (2 s into the stall: asserted below).
    assert hang["detail"].startswith("no progress for 10 s (run.stall)"), hang["detail"]
    folder = result.latest_run() / "cells" / "skip=true" / "1"
    report = ranks.read(folder / "events.jsonl")
    assert report is not None
    assert (report.world_size, report.backend) == (2, "gloo")
    assert report.stuck
    assert report.diverged == (1,)
    by_rank = {p.rank: p for p in report.positions}
    assert (by_rank[0].phase, by_rank[0].step, by_rank[0].stage) == ("train", 3, "backward")
    assert (by_rank[1].phase, by_rank[1].step, by_rank[1].stage) == ("train", 4, "sync")
    sentence = ranks.describe(report)
    assert sentence.startswith("rank 1 is out of step: rank 0 at train step 3")
    assert "rank 1 left out the gradient all-reduce of train step 3" in sentence
    # Every rank's Python stacks, taken before the tree was killed.
    pids = next(e["pids"] for e in events(folder) if e["event"] == "ranks")
    stack = (folder / "stack.txt").read_text()
    for pid in pids:
        section = stack.split(f"--- pid {pid} (")[1].split("\n--- pid")[0]
        assert "run_phases" in section, section
    if native.gdb_path() is not None:
        stacks = native.read(folder)
        assert stacks is not None
        attached = {p.pid: p for p in stacks.processes if p.source == "attach"}
        assert set(pids) <= set(attached)
        for process in attached.values():  # gdb is bounded: what it did not reach says so
            assert process.threads or process.error

    passed = attempt(cells["skip=false"])
    assert (passed["kind"], passed["phase"], passed["step"]) == ("pass", "train", 6)
    done = [e for e in events(result.latest_run() / "cells" / "skip=false" / "1")]
    assert {e["rank"] for e in done if e["event"] == "done"} == {0, 1}
    assert all("rank" not in e for e in done if e["event"] in ("distributed", "ranks", "start"))


SPEC = """\
reprospec: 1
name: ddp-rank-dies
environment: {device: cpu}
matrix:
  fault: [segfault, raise]
workload:
  model: {builtin: mlp, params: {hidden: 16}}
  data:
    dataset: {builtin: synthetic, size: 64, shape: [8], classes: 2}
    loader: {batch_size: 8}
  phases: [{name: train, steps: 4}]
  distributed: {world_size: 2, backend: BACKEND}
  faults:
    - kind: segfault
      rank: 1
      at: {phase: train, step: 2}
      when: ${{ matrix.fault == 'segfault' }}
    - kind: raise
      rank: 1
      exception: ValueError
      message: bad batch on rank 1
      at: {phase: train, step: 2}
      when: ${{ matrix.fault == 'raise' }}
run: {timeout: 60s}
expect:
  outcome: crash
  signal: SIGSEGV
  phase: train
  step: 2
  cases:
    - when: {fault: raise}
      outcome: error
      exception: ValueError
      message: bad batch on rank 1
"""


def test_a_rank_that_dies_ends_the_job_as_it_died(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "dies.yaml"
    spec.write_text(SPEC.replace("BACKEND", "gloo"))
    result = cli("run", str(spec), "-j", "2")
    cells = {cell["id"]: cell for cell in result.results()["cells"]}
    assert result.code == 0, {k: (c["verdict"], c["reason"]) for k, c in cells.items()}
    for fault in ("segfault", "raise"):
        folder = result.latest_run() / "cells" / f"fault={fault}" / "1"
        report = ranks.read(folder / "events.jsonl")
        assert report is not None
        assert report.exited is not None
        assert (report.exited.rank, report.exited.position.step) == (1, 2)
    # The other rank's error about its lost peer is not taken for the cause.
    assert attempt(cells["fault=raise"])["exception"] == "ValueError"
    crashed = result.latest_run() / "cells" / "fault=segfault" / "1"
    assert ranks.describe(ranks.read(crashed / "events.jsonl")).startswith(  # type: ignore[arg-type]
        "rank 1 died of SIGSEGV first, at train step 2"
    )
    if native.gdb_path() is not None and not native.core_pattern().piped:
        stacks = native.read(crashed)
        rank_pids = next(e["pids"] for e in events(crashed) if e["event"] == "ranks")
        assert stacks is not None
        assert [p.pid for p in stacks.processes] == [rank_pids[1]]


def test_a_rank_dead_of_a_signal_leaves_no_report_folder_in_a_shared_tmp(
    cli: Cli, tmp_path: Path
) -> None:
    """The supervisor ends itself with the rank's signal inside the try whose
    finally removes the ranks' report folder, so each such attempt left one in TMPDIR,
    the machine's under `environment.shared_tmp`."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    spec = tmp_path / "dies.yaml"
    text = SPEC.replace("BACKEND", "gloo")
    spec.write_text(text.replace("{device: cpu}", "{device: cpu, shared_tmp: true}"))
    result = cli("run", str(spec), "-m", "fault=segfault", env={"TMPDIR": str(shared)})
    assert result.code == 0, result.stderr
    assert not list(shared.glob("reprospec-ranks-*"))


def test_nccl_without_gpus_is_an_infra_error(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "nccl.yaml"
    spec.write_text(SPEC.replace("BACKEND", "nccl"))
    result = cli("run", str(spec), "-m", "fault=raise")
    (cell,) = result.results()["cells"]
    assert result.code == 3
    assert cell["verdict"] == "infra-error"
    assert "backend nccl needs 2 CUDA devices, one per rank; 0 visible" in cell["reason"]
    assert (
        "Traceback"
        not in (result.latest_run() / "cells" / "fault=raise" / "1" / "stderr.log").read_text()
    )


def test_a_fault_for_a_rank_that_does_not_exist_is_a_config_error(tmp_path: Path) -> None:
    workload = {
        "distributed": {"world_size": 2},
        "faults": [{"kind": "segfault", "rank": 2}],
    }
    child = Child(tmp_path, workload)
    done = child.run()
    assert done.returncode == 3
    assert child.last("infra_error")["reason"] == (
        "workload.faults[0].rank: rank 2 does not exist: world_size is 2 (ranks 0..1)"
    )


def test_rank_faults_need_a_distributed_workload(tmp_path: Path) -> None:
    workload = textwrap.dedent(
        """\
        {"faults": [{"kind": "skip_allreduce", "at": {"phase": "train", "step": 1}}],
         "phases": [{"name": "train", "steps": 2}]}
        """
    )
    child = Child(tmp_path, json.loads(workload))
    done = child.run()
    assert done.returncode == 3
    assert child.last("infra_error")["reason"] == (
        "workload.faults[0].kind: skip_allreduce needs workload.distributed"
    )


WORKERS_SPEC = """\
reprospec: 1
name: ddp-rank-fails-with-workers
environment: {device: cpu}
matrix:
  fault: [raise-worker, raise-main, exit3]
workload:
  model: {builtin: mlp, params: {hidden: 8}}
  data:
    dataset: {builtin: synthetic, size: 48, shape: [4], classes: 2}
    loader: {batch_size: 4, num_workers: 1}
  phases: [{name: train, steps: 3}]
  distributed: {world_size: 2, backend: gloo}
  faults:
    - {kind: raise, rank: 1, where: worker, exception: ValueError, message: bad item,
       at: {phase: train, step: 2}, when: "${{ matrix.fault == 'raise-worker' }}"}
    - {kind: raise, rank: 1, exception: ValueError, message: bad item,
       at: {phase: train, step: 2}, when: "${{ matrix.fault == 'raise-main' }}"}
    - {kind: exit, code: 3, rank: 1, at: {phase: train, step: 2},
       when: "${{ matrix.fault == 'exit3' }}"}
run: {timeout: 60s, stall: 10s, preload: [torch]}
expect:
  outcome: error
  exception: ValueError
  phase: train
  step: 2
  cases:
    - {when: {fault: exit3}, outcome: error, exit_code: 3}
"""


def test_a_rank_that_fails_with_dataloader_workers_ends_the_job_as_it_failed(
    cli: Cli, tmp_path: Path
) -> None:
    """The supervisor's SIGKILL of the other rank and of every rank's DataLoader workers is
    its own teardown, no crash: the job is the failed rank's error. It was
    `crash SIGKILL (child: [pt_data_worker])`; a `raise` in a worker also a hang under the
    10 s `run.stall`, the rank waiting 10 s for a worker to die that had only raised."""
    spec = tmp_path / "workers.yaml"
    spec.write_text(WORKERS_SPEC)
    result = cli("run", str(spec), "-j", "2")
    cells = {cell["id"]: cell for cell in result.results()["cells"]}
    verdicts = {
        k: (c["verdict"], attempt(c)["kind"], attempt(c)["detail"]) for k, c in cells.items()
    }
    assert result.code == 0, verdicts
    for fault in ("raise-worker", "raise-main", "exit3"):
        outcome = attempt(cells[f"fault={fault}"])
        assert (outcome["kind"], outcome["signal"]) == ("error", None), verdicts
        assert "SIGKILL" not in (outcome["detail"] or ""), outcome["detail"]
        folder = result.latest_run() / "cells" / f"fault={fault}" / "1"
        written = events(folder)
        report = ranks.read(folder / "events.jsonl")
        assert report is not None
        assert report.exited is not None
        assert (report.exited.rank, report.exited.position.step) == (1, 2)
        # What the harness killed itself it says it killed: the surviving rank at least.
        killed = {pid for e in written if e["event"] == "teardown" for pid in e["pids"]}
        rank_pids = next(e["pids"] for e in written if e["event"] == "ranks")
        assert rank_pids[0] in killed
        # The failed rank ended at once: no 10 s wait for a worker that never died.
        exited_at = next(e["t"] for e in written if e["event"] == "rank_exit")
        fired_at = next(e["t"] for e in written if e["event"] == "fault")
        assert exited_at - fired_at < 8, (fault, exited_at - fired_at)
    assert attempt(cells["fault=exit3"])["exit_code"] == 3
    assert attempt(cells["fault=raise-worker"])["exception"] == "ValueError"
