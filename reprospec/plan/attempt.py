"""Cell + attempt -> AttemptPlan: everything interpolated, parsed and made absolute.

Also each cell's expectation, `describe` (the JSON-able view `reprospec plan` prints)
and `first_attempts` (what it shows). A whole run's plan, `RunPlan`, is runplan.py's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

from reprospec.core.expr import ExprError, interpolate_string, render
from reprospec.core.inputs import (
    WHERES,
    AttemptPlan,
    Cell,
    Expectation,
    ExpectedOutcome,
    Marker,
    Spec,
    Where,
)
from reprospec.core.jsontypes import JsonObject, JsonPath, JsonValue
from reprospec.core.sections import Command, Environment, Job, RunPolicy, SectionError, Workload
from reprospec.core.units import parse_rate, parse_step
from reprospec.errors import SpecError
from reprospec.spec.checks import cells as cellcheck
from reprospec.spec.presets import PRESETS, expand
from reprospec.spec.yamlsource import Problem, locate

_EXPECTED: Mapping[str, ExpectedOutcome] = {
    "pass": "pass",
    "error": "error",
    "crash": "crash",
    "hang": "hang",
    "fail": "fail",
}


def context_for(
    spec: Spec, cell: Cell, attempt: int | None, base_env: Mapping[str, str]
) -> JsonObject:
    """The names an expression can read for this cell and attempt."""
    return cellcheck.context(spec.name, cell, attempt, base_env)


def _located(spec: Spec, path: JsonPath, message: str) -> SpecError:
    line, col = locate(spec.locations, path)
    return SpecError([Problem(line, col, path, message).format(str(spec.path))])


def resolve(
    spec: Spec, path: JsonPath, value: JsonValue, context: Mapping[str, JsonValue]
) -> JsonValue:
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

    def section(key: str) -> JsonValue:
        return resolve(spec, (key,), doc.get(key), context)

    def mapping(key: str) -> JsonObject:
        value = section(key)
        if value is None:
            return {}
        if not isinstance(value, dict):  # validation refuses it; never a silent default
            raise _located(spec, (key,), f"expected a mapping (in cell {cell.id})")
        return value

    job: Job
    if "command" in doc:
        command = section("command")
        if isinstance(command, list):
            job = Command(tuple(render(part) for part in command))
        else:
            job = Command(("/bin/sh", "-c", render(command)))
    else:
        job = Workload.from_section(mapping("workload"))
    try:
        environment = Environment.from_section(mapping("environment"), spec.base_dir)
        policy = RunPolicy.from_section(mapping("run"))
    except SectionError as exc:
        raise _located(spec, exc.path, f"{exc} (in cell {cell.id})") from None
    markers = section("markers")
    files = doc.get("files")
    return AttemptPlan(
        spec_name=spec.name,
        cell=cell,
        attempt=attempt,
        job=job,
        timeout_s=policy.timeout_s,
        stall_s=policy.stall_s,
        markers=expand(
            _marker(spec, ("markers", i), m, cell)
            for i, m in enumerate(markers if isinstance(markers, list) else ())
        ),
        environment=environment,
        expectation=expectation or expectation_for(spec, cell, base_env=base_env),
        preload=policy.preload,
        instances=policy.instances,
        files=tuple(str(f) for f in files) if isinstance(files, list) else (),
    )


def _marker(spec: Spec, path: JsonPath, marker: JsonValue, cell: Cell) -> Marker | str:
    """One evaluated `markers` entry, or the name of the preset it is (expanded by the
    caller; validation checked every cell's values)."""
    fields = marker if isinstance(marker, dict) else {}
    preset = fields.get("preset")
    if preset is not None:
        if not isinstance(preset, str) or preset not in PRESETS:
            raise _located(spec, (*path, "preset"), f"unknown preset (in cell {cell.id})")
        return preset
    pattern, phase, step = fields.get("pattern"), fields.get("phase"), fields.get("step")
    if not isinstance(pattern, str):
        raise _located(spec, (*path, "pattern"), f"expected a string (in cell {cell.id})")
    if phase is not None and not isinstance(phase, str):
        raise _located(spec, (*path, "phase"), f"expected a string (in cell {cell.id})")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise _located(spec, (*path, "step"), f"expected an integer (in cell {cell.id})")
    return Marker(pattern, phase, step)


def run_policy(spec: Spec) -> RunPolicy:
    """The spec's `run` section for the whole run (repeat, stop_on, parallel).

    A timeout, stall or instance count written as an expression may differ per cell: each
    AttemptPlan carries its own; here it is left at the default.
    """
    run = spec.document.get("run")
    section: JsonObject = dict(run) if isinstance(run, dict) else {}
    for key in ("timeout", "instances", "stall"):
        value = section.get(key)
        if isinstance(value, str) and "${{" in value:
            section.pop(key)
            if key == "timeout":
                # A stall is checked against its cell's timeout, which only the cell knows.
                section.pop("stall", None)
    try:
        return RunPolicy.from_section(section)
    except SectionError as exc:
        raise _located(spec, exc.path, str(exc)) from None


def matching_case(spec: Spec, cell: Cell) -> int | None:
    """Index of the first `expect.cases` entry whose `when` matches the cell, else None."""
    return cellcheck.matching_case(spec.document.get("expect"), cell)


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
    if not isinstance(expect, dict):
        return OBSERVE  # no expect: the run observes
    # A case with a new outcome is a different expectation: the base's signal, step, ...
    # describe the base failure, not this one, and its rate how often that failure shows
    # ("GPU 0 always passes" must not pass on 1 attempt in 3). One rule with the per-cell
    # check (spec/checks/cells.expect_fields), which checks only these values.
    written = cellcheck.expect_fields(expect, cell)
    origin = {key: path for key, (path, _) in written.items()}
    fields: JsonObject = {key: value for key, (_, value) in written.items()}
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

    def text(key: str) -> str | None:
        value = fields.get(key)
        if value is None or isinstance(value, str):
            return value
        raise _located(spec, origin[key], f"expected a string (in cell {cell.id})")

    outcome = fields.get("outcome")
    if not isinstance(outcome, str) or outcome not in _EXPECTED:
        where = origin.get("outcome", ("expect",))
        raise _located(spec, where, f"expected one of {', '.join(_EXPECTED)} (in cell {cell.id})")
    signal = fields.get("signal")
    exit_code = fields.get("exit_code")
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise _located(spec, origin["exit_code"], f"expected an integer (in cell {cell.id})")
    return Expectation(
        outcome=_EXPECTED[outcome],
        signal=tuple(str(s) for s in signal) if isinstance(signal, list) else text("signal"),
        exit_code=exit_code,
        exception=text("exception"),
        message=text("message"),
        phase=text("phase"),
        step=step,
        rate=rate,
        module=text("module"),
        stage=text("stage"),
        where=_where(text("where"), spec, origin, cell),
    )


def _where(
    value: str | None, spec: Spec, origin: Mapping[str, JsonPath], cell: Cell
) -> Where | None:
    """`expect.where` as the process it names; a value from an expression checked here."""
    if value is None:
        return None
    where = WHERES.get(value)
    if where is None:
        raise _located(
            spec, origin["where"], f"expected one of {', '.join(WHERES)} (in cell {cell.id})"
        )
    return where


def describe(plan: AttemptPlan) -> JsonObject:
    """The JSON-able description of a plan, as `reprospec plan --format json` prints it."""
    out: JsonObject = {
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
    if plan.stall_s is not None:
        out["stall_s"] = plan.stall_s
    if plan.preload:
        out["preload"] = list(plan.preload)
    if plan.instances is not None:
        out["instances"] = plan.instances
    if plan.markers:
        out["markers"] = [{k: v for k, v in vars(m).items() if v is not None} for m in plan.markers]
    out["environment"] = {
        k: v for k, v in plan.environment.to_json().items() if k not in ("env", "workdir")
    }
    out["expect"] = plan.expectation.to_dict()
    return out


def reads_attempt(plan: AttemptPlan, second: AttemptPlan | None) -> str:
    """How `plan` (an attempt) depends on its attempt number, in a few words; "" where not.

    `second` is the same cell's next attempt (None: it has none, nothing to compare). A
    `--seed ${{ attempt }}` or a workload fault's `probability` (one coin per attempt) make
    an attempt's number part of what it runs: a bundle runs each cell's attempt 1 in every
    run of run.sh, and each probe of a search numbers its attempts from 1 again, so either
    draws the same few values again (`materialize` and `amplify` say so)."""
    if plan.workload is not None:
        faults = plan.workload.get("faults")
        for number, fault in enumerate(faults if isinstance(faults, Sequence) else ()):
            chance = fault.get("probability") if isinstance(fault, Mapping) else None
            if isinstance(chance, (int, float)) and chance < 1:
                return f"workload.faults[{number}].probability {chance:g}, drawn per attempt"
        return ""
    if second is None:
        return ""
    first, other = describe(plan), describe(second)
    first.pop("attempt")
    other.pop("attempt")
    if first == other:
        return ""
    # Named, not shown: a value may hold a secret a bundle passes by name.
    fields = [key for key in first if key != "argv" and first[key] != other.get(key)]
    return "`${{ attempt }}` in its " + ", ".join(fields or ["argv"])


def first_attempts(spec: Spec, cells: Sequence[Cell]) -> tuple[AttemptPlan, ...]:
    """Attempt 1 of each of `cells`: what `reprospec plan` shows.

    The same plans as `plan_run(...).first_attempts()`, in the same order (every cell's
    expectation first), without planning the other attempts: validation evaluated every
    attempt's values already, and planning `repeat` attempts per cell would redo that for
    nothing shown.
    """
    # One copy of the environment for every cell, as plan_run's: os.environ decodes each
    # item on every read, and each cell's context reads it twice (1.2 ms a cell).
    base_env = dict(os.environ)
    expectations = [expectation_for(spec, cell, base_env=base_env) for cell in cells]
    return tuple(
        plan_attempt(spec, cell, 1, base_env=base_env, expectation=expectation)
        for cell, expectation in zip(cells, expectations, strict=True)
    )


def each_first_attempt(spec: Spec, cells: Sequence[Cell]) -> Iterator[AttemptPlan]:
    """Attempt 1 of each of `cells`, planned when it is read: the plans `first_attempts`
    gives, for `reprospec plan` to print cell by cell.

    A reader that has seen enough (`plan | head`) stops the planning with its pipe: all
    65,536 cells were planned before the first was printed. Validation evaluated every
    cell's values already; were a cell's plan still to fail, the cells before it would
    have been printed (`first_attempts` plans every expectation before any attempt).
    """
    base_env = dict(os.environ)
    for cell in cells:
        expectation = expectation_for(spec, cell, base_env=base_env)
        yield plan_attempt(spec, cell, 1, base_env=base_env, expectation=expectation)
