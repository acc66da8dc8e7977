"""An attempt's private temporary places, and what it leaves behind in /dev/shm.

Attempts must not see each other's leftovers: a torn file in `/tmp` from an
earlier attempt (or an earlier run) can make a later one crash, and removing it
make it pass. So, unless the spec says `environment.shared_tmp: true`, each
attempt gets

    ATTEMPT/tmp/     as TMPDIR          (Python's tempfile, torch.compile's caches, mktemp)
    ATTEMPT/cache/   as XDG_CACHE_HOME  (pip, torch hub, and the like)

(childprotocol.child_env sets the variables, with the child's view of the
attempt folder: a container's), and both folders are removed after the attempt,
their size and file count recorded as a warning of the attempt. A local attempt
gets both under the engine's own `reprospec-tmp-<pid>-*` folder of the machine's
temporary directory instead, `N/tmp` and `N/cache`: short enough for the Unix
sockets programs make in TMPDIR wherever the run folder is,
and handed on. Such a pair
that the attempt left empty, as it was made, goes to the next attempt as it is:
empty is all an attempt must find, and a folder made and removed per attempt
costs more than its two system calls: ext4 without a journal skips the inodes
deleted in the last minute or more each time it allocates one, so every deletion
slows the creations after it (issue 15; the README's figures).

/dev/shm is the machine's (the local runner; a container has its own): the
named semaphores of multiprocessing (`sem.mp-*`) and torch's shared-memory
files (`torch_*`) of a process killed at the wrong time stay there, filling a
tmpfs that the next attempt needs. After an attempt, such files that are new
since it started, are ours, and that no live process holds open or mapped are
removed and counted (so are multiprocessing's shared_memory blocks and heap arenas,
Intel OpenMP's and NCCL's files: SHM_PATTERNS); new files of other names are only
reported. With `shared_tmp: true` they are only counted. The
names do not say which process made them: with several engines on one machine
at once, a leak is removed (and counted) by whichever attempt ends first after
it appeared, which may be another engine's.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import functools
import itertools
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.units import format_size
from reprospec.core.words import PRIVATE_TMP_LEFT, noun, plural
from reprospec.process import leftovers, tree
from reprospec.process.childprotocol import CACHE_DIR as CACHE
from reprospec.process.childprotocol import TMP_DIR as TMP

SHM = Path("/dev/shm")
# The names of /dev/shm files that libraries make and a killed process leaves behind:
# multiprocessing's named semaphores (`sem.mp-*`), its shared_memory blocks (`psm_*`) and
# heap arenas (`pym-*`), torch's shared tensors (`torch_*`), Intel OpenMP's registration
# (`__KMP_REGISTERED_LIB_*`, libiomp5 under MKL) and NCCL's shared-memory transport
# (`nccl-*`). Removed after an attempt; a new file of any other name is only reported.
SHM_PATTERNS = ("sem.mp-*", "psm_*", "pym-*", "torch_*", "__KMP_REGISTERED_LIB_*", "nccl-*")
# File times come from the kernel's coarse clock, which may lag time.time_ns().
_CLOCK_SLACK_NS = 2_000_000_000
# How many names a warning lists.
_NAMES_SHOWN = 5
# A Unix socket's path has at most 107 bytes, and multiprocessing puts its listener at
# TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX (32 more): a DataLoader with workers fails with
# "AF_UNIX path too long" under a deep run folder: a local attempt's TMPDIR is the engine's
# short one (`_short_tmp`), wherever the run folder is.


@frozen
class Scratch:
    """An attempt's TMPDIR and XDG_CACHE_HOME, as the engine sees them.

    `mode`: set for a pair of the engine's folder (the st_mode both were made with),
    which the next attempt may take when this one leaves them as they were made.
    """

    tmp: Path
    cache: Path
    mode: int | None = None

    def folders(self) -> tuple[tuple[str, Path], ...]:
        return (("TMPDIR", self.tmp), ("XDG_CACHE_HOME", self.cache))


def prepare(attempt_dir: Path, *, socket_safe: bool = True) -> Scratch:
    """Create the attempt's empty TMPDIR and XDG_CACHE_HOME before the child starts.

    `socket_safe` (the local runner): an empty pair of the engine's own folder, whose
    TMPDIR is short enough for the Unix sockets programs make in it. It was so only where
    `ATTEMPT/tmp` was too long for them; a short run folder (`--out /o`) made and removed
    `ATTEMPT/tmp` and `ATTEMPT/cache` per attempt, a pair an attempt leaves empty is
    handed on instead (two mkdirs and two rmdirs, 0.15 ms of the engine's CPU an attempt,
    and each deletion slows the file system's later creations). Otherwise (a container,
    which sees the short /reprospec/attempt/tmp) `ATTEMPT/tmp` and `ATTEMPT/cache`.
    """
    if socket_safe:
        return _take_pair()
    tmp = attempt_dir / TMP
    cache = attempt_dir / CACHE
    cache.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    return Scratch(tmp, cache)


# Per engine (pid: a forked engine has its own): the pairs attempts left as they were made.
_free_pairs: dict[int, list[Scratch]] = {}


def _take_pair() -> Scratch:
    """An empty TMPDIR and XDG_CACHE_HOME of the engine's folder: a free pair, else new."""
    with _engine_lock:
        free = _free_pairs.get(os.getpid(), [])
        while free:
            pair = free.pop()
            # Gone meanwhile (a /tmp cleaner, the engine's folder removed): not handed out.
            if pair.tmp.is_dir() and pair.cache.is_dir():
                return pair
    folder = _short_folder()
    tmp, cache = folder / TMP, folder / CACHE
    tmp.mkdir()
    cache.mkdir()
    return Scratch(tmp, cache, mode=tmp.lstat().st_mode)


def _as_made(folder: Path, mode: int) -> bool:
    """Whether `folder` is still the empty folder the engine made (not a symlink, same mode
    and owner): then it is handed to the next attempt as it is."""
    try:
        info = folder.lstat()
        if info.st_mode != mode or info.st_uid != os.getuid():
            return False  # a symlink or a file in its place, or chmod'ed
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False


# A short TMPDIR is a numbered folder of the engine's own folder, named after its pid, so
# a later engine can tell the folder of an engine that was killed (SIGKILL: no cleanup
# ran) and remove it. One folder per engine, made and watched once, not one per attempt:
# a mkdtemp and two words to the watchdog per attempt add up over hundreds of short
# attempts (issue 15).
ORPHAN_PREFIX = "reprospec-tmp-"
_engine_folders: dict[tuple[str, int], Path] = {}
_engine_lock = threading.Lock()
_numbers = itertools.count(1)


def _short_folder() -> Path:
    """A new empty folder for one attempt, under the engine's own short folder."""
    base = _short_tmp()
    for _ in range(100):
        root = _engine_folder(base)
        folder = root / str(next(_numbers))
        try:
            folder.mkdir()
        except FileExistsError:
            continue  # made by an attempt (its TMPDIR/..): the next number
        except FileNotFoundError:
            # Someone removed the engine's folder (a /tmp cleaner, an attempt): a new one.
            with _engine_lock:
                if _engine_folders.get((base, os.getpid())) == root:
                    del _engine_folders[(base, os.getpid())]
            continue
        return folder
    raise FileExistsError(f"could not make a new temporary folder in {base}")


def _engine_folder(base: str) -> Path:
    # Keyed by pid too: a forked engine (a test's) makes its own.
    key = (base, os.getpid())
    with _engine_lock:
        root = _engine_folders.get(key)
        if root is None:
            _sweep_orphans(base)
            root = Path(tempfile.mkdtemp(prefix=f"{ORPHAN_PREFIX}{os.getpid()}-", dir=base))
            leftovers.watch_path(root)  # removed by the watchdog if the engine is killed
            atexit.register(_remove_engine_folder, root, os.getpid())
            _engine_folders[key] = root
        return root


def _remove_engine_folder(root: Path, owner: int) -> None:
    if os.getpid() != owner:
        return  # a forked child of the engine that exits: the folder is not its own
    shutil.rmtree(root, ignore_errors=True)
    leftovers.unwatch_path(root)


def sweep_orphans(base: str, prefix: str = ORPHAN_PREFIX) -> None:
    """Remove the folders `PREFIX<pid>-*` in `base` of engines (of this user) that are gone."""
    try:
        # Names, a Path only for ours: a shared /tmp holds hundreds of other programs'
        # entries, and a Path and a parse of each was about 1 ms of a sweep's 1.5 (800
        # entries; a run sweeps twice: issue 30, item 4).
        names = os.listdir(base)  # noqa: PTH208
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_text = name[len(prefix) :].partition("-")[0]
        if not pid_text.isdigit():
            continue
        path = Path(base, name)
        try:
            if path.lstat().st_uid != os.getuid() or not path.is_dir():
                continue
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


_sweep_orphans = functools.cache(sweep_orphans)  # once per engine and folder


def _short_tmp() -> str:
    system = tempfile.gettempdir()
    return system if len(system) <= 40 else "/tmp"


def clean(scratch: Scratch) -> tuple[str, ...]:
    """Remove the attempt's TMPDIR and XDG_CACHE_HOME; a warning saying what they held.

    A pair of the engine's folder left as it was made is kept for the next attempt.
    """
    mode = scratch.mode
    if mode is not None and _as_made(scratch.tmp, mode) and _as_made(scratch.cache, mode):
        with _engine_lock:
            _free_pairs.setdefault(os.getpid(), []).append(scratch)
        return ()
    parts: list[str] = []
    left: list[str] = []
    for variable, folder in scratch.folders():
        try:
            folder.rmdir()  # what most attempts leave: nothing, removed without a walk
        except FileNotFoundError:
            continue
        except OSError:
            if folder.is_symlink():
                # The attempt put a link in its place: the link goes, never what it points to.
                with contextlib.suppress(OSError):
                    folder.unlink()
                parts.append(f"{variable}: replaced by a symbolic link")
                continue
            files, size, names = _contents(folder)
            if files:
                shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if files > _NAMES_SHOWN else "")
                parts.append(f"{variable}: {plural(files, 'file')}, {format_size(size)} ({shown})")
            remove_folder(folder)
            if folder.exists():
                left.append(str(folder))
                continue
    if mode is not None:
        with contextlib.suppress(OSError):
            scratch.tmp.parent.rmdir()  # the pair's numbered folder
    warnings = []
    if parts:
        warnings.append(PRIVATE_TMP_LEFT + "; ".join(parts))
    if left:
        warnings.append(f"could not remove all of {', '.join(left)}")
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


@frozen
class ShmSnapshot:
    """The /dev/shm files of interest when an attempt started, and when that was."""

    started_ns: int
    names: frozenset[str]
    root: Path = SHM


def shm_snapshot(root: Path = SHM) -> ShmSnapshot:
    """Take the snapshot just before an attempt starts."""
    return ShmSnapshot(time.time_ns(), frozenset(_shm_names(root)), root)


def shm_leaks(before: ShmSnapshot) -> list[Path]:
    """Files created since `before`, owned by us, held by no live process (any name)."""
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
        if not stat.S_ISREG(info.st_mode):
            continue  # a folder (joblib's memmapping one) or a link: never ours to judge
        candidates.append((path, (info.st_dev, info.st_ino)))
    if not candidates:
        return []
    # The engine's own processes first (another attempt of this run running now: the
    # usual holder); all of /proc only for what they do not hold, since a process outside
    # the engine (another engine's attempt) may hold a file too.
    own = tree.own_tree()
    if own is not None:
        held = held_files(before.root, pids=[str(pid) for pid in own])
        candidates = [(path, key) for path, key in candidates if key not in held]
        if not candidates:
            return []
    held = held_files(before.root)
    return [path for path, key in candidates if key not in held]


def remove_shm_leaks(before: ShmSnapshot, *, remove: bool = True) -> tuple[str, ...]:
    """Remove (or with `remove=False` only count) the attempt's /dev/shm leaks; a warning."""
    found = shm_leaks(before)
    leaks = [path for path in found if _known(path.name)]
    strangers = sorted(path.name for path in found if not _known(path.name))
    said = _strangers(before.root, strangers) if strangers else ()
    if not leaks:
        return said
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
        return said
    names = _names(removed)
    if remove:
        return (
            f"removed {len(removed)} leaked {before.root} {noun(len(removed), 'file')}: {names}",
            *said,
        )
    return (
        f"{len(removed)} leaked {before.root} {noun(len(removed), 'file')} left in place "
        f"(environment.shared_tmp): {names}",
        *said,
    )


def _known(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SHM_PATTERNS)


def _names(names: Sequence[str]) -> str:
    return ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")


def _strangers(root: Path, names: Sequence[str]) -> tuple[str, ...]:
    """New files of names no known library makes: said, never removed. /dev/shm is the
    machine's, and a name says nothing of who made it (another program of this user may
    have, at the same time); the attempt's own /dev/shm is what makes removal safe."""
    return (
        f"{len(names)} new {root} {noun(len(names), 'file')} not removed (not a name reprospec "
        f"knows to clean): {_names(names)}; `environment.shm_size` gives each attempt a private "
        f"{root} that goes with it",
    )


def held_files(
    root: Path = SHM, proc: Path = Path("/proc"), pids: Iterable[str] | None = None
) -> set[tuple[int, int]]:
    """(device, inode) of every file under `root` some live process (of `pids`: all of
    them by default) has open or mapped.

    By inode, not by name: glibc's sem_open maps a temporary file and only then
    links it under its name, so /proc/PID/maps shows `sem.XXXXXX (deleted)`.
    """
    prefix = str(root) + "/"
    held: set[tuple[int, int]] = set()
    for entry in _pids(proc) if pids is None else pids:
        held.update(_mapped(proc / entry / "maps", prefix))
        held.update(_open_fds(proc / entry / "fd", prefix))
    return held


def _pids(proc: Path) -> Iterable[str]:
    # Names, not a Path per entry: /proc has one per process of the machine (issue 15).
    try:
        return [entry for entry in os.listdir(proc) if entry.isdigit()]  # noqa: PTH208
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
        links = list(fd_dir.iterdir())
    except OSError:
        return ()
    found = []
    for link in links:
        try:
            # The target as the kernel wrote it (`/dev/shm/x (deleted)`, `socket:[N]`), a str.
            if not os.readlink(link).startswith(prefix):  # noqa: PTH115
                continue
            info = link.stat()  # the open file itself, even when unlinked
        except OSError:
            continue
        found.append((info.st_dev, info.st_ino))
    return found


def _shm_names(root: Path) -> Sequence[str]:
    # Twice per attempt, before and after: the names alone (a Path per entry, as
    # iterdir makes, cost more than the listing of a /dev/shm that holds a few).
    try:
        return os.listdir(root)  # noqa: PTH208 (names, not a Path each)
    except OSError:
        return ()


def remove_folder(path: Path) -> None:
    """Remove a folder of an attempt (its TMPDIR, its XDG_CACHE_HOME) and what it holds.

    Once per attempt, and most hold a few files or none: a scandir and an unlink each,
    where shutil.rmtree's fd-safe walk costs about a millisecond per folder. Every process
    of the attempt is gone by then, so nothing swaps a folder for a symlink under us;
    subfolders (rare) and anything unexpected go to shutil.rmtree all the same.
    """
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)  # noqa: PTH108 (a DirEntry's path)
        os.rmdir(path)  # noqa: PTH106
    except FileNotFoundError:
        return
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
