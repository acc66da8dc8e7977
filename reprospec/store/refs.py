"""Run references: `latest` and `latest~N` wherever a run id is accepted, resolved in one place.

`report`, `compare`, `merge` (through `results.find_run`), `run --resume` and
`slurm status|resume` take a run id; `latest` is the newest run under `--out`,
`latest~1` the one before it.
The order is the store's (the last begun first) with the run folders it lacks
(a merged run: one with a results.json), by the second their ids were made. The runs a
search made, one per probe (isolate, minimize, amplify, bisect: `SEARCH_PURPOSES`), are
not counted: after a minimize of a thousand probes, `latest` is still the run a person
started. A reader of a run's folder (`find_run`) also counts the merged runs of the Slurm
runs under `--out` (`OUT/slurm/<id>/merged/runs/`), which no store lists.
"""

from __future__ import annotations

import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

from reprospec.core.frozen import frozen
from reprospec.core.runoptions import SEARCH_PURPOSES
from reprospec.core.words import plural
from reprospec.errors import UsageError
from reprospec.store.runfolder import RESULTS_JSON, RUNS, RunFolder

# A run's purpose (who started it: `run`, `isolate`, ...) from the store's `runs.options`,
# with the table's prefix for `{r}` (`r.` or nothing). The options are a JSON object; the
# first stores kept an argv list there, and a run without a purpose was a plain `run`.
PURPOSE = (
    "COALESCE(CASE WHEN json_valid({r}options) AND json_type({r}options) = 'object'"
    " THEN json_extract({r}options, '$.purpose') END, 'run')"
)
# What a search's probe run tried (`RunOptions.probe`), from the same options; null where
# none was kept (a run a person started, a probe stored before it was kept).
PROBE = (
    "CASE WHEN json_valid({r}options) AND json_type({r}options) = 'object'"
    " THEN NULLIF(json_extract({r}options, '$.probe'), '') END"
)
# `K/N` of a shard run (RunOptions.to_dict keeps `--shard` as [K, N]), else null: its
# verdicts are its share's, which `history` must not show as a whole run's.
SHARD = (
    "CASE WHEN json_valid({r}options) AND json_type({r}options) = 'object'"
    " AND json_type({r}options, '$.shard') = 'array'"
    " THEN json_extract({r}options, '$.shard[0]') || '/' || json_extract({r}options, '$.shard[1]')"
    " END"
)
_LATEST = re.compile(r"^latest(?:~(?P<back>\d+))?$")
# Run ids begin with the second they were made: `20261121-214512-...`.
_STAMP = 15


def recent_run_ids(out_root: Path, under: str = RUNS, *, slurm_merged: bool = False) -> list[str]:
    """The run ids under `out_root`, newest first; runs begun in one second in store order
    (then the runs the store does not know).

    `under`: the folder of `out_root` that holds the runs (`slurm` for Slurm runs, which
    the store does not know). `slurm_merged`: also the merged runs of the Slurm runs under
    `out_root` (`OUT/slurm/<id>/merged/runs/<run-id>`), which only a reader of a run's
    folder can use (`report`, `compare`, `bundle`): `--resume` needs the run in the store.
    """
    return _recent(out_root, under, slurm_merged)[0]


def _recent(out_root: Path, under: str, slurm_merged: bool) -> tuple[list[str], int]:
    """recent_run_ids's ids, and how many runs of searches' probes they leave out."""
    begun: dict[str, int] = {}
    started: dict[str, str] = {}
    probes: set[str] = set()
    db = out_root / "results.db"
    # Whether the store said which runs it lists: one that could not be read (a WAL store
    # on a read-only disk whose last writes sqlite cannot read there) told us none.
    listed = not db.is_file()
    if under == RUNS and db.is_file():
        rows = _read(db, f"SELECT run_id, {PURPOSE.format(r='')} FROM runs ORDER BY rowid")
        if rows is None:  # a store without options (none of ours): every run a person's
            rows = _read(db, "SELECT run_id, 'run' FROM runs ORDER BY rowid")
        listed = rows is not None
        rows = rows or []
        begun = {str(run_id): n for n, (run_id, _) in enumerate(rows, 1)}
        probes = {str(run_id) for run_id, purpose in rows if purpose in SEARCH_PURPOSES}
        times = _read(db, "SELECT run_id, started FROM runs") or []
        started = {str(run_id): str(time or "") for run_id, time in times}
    runs = out_root / under
    folders = [p.name for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    if under == RUNS and listed:
        # A folder the store does not list and without a results.json is no run: one a run
        # refused before it began left (a damaged store, a full disk), or one still being
        # begun. Named `latest`, it was "no run" where the run before it was whole.
        # Only of a store that was read: of one that could not be, a killed run's folder (no
        # results.json) is all that says it ran, where `latest` named the run before.
        folders = [
            name for name in folders if name in begun or (runs / name / RESULTS_JSON).is_file()
        ]
    merged: dict[str, Path] = {}
    if slurm_merged and under == RUNS:
        merged = {f.run_id: f.results_json for f in RunFolder.merged_slurm_under(out_root)}
        folders += list(merged)
    ids = (set(begun) | set(folders)) - probes
    # Within one second, the store's order; a run the store does not know (one copied in)
    # counts as the newest of its second. A Slurm run's merged run, begun in the second a
    # run of the store began, goes by when each began, as `history` lists them: `latest`
    # named the merged run where a plain run began after it in that second.
    seconds: dict[str, int] = {}
    for run_id in ids:
        seconds[run_id[:_STAMP]] = seconds.get(run_id[:_STAMP], 0) + 1
    shared = set()
    for run_id, results in merged.items():
        if seconds.get(run_id[:_STAMP], 0) > 1:
            shared.add(run_id[:_STAMP])
            started[run_id] = _started(results)
    unknown = len(begun) + 1

    def newest(run_id: str) -> tuple[str, str, bool, int, str]:
        second = run_id[:_STAMP]
        if second not in shared:
            return (second, "", True, begun.get(run_id, unknown), run_id)
        # Times are kept to the second: where a merged run and a run of the store began in
        # the same one, history lists the store's run first (its sort keeps the store's
        # runs ahead of the merged ones it appends), and so does `latest`.
        return (
            second,
            started.get(run_id, ""),
            run_id not in merged,
            begun.get(run_id, unknown),
            run_id,
        )

    return sorted(ids, key=newest, reverse=True), len(probes)


def _started(results: Path) -> str:
    """When the run of `results` (its results.json) began, as the store keeps it; "" where
    it cannot be read."""
    import json

    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("started") or "") if isinstance(data, dict) else ""


def has_wal(path: Path) -> bool:
    """Whether the store at `path` has a write-ahead log with something in it: writes an
    immutable read (the file alone) would miss, unsaid (here, and db.Store._read_only)."""
    try:
        return path.with_name(f"{path.name}-wal").stat().st_size > 0
    except OSError:
        return False


def read_only_uris(db: Path) -> list[str]:
    """The URIs a reader tries on the store `db`, in order: read-only, then immutable (the
    file alone). A WAL store on a read-only disk opens read-only only where sqlite can make
    its -shm; immutable misses what its -wal holds (a killed engine's writes), so not then.

    Another user's store (a shared `--out`) with no -shm is read immutable first: opened
    read-only, sqlite made its -wal and -shm there as this user's, 0644, and the store's
    owner then could not write it ("attempt to write a readonly database", exit 3) until
    they were removed."""
    uri = f"file:{quote(str(db))}?mode=ro"
    if has_wal(db):
        return [uri]
    if not os.access(db, os.W_OK) and not db.with_name(f"{db.name}-shm").exists():
        return [f"{uri}&immutable=1", uri]
    return [uri, f"{uri}&immutable=1"]


def _read(db: Path, query: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]] | None:
    """The rows of `query` on the store `db`, opened read-only; None when it cannot be read
    so (an unreadable store: the run folders still say which runs there are)."""
    for each in read_only_uris(db):
        try:
            with closing(sqlite3.connect(each, uri=True)) as conn:
                rows: list[tuple[object, ...]] = conn.execute(query, args).fetchall()
                return rows
        except sqlite3.Error:
            continue
    return None


@frozen
class ListedRun:
    """A run as the store lists it, for what is said of a run whose folder cannot be read
    (read-only, without opening the store: storedrun.StoredRun is what `begin_run` recorded)."""

    run_id: str
    spec_path: str
    # The command line that started it ("" where none was stored).
    command_line: str
    # The store's word: `running` (also for a run whose engine was killed: SIGKILL leaves
    # no word), `interrupted` or `finished`.
    status: str


def listed_run(name: str, out_root: Path) -> ListedRun | None:
    """The run the store under `out_root` holds by the id `name`, or by a unique prefix of
    one; None where it holds none (or several, or cannot be read).

    For a run whose folder is gone (removed by hand) or holds no results.json (its engine
    was killed): the store still lists it, and what cannot be done without them is said of
    that run, not "no run"."""
    db = out_root / "results.db"
    if not name or not db.is_file():
        return None
    rows = _read(
        db,
        "SELECT run_id, spec_path, CASE WHEN json_valid(options) THEN "
        "json_extract(options, '$.command_line') END, status FROM runs WHERE run_id = ? "
        "OR substr(run_id, 1, length(?)) = ? ORDER BY run_id = ? DESC LIMIT 2",
        (name, name, name, name),
    )
    if not rows or (len(rows) > 1 and rows[0][0] != name):
        return None
    run_id, spec_path, command_line, status = rows[0]
    return ListedRun(str(run_id), str(spec_path), str(command_line or ""), str(status or ""))


def lists_run(run_id: str, out_root: Path) -> bool | None:
    """Whether the store under `out_root` holds the run `run_id` by that exact id (False
    where there is no store); None where its results.db cannot be read, so that a run it
    may well list is not said to be in no store."""
    db = out_root / "results.db"
    if not run_id or not db.is_file():
        return False
    rows = _read(db, "SELECT 1 FROM runs WHERE run_id = ? LIMIT 1", (run_id,))
    return None if rows is None else bool(rows)


def stored_ids(prefix: str, out_root: Path, limit: int = 5) -> list[str]:
    """The ids of the runs the store under `out_root` holds that start with `prefix` (at
    most `limit`; none where it cannot be read): a prefix is unique among the runs, not
    only among the folders left (a folder removed by hand is still a run)."""
    db = out_root / "results.db"
    if not prefix or not db.is_file():
        return []
    rows = _read(
        db,
        "SELECT run_id FROM runs WHERE substr(run_id, 1, length(?)) = ? ORDER BY run_id LIMIT ?",
        (prefix, prefix, limit),
    )
    return [str(row[0]) for row in rows or ()]


def run_id_named(name: str, out_root: Path, *, slurm_merged: bool = False) -> str:
    """The id of the run under `out_root` that `name` is or begins (a unique prefix), as
    every verb reads a RUN (cli.md): `report`, `compare`, `merge` through
    `resultsjson.find_run`, `run --resume`. `name` itself where no run matches (or it names
    a path): the caller says what it lacks.

    The runs are the store's and the run folders together: a merged run has only its
    folder, a folder removed by hand leaves the store's row, and a prefix shared with a run
    one side alone lists would otherwise name the other run without a word. Several are
    refused, exit 2, naming (at most five of) them. `slurm_merged` (the reader verbs,
    through find_run): the merged runs of the Slurm runs under `out_root` count too, which
    find_run also finds by id, so a prefix shared with one of them is ambiguous as well."""
    if not name or "/" in name:
        return name
    runs = out_root / RUNS
    folders = (
        {p.name for p in runs.iterdir() if p.name.startswith(name) and p.is_dir()}
        if runs.is_dir()
        else set()
    )
    merged = (
        {f.run_id for f in RunFolder.merged_slurm_under(out_root) if f.run_id.startswith(name)}
        if slurm_merged
        else set()
    )
    ids = sorted(folders | merged | set(stored_ids(name, out_root)))
    if name in ids:  # the whole id; no other id begins with a whole one
        return name
    if len(ids) > 1:
        raise UsageError(f"run id {name!r} is ambiguous: {', '.join(ids[:5])}")
    return ids[0] if ids else name


def is_latest(ref: str) -> bool:
    """Whether `ref` is `latest` or `latest~N`."""
    return _LATEST.match(ref.strip()) is not None


def resolve_run_id(
    ref: str,
    out_root: Path = Path(".reprospec"),
    under: str = "runs",
    *,
    slurm_merged: bool = False,
) -> str:
    """`latest` -> the newest run's id, `latest~N` -> the one N runs before it; else `ref`.
    `slurm_merged`: counting the merged runs of the Slurm runs under `out_root`."""
    match = _LATEST.match(ref.strip())
    if match is None:
        return ref
    back = int(match["back"] or 0)
    ids, probes = _recent(out_root, under, slurm_merged)
    if back >= len(ids):
        if not ids:
            # An --out that is a file holds no runs: said as history says it, exit 2.
            RunFolder.check_out(out_root)
        # Of `slurm status latest`, the Slurm runs under OUT/slurm/: ".reprospec has no runs"
        # was said of a store that holds plain runs, only no Slurm run.
        noun = "run" if under == RUNS else "Slurm run"
        have = f"only {plural(len(ids), noun)}" if ids else f"no {noun}s"
        # Said as `history` says it: a folder of a thousand runs read as having two.
        searches = (
            f" ({plural(probes, 'run')} of isolate, minimize, amplify or bisect not counted, one "
            "per probe: `history --searches` lists them by id)"
            if probes
            else ""
        )
        raise UsageError(f"{ref}: {out_root} has {have}{searches}")
    return ids[back]


__all__ = [
    "ListedRun",
    "is_latest",
    "listed_run",
    "lists_run",
    "recent_run_ids",
    "resolve_run_id",
    "run_id_named",
]
