"""The data a captured program read from its workdir: what of it goes into the spec's `files`.

The child records each file it opens for reading (opened-<pid>.txt, written by the
stackdump sitecustomize's audit hook as it opens them, asked by
REPROSPEC_RECORD_IMPORTS as the imports are). A spec that carries its modules but not
its `config.yaml` fails elsewhere with FileNotFoundError, not the bug; one that carried
a dataset would make every bundle gigabytes. Pure reading of what came back, as
footprint.py's, kept apart from it: imports and data are judged by different rules
(`WorkdirFiles` puts the two together for a run).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from reprospec.capture.footprint import (
    imported,
    loaded,
    local_files,
    scripts,
    searched,
)
from reprospec.capture.footprint import opened as read_paths
from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.pythonargs import INTERPRETER_LIB
from reprospec.core.results import AttemptResult, RunResult
from reprospec.core.units import format_size
from reprospec.outcome.evidence import read_log
from reprospec.plan.workfiles import in_environment

# What of the data a program read from the workdir is listed in `files`: `bundle` carries
# each one, and a dataset or a checkpoint is for the reader to fetch, not a bug report's. A
# file in the workdir itself up to MAX_READ_FILE; a folder's files (`data/`) up to
# MAX_READ_FOLDER_FILES of them and MAX_READ_FILE together (a DataLoader over 50,000
# images read them all).
MAX_READ_FILE = 16 << 20
MAX_READ_FOLDER_FILES = 32


@frozen
class ReadFiles:
    """The workdir's files the attempts' processes opened for reading (opened-<pid>.txt,
    written by the child as it opens them), relative to the workdir: `listed` for the spec's
    `files`; `too_large` (a file, or `data/ (50000 files, 3.2 GB)`) and `hidden` named to
    the user instead."""

    listed: tuple[str, ...] = ()
    too_large: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()  # a dot-file (`.env`): it may hold secrets
    # The paths of `too_large` (a file, or a top folder) and `hidden`, relative to the
    # workdir: what capture's verify links into its copy, since no bundle carries them.
    left_out: tuple[str, ...] = ()
    # Files outside the workdir the program read by their absolute paths (a config under
    # /tmp or the home folder), not the machine's own: no spec or bundle carries them.
    outside: tuple[str, ...] = ()
    # Files it read whose names are not UTF-8 (their bytes replaced in the record, U+FFFD):
    # no spec can name them, and a copy of the spec's tree lacks them.
    undecodable: tuple[str, ...] = ()


@frozen
class WorkdirFiles:
    """How the workdir's files a run used are read from its run folder: for the spec's
    `files` from capture's first run, and for what a copy of the spec's tree lacked from
    the verify's rerun in that copy (verify.Reads)."""

    workdir: Path
    script_dir: Path  # the folder of the script the command names (where Python looks first)
    out: Path  # the store's folder: the runs' folders are under it
    leave_out: tuple[Path, ...]  # read_files' leave_out
    before: float  # read_files' before: when the capture began
    # The workdir's folders an editable install of its project serves modules from (`src/`):
    # through a finder of its own (setuptools'), they are on no sys.path the child records.
    roots: tuple[Path, ...] = ()

    def read(
        self,
        run_dir: Path,
        attempts: Sequence[AttemptResult],
        looked_for: Iterable[str] = (),
        ran_in: Path | None = None,
        also: Iterable[str] = (),
    ) -> ReadFiles:
        """The workdir's files the attempts imported (the modules whose code ran), ran as
        a script or opened for reading (and the paths `also`), in `listed`; `ran_in`: the
        copy of the workdir they ran in. `looked_for`: module names whose workdir files are
        listed too, found where the child would have found them, whether or not the import
        succeeded: in a copy that lacks a module, its import fails, and that failed import
        is how the copy says what it lacks (`reads`). A capture's own run passes none: a
        name it looked for and never found (pytest's `from mylib import x`, failing for
        want of the rootdir on sys.path) is no file it imported."""
        workdir = self.workdir
        copy = ran_in.resolve() if ran_in is not None else None
        modules = {
            path.relative_to(workdir).as_posix()
            for path in (_as_workdirs(found, copy, workdir) for found in loaded(run_dir, attempts))
            if path.is_relative_to(workdir)
            and not _SKIPPED_FOLDERS.intersection(path.relative_to(workdir).parts[:-1])
            and not in_environment(path.parent, workdir)
        }
        # An environment made in the workdir is on sys.path too: its site-packages hold
        # installed distributions, not the program's modules (`files` listed every one).
        folders = [
            p
            for p in (_as_workdirs(found, copy, workdir) for found in searched(run_dir, attempts))
            if not _SKIPPED_FOLDERS.intersection(p.parts) and not in_environment(p, workdir)
        ] + [root for root in self.roots if root.is_relative_to(workdir)]
        local = {*modules, *local_files(looked_for, workdir, self.script_dir, folders)}
        ran = scripts(run_dir, attempts, ran_in.resolve() if ran_in else workdir)
        data = read_files(
            run_dir,
            attempts,
            workdir,
            before=self.before,
            leave_out=self.leave_out,
            ran_in=ran_in,
            also=also,
        )
        return replace(data, listed=tuple(sorted({*local, *ran, *data.listed})))

    def reads(self, result: RunResult, copied: Path) -> tuple[str, ...]:
        """The workdir's files the run of the spec in a copy of its tree (its workdir's copy
        `copied`) imported, ran, read or named in its output (a shell's `cat: data.txt: No
        such file or directory`: no Python process opened it), as they are in the workdir."""
        run_dir = self.out.resolve() / "runs" / result.run_id
        attempts = [a for cell in result.cells for a in cell.attempts]
        printed = "\n".join(
            read_log(run_dir / a.logs / name, head=0, tail=OUTPUT_TAIL_BYTES)
            for a in attempts
            for name in ("stdout.log", "stderr.log")
        )
        modules = imported(run_dir, attempts)
        named = named_in(printed, copied.resolve())
        return self.read(run_dir, attempts, modules, ran_in=copied, also=named).listed


def read_files(
    run_dir: Path,
    attempts: Iterable[AttemptResult],
    workdir: Path,
    *,
    before: float,
    leave_out: Iterable[Path] = (),
    ran_in: Path | None = None,
    also: Iterable[str] = (),
) -> ReadFiles:
    """The data a program read: files under the workdir that were there, unchanged, before
    the run began (`before`, a time.time(): a file it wrote and read back is its own
    output), but for its Python modules (its imports say which), hidden ones (`.env`:
    secrets travel in no bundle), caches, and what lies under `leave_out` (the run
    folder, the spec being written); grouped by the workdir's folders (see above).
    `ran_in`: the copy of the workdir the attempts ran in (capture's verify): what they
    opened there is judged as the workdir's, where the copy's files came from. `also`:
    more paths to judge as if opened (`named_in` of what the attempts printed)."""
    skipped = [p.resolve() for p in leave_out]
    copy = ran_in.resolve() if ran_in is not None else None
    # Each path once: every attempt, and every process of one, records what it opened.
    opened = dict.fromkeys([*read_paths(run_dir, attempts), *also])
    sizes: dict[str, int] = {}
    hidden: set[str] = set()
    environments: dict[Path, bool] = {}  # per folder: a dataset's files share theirs
    outside: list[str] = []
    undecodable: list[str] = []
    # The workdir's Python files read as files, not imported through the import system's
    # finders: pytest loads conftest.py and the test modules through its own (assertion
    # rewriting) hook, ahead of capture's recorder; a program may exec or runpy one. Code,
    # carried whatever the size of its folder.
    sources: set[str] = set()
    for line in opened:
        path = _as_workdirs(Path(line).resolve(), copy, workdir)
        if not path.is_relative_to(workdir):
            # The program's input, named to the user; a .py there is a library's source
            # (read for a traceback), no input.
            if copy is None and path.suffix != ".py" and _the_programs(path, before):
                outside.append(str(path))
            continue
        if any(path == s or path.is_relative_to(s) for s in skipped):
            continue
        relative = path.relative_to(workdir)
        if _SKIPPED_FOLDERS.intersection(relative.parts[:-1]) or any(
            part.startswith(".") for part in relative.parts[:-1]
        ):
            continue  # a cache, a .git, an installed package: no data of the program's
        if path.parent not in environments:
            environments[path.parent] = in_environment(path.parent, workdir)
        if environments[path.parent]:
            continue
        try:
            found = path.stat()
        except OSError:
            if "\ufffd" in relative.as_posix():
                undecodable.append(relative.as_posix())
            continue
        if not stat.S_ISREG(found.st_mode) or found.st_mtime >= before:
            continue
        if relative.name.startswith("."):
            hidden.add(relative.as_posix())
        elif path.suffix == ".py":
            sources.add(relative.as_posix())
        else:
            sizes[relative.as_posix()] = found.st_size
    listed: list[str] = sorted(sources)
    too_large: list[str] = []
    left_out: list[str] = sorted(hidden)
    groups: dict[str, list[str]] = {}
    for name in sorted(sizes):
        groups.setdefault(name.split("/", 1)[0] if "/" in name else name, []).append(name)
    for top, names in sorted(groups.items()):
        total = sum(sizes[n] for n in names)
        if total <= MAX_READ_FILE and len(names) <= MAX_READ_FOLDER_FILES:
            listed += names
        elif names == [top]:
            too_large.append(top)
            left_out.append(top)
        else:
            too_large.append(f"{top}/ ({len(names)} files, {format_size(total)})")
            left_out.append(top)
    return ReadFiles(
        tuple(listed),
        tuple(too_large),
        tuple(sorted(hidden)),
        tuple(left_out),
        tuple(outside),
        tuple(undecodable),
    )


def read_outside(
    run_dir: Path,
    attempts: Iterable[AttemptResult],
    tree: Path,
    *,
    before: float,
    leave_out: Iterable[Path] = (),
) -> tuple[str, ...]:
    """The files the attempts' Python processes opened for reading (opened-<pid>.txt)
    outside `tree` (an unpacked bundle's) and outside `leave_out`, that are the program's
    input by the rule capture names such a file by (`_the_programs`: there before the run,
    not the machine's, an interpreter's or a cache's): found here at their paths, where
    whoever is given the bundle may have nothing."""
    root = tree.resolve()
    skipped = [p.resolve() for p in leave_out]
    found: list[str] = []
    for line in read_paths(run_dir, attempts):
        path = Path(line).resolve()
        if path.is_relative_to(root) or any(path.is_relative_to(s) for s in skipped):
            continue
        if path.suffix != ".py" and _the_programs(path, before):
            found.append(str(path))
    return tuple(found)


# The first folders of the machine's own files: what every program opens (the interpreter,
# its libraries, locales, certificates, /proc, Nix's store), the same on every machine, not
# the program's data. The one list: a ticket's paths under them are no sender's either.
MACHINE_FOLDERS = frozenset(
    {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc", "sys",
     "var", "run", "boot", "nix"}
)  # fmt: skip


_INTERPRETER_LIB = Lazy(INTERPRETER_LIB)


def in_machine_folders(path: Path) -> bool:
    """Whether an absolute `path` lies under one of the machine's own folders
    (`MACHINE_FOLDERS`), by its first folder whole: `/lib64/...` and `/nix/store/...` do,
    `/library/data.csv` does not (a `/lib` prefix took it for the system's)."""
    return bool(path.parts[1:2]) and path.parts[1] in MACHINE_FOLDERS


def _the_programs(path: Path, before: float) -> bool:
    """Whether a file opened outside the workdir is the program's own input: a regular
    file that was there before the run, not under the machine's or an interpreter's
    folders, nor under a hidden folder but `.config` (caches, `.git`, tool state)."""
    text = str(path)
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    if in_machine_folders(path):
        return False
    if any(text.startswith(p + "/") for p in prefixes):
        return False
    parts = path.parts[:-1]
    if any(p.startswith(".") and p != ".config" for p in parts):
        return False
    if _SKIPPED_FOLDERS.intersection(parts):
        return False
    if _INTERPRETER_LIB.search(text):  # another interpreter's library (`--python`'s)
        return False
    try:
        found = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_mtime < before


def _as_workdirs(path: Path, copy: Path | None, workdir: Path) -> Path:
    """`path` (resolved) as the workdir's where it lies in the workdir's `copy` (capture's
    verify ran there): where that copy's file came from."""
    if copy is not None and path.is_relative_to(copy):
        return workdir / path.relative_to(copy)
    return path


# A word of a program's output that may be a file's name: `cat: data.txt: No such file or
# directory`, FileNotFoundError's `[Errno 2] No such file or directory: 'conf/x.yaml'`.
_FILE_WORD = re.compile(r"[\w~/][\w.~/+-]*")
# A name in quotes may hold spaces: coreutils' `cat: 'my data.txt': No such file or
# directory`, Python's `No such file or directory: 'my data.txt'`.
# A quote opens and closes at a word's edge: the apostrophe of "can't open 'my data.txt'"
# opens nothing, where it paired with the name's opening quote and lost the name.
_QUOTED = re.compile(r"(?<!\w)'([^'\n]{1,1023})'(?!\w)|(?<!\w)\"([^\"\n]{1,1023})\"(?!\w)")
# What of a failing rerun's output is read for them: the end of each stream.
OUTPUT_TAIL_BYTES = 64 << 10


def named_in(text: str, folder: Path) -> list[str]:
    """The absolute paths that the words of `text` with a dot or a slash in them name, a
    relative one taken in `folder`: what a program that failed on a missing file says it
    missed, whatever the program (a shell's `cat`, a C library, Python)."""
    names: dict[str, None] = {}
    quoted = [a or b for a, b in _QUOTED.findall(text)]
    for word in [*quoted, *_FILE_WORD.findall(text)]:
        word = word.rstrip(".")
        # Not expanded: `~/x` is never the workdir's, and `~1.5s` names no user at all.
        if ("." in word or "/" in word) and len(word) < 1024 and not word.startswith("~"):
            names[str(folder / word)] = None
    return list(names)


_SKIPPED_FOLDERS = frozenset({"__pycache__", "site-packages", "dist-packages", "node_modules"})
# The most entries `written_since` looks at: a workdir of a dataset's million files is not
# walked to word one message.
MAX_WALKED = 20_000


def written_since(
    workdir: Path, before: float, leave_out: Iterable[Path] = (), most: int = 3
) -> tuple[str, ...]:
    """Up to `most` files under `workdir` (relative, sorted) written since `before` (a
    time.time()): what a run left there (a checkpoint, a lock, a cache of its own), which
    the next run reads and the first did not. Caches, hidden folders, virtual environments
    and what lies under `leave_out` (the store, the spec) are not looked in."""
    skipped = {p.resolve() for p in leave_out}
    found: list[str] = []
    walked = 0
    for folder, folders, names in os.walk(workdir):
        here = Path(folder)
        folders[:] = [
            f
            for f in folders
            if f not in _SKIPPED_FOLDERS
            and not f.startswith(".")
            and (here / f).resolve() not in skipped
            and not in_environment(here / f, workdir)
        ]
        for name in names:
            walked += 1
            path = here / name
            if name.endswith((".pyc", ".pyo")) or path.resolve() in skipped:
                continue
            try:
                changed = path.stat().st_mtime
            except OSError:
                continue
            if changed >= before:
                found.append(path.relative_to(workdir).as_posix())
        if walked > MAX_WALKED:
            break
    return tuple(sorted(found)[:most])
