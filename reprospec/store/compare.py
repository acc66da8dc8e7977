"""Two runs side by side (`compare`): the spec, the options, the environment, each cell."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TypedDict

from reprospec.core.jsontypes import JsonValue
from reprospec.core.redact import MASK, looks_secret
from reprospec.core.results import CellResult, RunResult, VerdictKind
from reprospec.core.words import RESOLVED_SPEC, expectation_phrase, plural
from reprospec.environment.facts import (
    Difference,
    environment_diff,
    run_one_cell_fields,
    varying_variables,
    within,
)
from reprospec.spec.matrix import render_value
from reprospec.store.digests import FIELD as DIGESTS
from reprospec.store.digests import FILES_FIELD, INHERITED_FIELD, UNDIGESTED, recorded
from reprospec.store.specvariables import FIELD as READ
from reprospec.store.specvariables import changes as read_changes


class SpecChange(TypedDict):
    """The two runs' specs: their names, whether they are the same, the unified diff."""

    names: list[str]
    same: bool
    diff: list[str]


class OptionChange(TypedDict):
    """One run option (or the command line) that differs: each run's value."""

    key: str
    a: object
    b: object


class VerdictChange(TypedDict):
    cell: str
    before: VerdictKind
    after: VerdictKind


class CellChange(TypedDict):
    """One cell in both runs that changed; each list holds the first run's, then the second's."""

    cell: str
    change: str
    verdict: list[VerdictKind]
    outcomes: list[dict[str, int]]  # outcome signature -> attempts
    expected: list[str]
    # [failed, ran] of each run (attempts that ended other than `pass`, of those that ran)
    # where the failure rate changed clearly (`rate_apart`), else [].
    failed: list[list[int]]


class VariableChange(TypedDict):
    """One environment variable that differs between the runs.

    `a` and `b` are each run's value (None: unset); a secret-looking name's values are
    never shown (None both), `change` says only `unset -> set`, `set -> unset` or
    `changed`. `cells` are the cells it differs in; [] when it differs for every cell (the
    engine's environment, inherited by every attempt, or a value no toggle chose).
    """

    name: str
    a: str | None
    b: str | None
    change: str
    cells: list[str]


class FilesChange(TypedDict):
    """The program's files from the first run to the second, by path (relative to the
    run's workdir where both runs recorded it: `workdirs`; else as recorded): its sources and
    inputs (plan/workfiles.py's `program_files`: the script, its local imports, the spec's
    `files`), digested as each run began (store/digests.py's FILES_FIELD).

    `unknown` is "" when the lists are whole; else why they are not: a run recorded no
    digests (one made before runs recorded them, or a search's probe: never read as
    "unchanged"), or the runs are of two stores, whose digests are keyed apart (then
    `added` and `removed` are told, and `changed` is not). `by_size` holds the changed
    files over the digest limit, told by their size and modification time; `same` counts
    the files alike in both. `named`: the other files the commands name in either run
    (`--log run.log`), read or written, never compared. `partial`: a run read the files of
    only some of the jobs its cells run (a command that reads a large axis).
    """

    added: list[str]
    removed: list[str]
    changed: list[str]
    by_size: list[str]
    same: int
    unknown: str
    named: list[str]
    partial: str
    # The two runs' workdirs where they differ ([] where not, or not recorded): the files
    # are matched by their paths in them, so `race/race.py` and `/home/u/race/race.py`
    # (amplify's absolute workdir) or a bundle rerun's `.../tree/race/race.py` are one file.
    workdirs: list[str]


class Comparison(TypedDict):
    """What `compare` finds (and `compare --format json` prints)."""

    run_a: str
    run_b: str
    spec: SpecChange
    # The program's own files (the user edited train.py between the runs).
    files: FilesChange
    options: list[OptionChange]
    changed: list[VerdictChange]
    cells: list[CellChange]
    only_a: list[str]
    only_b: list[str]
    # How many cells both runs have: 0 (two specs' runs, other matrices) compared none, and
    # "no cell changed" read as if all had been.
    in_both: int
    environment: list[Difference]
    # The environment variables that differ (`env.NAME` of the capture, and each cell's
    # `environment.env`): a run that differs only there is not "same environment".
    variables: list[VariableChange]
    # Fields left out of `environment`: a toggle chose them per cell in either run (a package
    # version, a venv's python), so each run's captured value is one cell's, not the run's.
    per_cell: list[str]
    # Why the variables inherited from the shell were not all compared ("" where they
    # were): "same environment" must not cover what no record could tell.
    inherited: str
    # Why the captured environments were not compared ("" where both were captured): one
    # run's capture failed or is missing, and each field read as `None -> value`.
    not_captured: str
    # Each run's perturbations (environment.perturb as applied; [] for a plain run): an
    # amplified run's rates are not the plain program's, so a change of rate may be that.
    perturbed: list[list[str]]
    # Each run's runner (`local` where its options do not say): which interpreter a run
    # without `--python` had is the runner's to say (compare's `python: (none: ...)`).
    runners: list[str]


def compare(run_a: RunResult, run_b: RunResult) -> Comparison:
    """What differs from `run_a` to `run_b`: the spec (a unified diff), the options (`-j`,
    `--set`, ...), the environment, and per cell the verdict, the outcome signatures
    and the expectation.

    A cell whose attempts did the same (the same signatures, as often) under a
    different expectation is "same outcome, different expectation": the spec moved,
    the code under test did not.
    """
    cells_a = {_cell_key(c): c for c in run_a.cells}
    cells_b = {_cell_key(c): c for c in run_b.cells}
    cells = [
        row
        for key, a in cells_a.items()
        if key in cells_b and (row := _cell_change(a, cells_b[key])) is not None
    ]
    return {
        "run_a": run_a.run_id,
        "run_b": run_b.run_id,
        "spec": {
            "names": [run_a.spec_name, run_b.spec_name],
            "same": run_a.spec_name == run_b.spec_name and run_a.spec_text == run_b.spec_text,
            "diff": spec_diff(run_a, run_b),
        },
        "files": files_change(run_a.environment, run_b.environment, run_a.run_id, run_b.run_id),
        "options": options_diff(run_a, run_b),
        "changed": [
            {"cell": row["cell"], "before": row["verdict"][0], "after": row["verdict"][1]}
            for row in cells
            if row["verdict"][0] != row["verdict"][1]
        ],
        "cells": cells,
        "only_a": [a.cell.id for key, a in cells_a.items() if key not in cells_b],
        "only_b": [b.cell.id for key, b in cells_b.items() if key not in cells_a],
        "in_both": sum(key in cells_b for key in cells_a),
        **environment_change(run_a, run_b),
        "perturbed": [perturbations(run_a), perturbations(run_b)],
        "runners": [_runner(run_a), _runner(run_b)],
    }


def _runner(run: RunResult) -> str:
    """The runner the run's options name (`local` where they name none, as `--resume`
    reads them)."""
    return str(run.options.get("runner") or "local")


def _cell_key(cell: CellResult) -> tuple[tuple[str, str], ...]:
    """A cell as both runs' cells are matched: its axes and values, in no order. The id
    keeps the spec's axis order, so a spec whose `matrix` lists `b` before `a` named every
    cell otherwise (`b=x,a=1` for `a=1,b=x`), and compare said "no cell in both runs" of two
    runs of the same cells. Values are read as the id writes them (`1` and `"1"` alike, as
    the id matched them). A cell stored without its matrix is matched by its id."""
    if not cell.cell.matrix:
        return (("", cell.cell.id),)
    return tuple(sorted((axis, render_value(value)) for axis, value in cell.cell.matrix.items()))


class EnvironmentChange(TypedDict):
    environment: list[Difference]
    variables: list[VariableChange]
    per_cell: list[str]
    inherited: str
    not_captured: str


def environment_change(run_a: RunResult, run_b: RunResult) -> EnvironmentChange:
    """The environment's differences, but for what either run's cells did not share; its
    variables apart, by name, with each cell's own (`variable_changes`)."""
    one_cell = {field for run in (run_a, run_b) for field in run_one_cell_fields(run)}
    one_cell |= {f"env.{name}" for run in (run_a, run_b) for name in varying_variables(run)}
    not_captured = [
        f"{run.run_id}'s was not captured ({_uncaptured_reason(run.environment)})"
        for run in (run_a, run_b)
        if "python" not in run.environment  # (the capture's first field, always there)
    ]
    differences = [] if not_captured else environment_diff(run_a.environment, run_b.environment)
    # The digests are for the secret variables' rows below and the program's files
    # (`files_change`), not differences of their own.
    kept = [
        d
        for d in differences
        if not within(d["key"], one_cell | {DIGESTS, FILES_FIELD, INHERITED_FIELD, READ})
    ]
    return {
        "environment": [d for d in kept if not d["key"].startswith("env.")],
        "variables": variable_changes(
            run_a, run_b, [d for d in kept if d["key"].startswith("env.")]
        ),
        "per_cell": sorted(one_cell),
        # (A run without a capture digested none: `not_captured` says it.)
        "inherited": "" if not_captured else inherited_unknown(run_a, run_b),
        "not_captured": "; ".join(not_captured),
    }


def _uncaptured_reason(environment: Mapping[str, JsonValue]) -> str:
    """Why a run's environment holds no capture: the capture's own error, where it said."""
    error = environment.get("error")
    return str(error) if isinstance(error, str) and error else "the run recorded none"


def variable_changes(
    run_a: RunResult, run_b: RunResult, captured: list[Difference]
) -> list[VariableChange]:
    """The variables that differ: per cell, as each cell's `environment.env` recorded them
    (a toggle may set one per cell), then those of the captured environment (the engine's
    own, which every attempt inherits: `HF_TOKEN` exported in one shell and not the other)
    that no cell's row names already; then those the spec reads with `${{ env.NAME }}`, as
    each run read them as it began (store/specvariables.py), by value where the spec made
    them public, else only changed or not.

    A secret-looking name (redact.py's) is compared by whether it is set, never by value:
    its recorded value is `***` either way. That one changed is told by the capture's
    digests of them (`_changed_secrets`), for the engine's environment and the captured
    cell's; a secret a toggle sets per cell is told only unset or set.
    """
    cells_b = {_cell_key(c): c for c in run_b.cells}
    common = [(a, cells_b[_cell_key(a)]) for a in run_a.cells if _cell_key(a) in cells_b]
    groups: dict[tuple[str, str | None, str | None, str], list[str]] = {}
    for cell_a, cell_b in common:
        env_a, env_b = _variables(cell_a.environment), _variables(cell_b.environment)
        for name in dict.fromkeys([*env_a, *env_b]):
            row = _change(name, env_a.get(name), env_b.get(name))
            if row is not None:
                groups.setdefault(row, []).append(cell_a.cell.id)
    rows: list[VariableChange] = [
        {
            "name": name,
            "a": a,
            "b": b,
            "change": change,
            # Every cell alike: the variable's change, not any cell's.
            "cells": [] if len(cells) == len(common) else cells,
        }
        for (name, a, b, change), cells in groups.items()
    ]
    named = {row["name"] for row in rows}
    for difference in captured:
        name = difference["key"].removeprefix("env.")
        row = _change(name, _text(difference["a"]), _text(difference["b"]))
        if name not in named and row is not None:
            named.add(name)
            rows.append({"name": name, "a": row[1], "b": row[2], "change": row[3], "cells": []})
    rows += [
        # A secret by its value's shape alone (`HF_ENDPOINT=https://u:pw@h`) is `***`, as
        # its capture shows it: a value of None reads as one the shell gave, not recorded.
        {"name": name, "a": shown, "b": shown, "change": change, "cells": []}
        for name, change in _changed_secrets(run_a.environment, run_b.environment)
        if name not in named
        for shown in [None if looks_secret(name) else MASK]
    ]
    named = {row["name"] for row in rows}
    # The variables the spec reads (`${{ env.CODE }}`), as each run read them: CODE=0 and
    # CODE=3 ran `exit 0` and `exit 3`, and compare said "same environment".
    rows += [
        {"name": name, "a": a, "b": b, "change": change, "cells": []}
        for name, a, b, change in read_changes(
            run_a.environment.get(READ), run_b.environment.get(READ)
        )
        if name not in named
    ]
    named = {row["name"] for row in rows}
    # Last, the shell's other variables, by digest only: a row above says more of one.
    rows += [
        {"name": name, "a": None, "b": None, "change": change, "cells": []}
        for name, change in inherited_changes(run_a.environment, run_b.environment)
        if name not in named
    ]
    return rows


def _changed_secrets(
    a: Mapping[str, JsonValue], b: Mapping[str, JsonValue]
) -> list[tuple[str, str]]:
    """(name, how) of the secret variables set in both captures: `changed` where their
    digests differ under one store's key (store/digests.py); where the two runs' digests
    are under other keys (two stores: Slurm shards, a run folder from elsewhere), that it
    could not be told, rather than nothing, which read as "the same"."""
    key_a, of_a = recorded(a.get(DIGESTS))
    key_b, of_b = recorded(b.get(DIGESTS))
    both = [name for name in of_a if name in of_b]
    if key_a is not None and key_a == key_b:
        return [(name, "changed") for name in both if of_a[name] != of_b[name]]
    return [
        (name, "set in both; runs of two stores, whether it changed is unknown") for name in both
    ]


def inherited_changes(
    a: Mapping[str, JsonValue], b: Mapping[str, JsonValue]
) -> list[tuple[str, str]]:
    """(name, how) of the variables the attempts inherited from the engine's shell that the
    capture's table does not show, by their digests (store/digests.INHERITED_FIELD): set in
    one run only, or changed under one store's key. A run recorded without them (an older
    one, or another runner's) tells nothing, rather than that every variable went unset."""
    if INHERITED_FIELD not in a or INHERITED_FIELD not in b:
        return []
    key_a, of_a = recorded(a.get(INHERITED_FIELD))
    key_b, of_b = recorded(b.get(INHERITED_FIELD))
    out = [
        (name, "unset -> set" if name in of_b else "set -> unset")
        for name in sorted({*of_a, *of_b} - (of_a.keys() & of_b.keys()))
    ]
    if key_a is not None and key_a == key_b:
        out += [
            (name, "changed") for name in sorted(of_a) if of_b.get(name, of_a[name]) != of_a[name]
        ]
    return sorted(out)


def inherited_unknown(run_a: RunResult, run_b: RunResult) -> str:
    """Why `inherited_changes` could not tell every variable the attempts inherited from the
    shell ("" where it could): a run that kept no record of them (made before runs did, or
    whose store could not keep a key), a docker run beside another runner's (its
    attempts inherit none), or runs of two stores (set and unset told, a change not)."""
    runs = (run_a, run_b)
    docker = [run.runner == "docker" for run in runs]
    if all(docker):
        return ""
    if any(docker):
        (name,) = [run.run_id for run, in_docker in zip(runs, docker, strict=True) if in_docker]
        return f"not compared ({name} ran under the docker runner, whose attempts inherit none)"
    unrecorded = [run.run_id for run in runs if INHERITED_FIELD not in run.environment]
    if unrecorded:
        return (
            f"not compared ({' and '.join(unrecorded)} kept no record of them: a run made "
            "before runs kept one, or whose store could not keep its digest key)"
        )
    (key_a, of_a), (key_b, of_b) = (recorded(run.environment[INHERITED_FIELD]) for run in runs)
    if key_a != key_b and of_a.keys() & of_b.keys():
        return (
            "set and unset told, a change not (the runs are of two stores, whose digests "
            "are under other keys)"
        )
    return ""


def files_change(
    a: Mapping[str, JsonValue], b: Mapping[str, JsonValue], name_a: str, name_b: str
) -> FilesChange:
    """The program's files that were added, removed or changed from the environment `a`
    (of the run `name_a`) to `b`: see FilesChange."""
    known_a, of_a = recorded(a.get(FILES_FIELD))
    known_b, of_b = recorded(b.get(FILES_FIELD))
    records = [(name, field.get(FILES_FIELD)) for name, field in ((name_a, a), (name_b, b))]
    change: FilesChange = {
        "added": [],
        "removed": [],
        "changed": [],
        "by_size": [],
        "same": 0,
        "unknown": "",
        "workdirs": [],
        "named": sorted({n for _, r in records for n in _strings(r, "named")}),
        "partial": "; ".join(
            f"{name}: {r['partial']}"
            for name, r in records
            if isinstance(r, Mapping) and isinstance(r.get("partial"), str)
        ),
    }
    missing = [name for name, record in records if record is None]
    if missing:
        change["unknown"] = (
            f"{' and '.join(missing)} kept no digests of the program's files (made before "
            "runs recorded them, or its store could keep no key)"
        )
        return change
    skipped = [
        f"{name} read none ({r['skipped']})"
        for name, r in records
        if isinstance(r, Mapping) and isinstance(r.get("skipped"), str)
    ]
    if skipped:
        change["unknown"] = "; ".join(skipped)
        return change
    # A file a run of an older engine digested, that this one only names (a log).
    of_a = {name: digest for name, digest in of_a.items() if name not in change["named"]}
    of_b = {name: digest for name, digest in of_b.items() if name not in change["named"]}
    # Each file by its path in its workdir where both runs recorded it, else by its name.
    keys_a, keys_b = _in_workdir(records[0][1]), _in_workdir(records[1][1])
    if keys_a is None or keys_b is None:
        keys_a, keys_b = {}, {}
    elif (workdirs := [_workdir(r) for _, r in records])[0] != workdirs[1]:
        # Said, so that `train.py: changed` of two folders is not read as one folder's.
        change["workdirs"] = workdirs
    by_a = {keys_a.get(name, name): name for name in of_a}
    by_b = {keys_b.get(name, name): name for name in of_b}
    both = [key for key in by_a if key in by_b]
    change["added"] = [name for key, name in by_b.items() if key not in by_a]
    change["removed"] = [name for key, name in by_a.items() if key not in by_b]
    if both and (known_a is None or known_a != known_b):
        change["unknown"] = (
            f"whether the {plural(len(both), 'file')} in both runs changed is unknown: the runs "
            "are of two stores, whose digests are keyed apart"
        )
        return change
    pairs = [(by_a[key], of_a[by_a[key]], of_b[by_b[key]]) for key in both]
    change["changed"] = [name for name, a, b in pairs if a != b]
    change["by_size"] = [
        name
        for name, a, b in pairs
        if a != b and a.startswith(UNDIGESTED) and b.startswith(UNDIGESTED)
    ]
    change["same"] = len(both) - len(change["changed"])
    return change


def _in_workdir(record: JsonValue) -> dict[str, str] | None:
    """A files record's name -> the file's path relative to its workdir
    (pipeline/programfiles.py's `in_workdir`); None for a record made before runs kept it."""
    pairs = record.get("in_workdir") if isinstance(record, Mapping) else None
    if not isinstance(pairs, list):
        return None
    return {str(p[0]): str(p[1]) for p in pairs if isinstance(p, list) and len(p) == 2}


def _workdir(record: JsonValue) -> str:
    """The workdir a files record keys its files by, named as its files are."""
    value = record.get("workdir") if isinstance(record, Mapping) else None
    return str(value) if value is not None else ""


def _strings(record: JsonValue, key: str) -> list[str]:
    """The strings of a record's list `key`; [] without it."""
    value = record.get(key) if isinstance(record, Mapping) else None
    return [str(item) for item in value] if isinstance(value, list) else []


def _variables(environment: object) -> dict[str, str | None]:
    """A cell's `environment.env` as name -> value (None: unset)."""
    env = environment.get("env") if isinstance(environment, Mapping) else None
    if not isinstance(env, Mapping):
        return {}
    return {str(name): _text(value) for name, value in env.items()}


def _text(value: JsonValue) -> str | None:
    return None if value is None else str(value)


def _change(
    name: str, a: str | None, b: str | None
) -> tuple[str, str | None, str | None, str] | None:
    """(name, a, b, how it changed) of one variable, None when it did not; a secret's
    values left out. An empty secret counts as unset: a spec's `${{ env.TOKEN }}` of an
    unset TOKEN is recorded empty, and was no token."""
    if a == b:
        return None
    if looks_secret(name) or MASK in (a, b):  # a secret by its name, or by its value's shape
        was, now = bool(a), bool(b)
        if was == now:
            # Both set: `***` alike; the digests tell whether it changed.
            return None
        shown = None if looks_secret(name) else MASK
        return (
            name,
            shown if was else None,
            shown if now else None,
            "unset -> set" if now else "set -> unset",
        )
    if a is None or b is None:
        return (name, a, b, "unset -> set" if a is None else "set -> unset")
    return (name, a, b, "changed")


def perturbations(run: RunResult) -> list[str]:
    """The perturbations a run's attempts ran under, each once, in the order first met."""
    notes = (note for cell in run.cells for attempt in cell.attempts for note in attempt.perturbed)
    return list(dict.fromkeys(notes))


def spec_diff(run_a: RunResult, run_b: RunResult) -> list[str]:
    """The unified diff from the first run's spec text to the second's ([] when equal).

    A run with `--set` stores its document written out again (`# resolved from ... with:`
    and the YAML dumped), the other its file as written: one `--set` made a 27-line diff
    of flow mappings and quotes. Then both are compared as written out the same way, and
    what differs is what the document says (the header names the `--set`).
    """
    import difflib

    old, new = run_a.spec_text, run_b.spec_text
    if old != new and (old.startswith(RESOLVED_SPEC) or new.startswith(RESOLVED_SPEC)):
        written = _written_out(old), _written_out(new)
        if None not in written and written[0] != written[1]:
            old, new = written  # type: ignore[assignment]
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{run_a.run_id}/spec.yaml",
            tofile=f"{run_b.run_id}/spec.yaml",
        )
    ]


def _written_out(text: str) -> str | None:
    """The spec's document written out as a `--set` run's is (its header line kept), or
    None when it does not load."""
    from reprospec.spec.load import written_again

    return written_again(text)


# The option `merge` records of the run it makes: the ids of the runs it was made of. How
# the run came to be, not how its attempts ran: merged shards compare with the unsharded
# run they equal without a row of it.
MERGED_FROM = "merged_from"
# And where those runs ran at different `-j`, each `-j` they ran at (`[1, 8]`; None the
# spec's run.parallel): the merged run's `jobs` is then None, no run at run.parallel.
MERGED_JOBS = "merged_jobs"


def options_diff(run_a: RunResult, run_b: RunResult) -> list[OptionChange]:
    """Run options that differ (`jobs`, `overrides`, ...), and the command lines when they do.

    A run recorded before options were kept has none: then only the command lines speak.
    """
    rows: list[OptionChange] = []
    if run_a.options and run_b.options:
        keys = dict.fromkeys([*run_a.options, *run_b.options])
        rows += [
            {"key": key, "a": run_a.options.get(key), "b": run_b.options.get(key)}
            for key in keys
            if key != MERGED_FROM and run_a.options.get(key) != run_b.options.get(key)
        ]
    if run_a.command_line != run_b.command_line:
        rows.append({"key": "command_line", "a": run_a.command_line, "b": run_b.command_line})
    return rows


def _signatures(cell: CellResult) -> dict[str, int]:
    """How many attempts ended with each outcome signature (`not run: reason` for the rest)."""
    counts: dict[str, int] = {}
    for attempt in cell.attempts:
        key = (
            attempt.ran.signature or attempt.ran.kind
            if attempt.ran is not None
            else f"infra-error: {attempt.infra_error}"
        )
        counts[key] = counts.get(key, 0) + 1
    return counts


def _cell_change(a: CellResult, b: CellResult) -> CellChange | None:
    """One cell in both runs: what changed (None when nothing did)."""
    outcomes = [_signatures(a), _signatures(b)]
    expected = [expectation_phrase(a.expected), expectation_phrase(b.expected)]
    verdict = [a.verdict, b.verdict]
    failed = [_failed(a), _failed(b)]
    apart = rate_apart(failed[0], failed[1])
    # The outcomes seen, not how many times: `--repeat 3` against one attempt made every
    # cell "outcome changed" (pass x1 -> pass x3) and buried the one that changed; but a
    # flaky failure's rate is its news (4/30 -> 16/30), told where it clearly moved.
    stopped = [v == "not-run" for v in verdict]
    if stopped[0] != stopped[1]:
        # A cell an interrupted run never reached has no outcome: `reproduced -> not-run
        # (outcome changed)` read as the code's change, where the run was stopped first.
        change = f"the {'first' if stopped[0] else 'second'} run was interrupted before it"
    elif not _same_outcomes(outcomes[0], outcomes[1]):
        change = "outcome changed"
    elif expected[0] != expected[1]:
        change = "same outcome, different expectation"
    elif verdict[0] != verdict[1]:
        change = "verdict changed"
    elif apart:
        change = "failure rate changed"
    else:
        return None
    return {
        "cell": a.cell.id,
        "change": change,
        "verdict": verdict,
        "outcomes": outcomes,
        "expected": expected,
        "failed": [list(f) for f in failed] if apart else [],
    }


def _same_outcomes(a: Collection[str], b: Collection[str]) -> bool:
    """Whether two cells' outcome signatures are the same ones, a native frame one side
    could not name (`??@python3.11`, an image's Python without symbols) agreeing with the
    other's named one (`os_kill_impl@libpython3.11`): an unknown frame is no evidence of
    another crash, and a venv run against a docker run of one `os.kill` read `outcome
    changed`; and an exception group's members one side names among the other's, or
    names none (an older run's `error:ExceptionGroup`): `group_agrees`. Both are
    `native.agrees`, the one rule for "the same failure", across builds and with every
    native stack read."""
    if set(a) == set(b):
        return True
    from reprospec.native import agrees

    def met(ours: str, theirs: Collection[str]) -> bool:
        return any(
            agrees(ours, other, native_unknown=False, across_builds=True) for other in theirs
        )

    return all(met(x, b) for x in a) and all(met(y, a) for y in b)


def _failed(cell: CellResult) -> tuple[int, int]:
    """(attempts that ended other than `pass`, attempts that ran): the cell's failure
    rate; an attempt that could not run (infra-error) is neither."""
    ran = [attempt.ran for attempt in cell.attempts if attempt.ran is not None]
    return sum(outcome.kind != "pass" for outcome in ran), len(ran)


def rate_apart(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two failure rates (failed, ran) differ clearly: their 95% Wilson intervals
    do not overlap (4/30, 0.05-0.30, against 16/30, 0.36-0.70), the rule amplify calls a
    rate higher by. Counts this far apart are not chance, whatever `--repeat` made them."""
    from reprospec.core.rates import clearly_more, rate_of

    first, second = rate_of(*a), rate_of(*b)
    return clearly_more(first, second) or clearly_more(second, first)
