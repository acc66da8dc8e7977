"""Memory cgroups: where this engine is, and how many processes the kernel killed in one.

A process the kernel's OOM killer ends dies of SIGKILL: no core, no report of its own,
nothing on stderr but a shell's `Killed` or torch's `DataLoader worker (pid N) is killed
by signal: Killed.`, the same words as any `kill -9`. The kernel counts each such kill in
the memory cgroup of the process it killed, whether the memory ran out in that cgroup (a
container's, a Slurm job's, a systemd slice's limit) or on the whole machine: cgroup v1's
`memory.oom_control` and cgroup v2's `memory.events.local`, the line `oom_kill N`. An
attempt's processes live in the engine's own memory cgroup (`perturb.memory_limit` moves
them into one of their own, which perturb/apply.py reads), so that counter rising while an
attempt ran, where it died of SIGKILL, names the OOM killer (`OomWatch`).

The machine-wide count (`/proc/vmstat`'s `oom_kill`, Linux 4.13+, every kill of the
machine's: the whole machine's and each memory cgroup's, a container's and
`perturb.memory_limit`'s included) never names the OOM killer, for another user's kill on a
shared machine would read as this attempt's. It answers the other question: where it did
not rise while an attempt ran, the OOM killer killed nothing anywhere, so a SIGKILL a
process of the attempt died of was sent by a process (`timeout -s KILL`, someone's
`kill -9`), no crash of the program's (`OomWatch.none_anywhere`). Not read: v2's
hierarchical `memory.events`, which counts the kills in every cgroup below this one
(another test's memory limit, another engine's).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
import weakref
from pathlib import Path

from reprospec.core.units import format_size
from reprospec.core.words import oom_killed

# Where each kind of cgroup keeps its `oom_kill N` line: v2's own (not the subtree's), v1's.
_V2_COUNTER = "memory.events.local"
_V1_COUNTER = "memory.oom_control"
# And its memory limit: v2 writes `max` for none, v1 a number near 2^63.
_LIMITS = {_V2_COUNTER: "memory.max", _V1_COUNTER: "memory.limit_in_bytes"}
_NO_LIMIT = 2**60
# Every OOM kill of the machine (the kernel's OOM_KILL event, counted wherever it killed).
_MACHINE_COUNTER = Path("/proc/vmstat")
# How old a read of the machine's count a watch takes as its count before (`_machine_before`):
# the kernel sums every per-CPU counter of /proc/vmstat at each read (17 us of the engine's
# CPU, a read at each attempt's start and end), and the end of the attempt before read it a
# moment ago. A kill counted between that read and the watch's start counts as the attempt's
# (a SIGKILL then stays a crash, as where a kill is counted): the attempt read as begun at
# most this much earlier.
MACHINE_FRESH_S = 0.1
# The machine's count last read: (the moment before the read, time.monotonic(); the file;
# the count), under _watching_lock.
_machine_read: list[tuple[float, Path, int]] = []


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, filesystem type, super options) of each cgroup mount this process
    sees ([] where /proc/self/mountinfo cannot be read)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(errors="surrogateescape").splitlines()
    except OSError:
        return []
    return cgroup_mounts(lines)


def cgroup_mounts(lines: list[str]) -> list[tuple[str, str, str]]:
    """`mounts` of a mountinfo's lines: the one reading of them (this memory cgroup's
    counters, pidlimit's pids cgroups)."""
    out: list[tuple[str, str, str]] = []
    for line in lines:
        left, _, right = line.partition(" - ")
        parts, kinds = left.split(), right.split()
        if len(parts) >= 5 and len(kinds) >= 3 and kinds[0] in ("cgroup", "cgroup2"):
            out.append((parts[4], kinds[0], kinds[2]))
    return out


def own_cgroup(controller: str | None) -> str:
    """This process's cgroup path for `controller` (None: the v2 hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text(errors="surrogateescape").splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controller is None and controllers == "") or (
            controller is not None and controller in controllers.split(",")
        ):
            return path
    return "/"


def parent_for(mount: str, own: str) -> Path:
    """Our cgroup's folder inside the mount, else the mount's root (a container sees its
    own cgroup as the root): where to make a child cgroup, and where our counters are."""
    inside = Path(mount) / own.lstrip("/")
    return inside if inside.is_dir() else Path(mount)


def oom_kills(folder: Path) -> int:
    """How many processes of the cgroup the kernel killed for memory (0 if unknown)."""
    for name in ("memory.events", _V1_COUNTER):
        count = _read(folder / name)
        if count is not None:
            return count
    return 0


@functools.cache
def own_counter() -> Path | None:
    """The file that counts the OOM kills of this engine's own memory cgroup, or None
    (no memory controller here, or the v2 root, which keeps no such file). An engine
    never changes its cgroup: read once."""
    for mount, kind, options in mounts():
        if kind == "cgroup2":
            path = parent_for(mount, own_cgroup(None)) / _V2_COUNTER
        elif "memory" in options.split(","):
            path = parent_for(mount, own_cgroup("memory")) / _V1_COUNTER
        else:
            continue
        if _read(path) is not None:
            return path
    return None


# The watches of the attempts running now: a kill counted in the engine's cgroup while two
# ran is either's (one attempt's OOM kill was every parallel attempt's).
# Weak: a watch dropped without its `said()` (an error on the way) leaves with its owner.
_watching: weakref.WeakSet[OomWatch] = weakref.WeakSet()
_watching_lock = threading.Lock()


class OomWatch:
    """The OOM kills in the engine's memory cgroup between `__init__` and `said()`.

    `shared`: another attempt ran in the same cgroup for part of that time (`-j`), so a
    kill counted may have been its: `said()` says so, and the runner does not call the
    attempt's SIGKILL the OOM killer's."""

    def __init__(self) -> None:
        self._path = own_counter()
        self._fd = _held(self._path) if self._path is not None else None
        self._before = _pread(self._fd) if self._fd is not None else None
        self._machine_before = _machine_before()
        self.shared = False
        if self._fd is not None:
            with _watching_lock:
                for other in _watching:
                    other.shared = True
                self.shared = bool(_watching)
                _watching.add(self)

    def killed(self) -> int:
        """How many processes the kernel killed for memory since this watch began."""
        if self._fd is None or self._before is None:
            return 0
        after = _pread(self._fd)
        return max(0, after - self._before) if after is not None else 0

    def none_anywhere(self) -> bool:
        """Whether the kernel counted no OOM kill on the whole machine since this watch
        began: then no process of the attempt was the OOM killer's, whatever its cgroup,
        and a SIGKILL one died of was sent by a process. False where a kill was counted
        (anyone's: another attempt's, another user's) or the count cannot be read (a kernel
        before 4.13, no /proc): a SIGKILL then stays what it always read as, a crash."""
        after = _machine_count()
        return after is not None and after == self._machine_before

    def end(self) -> None:
        """End the watch unread, for an attempt none of whose processes can have been the
        OOM killer's (`none_killed`): `said` and `none_anywhere` are not asked."""
        with _watching_lock:
            _watching.discard(self)

    def said(self) -> str | None:
        """`the kernel's OOM killer killed 1 process in the attempt's memory cgroup (its
        limit: 200.0 MiB)`, or None where it killed none; the watch ends. A limit of an
        enclosing cgroup (a Slurm job's, above its step's) is not this folder's, and not
        said. A `shared` watch says the kills may have been another attempt's."""
        with _watching_lock:
            _watching.discard(self)
        kills = self.killed()
        if not kills or self._path is None:
            return None
        said = f"{oom_killed(kills)} in the attempt's memory cgroup"
        if self.shared:
            said = (
                f"{oom_killed(kills)} in the memory cgroup this attempt shared with others "
                "running at once (-j): not known to be this attempt's"
            )
        limit = _limit(self._path.parent / _LIMITS[self._path.name])
        return f"{said} (its limit: {format_size(limit)})" if limit is not None else said


def none_killed(descendants: bool | None, returncode: int | None) -> bool:
    """Whether an ended attempt can have lost no process to the OOM killer, from what the
    engine saw of it: it ran one process (no other was started, found or reaped:
    `ProcessResult.descendants` False), which did not die of SIGKILL, the OOM killer's
    only signal. Then its watch ends unread (`OomWatch.end`): a kill counted meanwhile was
    someone else's, and the counts only ever judge a SIGKILL of the attempt's; their reads
    at the end of every attempt (two, /proc/vmstat's the dearer) were about 0.05 ms of the
    engine's CPU per attempt of `true` (issue 30, item 5). The next watch's start then
    takes an older count of the machine's (`MACHINE_FRESH_S`), or reads it."""
    return descendants is False and returncode is not None and returncode != -signal.SIGKILL


def _machine_before() -> int | None:
    """The machine's OOM kills as a watch begins: the count read within MACHINE_FRESH_S,
    else read now (None: no count to read)."""
    now = time.monotonic()
    with _watching_lock:
        if _machine_read:
            at, path, count = _machine_read[0]
            if path == _MACHINE_COUNTER and now - at <= MACHINE_FRESH_S:
                return count
    return _machine_count()


def _machine_count() -> int | None:
    """The machine's OOM kills now (/proc/vmstat's `oom_kill`), kept for the next watch."""
    path = _MACHINE_COUNTER
    machine = _held(path)
    if machine is None:
        return None
    at = time.monotonic()  # before the read: the count holds every kill up to `at`
    count = _pread(machine)
    if count is not None:
        with _watching_lock:
            if not _machine_read or _machine_read[0][0] <= at:
                _machine_read[:] = [(at, path, count)]
    return count


def _limit(path: Path) -> int | None:
    """The memory limit in `path` (bytes), or None: no limit, or none readable."""
    with contextlib.suppress(OSError, ValueError):
        value = int(path.read_text().strip())
        return value if value < _NO_LIMIT else None
    return None


@functools.cache
def _held(path: Path) -> int | None:
    """`path` opened once for the engine's life (not inherited: Python's fds are
    close-on-exec): two reads per attempt at 2 us each, where opening it each time cost
    eight times as much, a few percent of the engine's own time per attempt."""
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _pread(fd: int) -> int | None:
    """The `oom_kill N` line's N, read afresh from the start of the open file (/proc/vmstat
    is 4 KB and grows with the kernel: 64 KB read)."""
    try:
        data = b"\n" + os.pread(fd, 65536, 0)
        start = data.index(b"\noom_kill ") + len(b"\noom_kill ")
        return int(data[start : data.index(b"\n", start)])
    except (OSError, ValueError):
        return None


def _read(path: Path) -> int | None:
    """The `oom_kill N` line's N, or None where the file or the line is missing."""
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    return None
