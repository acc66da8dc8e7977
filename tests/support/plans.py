"""Hand-built attempt plans, typed as plan.plan_attempt builds them, for runner tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.inputs import AttemptPlan, Cell, Expectation, Marker
from reprospec.core.sections import Command, Environment, Job, JsonObject, Workload


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
