"""A process limit for every attempt, so a fork bomb fills its own table, not the machine's.

An attempt whose command forks without end (a bug, or a stranger's spec) used to
exhaust the machine's pid table: nothing else could start, the engine's own error
paths failed, and thousands of processes outlived it. Each attempt now runs under
ATTEMPT_MAX_PROCESSES (docs/limits.md, "Processes"):

- in a pids cgroup of its own (cgroup v1's pids hierarchy, as root or where the
  engine's cgroup is delegated): the root joins it itself between its fork and its
  exec (`procs_file`: the starter, the preexec_fn or the preload server's fork writes
  0 there), so it and all it starts are inside from the program's first instruction,
  and the engine's threads and other attempts are not;
- else, not as root, an RLIMIT_NPROC on the root, set before it runs (the starter or
  the preexec_fn set it; it counts the user's threads, so it is set to what the user runs
  now plus the limit; root ignores it);
- else nothing: `Limit.note` says so once.

An engine killed before it removed an attempt's cgroup (SIGKILL, the OOM killer)
leaves an empty folder: the next engine's first attempt sweeps it (`sweep`).

The cgroup also makes the end certain: `kill` stops (SIGSTOP) every process the
cgroup lists before it kills any, so a growing tree cannot fork between the reading
and the killing, and a cgroup with pids.max cannot outgrow what is read.

The cgroups are pooled: an attempt takes one that an ended attempt left empty (one per
attempt running at once, so about one per `-j` slot) and gives it back empty; they are
removed when the engine exits; each keeps its pids.events open meanwhile, read with one
pread at each attempt's end. Making, limiting and removing a cgroup per attempt was a
mkdir, a write and an rmdir on cgroupfs for each one, a fifth of the engine's own time
per attempt of `true`; the engine's thread joining and leaving it around each start was
two more writes (the root joining costs the engine none).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import resource
import signal
import threading
import time
from pathlib import Path
from typing import NamedTuple

from reprospec.core.lazyre import Lazy
from reprospec.process import memcgroup

# Processes (threads, for cgroup v1) one attempt may have at once.
ATTEMPT_MAX_PROCESSES = 4096
# The engine's tests and a machine's operator may lower it (never raise it past the bound).
MAX_PROCESSES_VAR = "REPROSPEC_MAX_PROCESSES"
KILL_WAIT_S = 5.0
_root_cache: list[Path | None] = []
_swept: list[bool] = []  # the stale cgroups are swept once per engine
# Compiled at the first sweep: where no pids cgroup is writable, a run never sweeps.
_STALE = Lazy(r"reprospec-(\d+)-\d+")
# Empty cgroups of this engine, ready for the next attempt: (folder, pids.max set in it,
# its pids.events "max" count so far). Guarded by _pool_lock.
_pool: list[tuple[Path, int, int]] = []
_made: list[Path] = []
# The pids.events of each cgroup of the pool, open from the cgroup's making to its removal
# (guarded by _pool_lock where it changes): read with one pread at every attempt's end,
# where an open, a read and a close each time cost the engine about 7 us of its 18 us of
# `release` (issue 30, item 5). A pread at offset 0 makes the file anew (seq_file), unlike
# cgroup.procs, whose v1 list a kept descriptor reads as it was up to a second before
# (cgroup_pidlist_start), so that one is opened at each read.
_events: dict[Path, int] = {}
_numbers = itertools.count()
_pool_lock = threading.Lock()


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class Limit(NamedTuple):
    """One attempt's process limit: its cgroup folder, or none (then `note` says why).

    `refused_before`: the cgroup's count of refused forks when the attempt took it (a
    pooled cgroup keeps the counts of the attempts before)."""

    cgroup: Path | None
    max_processes: int
    note: str = ""
    refused_before: int = 0


def max_processes() -> int:
    """ATTEMPT_MAX_PROCESSES, or less when REPROSPEC_MAX_PROCESSES says so."""
    text = os.environ.get(MAX_PROCESSES_VAR, "")
    if text.isdigit() and 0 < int(text) < ATTEMPT_MAX_PROCESSES:
        return int(text)
    return ATTEMPT_MAX_PROCESSES


def _own_pids_root() -> Path | None:
    """The engine's own folder in the cgroup v1 pids hierarchy, when it can hold children."""
    if _root_cache:
        return _root_cache[0]
    found: Path | None = None
    # memcgroup's reading of the mounts and of this process's cgroups, not one of its own.
    mount = next(
        (
            point
            for point, kind, options in memcgroup.mounts()
            if kind == "cgroup" and "pids" in options.split(",")
        ),
        None,
    )
    if mount is not None:
        folder = Path(mount) / memcgroup.own_cgroup("pids").lstrip("/")
        if os.access(folder, os.W_OK) and (folder / "cgroup.procs").is_file():
            found = folder
    _root_cache.append(found)
    return found


def create() -> Limit:
    """The limit for an attempt: an empty pids cgroup of the pool, or a new one where one
    can be made."""
    limit = max_processes()
    root = _own_pids_root()
    if root is None:
        note = "" if os.geteuid() != 0 else "no pids cgroup to limit attempts' processes"
        return Limit(None, limit, note)
    if not _swept:
        _swept.append(True)
        sweep(root)
    with _pool_lock:
        taken = _pool.pop() if _pool else None
        number = next(_numbers)
    if taken is not None:
        folder, limit_set, refused = taken
        try:
            if limit_set != limit:  # REPROSPEC_MAX_PROCESSES changed since (the tests do)
                _write(folder / "pids.max", f"{limit}\n")
        except OSError:
            pass
        else:
            return Limit(folder, limit, refused_before=refused)
    folder = root / f"reprospec-{os.getpid()}-{number}"
    try:
        folder.mkdir()
        _write(folder / "pids.max", f"{limit}\n")
    except OSError as exc:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return Limit(None, limit, f"cannot make a pids cgroup ({exc.strerror or exc})")
    with _pool_lock:
        if not _made:
            atexit.register(_remove_pool)
        _made.append(folder)
        with contextlib.suppress(OSError):  # without it, `_refused` opens the file
            _events[folder] = os.open(folder / "pids.events", os.O_RDONLY | os.O_CLOEXEC)
    return Limit(folder, limit)


def sweep(root: Path) -> list[Path]:
    """Remove the cgroups an engine that was killed (SIGKILL, the OOM killer) left behind.

    Its watchdog kills the attempt's processes, but no one removes the empty
    `reprospec-<pid>-<tag>` folder: each engine's first attempt sweeps those whose
    engine is gone and that are empty (what one still holds is `run --resume`'s to report
    and end). Returns what it removed.
    """
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for folder in entries:
        name = _STALE.fullmatch(folder.name)
        if name is None or int(name[1]) == os.getpid() or _engine_alive(int(name[1])):
            continue
        # Only an empty one goes: what a folder still holds is a dead engine's attempt,
        # which `run --resume` finds, reports and ends (leftovers.py), never silently.
        with contextlib.suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def _engine_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive, not ours to judge
    return True


@functools.lru_cache(maxsize=256)  # the pool's few cgroups, each asked at every attempt
def _file(folder: Path, name: str) -> str:
    """A file of a pooled cgroup, as the str os.open takes: made once per cgroup, where a
    Path joined per attempt cost more than the write to it."""
    return os.path.join(folder, name)  # noqa: PTH118


def _write(path: Path | str, text: str) -> None:
    """One write to a cgroup file (os calls: a file object adds three system calls)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path: Path | str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 20).decode()
    finally:
        os.close(fd)


def join(procs: str) -> None:
    """Move the calling process into the cgroup whose cgroup.procs is `procs`: what an
    attempt's root does before it runs without the starter (start.py), as starter.c does."""
    _write(procs, "0\n")


def procs_file(limit: Limit) -> str | None:
    """The attempt's cgroup.procs, which the attempt's root joins itself before it runs
    anything (it writes 0 there: start.py, a preload server's fork)."""
    return None if limit.cgroup is None else _file(limit.cgroup, "cgroup.procs")


def _remove_pool() -> None:
    """At the engine's exit: remove the pooled cgroups (all empty: each attempt's was killed)."""
    with _pool_lock:
        folders = list(_made)
        _made.clear()
        _pool.clear()
        _close_events(folders)
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def user_limit(limit: Limit) -> int | None:
    """Without a cgroup, not as root: the RLIMIT_NPROC the root gets, what the user runs now
    plus the limit; None where a cgroup limits it, or as root (whom RLIMIT_NPROC does not
    bind). The kernel counts the user's threads, not processes: a user with a process of
    4,000 threads had every attempt's threads refused at a limit sized by processes.
    """
    if limit.cgroup is not None or os.geteuid() == 0:
        return None
    return user_threads(os.getuid()) + limit.max_processes


def user_threads(uid: int) -> int:
    """The threads of `uid`'s processes now: one stat of each /proc/PID/task, whose link
    count is its threads plus two (procfs)."""
    count = 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    task = Path(entry.path, "task").stat()
                    if task.st_uid == uid:
                        count += max(1, task.st_nlink - 2)
    return count


def after_start(pid: int, nproc: int | None) -> None:
    """A root the engine could not start with its RLIMIT_NPROC (a preload server's fork):
    set it now."""
    if nproc is not None:
        with contextlib.suppress(OSError, ValueError):
            resource.prlimit(pid, resource.RLIMIT_NPROC, (nproc, nproc))


def members(limit: Limit) -> set[int]:
    """The processes in the attempt's cgroup now (none without one)."""
    if limit.cgroup is None:
        return set()
    try:
        text = _read(_file(limit.cgroup, "cgroup.procs"))
    except OSError:
        return set()
    return {int(word) for word in text.split()}


def kill(limit: Limit) -> int:
    """Stop, then kill, every process in the attempt's cgroup until it is empty; how many."""
    return _kill(limit)[0]


def _kill(limit: Limit) -> tuple[int, bool]:
    """`kill`; and whether the cgroup was read empty at the end (not: the deadline came)."""
    seen: set[int] = set()
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline:
        pids = members(limit)
        if not pids:
            return len(seen), True
        seen |= pids
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        time.sleep(0.01)
    return len(seen), False


def _close_events(folders: list[Path]) -> None:
    """Close the kept pids.events of `folders` (under _pool_lock): their cgroups go."""
    for folder in folders:
        fd = _events.pop(folder, -1)
        if fd >= 0:
            os.close(fd)


def release(limit: Limit, *, left_nothing: bool = False) -> tuple[int, bool]:
    """At the attempt's end: `kill`, then `remove`, with one read of each cgroup file where
    the cgroup is empty (every attempt's end). How many processes were killed, and whether
    a fork of the attempt was refused by its pids.max (its pids.events count grew since the
    attempt took the cgroup).

    `left_nothing`: the engine knows no process of the attempt is left, alive or dead (its
    root waited for, and the engine's children, where every orphan of the attempt goes,
    hold none: tree.only_known_children), so the cgroup is empty without a read of
    cgroup.procs (three system calls and 5 us at every attempt's end). Its pids.events is
    read all the same: a fork refused to a program that went on leaves no process behind."""
    killed, empty = (0, True) if left_nothing else _kill(limit)
    refused = _refused(limit)
    remove(limit, empty=empty, refused=refused)
    return killed, refused > limit.refused_before


def remove(limit: Limit, *, empty: bool = False, refused: int | None = None) -> None:
    """Give the attempt's cgroup back to the pool (`kill` first): it must be empty; one that
    is not (a process that would not die) is removed once it is, or left. `empty`: it was
    read empty since the last process of the attempt ended; `refused`: its pids.events
    count, read since (`release`)."""
    if limit.cgroup is None:
        return
    if empty or not members(limit):
        with _pool_lock:
            if limit.cgroup in _made:
                count = _refused(limit) if refused is None else refused
                _pool.append((limit.cgroup, limit.max_processes, count))
                return
    with _pool_lock:
        _close_events([limit.cgroup])
    for _ in range(50):
        try:
            limit.cgroup.rmdir()
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.02)  # the last killed are leaving the cgroup
            continue
        break
    with _pool_lock, contextlib.suppress(ValueError):
        _made.remove(limit.cgroup)


def _refused(limit: Limit) -> int:
    """The cgroup's count of forks refused by its pids.max so far (pids.events' `max`)."""
    if limit.cgroup is None:
        return 0
    fd = _events.get(limit.cgroup, -1)
    try:
        text = (
            os.pread(fd, 4096, 0).decode() if fd >= 0 else _read(_file(limit.cgroup, "pids.events"))
        )
    except OSError:
        return 0
    return max_count(text)


def events_of(pid: int) -> str | None:
    """The pids.events file of the pids cgroup process `pid` is in (cgroup v1's pids
    hierarchy, else v2's unified one), as this engine's mounts show it; None where there
    is none to read (no such mount, the process gone). A container's: its engine removes
    the cgroup as the container ends, so its count is read while it lives. None too where
    it is this engine's own cgroup's (the process's cgroup not seen from here, a
    container's engine that does not put it in one of its own): that file outlives the
    container, and its count is not the container's."""
    mounts = memcgroup.mounts()
    try:
        groups = _proc_lines(f"{pid}/cgroup")
        own = _proc_lines("self/cgroup")
    except OSError:
        return None
    found = _events_in(groups, mounts)
    return None if found is None or found == _events_in(own, mounts) else found


def _proc_lines(name: str) -> list[str]:
    return Path("/proc", name).read_text(errors="surrogateescape").splitlines()


def notifies(events: str) -> bool:
    """Whether the kernel tells of a change of pids.events file `events` (POLLPRI on it):
    cgroup v2's (its folder has cgroup.controllers); v1's does not."""
    return (Path(events).parent / "cgroup.controllers").exists()


def _events_in(groups: list[str], mounts: list[tuple[str, str, str]]) -> str | None:
    """The pids.events file of the cgroup `groups` (a /proc/PID/cgroup's lines) name, in
    `mounts` (memcgroup.mounts)."""
    for line in groups:
        _, controllers, relative = [*line.split(":", 2), "", ""][:3]
        v1 = "pids" in controllers.split(",")
        if not v1 and controllers:
            continue
        for point, kind, options in mounts:
            pids = "pids" in options.split(",")
            if (v1 and kind == "cgroup" and pids) or (not v1 and kind == "cgroup2"):
                path = Path(point) / relative.lstrip("/") / "pids.events"
                if path.is_file():
                    return str(path)
    return None


def refused_in(events: str) -> int:
    """The count of forks refused in the cgroup whose pids.events is `events` (0 where it
    cannot be read: gone)."""
    try:
        return max_count(_read(events))
    except OSError:
        return 0


def max_count(text: str) -> int:
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["max"] and len(words) == 2 and words[1].isdigit():
            return int(words[1])
    return 0


def fork_failed(exc: OSError) -> bool:
    """Whether `exc` is a fork refused for want of a process slot (EAGAIN)."""
    import errno

    return exc.errno == errno.EAGAIN
