"""An attempt's private temporary places, and what it leaves behind in /dev/shm.

Attempts must not see each other's leftovers: a torn file in `/tmp` from an
earlier attempt (or an earlier run) can make a later one crash, and removing it
make it pass. So, unless the spec says `environment.shared_tmp: true`, each
attempt gets

    ATTEMPT/tmp/     as TMPDIR          (Python's tempfile, torch.compile's caches, mktemp)
    ATTEMPT/cache/   as XDG_CACHE_HOME  (pip, torch hub, and the like)

(childprotocol.child_env sets the variables, with the child's view of the
attempt folder), and both folders are removed after the attempt, their size
and file count recorded as a warning of the attempt.

/dev/shm is the machine's (the local runner; a container has its own): the
named semaphores of multiprocessing (`sem.mp-*`) and torch's shared-memory
files (`torch_*`) of a process killed at the wrong time stay there, filling a
tmpfs that the next attempt needs. After an attempt, such files that are new
since it started, are ours, and that no live process holds open or mapped are
removed and counted. With `shared_tmp: true` they are only counted.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reprospec.childprotocol import CACHE_DIR as CACHE
from reprospec.childprotocol import TMP_DIR as TMP
from reprospec.units import format_size

SHM = Path("/dev/shm")
SHM_PATTERNS = ("sem.mp-*", "torch_*")
# File times come from the kernel's coarse clock, which may lag time.time_ns().
_CLOCK_SLACK_NS = 2_000_000_000
# How many names a warning lists.
_NAMES_SHOWN = 5


def scratch_dirs(attempt_dir: Path) -> tuple[Path, Path]:
    """(TMPDIR, XDG_CACHE_HOME) of an attempt, as the engine sees them."""
    return attempt_dir / TMP, attempt_dir / CACHE


def prepare(attempt_dir: Path) -> None:
    """Create the attempt's empty TMPDIR and XDG_CACHE_HOME before the child starts."""
    for folder in scratch_dirs(attempt_dir):
        folder.mkdir(parents=True, exist_ok=True)


def clean(attempt_dir: Path) -> tuple[str, ...]:
    """Remove the attempt's TMPDIR and XDG_CACHE_HOME; a warning saying what they held."""
    parts: list[str] = []
    left: list[str] = []
    for folder in scratch_dirs(attempt_dir):
        if not folder.exists():
            continue
        files, size, names = _contents(folder)
        if files:
            shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if files > _NAMES_SHOWN else "")
            parts.append(f"{folder.name}/: {files} file(s), {format_size(size)} ({shown})")
        shutil.rmtree(folder, ignore_errors=True)
        if folder.exists():
            left.append(f"{folder.name}/")
    warnings = []
    if parts:
        warnings.append(
            "removed what the attempt left in its private TMPDIR/XDG_CACHE_HOME: "
            + "; ".join(parts)
        )
    if left:
        warnings.append(f"could not remove all of {', '.join(left)} in {attempt_dir}")
    return tuple(warnings)


def _contents(folder: Path) -> tuple[int, int, list[str]]:
    """(files, bytes, relative names) under `folder`, symlinks not followed."""
    files = size = 0
    names: list[str] = []
    for root, dirs, filenames in os.walk(folder):
        dirs.sort()
        for name in sorted(filenames):
            path = Path(root, name)
            files += 1
            names.append(str(path.relative_to(folder)))
            with contextlib.suppress(OSError):
                size += path.lstat().st_size
    return files, size, names


@dataclass(frozen=True)
class ShmSnapshot:
    """The /dev/shm files of interest when an attempt started, and when that was."""

    started_ns: int
    names: frozenset[str]
    root: Path = SHM


def shm_snapshot(root: Path = SHM) -> ShmSnapshot:
    """Take the snapshot just before an attempt starts."""
    return ShmSnapshot(time.time_ns(), frozenset(_shm_names(root)), root)


def shm_leaks(before: ShmSnapshot) -> list[Path]:
    """Files of SHM_PATTERNS created since `before`, owned by us, held by no live process."""
    uid = os.getuid()
    candidates: list[tuple[Path, tuple[int, int]]] = []
    for name in _shm_names(before.root):
        if name in before.names:
            continue
        path = before.root / name
        try:
            info = path.lstat()
        except OSError:
            continue  # gone already
        if info.st_uid != uid or info.st_ctime_ns < before.started_ns - _CLOCK_SLACK_NS:
            continue
        candidates.append((path, (info.st_dev, info.st_ino)))
    if not candidates:
        return []
    held = held_files(before.root)
    return [path for path, key in candidates if key not in held]


def remove_shm_leaks(before: ShmSnapshot, *, remove: bool = True) -> tuple[str, ...]:
    """Remove (or with `remove=False` only count) the attempt's /dev/shm leaks; a warning."""
    leaks = shm_leaks(before)
    if not leaks:
        return ()
    removed = []
    for path in leaks:
        if not remove:
            removed.append(path.name)
            continue
        try:
            path.unlink()
        except OSError:  # gone already, or not ours to remove after all
            continue
        removed.append(path.name)
    if not removed:
        return ()
    names = ", ".join(removed[:_NAMES_SHOWN]) + (", ..." if len(removed) > _NAMES_SHOWN else "")
    if remove:
        return (f"removed {len(removed)} leaked {before.root} file(s): {names}",)
    return (
        f"{len(removed)} leaked {before.root} file(s) left in place "
        f"(environment.shared_tmp): {names}",
    )


def held_files(root: Path = SHM, proc: Path = Path("/proc")) -> set[tuple[int, int]]:
    """(device, inode) of every file under `root` some live process has open or mapped.

    By inode, not by name: glibc's sem_open maps a temporary file and only then
    links it under its name, so /proc/PID/maps shows `sem.XXXXXX (deleted)`.
    """
    prefix = str(root) + "/"
    held: set[tuple[int, int]] = set()
    for entry in _pids(proc):
        held.update(_mapped(proc / entry / "maps", prefix))
        held.update(_open_fds(proc / entry / "fd", prefix))
    return held


def _pids(proc: Path) -> Iterable[str]:
    try:
        return [entry for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return []


def _mapped(maps: Path, prefix: str) -> Iterable[tuple[int, int]]:
    """`ADDR PERMS OFFSET MAJOR:MINOR INODE PATH` lines whose path is under `prefix`."""
    try:
        text = maps.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    found = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith(prefix):
            continue
        major, _, minor = fields[3].partition(":")
        try:
            found.append((os.makedev(int(major, 16), int(minor, 16)), int(fields[4])))
        except ValueError:
            continue
    return found


def _open_fds(fd_dir: Path, prefix: str) -> Iterable[tuple[int, int]]:
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return ()
    found = []
    for fd in fds:
        link = fd_dir / fd
        try:
            if not os.readlink(link).startswith(prefix):
                continue
            info = os.stat(link)  # the open file itself, even when unlinked
        except OSError:
            continue
        found.append((info.st_dev, info.st_ino))
    return found


def _shm_names(root: Path) -> Sequence[str]:
    try:
        names = os.listdir(root)
    except OSError:
        return ()
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in SHM_PATTERNS)]
