"""Hand-built attempt plans, typed as plan.plan_attempt builds them, for runner tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reprospec.core.inputs import AttemptPlan, Cell, Expectation, Marker
from reprospec.core.results import Execution
from reprospec.core.sections import Command, Environment, Job, JsonObject, Workload
from tests.support.paths import DATA


def attempt_plan(
    argv: Sequence[str] | str | None,
    workdir: Path,
    *,
    timeout_s: float = 30.0,
    env: Mapping[str, str] | None = None,
    environment: Mapping[str, object] | None = None,
    workload: JsonObject | None = None,
    markers: tuple[Marker, ...] = (),
    cell: Cell | None = None,
    attempt: int = 1,
    spec_name: str = "test-spec",
) -> AttemptPlan:
    """One attempt of a command (a string runs under /bin/sh -c) or of a workload."""
    job: Job
    if workload is not None:
        job = Workload.from_section(workload)
    else:
        assert argv is not None, "a plan runs a command or a workload"
        job = Command(("/bin/sh", "-c", argv) if isinstance(argv, str) else tuple(argv))
    section = {**(environment or {}), "env": dict(env or {})}
    typed = Environment.from_section(section, workdir)
    return AttemptPlan(
        spec_name=spec_name,
        cell=cell or Cell(id="a=1", index=0, matrix={"a": 1}),
        attempt=attempt,
        job=job,
        timeout_s=timeout_s,
        markers=markers,
        environment=typed,
        expectation=Expectation(outcome="pass"),
    )


# The preload tests' modules (`marked`, ...), importable by the fork server they start.
PRELOAD = DATA / "preload"


def preload_plan(
    argv: list[str] | str,
    *,
    preload: tuple[str, ...] = ("marked",),
    env: dict[str, str] | None = None,
    workdir: Path = PRELOAD,
    timeout_s: float = 120.0,
    attempt: int = 1,
    expectation: Expectation | None = None,
    environment: dict[str, object] | None = None,
    workload: dict[str, Any] | None = None,
) -> AttemptPlan:
    """An attempt under `run.preload` (the preload folder on PYTHONPATH), as plan_run makes it."""
    plan = attempt_plan(
        None if workload is not None else argv,
        workdir,
        timeout_s=timeout_s,
        env={"PYTHONPATH": str(PRELOAD), **(env or {})},
        environment=environment,
        workload=workload,
        attempt=attempt,
    )
    return replace(plan, preload=preload, expectation=expectation or plan.expectation)


# A workload of every common part (seed, model, optimizer, a shuffled loader with a worker, two
# phases, a secret variable) whose fault is its one failure: the standalone repro's
# generated script is checked against a golden file, and run for real, from it.
SYNTHETIC_SPEC = """\
reprospec: 1
name: synthetic-pass
environment:
  env: {OMP_NUM_THREADS: "1", HF_TOKEN: hf_not_for_reports}
workload:
  seed: 3
  model: {builtin: cnn, params: {channels: 4}}
  optimizer: {name: adam, lr: 0.001}
  data:
    dataset: {builtin: synthetic, size: 24, shape: [3, 8, 8], classes: 4}
    loader: {batch_size: 6, shuffle: true, num_workers: 1, multiprocessing_context: fork}
  phases: [{name: train, steps: 3}, {name: validation}]
  faults:
    - {kind: raise, where: main, at: {phase: train, step: 2}}
run: {timeout: 120s}
expect: {outcome: error}
"""


def execution_in(
    folder: Path,
    returncode: int | None,
    *,
    timed_out: bool = False,
    duration_s: float = 1.0,
    infra_error: str | None = None,
    interrupted: bool = False,
    harness: bool = False,
) -> Execution:
    """What a runner hands the classifier for an attempt whose files are in `folder`."""
    return Execution(
        cell_id="cell",
        attempt=1,
        log_dir=folder,
        returncode=returncode,
        timed_out=timed_out,
        duration_s=duration_s,
        started="",
        finished="",
        stdout_path=folder / "stdout.log",
        stderr_path=folder / "stderr.log",
        events_path=folder / "events.jsonl",
        infra_error=infra_error,
        interrupted=interrupted,
        harness=harness,
    )
