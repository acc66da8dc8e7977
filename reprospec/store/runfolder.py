"""The run folder: the one place that knows where a run's files live.

OUT/                          --out (default .reprospec/)
  results.db                  the SQLite store (store.py)
  cache/                      environment-capture cache (envprobe.py)
  slurm/SLURM_RUN/merged/runs/RUN_ID/
                              a Slurm run's merged run, in no store (slurm/__init__.py)
  runs/RUN_ID/
    spec.yaml                 the spec that ran (after --set)
    results.json              the whole RunResult (results.py)
    report.md                 the bug report (report/)
    results.spool             while it runs: results.json's entry of each cell judged so far
                              (cellspool.py), gone once results.json is written
    repro.py                  a workload's standalone script (standalone.py), when possible
    resumed.json              a resumed run's earlier parts (attempts, how each ended), written
                              as each resume begins: the next resume's report names them all,
                              a part killed before it wrote results.json included
    engine.json               the engine process that runs (or last ran) in it: a run the
                              store still calls running whose engine is gone was killed,
                              unless the engine wrote why it stopped (`note_stop`: a full
                              disk, where the store could not take it); and the cells the
                              run plans (`history` of a run still running)
    cells/CELL/N/             attempt N of CELL: stdout.log, stderr.log, events.jsonl,
                              env.json, stack.txt, cell.json (runners/base.py); an attempt
                              that passed keeps only its files that are not empty, and no
                              folder at all when every one was (`prune`); a cell whose
                              attempts left none has no folder once it ends (`end_cells`)
    cells/CELL/.spare/        while the cell runs: the folder of its last silent pass (its
                              empty events.jsonl, its blank in-flight record), renamed to
                              the next attempt's (`attempt_dir`)

A run of many cells that pass in silence would otherwise leave three empty files and two
folders per cell (12,291 files, 40 MB of folder blocks for 4,096 cells of `true`): every
reader (report, resume, bundle, merge, isolate) works from the store and results.json,
and reads an attempt's files only where they exist.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.caller import resuming
from reprospec.core.frozen import frozen
from reprospec.errors import InfraError, UsageError

if TYPE_CHECKING:
    from reprospec.core.resumed import ResumedPart

_FOLDER_CHARS = "=,._-+"
# The names of the layout above, spelled here only: every other module asks RunFolder.
RUNS = "runs"
RESULTS_JSON = "results.json"
SPEC_YAML = "spec.yaml"
REPORT_MD = "report.md"
RESULTS_SPOOL = "results.spool"
REPRO_PY = "repro.py"
ENGINE_JSON = "engine.json"
RESUMED_JSON = "resumed.json"
CELLS = "cells"
# The empty folder a silent pass leaves its cell for the next attempt (`prune`, `attempt_dir`):
# a dot first, so no attempt number names it.
SPARE = ".spare"
# What a silent pass's folder hands on with it, by name and size: its empty events.jsonl
# (process/childprotocol.py's EVENTS) and its blank in-flight record (process/leftovers.py's
# INFLIGHT, RECORD_SIZE), spelled here so that a reader of the run folder imports neither.
_EVENTS = "events.jsonl"
_INFLIGHT = "inflight.json"
_HANDED = (_EVENTS, _INFLIGHT)
_HANDED_SIZES = frozenset({(0, _EVENTS), (256, _INFLIGHT)})
# engine.json's size as `claim` writes it: room for `note_stop`'s reason beside the engine.
_ENGINE_ROOM = 512
# A Slurm run's folder under a shared --out, and its merged run's --out inside it
# (OUT/slurm/<slurm-run-id>/merged/runs/<run-id>/: slurm/__init__.py).
SLURM = "slurm"
MERGED = "merged"
# SHARED/slurm/<id>/shards/K: the store of shard K (its results.db, its digest.key).
SHARDS = "shards"
# A cell's folder is removed when the cell ends (`end_cells`), while an attempt of another
# cell may be making its folder: both take this lock, so neither loses a race.
_CELL_FOLDERS = threading.Lock()


@functools.lru_cache(maxsize=1024)  # asked three times per attempt, of a few cells
def cell_folder(cell_id: str) -> str:
    """A cell id as a folder name: readable, and unique even where characters were replaced.

    `p=a/b` and `p=a:b` both read `p=a_b`; a short hash of the id keeps them apart.
    """
    keep = "".join(ch if ch.isalnum() or ch in _FOLDER_CHARS else "_" for ch in cell_id)[:200]
    if keep == cell_id and keep:
        return keep
    digest = hashlib.sha256(cell_id.encode("utf-8")).hexdigest()[:8]
    return f"{keep or 'cell'}-{digest}"


# How many ids a new run draws before it gives up: chance takes one of 65,536 random parts
# now and then; 64 taken in a row means something other than chance names the folders.
_ID_DRAWS = 64


@frozen
class RunFolder:
    """The folder of one run under `out/runs/` (absolute while a run goes: children write in it)."""

    path: Path

    @classmethod
    def of(cls, out: Path, run_id: str) -> RunFolder:
        """The folder of `run_id` in the output folder `out`."""
        return cls(cls.runs_under(out) / run_id)

    @classmethod
    def new(cls, out: Path, make_id: Callable[[], str]) -> RunFolder:
        """The folder of a new run, under an id `make_id` gives that no folder of `out` has.

        A run id ends in 4 random hex digits, so two runs of one spec that start in the same
        second share an id once in about 65,536 pairs, and a search starts several probes a
        second, for hundreds of seconds: one minimize in a few dozen met it, the second run
        writing into the first's folder and the store refusing its row (UNIQUE constraint
        failed: runs.run_id). The folder is made with no `exist_ok`, so which run has an id is
        decided where two engines race for it too, and a taken id is drawn again.
        """
        runs = cls.runs_under(out)
        try:
            runs.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            cls.check_out(out)
            raise
        for _ in range(_ID_DRAWS):
            folder = cls(runs / make_id())
            try:
                folder.path.mkdir()
            except FileExistsError:
                continue
            return folder
        raise InfraError(f"{runs}: {_ID_DRAWS} new run ids were all taken")

    @classmethod
    def check_out(cls, out: Path, option: str = "") -> None:
        """Refuse an `out` that is a file, or on a file's path, and one whose `runs` is a
        file: the user's path, exit 2, where a run said only "File exists: OUT/runs" and
        `history --out FILE` "no runs recorded in FILE yet", exit 0. `option` names it
        where the caller typed another (the pytest plugin's `--reprospec-out`)."""
        from reprospec.core.caller import said

        # Named as the caller gave it: `out` to the Python API's (RunOptions(out=...)).
        option = option or said("--out", "out")
        from reprospec.core.runoptions import refuse_file_on_path

        refuse_file_on_path(out, f"{option} {out}")
        runs = cls.runs_under(out)
        if runs.exists() and not runs.is_dir():
            raise UsageError(
                f"{option} {out}: {runs} is a file, not the folder of its runs; move it "
                f"aside, or give another {option}"
            )

    @staticmethod
    def runs_under(out: Path) -> Path:
        """The folder of `out` that holds its run folders."""
        return out / RUNS

    @classmethod
    def all_under(cls, out: Path) -> list[RunFolder]:
        """Every run folder of `out`, by name (a run id begins with its start time)."""
        runs = cls.runs_under(out)
        return [cls(p) for p in sorted(runs.iterdir()) if p.is_dir()] if runs.is_dir() else []

    @classmethod
    def merged_slurm_under(cls, out: Path) -> list[RunFolder]:
        """The merged runs of the Slurm runs under `out` (a shared --out), by name: no store
        lists them (each shard has its own; the merge job writes only the folder), so
        `latest`, a run id and `history` under `out` find them here."""
        slurm = out / SLURM
        if not slurm.is_dir():
            return []
        found = [
            folder
            for each in slurm.iterdir()
            if each.is_dir()
            for folder in cls.all_under(each / MERGED)
            if folder.results_json.is_file()
        ]
        return sorted(found, key=lambda folder: folder.run_id)

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def merged_of(self) -> Path | None:
        """The Slurm run folder (SHARED/slurm/<id>) whose merged run this is; None for any
        other run. Its store folder (SHARED/slurm/<id>/merged) holds no digest key and no
        environments: the shards' stores took the digests, SHARED holds `envs`."""
        out = self.path.parent.parent
        if out.name == MERGED and out.parent.parent.name == SLURM:
            return out.parent
        return None

    @property
    def shard_stores(self) -> list[Path]:
        """The stores of a merged Slurm run's shards, by shard number; [] for another run."""
        slurm = self.merged_of
        shards = slurm / SHARDS if slurm is not None else None
        if shards is None or not shards.is_dir():
            return []
        found = [p for p in shards.iterdir() if p.is_dir() and p.name.isdigit()]
        return sorted(found, key=lambda p: int(p.name))

    @property
    def made_under(self) -> Path:
        """The --out the run was made under: its store's folder (`out`), or for a merged Slurm run
        the shared --out its Slurm run is in (SHARED, of SHARED/slurm/<id>)."""
        slurm = self.merged_of
        return slurm.parent.parent if slurm is not None else self.path.parent.parent

    @property
    def out(self) -> Path:
        """The `--out` folder this run belongs to."""
        return self.path.parent.parent

    @property
    def results_json(self) -> Path:
        return self.path / RESULTS_JSON

    @property
    def results_spool(self) -> Path:
        return self.path / RESULTS_SPOOL

    @property
    def spec_yaml(self) -> Path:
        return self.path / SPEC_YAML

    @property
    def report_md(self) -> Path:
        return self.path / REPORT_MD

    @property
    def repro_py(self) -> Path:
        """The standalone script of a workload run (standalone.py), when there is one."""
        return self.path / REPRO_PY

    def resumed_parts(self) -> tuple[ResumedPart, ...]:
        """The earlier parts of a run resumed before, as its last resume began
        (`write_resumed_parts`); () for one never resumed, or where the file is unreadable."""
        from reprospec.core.resumed import ResumedPart

        try:
            data = json.loads((self.path / RESUMED_JSON).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ()
        parts = data.get("parts") if isinstance(data, dict) else None
        if not isinstance(parts, list):
            return ()
        return tuple(ResumedPart.from_dict(part) for part in parts if isinstance(part, dict))

    def write_resumed_parts(self, parts: Iterable[ResumedPart]) -> None:
        """Keep the parts before the one a resume begins, at its start: a part killed later
        writes no results.json, and the next resume still names what came before it."""
        text = json.dumps({"parts": [part.to_dict() for part in parts]}, indent=1)
        self._replace(RESUMED_JSON, text + "\n")

    @property
    def cells(self) -> Path:
        return self.path / CELLS

    @property
    def top_files(self) -> tuple[Path, ...]:
        """The run's own files beside its cells: report, results, spec, standalone script."""
        return (self.report_md, self.results_json, self.spec_yaml, self.repro_py)

    def attempt_folders(self) -> list[Path]:
        """The attempt folders made so far (`cells/CELL/N/`, each made as its attempt starts)."""
        if not self.cells.is_dir():
            return []
        # Numbered folders alone: not the spare, not an interrupted attempt set aside.
        return [p for p in self.cells.glob("*/*") if p.name.isdigit() and p.is_dir()]

    def attempt_logs(self, cell_id: str, attempt: int) -> str:
        """Where attempt `attempt` of `cell_id` keeps its files, relative to the run folder."""
        return f"{CELLS}/{cell_folder(cell_id)}/{attempt}/"

    def attempt_dir(self, cell_id: str, attempt: int) -> Path:
        """The attempt's folder (absolute), created; its cell's too, at the cell's first.

        The empty folder the cell's last silent pass left (`prune`) is renamed to it where
        there is one: its two renames cost the engine about a seventh of the mkdir and rmdir
        every silent pass cost it (8.6 against 57 us of CPU on ext4, issue 30, item 5).
        """
        folder = self.path / self.attempt_logs(cell_id, attempt)
        with _CELL_FOLDERS:
            try:
                # Onto nothing, or onto an empty folder a killed engine left (a resumed
                # attempt's); onto a folder of files it fails (ENOTEMPTY), set aside below.
                os.rename(self._spare(cell_id), folder)  # noqa: PTH104 (str paths, as prune)
                return folder
            except OSError:
                pass
            try:
                # One mkdir while the cell's folder stands (`prune` leaves it to `end_cells`).
                os.mkdir(folder)  # noqa: PTH102
            except FileNotFoundError:
                folder.mkdir(parents=True, exist_ok=True)
            except FileExistsError:
                if not folder.is_dir():
                    raise
                if _remove_empty_files(str(folder)):
                    # Killed before it wrote: its empty events.jsonl and stack file (the
                    # runner makes both as it starts) go, nothing is kept aside.
                    return folder
                # A folder of files: the attempt a killed engine left, which a resumed run
                # runs again. Its files are set aside, kept for whoever reads them, not run
                # into: its events.jsonl's lines read as the new attempt's (a step it never
                # reached), its core file beside the new one's.
                _set_aside(folder)
                os.mkdir(folder)  # noqa: PTH102
        return folder

    def prune(self, cell_id: str, attempt: int) -> bool:
        """Remove the attempt's empty files, then its folders left empty; True when none is left.

        Called for an attempt that passed, once it is over (nothing writes there any
        more): what it printed stays, the empty logs and events file go, and a silent
        attempt leaves no folder: its folder becomes the cell's spare (`SPARE`), with its
        empty events.jsonl and blank in-flight record (`leftovers.Flight`'s `reuse`), and
        the cell's next attempt takes all three (`attempt_dir`), where each silent pass
        cost the engine a mkdir, two files created and their unlinks and an rmdir. The
        cell's folder stays for its next attempt, and `end_cells` removes both if it ends
        empty.
        """
        # str paths and os calls: this runs once per attempt that passed.
        folder = os.path.join(self.path, CELLS, cell_folder(cell_id), str(attempt))  # noqa: PTH118
        handed: list[str] = []
        if _remove_empty_files(folder, handed):
            try:
                # Only a folder of nothing else (a rename moves a full one as well), onto
                # nothing or onto the spare another attempt of the cell left (-j 2): an
                # empty one is replaced, one with files refuses (then this one is cleared).
                os.rename(folder, self._spare(cell_id))  # noqa: PTH104
            except FileNotFoundError:
                return True
            except OSError:
                pass
            else:
                return True
        for path in handed:
            with contextlib.suppress(OSError):
                os.unlink(path)  # noqa: PTH108
        return _remove_empty(folder)

    def clear_record(self, cell_id: str, attempt: int) -> None:
        """Remove the attempt's blank in-flight record (`leftovers.Flight`'s `reuse`) from a
        folder that stays (a failure's, an interrupted attempt's): only the run folder
        hands one on, in a silent pass's folder (`prune`)."""
        record = os.path.join(self.path, self.attempt_logs(cell_id, attempt), _INFLIGHT)  # noqa: PTH118
        with contextlib.suppress(OSError):
            os.unlink(record)  # noqa: PTH108

    def _spare(self, cell_id: str) -> str:
        return os.path.join(self.path, CELLS, cell_folder(cell_id), SPARE)  # noqa: PTH118

    def end_cells(self, cell_ids: Iterable[str]) -> None:
        """These cells' last attempts are over: the folder of each goes if none of its
        attempts left one, with the spare its silent passes handed on."""
        for cell_id in cell_ids:
            cell = os.path.join(self.path, CELLS, cell_folder(cell_id))  # noqa: PTH118
            spare = self._spare(cell_id)
            with _CELL_FOLDERS:
                for name in _HANDED:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(spare, name))  # noqa: PTH108, PTH118
                _remove_empty(spare)
                _remove_empty(cell)

    def create(self) -> RunFolder:
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def hold(self) -> int:
        """Hold the folder for this engine alone: an exclusive lock on it, which another
        engine's `hold` is refused (UsageError, exit 2). Two `run --resume` of one run
        started together both passed the check of a live engine (it reads the in-flight
        records, which neither had written yet) and both ran the run's rest, into the same
        attempt folders. The lock is the returned descriptor's: closed at the
        run's end, or with the engine however it ends (SIGKILL too). A filesystem without
        flock goes without."""
        import fcntl

        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(
                f"{resuming(self.run_id)}: another engine is running this run now"
                f"{self._engine_named()}; wait for it to end, or stop it first"
            ) from None
        except OSError:
            pass
        return fd

    def removed_since(self, held: int) -> bool:
        """Whether the folder `held` (`hold`'s descriptor) opened is no longer at its path:
        removed while the run ran (`rm -rf`), whether or not a later write (an attempt's
        folder, results.json) has made a new, empty one there since."""
        try:
            now, then = self.path.stat(), os.fstat(held)
        except OSError:
            return True
        return (now.st_dev, now.st_ino) != (then.st_dev, then.st_ino)

    def _engine_record(self) -> dict[str, object] | None:
        """engine.json as the last engine to claim the folder wrote it (`claim`, `note_stop`);
        None where it is missing, unreadable or not a JSON object."""
        try:
            data = json.loads((self.path / ENGINE_JSON).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _engine_named(self) -> str:
        """` (engine pid N)` of the engine that last claimed the folder; "" where unknown."""
        pid = (self._engine_record() or {}).get("pid")
        return f" (engine pid {pid})" if isinstance(pid, int) else ""

    def claim(self, cells: int | None = None) -> RunFolder:
        """Record this process as the engine that runs in the folder (a resume claims it anew).

        The store marks a run `finished` or `interrupted` as it ends; a SIGKILL, the OOM
        killer or the machine's end leave it `running` for good. Which process ran it, with
        its start time and boot, tells `history` that nothing runs it any more. `cells`: how
        many cells the run plans, which the store has only once they are judged (`history`
        of a run still running said `cells 0`).
        """
        from reprospec.process.leftovers import Engine

        # The host as socket.gethostname() gives it (uname's nodename), without importing
        # socket into every run.
        planned = {} if cells is None else {"cells": cells}
        text = json.dumps({**Engine.me().to_dict(), "host": os.uname().nodename, **planned})
        # Padded (JSON allows the spaces): the room `note_stop` writes into in place, where
        # a full disk gives no new block to the store or to a new file.
        self._replace(ENGINE_JSON, text.ljust(_ENGINE_ROOM - 1) + "\n")
        return self

    def note_stop(self, why: str) -> None:
        """Say in engine.json why this engine stopped, where the store could not take its
        `interrupted` (a full disk, a store that fails): history called the run `killed`
        (SIGKILL, the OOM killer), which it was not. Written over the file's own bytes
        (`claim` padded it), which a full disk allows; where even that fails, the run reads
        killed as before."""
        path = self.path / ENGINE_JSON
        data = self._engine_record()
        if data is None:
            return
        try:
            room = path.stat().st_size - 1
            text = json.dumps({**data, "stopped": why}, ensure_ascii=False)
            if len(text.encode()) > room:
                cut = len(text.encode()) - room + 3  # what the reason must lose, and "..."
                text = json.dumps({**data, "stopped": why[:-cut] + "..."}, ensure_ascii=False)
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, (text.ljust(room) + "\n").encode(), 0)
            finally:
                os.close(fd)
        except (OSError, ValueError):
            pass

    def planned_cells(self) -> int | None:
        """How many cells the run plans, as its engine's `claim` wrote it; None where not
        known (a run from before it was written)."""
        cells = (self._engine_record() or {}).get("cells")
        return cells if isinstance(cells, int) and not isinstance(cells, bool) else None

    def stop_noted(self) -> str:
        """Why the engine that last claimed the folder stopped, as `note_stop` said (the
        disk was full), else ""."""
        why = (self._engine_record() or {}).get("stopped")
        return why if isinstance(why, str) else ""

    def _replace(self, name: str, text: str) -> None:
        """Write the folder's file `name` whole, through a file of this process renamed over
        it: a reader (history, the next resume) sees the old one or the new one."""
        temporary = self.path / f"{name}.tmp{os.getpid()}"
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(self.path / name)

    def names_engine(self) -> bool:
        """Whether the folder names the engine that last claimed it (engine.json, readable):
        not a run begun by a reprospec from before engine.json, whose engine nothing here
        can tell alive or ended (no pid, no host: it may run on another machine)."""
        return self._engine_record() is not None

    def engine_gone(self) -> bool:
        """Whether the engine that last claimed the folder has ended. False where that is not
        known: it runs, the folder names none (a run from before engine.json), or it ran on
        another machine sharing this `--out` (a Slurm shard on a compute node), whose
        processes this one cannot see."""
        from reprospec.process.leftovers import Engine

        data = self._engine_record()
        if data is None:
            return False
        try:
            engine, host = Engine.from_dict(data), str(data["host"])
        except (ValueError, KeyError, TypeError):
            return False
        if host != os.uname().nodename:
            return False
        # This machine: another boot, or the pid's start time no longer the engine's.
        return not engine.alive()


def _remove_empty_files(folder: str, handed: list[str] | None = None) -> bool:
    """Remove the empty files under `folder`, and the folders under it that end empty;
    whether `folder` itself ends empty (False also where it could not be listed).

    With `handed`: `folder`'s own empty events.jsonl and blank in-flight record are left
    for the cell's next attempt (`RunFolder.prune`) and their paths added to it; `folder`
    ends empty when they are all it holds. One scandir per folder and one lstat per
    file: this runs once per attempt that passed.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False  # gone already, or unreadable: `_remove_empty` says which
    emptied = True
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                _remove_empty_files(entry.path)
                if _remove_empty(entry.path):
                    continue
            else:
                size = entry.stat(follow_symlinks=False).st_size
                if handed is not None and (size, entry.name) in _HANDED_SIZES:
                    handed.append(entry.path)
                    continue
                if size == 0:
                    os.unlink(entry.path)  # noqa: PTH108
                    continue
        except OSError:
            pass  # gone already, or not ours to remove: it stays
        emptied = False
    return emptied


def _remove_empty(folder: str) -> bool:
    """rmdir `folder` when it is empty; whether it is gone."""
    try:
        os.rmdir(folder)  # noqa: PTH106
    except FileNotFoundError:
        return True
    except OSError:  # not empty (or not ours): it stays
        return False
    return True


# What an interrupted attempt's folder becomes when its attempt runs again (`attempt_dir`):
# `cells/CELL/3.interrupted`, then `3.interrupted-2`, ...
INTERRUPTED = ".interrupted"


def _set_aside(folder: Path) -> None:
    """Rename `folder` to the first of `N.interrupted`, `N.interrupted-2`, ... not taken."""
    for n in range(1, 1000):
        aside = folder.with_name(f"{folder.name}{INTERRUPTED}{'' if n == 1 else f'-{n}'}")
        try:
            os.rename(folder, aside)  # noqa: PTH104
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue
            raise
        return
    raise FileExistsError(folder)
