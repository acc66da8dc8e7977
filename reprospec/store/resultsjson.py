"""`RunResult` <-> results.json (CLI.md), the run folder, run ids."""

from __future__ import annotations

import itertools
import json
import secrets
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from reprospec.core.atomicfile import write_atomic
from reprospec.core.formats import BUNDLE_SUFFIXES, SEARCH_VERBS
from reprospec.core.inputs import WHERES, Cell, Expectation, ExpectedOutcome
from reprospec.core.jsontext import indented
from reprospec.core.jsontypes import (
    JsonObject,
    JsonValue,
    array,
    integer,
    number,
    obj,
    objects,
    text,
    text_or_none,
    texts,
)
from reprospec.core.results import (
    AttemptResult,
    CellResult,
    ChainLink,
    ChildWarning,
    CrashedChild,
    GroupMember,
    InstanceResult,
    NotRun,
    Outcome,
    OutcomeKind,
    PythonFrame,
    Rate,
    RunResult,
    Standalone,
    VerdictKind,
)
from reprospec.core.units import parse_rate, parse_step
from reprospec.errors import FatalError, UsageError
from reprospec.store.runfolder import CELLS, ENGINE_JSON, RUNS, SPEC_YAML, RunFolder

if TYPE_CHECKING:
    from reprospec.core.resumed import Resumed

FORMAT = 1
_Choice = TypeVar("_Choice", bound=str)
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


def outcome_to_dict(outcome: Outcome) -> JsonObject:
    """The results.json `outcome` object: the contract keys first, then the extras."""
    out: JsonObject = {key: getattr(outcome, key) for key in _OUTCOME_KEYS}
    out["signature"] = outcome.signature
    out["duration_s"] = outcome.duration_s
    if outcome.detail is not None:
        out["detail"] = outcome.detail
    if outcome.chain:
        out["chain"] = _once(outcome)
    if outcome.pid is not None:
        out["pid"] = outcome.pid
    if outcome.cmdline is not None:
        out["cmdline"] = outcome.cmdline
    if outcome.injected is not None:
        out["injected"] = outcome.injected
    if outcome.last_traceback is not None:
        out["last_traceback"] = outcome.last_traceback.to_dict(link=False)
    if outcome.crashed_child is not None:
        out["crashed_child"] = outcome.crashed_child.to_dict()
    if outcome.oom_killed:
        out["oom_killed"] = True
    if outcome.hung_in is not None:
        out["hung_in"] = outcome.hung_in.to_dict()
    if outcome.hung_native is not None:
        out["hung_native"] = outcome.hung_native
    if outcome.hung_process is not None:
        out["hung_process"] = outcome.hung_process
    if outcome.members:
        out["members"] = [m.to_dict() for m in outcome.members]
    return out


# The closed vocabularies of results.json, mapped to their typed values: a value outside
# them is a file this engine did not write (FatalError), or an optional field left out.
_OUTCOME_KINDS: Mapping[str, OutcomeKind] = {k: k for k in ("pass", "error", "crash", "hang")}
_LINKS: Mapping[str, Literal["cause", "context"]] = {k: k for k in ("cause", "context")}
_VERDICTS: Mapping[str, VerdictKind] = {
    k: k
    for k in ("reproduced", "not-reproduced", "undecided", "infra-error", "observed", "not-run")
}
_EXPECTED: Mapping[str, ExpectedOutcome] = {
    k: k for k in ("pass", "error", "crash", "hang", "fail", "any")
}


def _one_of(choices: Mapping[str, _Choice], value: JsonValue, what: str) -> _Choice:
    found = choices.get(text(value))
    if found is None:
        raise ValueError(f"unknown {what} {value!r}")  # load_run: "not a results file (...)"
    return found


def outcome_from_dict(d: JsonObject) -> Outcome:
    """Inverse of `outcome_to_dict`."""
    return Outcome(
        kind=_one_of(_OUTCOME_KINDS, d.get("kind"), "outcome kind"),
        signal=text_or_none(d.get("signal")),
        exit_code=integer(d.get("exit_code")),
        where=WHERES.get(text(d.get("where"))),
        exception=text_or_none(d.get("exception")),
        message=text_or_none(d.get("message")),
        phase=text_or_none(d.get("phase")),
        step=integer(d.get("step")),
        stage=text_or_none(d.get("stage")),
        module=text_or_none(d.get("module")),
        duration_s=number(d.get("duration_s")) or 0.0,
        signature=text(d.get("signature")),
        detail=text_or_none(d.get("detail")),
        chain=_ended_by(
            d.get("chain"),
            tuple(
                ChainLink(
                    text(link.get("type")),
                    text_or_none(link.get("message")),
                    _LINKS.get(text(link.get("link"))),
                    _members(link),
                )
                for link in objects(d.get("chain"))
            ),
            text_or_none(d.get("exception")),
            _members(d),
        ),
        pid=integer(d.get("pid")),
        cmdline=text_or_none(d.get("cmdline")),
        injected=text_or_none(d.get("injected")),
        last_traceback=(
            ChainLink(
                text(printed.get("type")),
                text_or_none(printed.get("message")),
                members=_members(printed),
            )
            if isinstance(printed := d.get("last_traceback"), dict)
            else None
        ),
        crashed_child=(
            CrashedChild(
                text_or_none(child.get("signal")),
                integer(child.get("pid")),
                text_or_none(child.get("cmdline")),
                text(child.get("evidence")),
            )
            if isinstance(child := d.get("crashed_child"), dict)
            else None
        ),
        oom_killed=d.get("oom_killed") is True,
        hung_in=(
            PythonFrame(
                text(frame.get("path")),
                integer(frame.get("line")) or 0,
                text(frame.get("function")),
            )
            if isinstance(frame := d.get("hung_in"), dict)
            else None
        ),
        members=_members(d),
        # A blank one (hand-edited, or another writer's) names nothing: it read back as
        # `in a process it ran ()`.
        hung_native=(text_or_none(d.get("hung_native")) or "").strip() or None,
        hung_process=(text_or_none(d.get("hung_process")) or "").strip() or None,
    )


def _once(outcome: Outcome) -> list[JsonValue]:
    """The chain as stored: the last link is the exception that ended the process, so an
    exception group there keeps its members in the outcome's `members` alone (each member
    stored once, not again in the chain; `_ended_by` puts them back when read). A last link
    of that type with none of its own, where the outcome has some, says so (`members: []`):
    read back, it was given the outcome's (review)."""
    *before, last = outcome.chain
    stored = last.to_dict()
    if last.type == outcome.exception and outcome.members:
        if last.members == outcome.members:
            del stored["members"]
        elif not last.members:
            stored["members"] = []
    return [*(link.to_dict() for link in before), stored]


def _ended_by(
    stored: object,
    chain: tuple[ChainLink, ...],
    exception: str | None,
    members: tuple[GroupMember, ...],
) -> tuple[ChainLink, ...]:
    """Inverse of `_once`: the chain's last link, the exception that ended the process,
    gains the outcome's `members` where it was stored without its `members` key (the
    chain as `stored`, its JSON); a results.json written when they were stored twice keeps
    its own, a link written with `members: []` none."""
    if not chain or not members or chain[-1].type != exception:
        return chain
    links = stored if isinstance(stored, list) else []
    if links and isinstance(links[-1], dict) and "members" in links[-1]:
        return chain
    return (*chain[:-1], replace(chain[-1], members=members))


def _members(d: JsonObject) -> tuple[GroupMember, ...]:
    """An exception group's `members` (an outcome's, or a chain link's); () where absent: a
    results.json (or a store's outcome) written before groups' members were read, or an
    exception that is no group."""
    return tuple(
        GroupMember(text(member.get("type")), text_or_none(member.get("message")))
        for member in objects(d.get("members"))
    )


def instance_to_dict(i: InstanceResult) -> JsonObject:
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


def _outcome_or_not_run(d: JsonObject) -> Outcome | NotRun:
    outcome = d.get("outcome")
    if isinstance(outcome, dict) and outcome:
        return outcome_from_dict(outcome)
    if outcome is not None and not isinstance(outcome, dict):
        # `"outcome": "garbage"` read as an attempt that could not run: a crash that
        # reproduced became `1 could not run` beside the cell's stored `reproduced`.
        raise TypeError(f"its outcome is not an object: {outcome!r:.40}")
    return NotRun(text(d.get("infra_error")) or "not run")


def instance_from_dict(d: JsonObject) -> InstanceResult:
    """Inverse of `instance_to_dict`."""
    return InstanceResult(
        instance=integer(d.get("instance")) or 0,
        outcome=_outcome_or_not_run(d),
        matched=d.get("matched") is True,
        gpu_slot=_slot(d.get("gpu_slot")),
        duration_s=number(d.get("duration_s")) or 0.0,
        ready_s=number(d.get("ready_s")),
        start_s=number(d.get("start_s")),
        end_s=number(d.get("end_s")),
        logs=text(d.get("logs")),
    )


def _slot(value: JsonValue) -> tuple[str, ...]:
    # GPU ids were written as strings; an old file may hold numbers.
    return tuple(str(s) for s in array(value) if isinstance(s, (str, int)))


def instances_to_dict(a: AttemptResult) -> JsonObject | None:
    """An attempt's `run.instances` part (None for a plain attempt): as results.json keeps it."""
    if not a.instances:
        return None
    return {
        "instance": a.instance,
        "start_spread_s": a.start_spread_s,
        "instances": [instance_to_dict(i) for i in a.instances],
    }


def attempt_to_dict(a: AttemptResult) -> JsonObject:
    """One entry of a cell's `attempts`; an attempt that did not run has `outcome: null`."""
    out: JsonObject = {
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
    if a.dead_child_stack is not None:
        out["dead_child_stack"] = a.dead_child_stack
    if a.excerpt is not None:
        out["excerpt"] = a.excerpt
    if a.native is not None:
        out["native_stacks"] = a.native
    if a.gpu is not None:
        out["gpu_findings"] = a.gpu
    instances = instances_to_dict(a)
    if instances is not None:
        out.update(instances)
    if a.child_warnings:
        out["child_warnings"] = [dict(w.to_dict()) for w in a.child_warnings]
    out["launch"] = a.launch
    if a.launch_note is not None:
        out["launch_note"] = a.launch_note
    if a.perturbed:
        out["perturbed"] = list(a.perturbed)
    return out


def attempt_from_dict(d: JsonObject) -> AttemptResult:
    """Inverse of `attempt_to_dict`."""
    return AttemptResult(
        attempt=integer(d.get("attempt")) or 0,
        duration_s=number(d.get("duration_s")) or 0.0,
        outcome=_outcome_or_not_run(d),
        matched=d.get("matched") is True,
        mismatches=texts(d.get("mismatches")),
        logs=text(d.get("logs")),
        started=text(d.get("started")),
        finished=text(d.get("finished")),
        gpu_slot=_slot(d.get("gpu_slot")),
        warnings=texts(d.get("warnings")),
        stack=text_or_none(d.get("stack")),
        # Absent from a results.json written before it was kept apart from `stack`.
        dead_child_stack=text_or_none(d.get("dead_child_stack")),
        excerpt=text_or_none(d.get("excerpt")),
        native=text_or_none(d.get("native_stacks")),
        gpu=text_or_none(d.get("gpu_findings")),
        instances=tuple(instance_from_dict(i) for i in objects(d.get("instances"))),
        instance=integer(d.get("instance")),
        start_spread_s=number(d.get("start_spread_s")),
        child_warnings=child_warnings_from_list(d.get("child_warnings")),
        launch="forked" if d.get("launch") == "forked" else "fresh",
        launch_note=text_or_none(d.get("launch_note")),
        perturbed=texts(d.get("perturbed")),
    )


def child_warnings_from_list(items: JsonValue) -> tuple[ChildWarning, ...]:
    """The `child_warnings` list of results.json (or the store) as `ChildWarning`s."""
    return tuple(
        ChildWarning(text(w.get("category")), text(w.get("message")), text(w.get("where")))
        for w in objects(items)
    )


def expectation_from_dict(d: JsonObject) -> Expectation:
    """Inverse of `Expectation.to_dict` (`step: "6..8"`, `rate: ">=0.3"`)."""
    step = d.get("step")
    rate = d.get("rate")
    signal = d.get("signal")
    return Expectation(
        outcome=_one_of(_EXPECTED, d.get("outcome"), "expected outcome"),
        signal=texts(signal) if isinstance(signal, list) else text_or_none(signal),
        exit_code=integer(d.get("exit_code")),
        exception=text_or_none(d.get("exception")),
        message=text_or_none(d.get("message")),
        phase=text_or_none(d.get("phase")),
        step=parse_step(step) if isinstance(step, (str, int)) else None,
        rate=parse_rate(rate) if isinstance(rate, str) else None,
        module=text_or_none(d.get("module")),
        stage=text_or_none(d.get("stage")),
        where=WHERES.get(text(d.get("where"))),
    )


def cell_to_dict(c: CellResult) -> JsonObject:
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


def _rate(d: JsonObject) -> Rate:
    return Rate(
        matched=integer(d.get("matched")) or 0,
        attempts=integer(d.get("attempts")) or 0,
        low=number(d.get("low")) or 0.0,
        high=number(d.get("high")) or 0.0,
    )


def cell_from_dict(
    d: JsonObject, index: int = 0, attempts: tuple[AttemptResult, ...] | None = None
) -> CellResult:
    """Inverse of `cell_to_dict`; `attempts`: its attempts read already (`read_cells`)."""
    found = integer(d.get("index"))
    return CellResult(
        cell=Cell(
            id=text(d.get("id")),
            index=index if found is None else found,
            matrix=obj(d.get("matrix")),
        ),
        expected=expectation_from_dict(obj(d.get("expected"))),
        verdict=_one_of(_VERDICTS, d.get("verdict"), "verdict"),
        reason=text(d.get("reason")),
        rate=_rate(obj(d.get("rate"))),
        attempts=tuple(attempt_from_dict(a) for a in objects(d.get("attempts")))
        if attempts is None
        else attempts,
        command=text(d.get("command")),
        environment=obj(d.get("environment")),
    )


def run_to_dict(run: RunResult, *, cells: bool = True) -> JsonObject:
    """The whole run in the results.json shape of docs/cli.md (contract keys plus extras).

    `cells=False`: `cells` is an empty list (the summary still counts them), for `run_json`.
    """
    return {
        "format": FORMAT,
        "run_id": run.run_id,
        "spec": {"name": run.spec_name, "path": run.spec_path, "text": run.spec_text},
        "runner": run.runner,
        "started": run.started,
        "finished": run.finished,
        "environment": dict(run.environment),
        "cells": [cell_to_dict(c) for c in run.cells] if cells else [],
        "summary": {kind: count for kind, count in run.summary.items()},
        "command_line": run.command_line,
        "title": run.title,
        "description": run.description,
        "warnings": list(run.warnings),
        "interrupted": run.interrupted,
        "shard": run.shard or None,
        "standalone": run.standalone.to_dict() if run.standalone else None,
        "options": dict(run.options),
        "paths": dict(run.paths),
        "resumed": run.resumed.to_dict() if run.resumed else None,
    }


def kept_on_resume(path: Path) -> tuple[Resumed | None, str | None]:
    """What a resumed run keeps of the results.json at `path`: its `resumed` record (a run
    resumed again keeps it where nothing ran now) and the spec's path as the run's command
    line gave it (the resume loads the spec from the store's absolute path); each None where
    it has none, and both where it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    data = data if isinstance(data, dict) else {}
    resumed, spec = data.get("resumed"), data.get("spec")
    found = spec.get("path") if isinstance(spec, dict) else None
    return (
        _resumed(resumed) if isinstance(resumed, dict) else None,
        found if isinstance(found, str) and found else None,
    )


# What a reader makes of a part of results.json it cannot read (one edited by hand): left
# out, and said, where it was dropped without a word (a cell's attempts not a list read as
# no attempts, a cell that was not an object as no cell) or refused the whole run (a cell's
# unknown verdict).
_UNREAD = (KeyError, TypeError, ValueError, AttributeError)


def read_cells(value: JsonValue, source: str) -> tuple[tuple[CellResult, ...], tuple[str, ...]]:
    """results.json's `cells` read, each that cannot be read left out, and what was left
    out said, naming `source` and the cell: (cells, warnings). An attempt that cannot be read
    is left out of its cell alone; every other cell and attempt is kept."""
    cells: list[CellResult] = []
    unread: list[str] = []
    for position, entry in enumerate(value if isinstance(value, list) else []):
        where = f"{source}: cells[{position}]"
        if not isinstance(entry, dict):
            unread.append(f"{where} is not an object (cannot be read): left out")
            continue
        cell_id = entry.get("id")
        if isinstance(cell_id, str):
            where += f" ({cell_id})"
        listed = entry.get("attempts", [])
        if not isinstance(listed, list):
            unread.append(f"{where}: its attempts are not a list (cannot be read): left out")
            listed = []
        attempts: list[AttemptResult] = []
        for nth, item in enumerate(listed):
            try:
                if not isinstance(item, dict):
                    raise TypeError("not an object")
                attempts.append(attempt_from_dict(item))
            except _UNREAD as exc:
                unread.append(f"{where}: attempts[{nth}] cannot be read ({exc}): left out")
        try:
            if not isinstance(cell_id, str):
                raise TypeError("no id")
            cells.append(cell_from_dict(entry, position, tuple(attempts)))
        except _UNREAD as exc:
            unread.append(f"{where} cannot be read ({exc}): left out")
    return tuple(cells), tuple(unread)


def run_from_dict(d: JsonObject, source: str = "results.json") -> RunResult:
    """Inverse of `run_to_dict`; refuses a results format it does not know. A cell (or an
    attempt) that cannot be read is left out, and a warning of the run says so, naming
    `source` and the cell."""
    if d.get("format") != FORMAT:
        found = d.get("format")
        raise FatalError(
            f"unsupported format {found!r} (expected {FORMAT}): not a reprospec results.json"
        )
    spec = obj(d.get("spec"))
    standalone = d.get("standalone")
    run_id = text(d.get("run_id"))
    if not run_id or not isinstance(d.get("cells"), list):
        raise ValueError("no run_id or no cells")  # load_run: "not a results file (...)"
    cells, unread = read_cells(d.get("cells"), source)
    return RunResult(
        run_id=run_id,
        spec_name=text(spec.get("name")),
        spec_path=text(spec.get("path")),
        spec_text=text(spec.get("text")),
        runner=text(d.get("runner")),
        started=text(d.get("started")),
        finished=text(d.get("finished")),
        environment=obj(d.get("environment")),
        cells=cells,
        command_line=text(d.get("command_line")),
        title=text(d.get("title")),
        description=text(d.get("description")),
        warnings=(*texts(d.get("warnings")), *unread),
        interrupted=d.get("interrupted") is True,
        shard=text(d.get("shard")),
        standalone=Standalone.from_dict(standalone) if isinstance(standalone, dict) else None,
        options=obj(d.get("options")),
        paths={k: v for k, v in obj(d.get("paths")).items() if isinstance(v, str)},
        resumed=_resumed(d.get("resumed")),
    )


def _resumed(value: JsonValue) -> Resumed | None:
    """results.json's `resumed`: None for a run that went straight through."""
    if not value:
        return None
    from reprospec.core.resumed import Resumed  # only a resumed run's results hold one

    return Resumed.from_dict(obj(value))


def cell_json(cell: CellResult) -> str:
    """One cell's entry of results.json's `cells`, as `run_json` writes it (indented in place):
    `json.dumps(..., indent=2)`'s text, made by `indented` (an object per attempt, encoded
    on the run's main thread as each cell ends: the standard library's took 2.2x as long)."""
    dumped = indented(cell_to_dict(cell))
    return "\n    " + dumped.replace("\n", "\n    ")


def run_json(run: RunResult, entries: Iterable[str] | None = None) -> Iterator[str]:
    """`json.dumps(run_to_dict(run), indent=2, ensure_ascii=False)`, one cell at a time.

    The same text, without the whole run as one dict and one string: at 4,096 cells
    those took 44 MiB at once, half the engine's peak memory. `entries`: each cell's
    `cell_json`, in the order of `run.cells`, when they were written before (a run's
    spool, store/cellspool.py: its cells as held are only what the report reads).
    """
    head = run_to_dict(run, cells=False)
    text = json.dumps(head, indent=2, ensure_ascii=False)
    # The only line that can read so: a string's newlines and quotes are escaped.
    before, marker, after = text.partition('\n  "cells": [],\n')
    if not marker or not run.cells:
        yield text
        return
    yield before + '\n  "cells": ['
    for index, entry in enumerate(entries if entries is not None else map(cell_json, run.cells)):
        yield ("," if index else "") + entry
    yield "\n  ],\n" + after


def write_run(
    run_dir: Path, run: RunResult, entries: Iterable[str] | None = None, *, durable: bool = True
) -> Path:
    """Write `results.json` and `spec.yaml` into the run folder; returns the results.json path.

    `entries`: the cells' `cell_json` texts, as `run_json` takes them. `durable`: as
    `write_atomic` takes it."""
    folder = RunFolder(run_dir)
    write_atomic(folder.spec_yaml, run.spec_text, durable=durable)
    results = folder.results_json
    write_atomic(results, itertools.chain(run_json(run, entries), ("\n",)), durable=durable)
    return results


def find_run(path_or_id: str | Path, out_root: Path = Path(".reprospec")) -> Path:
    """The results.json of a run folder, a results.json path, a run id (or unique prefix),
    or `latest` / `latest~N` (`resolve_run_id`). A run id, and `latest`, count the merged
    runs of the Slurm runs under `out_root` too (a shared --out): no store lists them."""
    # The readers of run ids and `latest` are imported by the verbs that read a run, not by
    # the run that writes one (issue 30, item 4).
    from reprospec.store.refs import resolve_run_id, run_id_named

    if isinstance(path_or_id, str):
        path_or_id = resolve_run_id(path_or_id, out_root, slurm_merged=True)
    path = Path(path_or_id)
    if path.is_dir() and RunFolder(path).results_json.is_file():
        return RunFolder(path).results_json
    refuse_a_search_answer(path)
    if path.is_file():
        if path.name.lower().endswith(BUNDLE_SUFFIXES):
            # A bundle handed on (`report b.tar.gz`, `compare b.tar.gz latest`): read as
            # results it was "'utf-8' codec can't decode byte 0x8b", and `merge` said its
            # folder was no run folder.
            raise UsageError(
                f"{path} is a bundle (the archive `reprospec bundle` writes), not a run: "
                f"`reprospec run {path}` reruns it, and its run folder is the archive's top "
                f"folder (`tar -xzf {path}`, then name that folder)"
            )
        beside = RunFolder(path.parent)
        # A results.json alone may be any folder's copy of one, whose other files are no
        # run's: a run's folder holds what a run writes beside it too.
        if (
            path.name != beside.results_json.name
            and beside.results_json.is_file()
            and _run_wrote(path.parent)
        ):
            # Another file of a run folder (its report.md, the one a user has open; its
            # spec.yaml): the run's. Read as results, report.md was refused as "not JSON".
            return beside.results_json
        return path
    runs = RunFolder.runs_under(out_root)
    name = str(path_or_id)
    if "/" not in name:
        # The id `name` is or begins, among the store's runs, the run folders and the merged
        # Slurm runs (ambiguous: refused there).
        run_id = run_id_named(name, out_root, slurm_merged=True)
        found = RunFolder(runs / run_id).results_json
        if found.is_file():
            return found
        if not path.exists():
            merged = [f for f in RunFolder.merged_slurm_under(out_root) if f.run_id == run_id]
            if merged:
                return merged[0].results_json
    unreadable = _unreadable(path, out_root)
    if unreadable is not None:
        raise UsageError(unreadable)
    if path.is_dir():
        raise UsageError(_not_a_run(path))
    # No run found: where --out is a file, that is why, said as history says it.
    RunFolder.check_out(out_root)
    raise UsageError(f"no run {name!r}: not a run folder, a results.json, or a run id under {runs}")


def refuse_a_search_answer(path: Path, *, resuming: bool = False) -> None:
    """`report`, `compare`, `merge` or `bundle` of `.reprospec/isolate/ID` (or its
    isolate.md) said "is not a run folder: it has no results.json, nor anything a run
    writes", which left the user looking for the run: a search's folder holds its answer,
    which its VERB.md is and its command prints again. `resuming`: `run --resume` of one
    (`resume.resolve`), which said "no such run": the same command resumes the search."""
    folder = path if path.is_dir() else path.parent
    # A search's folder (`OUT/isolate/ID/`, a minimization's DIR, ...) holds its answer
    # (VERB.json and VERB.md) rather than a run.
    for verb in SEARCH_VERBS:
        if (folder / f"{verb}.json").is_file() and (path.is_dir() or path.stem == verb):
            what = f"{'an' if verb[0] in 'aei' else 'a'} {verb}"
            said = (
                f"{what} folder, not a run: its answer is {folder / f'{verb}.md'}"
                if path.is_dir()
                else f"the answer of {what}, not a run"
            )
            # minimize.md names no run; isolate.md, amplify.md and bisect.md list theirs.
            probes = (
                "; `reprospec history --searches` lists its probe runs"
                if verb == "minimize"
                else f", such as one of the probe runs {verb}.md lists"
            )
            again = "resumes, or prints again where it finished" if resuming else "prints again"
            raise UsageError(
                f"{path} is {said}, which the same `reprospec {verb}` command {again}; "
                f"a run is named by its folder, its id or `latest`{probes}"
            )


def _run_wrote(folder: Path) -> bool:
    """Whether `folder` holds what a run writes as it begins (its engine.json, its cells/,
    its spec.yaml), finished or not."""
    return any((folder / name).exists() for name in (ENGINE_JSON, CELLS, SPEC_YAML))


def _not_a_run(folder: Path) -> str:
    """Why a folder given as a run has none to read. One a run made (its engine.json, its
    cells/) is still running or was killed; any other folder is not a run's, and said so:
    `report /tmp` read "/tmp has no results.json (the run may still be going ...)". A store
    (`--out`, its runs/ folder) is said to be one, with how to name a run in it."""
    if _run_wrote(folder):
        return f"{folder} has no results.json (the run may still be going, or was killed)"
    if (folder / RUNS).is_dir():
        return (
            f"{folder} is a store, not a run folder: name one of its runs, by id or as "
            f"latest, with --out {folder}"
        )
    return f"{folder} is not a run folder: it has no results.json, nor anything a run writes"


def _unreadable(path: Path, out_root: Path) -> str | None:
    """Why a run the store lists has no results.json to read: its folder is gone (removed
    by hand), or it holds none because the run's engine was killed (SIGKILL, the OOM
    killer: only an ending it sees writes results.json) or still runs. `history` lists the
    run and `--resume` takes its id, so "no run" would be false. None where the store has
    no such run. A report is not made from the store alone: it keeps no cell's command or
    environment, no warning, no standalone repro, and the attempts' logs are in the folder
    (docs/cli.md, `report`)."""
    name, out = str(path), out_root
    if path.parent.name == RUNS and "/" in name:
        # `.reprospec/runs/ID`: the folder names both the run and its store.
        name, out = path.name, path.parent.parent
    elif "/" in name:
        return None
    from reprospec.store.refs import listed_run

    found = listed_run(name, out)
    if found is None:
        return None
    run_id = found.run_id
    folder = RunFolder.of(out, run_id)
    resume = f"`reprospec run --resume {run_id} --out {out}`"
    if folder.path.is_dir():
        if found.status != "running":
            return None  # ended with a word, and its results.json removed since: the plain line
        if not folder.names_engine():
            return (
                f"run {run_id} has no results: {folder.results_json} is missing, and whether "
                "its engine still runs cannot be told (its folder names none: no engine.json, "
                "a run begun by a reprospec from before it wrote one; `reprospec history` marks "
                f"it `unknown`): if it was killed, {resume} runs the rest and writes its "
                "results and report"
            )
        if not folder.engine_gone():
            return (
                f"run {run_id} is still running (its engine has not written results.json "
                f"yet): report it once it ends, or follow it with `reprospec history --out {out}`"
            )
        if why := folder.stop_noted():
            # Its engine stopped with a word the store could not take (RunFolder.note_stop).
            return (
                f"run {run_id} stopped before it wrote its results because {why}: "
                f"{folder.results_json} is missing. The attempts it finished are in the store "
                f"(`reprospec history` marks the run `interrupted: {why}`); {resume} runs the "
                "rest and writes its results and report"
            )
        return (
            f"run {run_id} was killed (SIGKILL, the OOM killer, a reboot) before it wrote its "
            f"results: {folder.results_json} is missing. The attempts it finished are in the "
            f"store (`reprospec history` marks the run `killed`); {resume} runs the rest and "
            "writes its results and report"
        )
    ran = f", as `{found.command_line}`" if found.command_line else ""
    return (
        f"run {run_id}: its folder {folder.path} is gone (removed by hand?). The results store "
        f"still lists it (`reprospec history` marks it `folder missing`) with its verdicts, "
        "but not what this needs: each cell's command, environment and logs were in the "
        f"folder's results.json. {resume} writes the folder again from the store and its spec "
        f"({found.spec_path}, unchanged; the attempts' logs stay lost), or run the spec "
        f"again{ran}"
    )


def run_dir_of(path_or_id: str | Path, out_root: Path = Path(".reprospec")) -> Path:
    """The run folder of a run reference (where its logs and stacks are)."""
    return find_run(path_or_id, out_root).parent


def load_run(path_or_id: str | Path, out_root: Path = Path(".reprospec")) -> RunResult:
    """Load a finished run (see `find_run` for what `path_or_id` may be)."""
    path = find_run(path_or_id, out_root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        # Most often a spec or a report given where a run is meant (`report spec.yaml`):
        # say where the JSON broke and what a RUN is, not json's "(char 0)".
        what = (
            " (a report away from its run folder: name the run's folder or id)"
            if path.suffix.lower() in (".md", ".html")
            else ""
        )
        raise FatalError(
            f"{path}:{exc.lineno}:{exc.colno}: cannot read results: not JSON ({exc.msg}){what}; "
            "a RUN is a run folder, its results.json or another file of it (its report.md), "
            "a run id, `latest` or `latest~N`"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"{path}: cannot read results: {exc}") from exc
    if not isinstance(data, dict):
        raise FatalError(f"{path}: not a reprospec results file")
    try:
        run = run_from_dict(data, str(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise FatalError(f"{path}: not a reprospec results file ({exc!r})") from exc
    except FatalError as exc:
        # Another format (any JSON given as a RUN): named by the file given, not as
        # "results.json", which may be none of the files in the command.
        raise FatalError(f"{path}: {exc}") from exc
    said = texts(data.get("warnings"))
    for warning in run.warnings[len(said) :]:
        # What could not be read of it, each named (a report of it says so too): left out
        # silently, a cell edited by hand read as never run (lo32 item 5).
        print(f"reprospec: warning: {warning}", file=sys.stderr)
    spec_file = RunFolder(path.parent).spec_yaml
    if not run.spec_text and spec_file.is_file():
        run = replace(run, spec_text=spec_file.read_text(encoding="utf-8"))
    if path.parent.parent.name == RUNS:
        # OUT/runs/ID/results.json: the store its report's --resume command names.
        run = replace(run, store=path.parent.parent.parent)
    return with_excerpts(run, path.parent)


def with_excerpts(run: RunResult, run_dir: Path) -> RunResult:
    """Results written before attempts kept their log excerpt: take it from the logs, once.

    A failed attempt without an `excerpt` gets one from its files in `run_dir`;
    newer results already hold theirs and are returned unchanged.
    """
    if all(a.excerpt is not None or not a.failed for c in run.cells for a in c.attempts):
        return run
    from reprospec.outcome.evidence import Evidence, read_log

    def fill(attempt: AttemptResult) -> AttemptResult:
        if attempt.excerpt is not None or not attempt.failed or not attempt.logs:
            return attempt
        folder = run_dir / attempt.logs
        evidence = Evidence(
            stdout=read_log(folder / "stdout.log"), stderr=read_log(folder / "stderr.log")
        )
        hang = attempt.ran is not None and attempt.ran.kind == "hang"
        return replace(attempt, excerpt=evidence.excerpt(hang=hang))

    cells = tuple(replace(c, attempts=tuple(fill(a) for a in c.attempts)) for c in run.cells)
    return replace(run, cells=cells)
