"""Cell + attempt -> AttemptPlan: everything interpolated, parsed and made absolute.

Also the small value parsers the spec format needs (durations, step ranges,
rate bounds) and `describe`, the JSON-able view `reprospec plan` prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from reprospec.errors import SpecError
from reprospec.expr import ExprError, interpolate_string, render, same
from reprospec.models import (
    AttemptPlan,
    Cell,
    Expectation,
    ExpectedOutcome,
    Marker,
    Spec,
)
from reprospec.options import RunOptions
from reprospec.sections import Command, Environment, Job, RunPolicy, SectionError, Workload
from reprospec.units import parse_rate, parse_step
from reprospec.yamlsource import JsonPath, Problem, locate


def context_for(
    spec: Spec, cell: Cell, attempt: int | None, base_env: Mapping[str, str]
) -> dict[str, Any]:
    """The names an expression can read for this cell and attempt."""
    return {
        "matrix": dict(cell.matrix),
        "env": dict(base_env),
        "spec": {"name": spec.name},
        "cell": {"id": cell.id},
        "attempt": attempt,
    }


def _located(spec: Spec, path: JsonPath, message: str) -> SpecError:
    line, col = locate(spec.locations, path)
    return SpecError([Problem(line, col, path, message).format(str(spec.path))])


def resolve(spec: Spec, path: JsonPath, value: Any, context: Mapping[str, Any]) -> Any:
    """Interpolate `value` (found at `path`); an evaluation error is a located SpecError."""
    if isinstance(value, str):
        try:
            return interpolate_string(value, context)
        except ExprError as exc:
            raise _located(spec, path, f"cannot evaluate {exc}") from None
    if isinstance(value, Mapping):
        return {k: resolve(spec, (*path, k), v, context) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(spec, (*path, i), v, context) for i, v in enumerate(value)]
    return value


def plan_attempt(
    spec: Spec,
    cell: Cell,
    attempt: int,
    *,
    base_env: Mapping[str, str] = os.environ,
    expectation: Expectation | None = None,
) -> AttemptPlan:
    """Exactly what attempt `attempt` of `cell` runs, with every `${{ }}` evaluated."""
    doc = spec.document
    context = context_for(spec, cell, attempt, base_env)

    def section(key: str, default: object) -> Any:
        return resolve(spec, (key,), doc.get(key, default), context)

    job: Job
    if "command" in doc:
        command = section("command", None)
        if isinstance(command, list):
            job = Command(tuple(render(part) for part in command))
        else:
            job = Command(("/bin/sh", "-c", render(command)))
    else:
        job = Workload.from_section(section("workload", {}))
    try:
        environment = Environment.from_section(section("environment", {}), spec.base_dir)
        policy = RunPolicy.from_section(section("run", {}))
    except SectionError as exc:
        raise _located(spec, exc.path, f"{exc} (in cell {cell.id})") from None
    markers = tuple(
        Marker(str(m["pattern"]), m.get("phase"), m.get("step")) for m in section("markers", [])
    )
    return AttemptPlan(
        spec_name=spec.name,
        cell=cell,
        attempt=attempt,
        job=job,
        timeout_s=policy.timeout_s,
        markers=markers,
        environment=environment,
        expectation=expectation or expectation_for(spec, cell, base_env=base_env),
        instances=policy.instances,
    )


def run_policy(spec: Spec) -> RunPolicy:
    """The spec's `run` section for the whole run (repeat, stop_on, parallel).

    A timeout or instance count written as an expression may differ per cell: each
    AttemptPlan carries its own; here it is left at the default.
    """
    section = dict(spec.document.get("run") or {})
    for key in ("timeout", "instances"):
        value = section.get(key)
        if isinstance(value, str) and "${{" in value:
            section.pop(key)
    try:
        return RunPolicy.from_section(section)
    except SectionError as exc:
        raise _located(spec, exc.path, str(exc)) from None


def matching_case(spec: Spec, cell: Cell) -> int | None:
    """Index of the first `expect.cases` entry whose `when` matches the cell, else None."""
    cases = spec.document.get("expect", {}).get("cases") or ()
    for index, case in enumerate(cases):
        when = case.get("when") or {}
        if all(k in cell.matrix and same(cell.matrix[k], v) for k, v in when.items()):
            return index
    return None


_DETAILS = ("signal", "exit_code", "exception", "message", "phase", "step", "module", "stage")
# What a cell expects in observe mode: nothing; every attempt that ran is recorded.
OBSERVE = Expectation(outcome="any")


def expectation_for(
    spec: Spec, cell: Cell, *, base_env: Mapping[str, str] = os.environ
) -> Expectation:
    """The expectation of one cell: `expect` with the first matching case's keys on top.

    A case that sets `outcome` starts afresh: none of the base's keys apply, not
    even its `rate` (a cell expected to pass is judged on every attempt unless the
    case gives its own rate). A case without `outcome` overrides single keys of
    the base.
    """
    expect = spec.document.get("expect")
    if expect is None:
        return OBSERVE  # no expect: the run observes
    fields = {k: v for k, v in expect.items() if k != "cases"}
    origin: dict[str, JsonPath] = {k: ("expect", k) for k in fields}
    index = matching_case(spec, cell)
    if index is not None:
        case = expect["cases"][index]
        if "outcome" in case:
            # A new outcome is a different expectation: the base's signal, step, ...
            # describe the base failure, not this one, and its rate how often that
            # failure shows ("GPU 0 always passes" must not pass on 1 attempt in 3).
            for key in (*_DETAILS, "rate"):
                fields.pop(key, None)
        for key, value in case.items():
            if key != "when":
                fields[key] = value
                origin[key] = ("expect", "cases", index, key)
    context = context_for(spec, cell, None, base_env)
    fields = {k: resolve(spec, origin[k], v, context) for k, v in fields.items()}
    try:
        step = parse_step(fields["step"]) if fields.get("step") is not None else None
    except ValueError as exc:
        raise _located(spec, origin["step"], str(exc)) from None
    try:
        rate = parse_rate(fields["rate"]) if fields.get("rate") is not None else None
    except ValueError as exc:
        raise _located(spec, origin["rate"], str(exc)) from None
    signal = fields.get("signal")
    return Expectation(
        outcome=cast(ExpectedOutcome, fields["outcome"]),
        signal=tuple(str(s) for s in signal) if isinstance(signal, list) else signal,
        exit_code=fields.get("exit_code"),
        exception=fields.get("exception"),
        message=fields.get("message"),
        phase=fields.get("phase"),
        step=step,
        rate=rate,
        module=fields.get("module"),
        stage=fields.get("stage"),
    )


def describe(plan: AttemptPlan) -> dict[str, Any]:
    """The JSON-able description of a plan, as `reprospec plan --format json` prints it."""
    out: dict[str, Any] = {
        "id": plan.cell.id,
        "index": plan.cell.index,
        "matrix": dict(plan.cell.matrix),
        "attempt": plan.attempt,
    }
    if isinstance(plan.job, Command):
        out["command"] = plan.job.text
        out["argv"] = list(plan.job.argv)
    else:
        out["workload"] = plan.job.document
    out["env"] = dict(plan.env)
    out["workdir"] = str(plan.workdir)
    out["timeout_s"] = plan.timeout_s
    if plan.instances is not None:
        out["instances"] = plan.instances
    if plan.markers:
        out["markers"] = [{k: v for k, v in vars(m).items() if v is not None} for m in plan.markers]
    out["environment"] = {
        k: v for k, v in plan.environment.to_json().items() if k not in ("env", "workdir")
    }
    out["expect"] = plan.expectation.to_dict()
    return out


@dataclass(frozen=True)
class RunPlan:
    """A spec expanded into cells and the attempts this invocation will run (nothing ran)."""

    spec: Spec
    cells: tuple[Cell, ...]
    expectations: Mapping[str, Expectation]
    attempts: tuple[AttemptPlan, ...]
    repeat: int
    max_repeat: int
    adaptive: bool
    stop_on: str
    parallel: int

    def extra_attempt(self, cell: Cell, number: int) -> AttemptPlan:
        """Attempt `number` of `cell`, beyond the planned ones (`repeat: auto` adds them)."""
        return plan_attempt(self.spec, cell, number)

    def first_attempts(self) -> tuple[AttemptPlan, ...]:
        """Attempt 1 of every cell: what `reprospec plan` shows."""
        return tuple(a for a in self.attempts if a.attempt == 1)


def plan_run(spec: Spec, options: RunOptions) -> RunPlan:
    """Expand the matrix, apply -m filters, and plan attempt 1..repeat of every cell.

    `options.repeat`, `timeout_s` and `stop_on` replace the spec's `run` values for
    this run; they are applied here, after validation, never written back as YAML.
    """
    from reprospec.matrix import expand, select

    cells = tuple(select(expand(spec), list(options.matrix_filters)))
    policy = run_policy(spec)
    if options.repeat is not None:
        policy = replace(policy, repeat=options.repeat)
    adaptive, max_repeat = policy.adaptive, policy.most_attempts
    # Adaptive repeats start with a handful of attempts and add more while the
    # Wilson interval still straddles the expected rate (Scheduler._maybe_extend).
    repeat = policy.first_attempts
    if options.observe:
        expectations = {cell.id: OBSERVE for cell in cells}
    else:
        expectations = {cell.id: expectation_for(spec, cell) for cell in cells}
    # Round-robin over cells so the repeats of a flaky cell interleave with the others.
    attempts = tuple(
        _with_options(plan_attempt(spec, cell, number, expectation=expectations[cell.id]), options)
        for number in range(1, repeat + 1)
        for cell in cells
    )
    if options.shard is not None:
        k, n = options.shard.index, options.shard.count
        attempts = tuple(a for i, a in enumerate(attempts) if i % n == k - 1)
        # A shard reports only the cells it ran; `reprospec merge` puts them together.
        in_shard = {attempt.cell.id for attempt in attempts}
        cells = tuple(cell for cell in cells if cell.id in in_shard)
    parallel = options.jobs or policy.parallel
    return RunPlan(
        spec=spec,
        cells=cells,
        expectations=expectations,
        attempts=attempts,
        repeat=repeat,
        max_repeat=max_repeat,
        adaptive=adaptive,
        stop_on=options.stop_on or policy.stop_on,
        parallel=max(1, parallel),
    )


def _with_options(attempt: AttemptPlan, options: RunOptions) -> AttemptPlan:
    if options.timeout_s is None:
        return attempt
    return replace(attempt, timeout_s=options.timeout_s)
