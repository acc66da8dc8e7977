"""`reprospec history [SPEC]`: past runs and their verdicts, newest first, ids whole.

The newest 20 by default (`--limit N`, `--all`): a store of a thousand runs printed a
thousand-line table, and what one looks for is nearly always among the last runs. The
output says how many it left out. Under a shared `--out`, the merged run of each Slurm run
(in no store: each shard has its own) is listed among them, read from its results.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.runoptions import SEARCH_PURPOSES
from reprospec.core.words import agree, plural

if TYPE_CHECKING:
    from reprospec.store.runfolder import RunFolder

# The status of a run the store calls running whose folder names no engine (history.md).
UNKNOWN = "unknown"

# Runs shown unless `--limit` or `--all` says otherwise.
DEFAULT_LIMIT = 20

_COUNTS = (
    ("reproduced", "reproduced"),
    ("not_reproduced", "not reproduced"),
    ("undecided", "undecided"),
    ("infra_error", "infra-error"),
    ("observed", "observed"),
    # The cells an interrupted run never reached (verdict `not-run`): the store counts no
    # column of them, so `_with_not_run` adds the rest of `cells`; without it an interrupted
    # probe of one cell read `1 cell, —`, and a run of 4 cells `2 reproduced` alone.
    ("not_run", "not run"),
)


def _with_not_run(run: Mapping[str, object]) -> Mapping[str, object]:
    """`run` with `not_run`: the cells judged none of the other verdicts (a results.json's
    summary says it; the store's row leaves it to be counted from `cells`)."""
    if "not_run" in run:
        return run
    cells = run.get("cells", 0)
    counted = sum(value for key, _ in _COUNTS if isinstance(value := run.get(key, 0), int))
    return {**run, "not_run": max(cells - counted, 0) if isinstance(cells, int) else 0}


def _is_probe(run: Mapping[str, object]) -> bool:
    """Whether `run` is a search's probe (its purpose one of `SEARCH_PURPOSES`)."""
    return run.get("purpose") in SEARCH_PURPOSES


def _found(run: Mapping[str, object]) -> str:
    """What a search's probe run found, in the search's terms: `failed as expected in 2 of
    5` (and the attempts that never ran); "" for a run a person started, or a probe none of
    whose attempts ran (the table then says its cells' verdicts; its JSON's counts are 0).

    A probe is judged by its cell's expect without the rate (a search weighs the attempts
    itself), so its cell's verdict is not what it found: a probe that failed as expected in
    2 of 5 read "1 not reproduced", and one of the passing side that passed every time (what
    the search wanted to see) read the same.
    """
    ran, failed, attempts = run.get("ran"), run.get("failed_as_expected"), run.get("attempts")
    if not _is_probe(run) or not isinstance(ran, int) or not ran:
        return ""
    said = f"failed as expected in {failed} of {ran}"
    never = attempts - ran if isinstance(attempts, int) else 0
    return said + (f"; {never} infra-error" if never > 0 else "")


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `history` verb's arguments."""
    p = sub.add_parser("history", help="past runs and their verdicts")
    opt.spec(p, optional=True, help="only the runs of this spec (a spec file, or a spec's name)")
    opt.out(p, help="the results store to read (default: .reprospec)")
    opt.output_format(
        p,
        ("text", "json"),
        default="text",
        help="a table (default) or JSON: each run with its id whole and its verdict counts",
    )
    shown = p.add_mutually_exclusive_group()
    shown.add_argument(
        "--limit",
        type=opt.positive,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"the newest N runs only (default {DEFAULT_LIMIT})",
    )
    shown.add_argument("--all", action="store_true", dest="all_runs", help="every run in the store")
    p.add_argument(
        "--searches",
        action="store_true",
        help="also the runs isolate, minimize, amplify and bisect made (one per probe)",
    )


def run(args: argparse.Namespace) -> int:
    from reprospec.store.db import Store
    from reprospec.store.runfolder import RunFolder

    spec_name = None  # the runs of specs of this name
    named = None  # a spec file's name, when the file is given
    spec_paths: tuple[str, ...] = ()  # the runs of the spec file at one of these paths
    shown_as = args.spec
    if args.spec:
        from reprospec.errors import UsageError
        from reprospec.spec.load import load_spec

        # A spec file: its runs (under any name it had), not those of another file whose
        # spec has the same name. A report (`report.md`) runs as the spec it embeds: by
        # that spec's name. Else just the spec's name as it appears in the table.
        # Its `files` are not looked for: the spec is read only to name its runs, which
        # are in the store whether or not a data file listed then is still there.
        given = Path(args.spec)
        if given.suffix.lower() == ".md":
            spec_name = load_spec(args.spec, files=False).name
        elif given.exists() or given.suffix in (".yaml", ".yml") or "/" in args.spec:
            spec_paths = tuple(
                dict.fromkeys([args.spec, str(given.absolute()), str(given.resolve())])
            )
            if not given.exists():
                raise UsageError(_no_such_file(args.spec, Path(args.out), spec_paths))
            # A bad file: said, exit 2. Its name finds the runs of its copies (below).
            named = load_spec(args.spec, files=False).name
        else:
            spec_name = args.spec
    out = Path(args.out)
    RunFolder.check_out(out)  # a file: exit 2, not "no runs recorded in FILE yet"
    # The merged runs of the Slurm runs under a shared --out: in no store (each shard has
    # its own), listed from their folders, among the store's by when they began.
    merged_folders = RunFolder.merged_slurm_under(out)
    merged = _merged_slurm_runs(merged_folders, spec_name, spec_paths)
    if not (out / "results.db").is_file() and not merged_folders:
        if args.format == "json":
            print("[]")
        print(f"no runs recorded in {args.out} yet{_unlisted(out)}", file=sys.stderr)
        return 0
    limit = None if args.all_runs else args.limit
    searches = args.searches
    runs: list[Mapping[str, object]] = []
    shown = probes = 0
    unlisted = ""
    if (out / "results.db").is_file():
        with Store(out, reader=True) as store:
            runs = [
                _status(run, out)
                for run in store.runs(spec_name, limit, searches=searches, spec_paths=spec_paths)
            ]
            # What the listing draws from:
            shown = store.run_count(spec_name, searches=searches, spec_paths=spec_paths)
            probes = 0 if searches else store.run_count(spec_name, spec_paths=spec_paths) - shown
            if spec_name is None and not spec_paths:
                unlisted = _unlisted(out, store.run_ids())
            elif named is not None and not shown:
                # A copy of a spec (`cp exc.yaml exc2.yaml`) has no runs of its own file,
                # and "no runs recorded yet" hid the runs of its name, made from the other.
                others = store.run_count(named, searches=searches)
                if others:
                    words = ["reprospec", "history", named]
                    if out != opt.DEFAULT_OUT:
                        words += ["--out", str(args.out)]
                    unlisted = (
                        f"{plural(others, 'run')} of a spec named {named!r} from another file: "
                        f"`{shlex.join(words)}` lists {agree(others, 'it', 'them')}"
                    )
    if merged:
        # Stable: the store's runs keep its order among themselves.
        runs = sorted([*runs, *merged], key=lambda run: str(run["started"]), reverse=True)
        runs = runs[:limit] if limit is not None else runs
        shown += len(merged)
    notes = [_left_out(len(runs), shown)] if shown > len(runs) else []
    if probes:
        notes.append(_probes_left_out(probes))
    listed = sum(1 for run in runs if run.get("slurm_run"))
    if listed:
        notes.append(_merged_note(listed, out))
    shown_runs = runs
    missing = sum(1 for run in shown_runs if run["folder_missing"])
    if missing:
        notes.append(_folders_missing(missing, Path(args.out)))
    unknown = [str(run["run_id"]) for run in shown_runs if run.get("status") == UNKNOWN]
    if unknown:
        notes.append(_unknown(unknown, Path(args.out)))
    if unlisted:
        notes.append(unlisted.removeprefix("; "))
    if args.format == "json":
        print(json.dumps([_row(run) for run in shown_runs], indent=2, ensure_ascii=False))
        for note in notes:
            print(note, file=sys.stderr)  # stdout stays one JSON value
        return 0
    return _table(shown_runs, args.out, shown_as, notes, probes=probes)


def _status(run: Mapping[str, object], out: Path) -> Mapping[str, object]:
    """The run as the store has it, but `killed` for one it calls running whose engine has
    ended: a SIGKILL or the OOM killer leaves no word in the store (`--resume` finishes it),
    and `interrupted` with `stopped` (why) for one whose engine said in its folder that it
    stopped where the store could not take it (a full disk);
    and `folder_missing` where its run folder is gone (removed by hand): `report` and
    `compare` need the folder, and said "no run" of a run this listed as whole."""
    from reprospec.core.resumed import KILLED
    from reprospec.store.runfolder import RunFolder

    folder = RunFolder.of(out.resolve(), str(run["run_id"]))
    run = {**run, "folder_missing": not folder.path.is_dir()}
    if run.get("status") == "running":
        # Its cells are in the store once judged: the cells it plans, from its engine.json.
        run["planned"] = folder.planned_cells()
        if folder.path.is_dir() and not folder.names_engine():
            # Begun by a reprospec from before engine.json: `running` for good once killed,
            # and nothing here tells whether its engine lives (another machine's may).
            return {**run, "status": UNKNOWN}
    if run.get("status") != "running" or not folder.engine_gone():
        return run
    if why := folder.stop_noted():
        # The engine stopped with a word the store could not take (a full disk): what the
        # store would have said, and why (RunFolder.note_stop), not `killed`.
        return {**run, "status": "interrupted", "stopped": why}
    return {**run, "status": KILLED}  # as a resumed run's report says of it (results.Stopped)


def _no_such_file(spec: str, out: Path, spec_paths: Sequence[str]) -> str:
    """A spec file that is not there (exit 2), with what lists its runs: the store keeps each
    run's spec by its name, so `history NAME` does, named where the store has runs of a spec
    read from that path (a deleted file's history was only "no such file")."""
    from reprospec.core.runoptions import DEFAULT_OUT
    from reprospec.store.db import Store, StoreError

    names: list[str] = []
    if (out / "results.db").is_file():
        try:
            with Store(out, reader=True) as store:
                rows = store.runs(searches=True, spec_paths=spec_paths)
        except StoreError:
            rows = []
        names = list(dict.fromkeys(str(row["spec_name"]) for row in rows))
    where = "" if out == DEFAULT_OUT else f" --out {shlex.quote(str(out))}"
    if not names:
        return (
            f"{spec}: no such file; `reprospec history NAME{where}` lists the runs of a spec "
            "by its name, which the store keeps"
        )
    said = " or ".join(f"reprospec history {shlex.quote(name)}{where}" for name in names)
    return f"{spec}: no such file; the store has runs of the spec read from it, by its name: {said}"


def _merged_slurm_runs(
    folders: Sequence[RunFolder], spec_name: str | None, spec_paths: Sequence[str]
) -> list[Mapping[str, object]]:
    """The merged run of each Slurm run of `folders`, as the store's rows read (from its
    results.json), by `purpose` `slurm`, with `slurm_run`: the Slurm run's id. Of the
    spec `spec_name`, or the file at `spec_paths`, when given. A results.json that cannot
    be read is left out (`report` of its id says why); a cell of it that cannot be read
    (edited by hand) is said on stderr, and the run listed."""
    from reprospec.store.resultsjson import read_cells

    rows: list[Mapping[str, object]] = []
    for folder in folders:
        try:
            data = json.loads(folder.results_json.read_text(encoding="utf-8"))
            spec = data["spec"]
            summary = data["summary"]
            cells, unread = read_cells(data["cells"], str(folder.results_json))
            row: dict[str, object] = {
                "run_id": str(data["run_id"]),
                "spec_name": str(spec["name"]),
                "spec_path": str(spec.get("path") or ""),
                "runner": str(data.get("runner") or ""),
                "started": str(data.get("started") or ""),
                "finished": data.get("finished"),
                "status": "interrupted" if data.get("interrupted") else "finished",
                "cells": int(summary.get("cells", 0)),
                "attempts": sum(len(cell.attempts) for cell in cells),
                **{key: int(summary.get(key, 0)) for key, _ in _COUNTS},
                "perturbed": [],
                "purpose": "slurm",
                "folder_missing": False,
                "slurm_run": folder.merged_of.name if folder.merged_of else "",
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if spec_name is not None and row["spec_name"] != spec_name:
            continue
        if spec_paths and row["spec_path"] not in spec_paths:
            continue
        for warning in unread:
            print(f"reprospec: warning: {warning}", file=sys.stderr)
        rows.append(row)
    return rows


def _unlisted(out: Path, listed: set[str] | frozenset[str] = frozenset()) -> str:
    """What `OUT/runs` holds though no store lists it: the runs `merge` wrote (it keeps no
    store), where "no runs recorded" alone sent a CI merge job's reader away from the
    merged run beside it; beside a store (`listed`: its run ids), those and the runs of a
    store moved aside (damaged, or removed), which `latest~N` counts and history did not
    say."""
    from reprospec.store.runfolder import RunFolder

    found = [
        f for f in RunFolder.all_under(out) if f.run_id not in listed and f.results_json.is_file()
    ]
    if not found:
        return ""
    return (
        f"; {out / 'runs'} holds {plural(len(found), 'run folder')} no store lists, such as the "
        f"runs `merge` writes (newest {found[-1].run_id}): report, compare and bundle take their "
        f"ids, and latest, with --out {shlex.quote(str(out))}"
    )


def _merged_note(count: int, out: Path) -> str:
    return (
        f"{plural(count, 'run')} by slurm: merged from a Slurm run's shards, in its folder "
        f"{out / 'slurm'}/<slurm run>/merged/runs/<run>; report, compare and bundle take "
        f"their ids (and latest) with --out {shlex.quote(str(out))}"
    )


def _folders_missing(count: int, out: Path) -> str:
    return (
        f"{plural(count, 'run')} marked `folder missing`: their folder under {out / 'runs'} is "
        "gone; the store keeps their verdicts, but report, compare, bundle and merge need the "
        "folder"
    )


def _unknown(run_ids: Sequence[str], out: Path) -> str:
    from reprospec.core.words import resume_command

    return (
        f"{plural(len(run_ids), 'run')} marked `unknown`: the store says running, but its folder "
        "names no engine (no engine.json: begun by a reprospec from before it wrote one), so "
        "whether its engine still runs, here or on another machine sharing this --out, cannot be "
        f"told; if it has ended (killed), `{resume_command(run_ids[0], out)}` finishes it"
    )


def _left_out(shown: int, total: int) -> str:
    return f"the newest {shown} of {total} runs (--limit N or --all for more)"


def _probes_left_out(count: int) -> str:
    return (
        f"{plural(count, 'run')} of isolate, minimize, amplify or bisect left out, one per probe "
        "(--searches shows them)"
    )


def _row(run: Mapping[str, object]) -> dict[str, object]:
    """One run for `--format json`: the store's summary, the run id whole."""
    keys = ("run_id", "spec_name", "spec_path", "runner", "started", "finished", "status")
    out = {key: run.get(key) for key in keys}
    out["cells"] = run.get("cells", 0)
    # A run still running (or killed): the cells it plans (None: not known, a run from before
    # engine.json said), and those with an attempt stored; judged cells come at its end.
    out["planned"] = run.get("planned")
    out["with_attempts"] = run.get("with_attempts", 0)
    out["attempts"] = run.get("attempts", 0)
    out["verdicts"] = {key: _with_not_run(run).get(key, 0) for key, _ in _COUNTS}
    out["perturbed"] = run.get("perturbed") or []
    out["purpose"] = run.get("purpose") or "run"
    out["probe"] = run.get("probe") or None
    # A search's probe: its attempts that ran, and those that failed as expected (what the
    # search counts; its cells' verdicts are judged without the rate), 0 where none ran (all
    # infra-errors): null for other runs alone, by purpose, not by what `_found` words.
    probe = _is_probe(run)
    out["ran"] = run.get("ran") if probe else None
    out["failed_as_expected"] = run.get("failed_as_expected") if probe else None
    out["shard"] = run.get("shard") or None
    out["folder_missing"] = run.get("folder_missing") is True
    # Why a run stopped that its store could not mark (`_status`), else None.
    out["stopped"] = run.get("stopped") or None
    # A merged Slurm run's: the Slurm run it merged (None for a run of the store).
    out["slurm_run"] = run.get("slurm_run")
    return out


def _amplified(run: Mapping[str, object]) -> str:
    """`switch_interval=1e-06; cpus=0` for a run under environment.perturb, else "" (each
    note without how it was applied: the report says that)."""
    notes = run.get("perturbed")
    if not isinstance(notes, list):
        return ""
    return "; ".join(str(note).split(" (", 1)[0] for note in notes)


def _cells(row: Mapping[str, object]) -> str:
    """The cells column: how many the run has; for one whose cells are not judged yet
    (running, or killed before its end), how many have an attempt stored of those it plans
    (`2 of 4 so far`), where it said `0`."""
    cells = row.get("cells", 0)
    if cells or row.get("status") not in ("running", "killed", UNKNOWN):
        return str(cells)
    planned = row.get("planned")
    stored = row.get("with_attempts") or 0
    return f"{stored} of {planned} so far" if isinstance(planned, int) else f"{stored} so far"


def _table(
    runs: Sequence[Mapping[str, object]],
    out: Path,
    spec_name: str | None,
    notes: Sequence[str],
    *,
    probes: int = 0,
) -> int:
    from rich.table import Table

    from reprospec.core.words import timestamp
    from reprospec.report.console import make_console

    console = make_console()
    if not runs:
        # A store of a search's probes alone (`isolate` run first) said "no runs recorded
        # yet" over the line counting its 85 runs: none is a person's run, all are recorded.
        besides = " besides the searches' probes" if probes else ""
        console.print("no runs recorded yet" + (f" for {spec_name}" if spec_name else "") + besides)
        for note in notes:
            console.print(note)
        return 0
    table = Table(title=f"runs in {out}", title_justify="left")
    # The run id is what one copies (`reprospec report ID`): never cut, never wrapped.
    table.add_column("run", no_wrap=True, min_width=max(len(str(r["run_id"])) for r in runs))
    # A perturbed run's verdicts are the perturbed program's (amplify's, or a spec's own
    # environment.perturb: `amplified by` named a tool never run): said beside them, in a
    # column that only a store with such runs shows.
    amplified = any(_amplified(row) for row in runs)
    # Who made the run, where a search's probes are shown (--searches) beside a person's.
    by = any((row.get("purpose") or "run") != "run" for row in runs)
    # What each probe tried (bisect: `pyyaml 5.4.1`; isolate: the differences it set): the
    # `by` column alone listed a bisect's runs without the version each one ran.
    probes = any(row.get("probe") for row in runs)
    columns = ("started", "runner", "status", "cells", "verdicts")
    leading = (("by",) if by else ()) + (("probe",) if probes else ())
    for column in leading + columns + (("perturbed by",) if amplified else ()):
        table.add_column(column, overflow="fold")
    for row in map(_with_not_run, runs):
        verdicts = _found(row) or ", ".join(
            f"{row.get(key, 0)} {label}" for key, label in _COUNTS if row.get(key)
        )
        attempts = row.get("attempts")
        if (
            not verdicts
            and isinstance(attempts, int)
            and attempts
            and row.get("status") != "finished"
        ):
            # A run that ended before judging a cell (killed, interrupted early) kept its
            # finished attempts, which `--resume` does not run again: `0 cells, —` hid them.
            verdicts = f"none judged; {plural(attempts, 'attempt')} stored"
        cells = [
            # Text columns the store never leaves null (store.py's schema).
            str(row["run_id"]),
            *((str(row.get("purpose") or "run"),) if by else ()),
            *((str(row.get("probe") or "—"),) if probes else ()),
            timestamp(str(row["started"]), zone=False),
            str(row["runner"]),
            str(row["status"])
            + (f": {row['stopped']}" if row.get("stopped") else "")
            + (", folder missing" if row.get("folder_missing") else "")
            # A shard's verdicts are of its share of each cell's attempts.
            + (f", shard {row['shard']}" if row.get("shard") else ""),
            _cells(row),
            verdicts or "—",
        ]
        table.add_row(*cells, *((_amplified(row) or "—",) if amplified else ()))
    console.print(table)
    for note in notes:
        console.print(note)
    return 0
