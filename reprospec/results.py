"""`RunResult` <-> results.json (CLI.md), the run folder, run ids."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from reprospec.errors import FatalError, UsageError
from reprospec.models import Cell, Expectation
from reprospec.runmodels import (
    AttemptResult,
    CellResult,
    ChainLink,
    ChildWarning,
    InstanceResult,
    NotRun,
    Outcome,
    Rate,
    RunResult,
    Standalone,
)
from reprospec.runrefs import resolve_run_id
from reprospec.units import parse_rate, parse_step

FORMAT = 1
_OUTCOME_KEYS = (
    "kind",
    "signal",
    "exit_code",
    "where",
    "exception",
    "message",
    "phase",
    "step",
    "stage",
    "module",
)


def new_run_id(spec_name: str, now: datetime | None = None) -> str:
    """A sortable, unique run id: `20261121-214512-val-segfault-3f9a`."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{spec_name[:48]}-{secrets.token_hex(2)}"


def outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    """The results.json `outcome` object: the contract keys first, then the extras."""
    out = {key: getattr(outcome, key) for key in _OUTCOME_KEYS}
    out["signature"] = outcome.signature
    out["duration_s"] = outcome.duration_s
    if outcome.detail is not None:
        out["detail"] = outcome.detail
    if outcome.chain:
        out["chain"] = [link.to_dict() for link in outcome.chain]
    if outcome.pid is not None:
        out["pid"] = outcome.pid
    if outcome.cmdline is not None:
        out["cmdline"] = outcome.cmdline
    if outcome.injected is not None:
        out["injected"] = outcome.injected
    return out


def outcome_from_dict(d: Mapping[str, Any]) -> Outcome:
    """Inverse of `outcome_to_dict`."""
    return Outcome(
        kind=d["kind"],
        signal=d.get("signal"),
        exit_code=d.get("exit_code"),
        where=d.get("where"),
        exception=d.get("exception"),
        message=d.get("message"),
        phase=d.get("phase"),
        step=d.get("step"),
        stage=d.get("stage"),
        module=d.get("module"),
        duration_s=float(d.get("duration_s") or 0.0),
        signature=d.get("signature") or "",
        detail=d.get("detail"),
        chain=tuple(
            ChainLink(str(link["type"]), link.get("message"), link.get("link"))
            for link in d.get("chain") or ()
        ),
        pid=d.get("pid"),
        cmdline=d.get("cmdline"),
        injected=d.get("injected"),
    )


def instance_to_dict(i: InstanceResult) -> dict[str, Any]:
    """One entry of an attempt's `instances`; an instance that did not run has `outcome: null`."""
    return {
        "instance": i.instance,
        "outcome": outcome_to_dict(i.outcome) if isinstance(i.outcome, Outcome) else None,
        "infra_error": i.outcome.reason if isinstance(i.outcome, NotRun) else None,
        "matched": i.matched,
        "gpu_slot": list(i.gpu_slot),
        "duration_s": i.duration_s,
        "ready_s": i.ready_s,
        "start_s": i.start_s,
        "end_s": i.end_s,
        "logs": i.logs,
    }


def instance_from_dict(d: Mapping[str, Any]) -> InstanceResult:
    """Inverse of `instance_to_dict`."""
    outcome = d.get("outcome")
    return InstanceResult(
        instance=int(d["instance"]),
        outcome=(
            outcome_from_dict(outcome) if outcome else NotRun(d.get("infra_error") or "not run")
        ),
        matched=bool(d.get("matched", False)),
        gpu_slot=tuple(str(s) for s in d.get("gpu_slot") or ()),
        duration_s=float(d.get("duration_s") or 0.0),
        ready_s=_float_or_none(d.get("ready_s")),
        start_s=_float_or_none(d.get("start_s")),
        end_s=_float_or_none(d.get("end_s")),
        logs=d.get("logs") or "",
    )


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def instances_to_dict(a: AttemptResult) -> dict[str, Any] | None:
    """An attempt's `run.instances` part (None for a plain attempt): as results.json keeps it."""
    if not a.instances:
        return None
    return {
        "instance": a.instance,
        "start_spread_s": a.start_spread_s,
        "instances": [instance_to_dict(i) for i in a.instances],
    }


def attempt_to_dict(a: AttemptResult) -> dict[str, Any]:
    """One entry of a cell's `attempts`; an attempt that did not run has `outcome: null`."""
    out: dict[str, Any] = {
        "attempt": a.attempt,
        "duration_s": a.duration_s,
        "outcome": outcome_to_dict(a.outcome) if isinstance(a.outcome, Outcome) else None,
        "logs": a.logs,
        "matched": a.matched,
        "mismatches": list(a.mismatches),
        "started": a.started,
        "finished": a.finished,
        "gpu_slot": list(a.gpu_slot),
        "infra_error": a.infra_error,
        "warnings": list(a.warnings),
    }
    if a.stack is not None:
        out["stack"] = a.stack
    if a.excerpt is not None:
        out["excerpt"] = a.excerpt
    if a.native is not None:
        out["native_stacks"] = a.native
    instances = instances_to_dict(a)
    if instances is not None:
        out.update(instances)
    if a.child_warnings:
        out["child_warnings"] = [w.to_dict() for w in a.child_warnings]
    out["launch"] = a.launch
    if a.launch_note is not None:
        out["launch_note"] = a.launch_note
    return out


def attempt_from_dict(d: Mapping[str, Any]) -> AttemptResult:
    """Inverse of `attempt_to_dict`."""
    outcome = d.get("outcome")
    return AttemptResult(
        attempt=int(d["attempt"]),
        duration_s=float(d.get("duration_s") or 0.0),
        outcome=(
            outcome_from_dict(outcome) if outcome else NotRun(d.get("infra_error") or "not run")
        ),
        matched=bool(d.get("matched", False)),
        mismatches=tuple(d.get("mismatches") or ()),
        logs=d.get("logs") or "",
        started=d.get("started") or "",
        finished=d.get("finished") or "",
        gpu_slot=tuple(str(s) for s in d.get("gpu_slot") or ()),
        warnings=tuple(d.get("warnings") or ()),
        stack=d.get("stack"),
        excerpt=d.get("excerpt"),
        native=d.get("native_stacks"),
        instances=tuple(instance_from_dict(i) for i in d.get("instances") or ()),
        instance=d.get("instance"),
        start_spread_s=_float_or_none(d.get("start_spread_s")),
        child_warnings=child_warnings_from_list(d.get("child_warnings")),
        launch="forked" if d.get("launch") == "forked" else "fresh",
        launch_note=d.get("launch_note"),
    )


def child_warnings_from_list(items: object) -> tuple[ChildWarning, ...]:
    """The `child_warnings` list of results.json (or the store) as `ChildWarning`s."""
    if not isinstance(items, list):
        return ()
    return tuple(
        ChildWarning(str(w.get("category", "")), str(w.get("message", "")), str(w.get("where", "")))
        for w in items
        if isinstance(w, dict)
    )


def expectation_from_dict(d: Mapping[str, Any]) -> Expectation:
    """Inverse of `Expectation.to_dict` (`step: "6..8"`, `rate: ">=0.3"`)."""
    step = d.get("step")
    rate = d.get("rate")
    signal = d.get("signal")
    return Expectation(
        outcome=d["outcome"],
        signal=tuple(signal) if isinstance(signal, list) else signal,
        exit_code=d.get("exit_code"),
        exception=d.get("exception"),
        message=d.get("message"),
        phase=d.get("phase"),
        step=parse_step(step) if step is not None else None,
        rate=parse_rate(rate) if rate is not None else None,
        module=d.get("module"),
        stage=d.get("stage"),
    )


def cell_to_dict(c: CellResult) -> dict[str, Any]:
    """One entry of `cells`."""
    return {
        "id": c.cell.id,
        "index": c.cell.index,
        "matrix": dict(c.cell.matrix),
        "verdict": c.verdict,
        "reason": c.reason,
        "expected": c.expected.to_dict(),
        "rate": c.rate.to_dict(),
        "command": c.command,
        "environment": dict(c.environment),
        "attempts": [attempt_to_dict(a) for a in c.attempts],
    }


def cell_from_dict(d: Mapping[str, Any], index: int = 0) -> CellResult:
    """Inverse of `cell_to_dict`."""
    return CellResult(
        cell=Cell(id=d["id"], index=int(d.get("index", index)), matrix=dict(d.get("matrix") or {})),
        expected=expectation_from_dict(d["expected"]),
        verdict=d["verdict"],
        reason=d.get("reason") or "",
        rate=Rate(**d["rate"]),
        attempts=tuple(attempt_from_dict(a) for a in d.get("attempts") or ()),
        command=d.get("command") or "",
        environment=dict(d.get("environment") or {}),
    )


def run_to_dict(run: RunResult) -> dict[str, Any]:
    """The whole run in the results.json shape of CLI.md (contract keys plus extras)."""
    return {
        "format": FORMAT,
        "run_id": run.run_id,
        "spec": {"name": run.spec_name, "path": run.spec_path, "text": run.spec_text},
        "runner": run.runner,
        "started": run.started,
        "finished": run.finished,
        "environment": dict(run.environment),
        "cells": [cell_to_dict(c) for c in run.cells],
        "summary": run.summary,
        "command_line": run.command_line,
        "title": run.title,
        "description": run.description,
        "warnings": list(run.warnings),
        "interrupted": run.interrupted,
        "shard": run.shard or None,
        "standalone": run.standalone.to_dict() if run.standalone else None,
        "options": dict(run.options),
        "paths": dict(run.paths),
    }


def run_from_dict(d: Mapping[str, Any]) -> RunResult:
    """Inverse of `run_to_dict`; refuses a results format it does not know."""
    if d.get("format") != FORMAT:
        found = d.get("format")
        raise FatalError(f"results.json: unsupported format {found!r} (expected {FORMAT})")
    spec = d.get("spec") or {}
    return RunResult(
        run_id=d["run_id"],
        spec_name=spec.get("name", ""),
        spec_path=spec.get("path", ""),
        spec_text=spec.get("text", ""),
        runner=d.get("runner", ""),
        started=d.get("started", ""),
        finished=d.get("finished", ""),
        environment=dict(d.get("environment") or {}),
        cells=tuple(cell_from_dict(c, i) for i, c in enumerate(d.get("cells") or ())),
        command_line=d.get("command_line", ""),
        title=d.get("title", ""),
        description=d.get("description", ""),
        warnings=tuple(d.get("warnings") or ()),
        interrupted=bool(d.get("interrupted", False)),
        shard=d.get("shard") or "",
        standalone=Standalone.from_dict(d["standalone"]) if d.get("standalone") else None,
        options=dict(d.get("options") or {}),
        paths={str(k): str(v) for k, v in (d.get("paths") or {}).items()},
    )


def write_atomic(path: Path, text: str) -> None:
    """Write `text` so readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(run_dir: Path, run: RunResult) -> Path:
    """Write `results.json` and `spec.yaml` into the run folder; returns the results.json path."""
    write_atomic(run_dir / "spec.yaml", run.spec_text)
    results = run_dir / "results.json"
    write_atomic(results, json.dumps(run_to_dict(run), indent=2, ensure_ascii=False) + "\n")
    return results


def find_run(path_or_id: str | Path, out_root: Path = Path(".reprospec")) -> Path:
    """The results.json of a run folder, a results.json path, a run id (or unique prefix),
    or `latest` / `latest~N` (`resolve_run_id`)."""
    if isinstance(path_or_id, str):
        path_or_id = resolve_run_id(path_or_id, out_root)
    path = Path(path_or_id)
    if path.is_dir() and (path / "results.json").is_file():
        return path / "results.json"
    if path.is_file():
        return path
    runs = out_root / "runs"
    name = str(path_or_id)
    if "/" not in name and runs.is_dir():
        if (runs / name / "results.json").is_file():
            return runs / name / "results.json"
        matches = sorted(p for p in runs.glob(f"{name}*/results.json"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            ids = ", ".join(p.parent.name for p in matches[:5])
            raise UsageError(f"run id {name!r} is ambiguous: {ids}")
    if path.is_dir():
        raise UsageError(f"{path} has no results.json (the run may still be going, or was killed)")
    raise UsageError(f"no run {name!r}: not a run folder, a results.json, or a run id under {runs}")


def run_dir_of(path_or_id: str | Path, out_root: Path = Path(".reprospec")) -> Path:
    """The run folder of a run reference (where its logs and stacks are)."""
    return find_run(path_or_id, out_root).parent


def load_run(path_or_id: str | Path, out_root: Path = Path(".reprospec")) -> RunResult:
    """Load a finished run (see `find_run` for what `path_or_id` may be)."""
    path = find_run(path_or_id, out_root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FatalError(f"{path}: cannot read results: {exc}") from exc
    if not isinstance(data, dict):
        raise FatalError(f"{path}: not a reprospec results file")
    try:
        run = run_from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise FatalError(f"{path}: not a reprospec results file ({exc!r})") from exc
    spec_file = path.parent / "spec.yaml"
    if not run.spec_text and spec_file.is_file():
        run = replace(run, spec_text=spec_file.read_text(encoding="utf-8"))
    return with_excerpts(run, path.parent)


def with_excerpts(run: RunResult, run_dir: Path) -> RunResult:
    """Results written before attempts kept their log excerpt: take it from the logs, once.

    A failed attempt without an `excerpt` gets one from its files in `run_dir`;
    newer results already hold theirs and are returned unchanged.
    """
    if all(a.excerpt is not None or not a.failed for c in run.cells for a in c.attempts):
        return run
    from reprospec.evidence import Evidence, read_log

    def fill(attempt: AttemptResult) -> AttemptResult:
        if attempt.excerpt is not None or not attempt.failed or not attempt.logs:
            return attempt
        folder = run_dir / attempt.logs
        evidence = Evidence(
            stdout=read_log(folder / "stdout.log"), stderr=read_log(folder / "stderr.log")
        )
        return replace(attempt, excerpt=evidence.excerpt())

    cells = tuple(replace(c, attempts=tuple(fill(a) for a in c.attempts)) for c in run.cells)
    return replace(run, cells=cells)
