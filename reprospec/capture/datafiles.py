"""The data a captured program read from its workdir: what of it goes into the spec's `files`.

The child records each file it opens for reading (opened-<pid>.txt, written by the
stackdump sitecustomize's audit hook as it opens them, asked by
REPROSPEC_RECORD_IMPORTS as the imports are). A spec that carries its modules but not
its `config.yaml` fails elsewhere with FileNotFoundError, not the bug; one that carried
a dataset would make every bundle gigabytes. Pure reading of what came back, as
footprint.py's, kept apart from it: imports and data are judged by different rules.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reprospec.core.results import AttemptResult
from reprospec.core.units import format_size

# What of the data a program read from the workdir is listed in `files`: `bundle` carries
# each one, and a dataset or a checkpoint is for the reader to fetch, not a bug report's. A
# file in the workdir itself up to MAX_READ_FILE; a folder's files (`data/`) up to
# MAX_READ_FOLDER_FILES of them and MAX_READ_FILE together (a DataLoader over 50,000
# images read them all).
MAX_READ_FILE = 16 << 20
MAX_READ_FOLDER_FILES = 32


@dataclass(frozen=True)
class ReadFiles:
    """The workdir's files the attempts' processes opened for reading (opened-<pid>.txt,
    written by the child as it opens them), relative to the workdir: `listed` for the spec's
    `files`; `too_large` (a file, or `data/ (50000 files, 3.2 GB)`) and `hidden` named to
    the user instead."""

    listed: tuple[str, ...] = ()
    too_large: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()  # a dot-file (`.env`): it may hold secrets


def read_files(
    run_dir: Path,
    attempts: Iterable[AttemptResult],
    workdir: Path,
    *,
    before: float,
    leave_out: Iterable[Path] = (),
) -> ReadFiles:
    """The data a program read: files under the workdir that were there, unchanged, before
    the run began (`before`, a time.time(): a file it wrote and read back is its own
    output), but for its Python modules (its imports say which), hidden ones (`.env`:
    secrets travel in no bundle), caches, and what lies under `leave_out` (the run
    folder, the spec being written); grouped by the workdir's folders (see above)."""
    skipped = [p.resolve() for p in leave_out]
    # Each path once: every attempt, and every process of one, records what it opened.
    opened: dict[str, None] = {}
    for attempt in attempts:
        for record in (run_dir / attempt.logs).glob("opened-*.txt"):
            try:
                text = record.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            opened.update(dict.fromkeys(text.splitlines()))
    sizes: dict[str, int] = {}
    hidden: set[str] = set()
    environments: dict[Path, bool] = {}  # per folder: a dataset's files share theirs
    for line in opened:
        path = Path(line).resolve()
        if path.suffix == ".py" or not path.is_relative_to(workdir):
            continue
        if any(path == s or path.is_relative_to(s) for s in skipped):
            continue
        relative = path.relative_to(workdir)
        if _SKIPPED_FOLDERS.intersection(relative.parts[:-1]) or any(
            part.startswith(".") for part in relative.parts[:-1]
        ):
            continue  # a cache, a .git, an installed package: no data of the program's
        if path.parent not in environments:
            environments[path.parent] = _in_environment(path.parent, workdir)
        if environments[path.parent]:
            continue
        try:
            found = path.stat()
        except OSError:
            continue
        if not stat.S_ISREG(found.st_mode) or found.st_mtime >= before:
            continue
        if relative.name.startswith("."):
            hidden.add(relative.as_posix())
        else:
            sizes[relative.as_posix()] = found.st_size
    listed: list[str] = []
    too_large: list[str] = []
    groups: dict[str, list[str]] = {}
    for name in sorted(sizes):
        groups.setdefault(name.split("/", 1)[0] if "/" in name else name, []).append(name)
    for top, names in sorted(groups.items()):
        total = sum(sizes[n] for n in names)
        if total <= MAX_READ_FILE and len(names) <= MAX_READ_FOLDER_FILES:
            listed += names
        elif names == [top]:
            too_large.append(top)
        else:
            too_large.append(f"{top}/ ({len(names)} files, {format_size(total)})")
    return ReadFiles(tuple(listed), tuple(too_large), tuple(sorted(hidden)))


_SKIPPED_FOLDERS = frozenset({"__pycache__", "site-packages", "dist-packages", "node_modules"})


def _in_environment(folder: Path, workdir: Path) -> bool:
    """Whether `folder` lies in a Python environment made inside the workdir (a `venv/` with
    its pyvenv.cfg): its files are the interpreter's, not the program's data."""
    while folder != workdir and folder.is_relative_to(workdir):
        if (folder / "pyvenv.cfg").is_file():
            return True
        folder = folder.parent
    return False
