"""Cell + attempt -> AttemptPlan: everything interpolated, parsed and made absolute.

Also the small value parsers the spec format needs (durations, step ranges,
rate bounds) and `describe`, the JSON-able view `reprospec plan` prints.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from reprospec.errors import SpecError
from reprospec.expr import ExprError, interpolate_string, render, same
from reprospec.models import (
    AttemptPlan,
    Cell,
    Expectation,
    ExpectedOutcome,
    Marker,
    RateBound,
    Spec,
    StepRange,
)
from reprospec.yamlsource import JsonPath, Problem, locate

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_STEP = re.compile(r"^\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?$")
_RATE = re.compile(r"^\s*(>=|>|<=|<|==)\s*(\d*\.?\d+)\s*$")


def parse_duration(value: str | float | int) -> float:
    """`'90s'`, `'5m'`, `'1h'`, `'1.5s'`, `'250ms'` or a number of seconds -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"expected a duration like 90s, 5m or 1h, got {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_step(value: int | str) -> StepRange:
    """`7` or `'7'` -> 7..7; `'6..8'` -> 6..8; a reversed range is an error."""
    if isinstance(value, int) and not isinstance(value, bool):
        return StepRange(value, value)
    match = _STEP.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"expected a step N or a range A..B, got {value!r}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if high < low:
        raise ValueError(f"step range {low}..{high} is reversed (expected A..B with A <= B)")
    return StepRange(low, high)


def parse_rate(value: str) -> RateBound:
    """`'>=0.3'` -> RateBound('>=', 0.3); the fraction must be within 0..1."""
    match = _RATE.match(value) if isinstance(value, str) else None
    if match is None or not 0.0 <= float(match.group(2)) <= 1.0:
        raise ValueError(f"expected a rate bound like '>=0.3', got {value!r}")
    op = cast(Any, match.group(1))
    return RateBound(op, float(match.group(2)))


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
    spec: Spec, cell: Cell, attempt: int, *, base_env: Mapping[str, str] = os.environ
) -> AttemptPlan:
    """Exactly what attempt `attempt` of `cell` runs, with every `${{ }}` evaluated."""
    doc = spec.document
    context = context_for(spec, cell, attempt, base_env)

    def section(key: str, default: Any) -> Any:
        return resolve(spec, (key,), doc.get(key, default), context)

    environment = section("environment", {})
    run = section("run", {})
    argv: tuple[str, ...] | None = None
    workload = None
    if "command" in doc:
        command = section("command", None)
        if isinstance(command, list):
            argv = tuple(render(part) for part in command)
        else:
            argv = ("/bin/sh", "-c", render(command))
    else:
        workload = section("workload", {})
    env = {str(k): render(v) for k, v in (environment.get("env") or {}).items()}
    workdir = spec.base_dir / render(environment.get("workdir", "."))
    try:
        timeout_s = parse_duration(run.get("timeout", "10m"))
    except ValueError as exc:
        raise _located(spec, ("run", "timeout"), str(exc)) from None
    markers = tuple(
        Marker(str(m["pattern"]), m.get("phase"), m.get("step")) for m in section("markers", [])
    )
    return AttemptPlan(
        spec_name=spec.name,
        cell=cell,
        attempt=attempt,
        argv=argv,
        workload=workload,
        env=env,
        workdir=Path(os.path.abspath(workdir)),
        timeout_s=timeout_s,
        markers=markers,
        environment=environment,
        expectation=expectation_for(spec, cell, base_env=base_env),
    )


def matching_case(spec: Spec, cell: Cell) -> int | None:
    """Index of the first `expect.cases` entry whose `when` matches the cell, else None."""
    cases = spec.document.get("expect", {}).get("cases") or ()
    for index, case in enumerate(cases):
        when = case.get("when") or {}
        if all(k in cell.matrix and same(cell.matrix[k], v) for k, v in when.items()):
            return index
    return None


_DETAILS = ("signal", "exit_code", "exception", "message", "phase", "step")


def expectation_for(
    spec: Spec, cell: Cell, *, base_env: Mapping[str, str] = os.environ
) -> Expectation:
    """The expectation of one cell: `expect` with the first matching case's keys on top.

    A case that sets `outcome` starts from the base's `rate` only; otherwise it
    overrides single keys of the base.
    """
    expect = spec.document["expect"]
    fields = {k: v for k, v in expect.items() if k != "cases"}
    origin: dict[str, JsonPath] = {k: ("expect", k) for k in fields}
    index = matching_case(spec, cell)
    if index is not None:
        case = expect["cases"][index]
        if "outcome" in case:
            # A new outcome is a different expectation: the base's signal, step, ...
            # describe the base failure, not this one. The rate still applies.
            for key in _DETAILS:
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
    return Expectation(
        outcome=cast(ExpectedOutcome, fields["outcome"]),
        signal=fields.get("signal"),
        exit_code=fields.get("exit_code"),
        exception=fields.get("exception"),
        message=fields.get("message"),
        phase=fields.get("phase"),
        step=step,
        rate=rate,
    )


def describe(plan: AttemptPlan) -> dict[str, Any]:
    """The JSON-able description of a plan, as `reprospec plan --format json` prints it."""
    out: dict[str, Any] = {
        "id": plan.cell.id,
        "index": plan.cell.index,
        "matrix": dict(plan.cell.matrix),
        "attempt": plan.attempt,
    }
    if plan.argv is not None:
        shell = plan.argv[:2] == ("/bin/sh", "-c") and len(plan.argv) == 3
        out["command"] = plan.argv[2] if shell else shlex.join(plan.argv)
        out["argv"] = list(plan.argv)
    else:
        out["workload"] = plan.workload
    out["env"] = dict(plan.env)
    out["workdir"] = str(plan.workdir)
    out["timeout_s"] = plan.timeout_s
    if plan.markers:
        out["markers"] = [{k: v for k, v in vars(m).items() if v is not None} for m in plan.markers]
    out["environment"] = {k: v for k, v in plan.environment.items() if k != "env"}
    out["expect"] = plan.expectation.to_dict()
    return out
