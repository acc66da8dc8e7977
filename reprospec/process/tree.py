"""The one place that starts, watches and kills process trees.

An attempt is a child in its own session, tagged with a token in its environment
that every descendant inherits. Its output is pumped into sinks (capture.py) by
the calling thread; at the timeout (or on cancel) every Python process of the
attempt is asked for its stacks before the whole tree is killed; whatever the
outcome, no process of the attempt survives `run_process`.

Escapes are closed three ways. Every process of the attempt carries its tag (a
soft RLIMIT_LOCKS, watchdog.py), which setsid, a cleared environment and a double
fork all keep: a descendant re-parented to the engine (the subreaper) is found by
it. The leader dies with the thread that started it (PR_SET_PDEATHSIG), and the
watchdog and the attempt's in-flight record (leftovers.py) end the rest when the
engine itself is killed. The tag and the death signal are set between fork and exec
by the starter (starter.c), so the engine vforks; without one, by a preexec_fn. Dead
processes re-parented to the engine are reaped as they appear (their wait status kept
for the attempt), not when the attempt ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import fcntl
import functools
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Protocol

from reprospec import native as native_stacks
from reprospec.core import capped
from reprospec.core.results import ChildExit
from reprospec.core.signals import signal_name
from reprospec.process import leftovers, pidlimit, starter, watchdog
from reprospec.process.output import Sink

TOKEN_VAR = "REPROSPEC_ATTEMPT_TOKEN"
STACK_DIR_VAR = "REPROSPEC_STACK_DIR"
STACKDUMP_DIR = Path(__file__).resolve().parent.parent / "stackdump"

STACK_WAIT_S = 1.0
PY_SPY_TIMEOUT_S = 0.8
KILL_WAIT_S = 2.0
DRAIN_WAIT_S = 1.0
_READ_SIZE = 1 << 16
# A process's stack dump is the child's to write: it is read as its head and tail, and
# stack.txt holds at most STACKS_TOTAL_BYTES of them (a fork bomb's 300 dumps included).
STACK_HEAD_BYTES = 512 << 10
STACK_TAIL_BYTES = 128 << 10
STACKS_TOTAL_BYTES = 4 << 20
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
# How often a running attempt's dead, re-parented processes are reaped.
ZOMBIE_SWEEP_S = 0.5
_F_SETPIPE_SZ = 1031

_subreaper_lock = threading.Lock()
_subreaper_done = False
# The tags of the attempts running now: a stray tagged zombie of no running attempt is
# reaped by whichever attempt ends next.
_running_tags: set[int] = set()
# The roots this engine started itself (popen_attempt) and has not yet waited for.
_running_roots: set[int] = set()
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


@dataclass(frozen=True)
class ProcInfo:
    """One process as seen in /proc."""

    pid: int
    ppid: int
    pgid: int
    state: str
    cmdline: str

    @property
    def alive(self) -> bool:
        """Running or sleeping, not a zombie waiting to be reaped."""
        return self.state not in ("Z", "X", "x")


@dataclass(frozen=True)
class ProcessResult:
    """What happened to one process tree."""

    returncode: int | None
    timed_out: bool
    interrupted: bool
    duration_s: float
    started: str
    finished: str
    stack_path: Path | None
    warnings: tuple[str, ...]
    # native-stacks.txt, when native stacks were asked for and something was found (native.py)
    native_path: Path | None = None
    # Descendants that died as orphans of ours (the subreaper) before the attempt ended.
    child_exits: tuple[ChildExit, ...] = ()
    # time.monotonic() when the root process was seen to end (or was killed).
    ended_at: float | None = None


class ChildHandle(Protocol):
    """The root process of an attempt as run_process drives it: a `subprocess.Popen`, or a
    process forked by a preload server and re-parented to the engine (forkserver.py)."""

    pid: int
    returncode: int | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


# Starts the attempt's root with the environment run_process built (token and stack dir
# in) and the attempt's tag (watchdog.py), which the root must carry.
Start = Callable[[Mapping[str, str], int], ChildHandle]


class AttemptLost(OSError):
    """The engine failed after the attempt's root started (its tree was killed): the
    attempt ran, so this is never "cannot start"."""


def _after_start_failure(exc: OSError) -> AttemptLost:
    why = "fork failed: process limit" if pidlimit.fork_failed(exc) else exc.strerror or str(exc)
    return AttemptLost(exc.errno, f"the engine lost the attempt after it started: {why}")


class OutputLost(OSError):
    """The attempt's output could not be written (a full disk): the attempt was stopped.

    Its own class, so a runner tells it from a program that could not be started.
    """


def utc_now() -> str:
    """The current time as ISO-8601 UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_token() -> str:
    """A fresh attempt token: 32 random hex digits (what uuid4 gives, without importing
    uuid, which imports platform, at every start-up)."""
    return os.urandom(16).hex()


def become_subreaper() -> bool:
    """Make this process adopt orphaned descendants (Linux; best effort, once per process).

    Double-forked and setsid'd descendants then reparent to us instead of init, so
    they stay findable and we reap them.
    """
    global _subreaper_done
    with _subreaper_lock:
        if _subreaper_done:
            return True
        if not sys.platform.startswith("linux"):
            return False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper_done = bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
        except (OSError, AttributeError):
            return False
        return _subreaper_done


# /proc is read through str paths and os calls in this file, no Path object per pid: a
# scan reads files of every process of the machine (33 ms at 1,085 processes, issue 15).
# Those lines carry a PTH noqa.
def _read(path: str) -> bytes:
    # os calls, no file object: open() adds an fstat, an isatty ioctl and an lseek to every
    # file, and the engine reads a dozen of these per attempt (issue 15). /proc files are
    # made on read; read until the end, since a large one comes in several pieces.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(chunks)


def _proc_info(pid: int) -> ProcInfo | None:
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ")".
    fields = stat[stat.rfind(b")") + 2 :].split()
    return ProcInfo(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        state=fields[0].decode(),
        cmdline="[" + stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode("utf-8", "replace") + "]",
    )


def _with_cmdline(info: ProcInfo) -> ProcInfo:
    try:
        cmdline = _read(f"/proc/{info.pid}/cmdline").rstrip(b"\0").replace(b"\0", b" ")
    except OSError:
        return info
    if not cmdline:
        return info
    return dataclasses.replace(info, cmdline=cmdline.decode("utf-8", "replace"))


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        environ = _read(f"/proc/{pid}/environ")
    except OSError:
        return False
    return needle in environ.split(b"\0")


def _children_of(pid: int) -> list[int]:
    """The children of every thread of `pid` (/proc/PID/task/TID/children); [] when unreadable."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")  # noqa: PTH208
    except OSError:
        return found
    for tid in tids:
        found.extend(_steady_children(f"/proc/{pid}/task/{tid}/children"))
    return found


def _steady_children(path: str) -> set[int]:
    """A `children` file read until two reads agree; every pid any read listed.

    The kernel writes the list a child at a time and, when the child it listed last is
    reaped meanwhile (an engine thread waiting for its root), goes on by position: the
    child after it is left out of that read (proc(5): reliable only with the children
    stopped). A skipping read lists the reaped child, which no later read does, so two
    equal reads in a row mean the first skipped nothing; the union keeps the reads'
    extra pids (dead or unrelated), which callers read and drop.
    """
    seen: set[int] = set()
    last: bytes | None = None
    for _ in range(4):
        try:
            text = _read(path)
        except OSError:
            break
        if text == last:
            break
        try:
            seen.update(int(c) for c in text.split())
        except ValueError:
            break
        last = text
    return seen


def _tree_readable() -> bool:
    """Whether the engine's own tree holds every process of its attempts, and can be read:
    it is a subreaper, and the kernel has the `children` files."""
    here = f"/proc/self/task/{threading.get_native_id()}/children"
    return _subreaper_done and os.path.exists(here)  # noqa: PTH110


def own_tree() -> list[int] | None:
    """Every descendant of this engine, or None when that cannot stand for the whole machine.

    The engine is a subreaper: an attempt's process that outlives its parent (a daemon,
    a setsid'd double fork) is re-parented to the engine, never to init, so all of an
    attempt's processes stay in the engine's own tree. Walking that tree reads a handful of
    files where a scan of /proc reads three per process of the machine (33 ms at 1,085
    processes, more than a `python -c pass` attempt). Without the subreaper, or without
    the kernel's `children` files, callers scan all of /proc as before.
    """
    if not _tree_readable():
        return None
    seen: list[int] = []
    stack = _children_of(os.getpid())
    visited: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in visited:
            continue
        visited.add(pid)
        seen.append(pid)
        stack.extend(_children_of(pid))
    return seen


def _all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]  # noqa: PTH208
    except OSError:
        return []


def find_attempt_processes(
    token: str, root_pid: int | None = None, tag: int | None = None
) -> dict[int, ProcInfo]:
    """Every process of an attempt: the root's process group, its descendants, and token holders.

    With `tag`, also the engine's own children that carry it: descendants that left
    the group and the environment (setsid, `env -i`) and were re-parented to us.

    Looked for in the engine's own process tree (see `own_tree`), else in all of /proc.
    """
    needle = f"{TOKEN_VAR}={token}".encode()
    me = os.getpid()
    uid = os.getuid()
    infos: dict[int, ProcInfo] = {}
    found: set[int] = set()
    # The engine's helpers (its watchdog, preload servers) belong to no attempt; a
    # server's children (its forks) are attempts all the same.
    helpers = _helper_pids()
    candidates = own_tree()
    if candidates is None:
        candidates = _all_pids()
    elif root_pid is not None and root_pid not in candidates:
        candidates.append(root_pid)  # not ours (a test's own Popen): read it all the same
    for pid in candidates:
        if pid == me or pid in helpers:
            continue
        info = _proc_info(pid)
        if info is None:
            continue
        infos[pid] = info
        if root_pid is not None and (pid == root_pid or info.pgid == root_pid):
            found.add(pid)
            continue
        if tag is not None:
            owner = watchdog.tag_of(pid)
            if owner == tag:
                found.add(pid)
                continue
            if watchdog.is_tag(owner):
                continue  # another attempt's (running alongside): its environment is not read
        with contextlib.suppress(OSError):
            # Only our own processes can carry the token (and be read).
            if os.stat(f"/proc/{pid}").st_uid == uid and _has_token(pid, needle):  # noqa: PTH116
                found.add(pid)
    # Descendants through parent links catch zombies and processes that dropped the token.
    children: dict[int, list[int]] = {}
    for info in infos.values():
        children.setdefault(info.ppid, []).append(info.pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found and child != me:
                found.add(child)
                stack.append(child)
    return {pid: _with_cmdline(infos[pid]) for pid in found}


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _catches_sigusr1(pid: int) -> bool:
    try:
        status = _read(f"/proc/{pid}/status")
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith(b"SigCgt:"):
            mask = int(line.split()[1], 16)
            return bool(mask & (1 << (signal.SIGUSR1 - 1)))
    return False


def _looks_like_python(info: ProcInfo) -> bool:
    try:
        exe = os.path.basename(os.readlink(f"/proc/{info.pid}/exe"))  # noqa: PTH115, PTH119
    except OSError:
        exe = os.path.basename(info.cmdline.split(" ", 1)[0])  # noqa: PTH119
    return exe.startswith("python") or exe.startswith("pypy")


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _py_spy_dumps(pids: Sequence[int], budget_s: float, out_dir: Path) -> dict[int, str]:
    """`py-spy dump` for each pid in parallel, bounded; only successful dumps are returned.

    Each dump goes to a file in `out_dir` and is read back head + tail: a recursion a
    million frames deep makes py-spy print a million lines.
    """
    exe = shutil.which("py-spy")
    if exe is None or not pids or budget_s <= 0:
        return {}
    running: dict[int, subprocess.Popen[bytes]] = {}
    for pid in pids:
        with contextlib.suppress(OSError), (out_dir / f"py-spy-{pid}.txt").open("wb") as out:
            running[pid] = subprocess.Popen(
                [exe, "dump", "--pid", str(pid)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
    deadline = time.monotonic() + budget_s
    dumps: dict[int, str] = {}
    for pid, spy in running.items():
        try:
            spy.wait(timeout=max(0.01, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(spy.pid, signal.SIGKILL)
            spy.wait()
            continue
        text = read_stack_dump(out_dir / f"py-spy-{pid}.txt")
        if spy.returncode == 0 and text.strip():
            dumps[pid] = text
    return dumps


def read_stack_dump(path: Path) -> str:
    """A stack dump's head and tail as text ('' when there is none)."""
    try:
        data = capped.head_tail(path, STACK_HEAD_BYTES, STACK_TAIL_BYTES)
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def wait_for_stack_files(
    stack_dir: Path, pids: Iterable[int], pause: Callable[[float], object] = time.sleep
) -> None:
    """Wait (at most STACK_WAIT_S) until each pid's `stack-PID.txt` is written out.

    `pause` passes the time: a plain sleep, or a step of the output pump so a
    child blocked on a full pipe can still write its dump.
    """
    pending = list(pids)
    sizes: dict[int, int] = {}
    done: set[int] = set()
    deadline = time.monotonic() + STACK_WAIT_S
    while len(done) < len(pending) and time.monotonic() < deadline:
        pause(0.02)
        for pid in pending:
            size = _file_size(stack_dir / f"stack-{pid}.txt")
            # Non-empty and unchanged since the last look: faulthandler has finished writing.
            if size and size == sizes.get(pid):
                done.add(pid)
            sizes[pid] = size


def collect_stacks(
    procs: Mapping[int, ProcInfo],
    stack_dir: Path,
    out_path: Path,
    root_pid: int | None = None,
    pump: _Pump | None = None,
) -> Path | None:
    """Ask every Python process for its stacks and write them into `out_path`.

    SIGUSR1 goes only to processes that catch it (our sitecustomize registered
    faulthandler there); py-spy, when installed, covers the Python processes that
    produced nothing. Returns `out_path` when some stack was written.
    """
    alive = {pid: info for pid, info in procs.items() if info.alive}
    asked: list[int] = []
    for pid in alive:
        if _catches_sigusr1(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGUSR1)
                asked.append(pid)
    wait_for_stack_files(stack_dir, asked, pump.step if pump is not None else time.sleep)
    dumps: dict[int, str] = {}
    skipped: set[int] = set()
    budget = STACKS_TOTAL_BYTES
    for pid in sorted(asked, key=lambda pid: (pid != root_pid, pid)):
        if budget <= 0:
            skipped.add(pid)  # the root's and the first ones' are in; memory stays bounded
            continue
        text = read_stack_dump(stack_dir / f"stack-{pid}.txt")
        if text.strip():
            dumps[pid] = text
            budget -= len(text)
    silent = [
        pid
        for pid, info in alive.items()
        if pid not in dumps and pid not in skipped and _looks_like_python(info)
    ]
    spied = _py_spy_dumps(silent, PY_SPY_TIMEOUT_S, stack_dir) if budget > 0 else {}
    if not dumps and not spied:
        return None
    shown = [
        pid
        for pid in sorted(alive, key=lambda pid: (pid != root_pid, pid))
        if pid in dumps or pid in spied or pid in silent or pid in skipped
    ]
    parts: list[str] = []
    budget = STACKS_TOTAL_BYTES
    for index, pid in enumerate(shown):
        if budget <= 0:
            parts.append(f"[... the stacks of {len(shown) - index} more process(es) omitted ...]\n")
            break
        cmd = _short(alive[pid].cmdline, 200)
        if pid in dumps:
            parts.append(f"--- pid {pid} ({cmd}) ---\n{dumps[pid].rstrip()}\n")
        elif pid in spied:
            parts.append(f"--- pid {pid} ({cmd}) [py-spy] ---\n{spied[pid].rstrip()}\n")
        else:
            note = (
                "(stack omitted: the dumps above reached the limit)"
                if pid in skipped
                else "(no Python stack: the process did not answer)"
            )
            parts.append(f"--- pid {pid} ({cmd}) ---\n{note}\n")
        budget -= len(parts[-1])
    out_path.write_text("\n".join(parts), encoding="utf-8")
    return out_path


def kill_attempt(
    token: str, root_pid: int | None, pgid: int | None, tag: int | None = None
) -> dict[int, ProcInfo]:
    """SIGKILL every process of the attempt until none is left; returns all it found.

    Done only after a pass that finds nothing alive follows another such pass: a
    process re-parented to the engine while a pass read the tree (its parent dying of
    the SIGKILL between the read of our children and the read of its own) is missed by
    that pass alone. Its parent shows as dead only once the re-parenting is done, so
    the pass after sees it.
    """
    seen: dict[int, ProcInfo] = {}
    deadline = time.monotonic() + KILL_WAIT_S
    quiet_passes = 0
    while True:
        # Stopped first, killed after: a stopped process cannot fork, so a growing tree
        # (a fork bomb) cannot outrun the pass that reads it.
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            if pgid is not None:
                with contextlib.suppress(OSError):
                    os.killpg(pgid, sig)
        procs = find_attempt_processes(token, root_pid, tag)
        seen.update(procs)
        alive = [pid for pid, info in procs.items() if info.alive]
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        _reap(set(seen) - {root_pid}, wait_s=0)
        quiet_passes = 0 if alive else quiet_passes + 1
        if quiet_passes == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    # The last ones killed are zombies only now; orphans among them are ours to reap.
    _reap(set(seen) - {root_pid}, wait_s=max(0.0, deadline - time.monotonic()))
    return seen


def reap_orphans(procs: Mapping[int, ProcInfo], root_pid: int | None) -> tuple[ChildExit, ...]:
    """Reap the attempt's dead processes re-parented to us, and say how each one ended.

    A descendant whose parent exited before it died is ours to wait for (the
    subreaper): its wait status is the only record of a crash nobody printed.
    Call it before killing anything, so the statuses are the attempt's own doing.
    """
    me = os.getpid()
    exits: list[ChildExit] = []
    for pid in sorted(procs):
        info = procs[pid]
        if pid == root_pid or info.alive or info.ppid != me:
            continue
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if done != pid:
            continue
        if os.WIFSIGNALED(status):
            exits.append(ChildExit(pid, info.cmdline, signal=signal_name(os.WTERMSIG(status))))
        elif os.WIFEXITED(status):
            exits.append(ChildExit(pid, info.cmdline, exit_code=os.WEXITSTATUS(status)))
    return tuple(exits)


def _own_children() -> list[int]:
    """The pids of this process's children (every thread's), from /proc."""
    return _children_of(os.getpid())


def _only_known_children() -> bool:
    """Whether every child of the engine is a root of a running attempt or a helper.

    Then no process of an attempt that just ended (its root waited for) is left
    anywhere, and no stray of an earlier one: the engine is a subreaper, so a process
    that outlives its parent, or a zombie nobody reaped, becomes the engine's own child,
    never another attempt's. The search of `find_attempt_processes` and the zombie
    sweep read /proc files of every process of the running attempts, about 0.2 ms per
    attempt (issue 15); one look at the engine's children settles most attempts.
    """
    if not _tree_readable():
        return False
    known = _running_roots | _helper_pids()
    return all(pid in known for pid in _own_children())


def _exit_of(pid: int, status: int, cmdline: str) -> ChildExit | None:
    if os.WIFSIGNALED(status):
        return ChildExit(pid, cmdline, signal=signal_name(os.WTERMSIG(status)))
    if os.WIFEXITED(status):
        return ChildExit(pid, cmdline, exit_code=os.WEXITSTATUS(status))
    return None


def reap_tagged_zombies(tag: int | None, root_pid: int | None) -> tuple[ChildExit, ...]:
    """Reap the dead processes re-parented to us that carry `tag`, and say how each ended.

    Also reaps, without a word, the dead tagged processes of attempts no longer
    running (any tag of no running attempt): nobody else will. Never the root (its
    Popen waits for it) and never a process without a tag (a helper's own child).
    """
    exits: list[ChildExit] = []
    for pid in _own_children():
        if pid == root_pid:
            continue
        info = _proc_info(pid)
        if info is None or info.alive:
            continue
        owner = watchdog.tag_of(pid)
        if not watchdog.is_tag(owner) or (owner != tag and owner in _running_tags):
            continue
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if done == pid and owner == tag:
            ended = _exit_of(pid, status, info.cmdline)
            if ended is not None:
                exits.append(ended)
    return tuple(exits)


def _child_setup(tag: int, parent: int, then: Callable[[], None] | None) -> Callable[[], None]:
    """What the attempt's leader runs between fork and exec: its tag, death with its parent.

    Only async-signal-safe work here (the engine has threads): setrlimit and prctl.
    """

    def setup() -> None:
        with contextlib.suppress(OSError, ValueError):
            _, hard = resource.getrlimit(watchdog.TAG_RESOURCE)
            if hard == resource.RLIM_INFINITY or hard >= tag:
                resource.setrlimit(watchdog.TAG_RESOURCE, (tag, hard))
        if _LIBC is not None:
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(125)  # the engine died before the line above: nothing to run for
        if then is not None:
            then()

    return setup


def _reap(pids: set[int], wait_s: float) -> set[int]:
    """waitpid() each pid that became our child (subreaper); returns those still around."""
    left = set(pids)
    deadline = time.monotonic() + wait_s
    while left:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                # Not ours (yet): gone, or still waiting for its own parent to reap it.
                if not os.path.exists(f"/proc/{pid}"):  # noqa: PTH110
                    left.discard(pid)
                continue
            if done == pid:
                left.discard(pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.005)
    return left


def remove_stack_dumps(folder: Path) -> None:
    """Remove the per-process dumps of an attempt from its folder: each Python process's
    `stack-PID.txt` (empty unless it was asked) and py-spy's `py-spy-PID.txt`. stack.txt
    holds what they said; the logs and the rest of the folder stay."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                kind, dash, pid = entry.name.removesuffix(".txt").rpartition("-")
                if dash and kind in ("stack", "py-spy") and pid.isdigit():
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)  # noqa: PTH108 (a DirEntry's path)
    except OSError:
        return


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


def _lost(exc: OSError) -> OutputLost:
    return OutputLost(exc.errno, f"its output could not be written: {exc.strerror or exc}")


def _close_sinks(*sinks: Sink) -> None:
    """Close every sink; a failure (the tail written to a full disk) is OutputLost."""
    failure: OSError | None = None
    for sink in sinks:
        try:
            sink.close()
        except OSError as exc:
            failure = failure or exc
    if failure is not None:
        raise _lost(failure) from failure


class _Pump:
    """Moves bytes from the child's pipes to sinks, and notices when the child exits."""

    def __init__(self, proc: ChildHandle, stdout: Sink, stderr: Sink) -> None:
        self.proc = proc
        self.selector = selectors.DefaultSelector()
        self.exited = False
        self.open_pipes = 0
        self.pidfd = -1
        for pipe, sink in ((proc.stdout, stdout), (proc.stderr, stderr)):
            assert pipe is not None
            with contextlib.suppress(OSError):
                # Fewer, larger reads when the child floods its output.
                fcntl.fcntl(pipe.fileno(), _F_SETPIPE_SZ, 1 << 20)
            os.set_blocking(pipe.fileno(), False)
            self.selector.register(pipe.fileno(), selectors.EVENT_READ, sink)
            self.open_pipes += 1
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(proc.pid)
                self.selector.register(self.pidfd, selectors.EVENT_READ, None)

    def step(self, timeout: float) -> None:
        """Wait up to `timeout` for output or the child's exit, and handle what came."""
        if self.pidfd < 0 and not self.exited:
            # Without a pidfd, exits are only seen by polling.
            timeout = min(timeout, 0.02)
        for key, _ in self.selector.select(max(0.0, timeout)):
            if key.data is None:
                self.exited = True
                self.selector.unregister(key.fd)
                continue
            try:
                chunk = os.read(key.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                try:
                    key.data.write(chunk)
                except OSError as exc:
                    raise _lost(exc) from exc
            else:
                self.selector.unregister(key.fd)
                self.open_pipes -= 1
        if not self.exited and self.proc.poll() is not None:
            self.exited = True

    def close(self) -> None:
        """Release the selector and the pidfd."""
        self.selector.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


def popen_attempt(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    native: native_stacks.Capture | None = None,
    tag: int,
) -> subprocess.Popen[bytes]:
    """Start an attempt's root: its own session, stdin from /dev/null, stdout and stderr
    piped, the attempt's tag and death with the engine.

    Through the starter (starter.py) when this machine has one: the engine vforks it
    and it sets the tag and the death signal, then execs the root. Else the same is
    done by `_child_setup` in a preexec_fn. Either way a program that cannot be
    executed raises the OSError Popen raises.
    """
    cores = native is not None and native.dumps_cores()
    found = starter.find()
    if found.path is not None:
        try:
            return _through_starter(found.path, argv, env=env, cwd=cwd, tag=tag, cores=cores)
        except OSError as exc:
            if exc.filename != str(found.path):
                raise  # the command, or the working directory: not the starter
            starter.lost(str(exc))
    # The tag and PR_SET_PDEATHSIG; RLIMIT_CORE with `native`: the child's only.
    setup = _child_setup(tag, os.getpid(), native_stacks.allow_cores if cores else None)
    return _popen_root(list(argv), env=env, cwd=cwd, preexec_fn=setup)


def _through_starter(
    path: Path, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, tag: int, cores: bool
) -> subprocess.Popen[bytes]:
    """Start the root through the starter; an exec that fails raises as Popen's would."""
    program = _executable(argv[0], env, cwd)
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        try:
            # starter.c: ERRFD TAG PARENT CORES PATH ARGV0 [ARG...]
            args = [str(path), str(write_end), str(tag), str(os.getpid()), "01"[cores], program]
            proc = _popen_root([*args, *argv], env=env, cwd=cwd, pass_fds=(write_end,))
        finally:
            os.close(write_end)  # the starter holds its own copy
        # EOF once the root is exec'd (close-on-exec); errno if it could not be.
        failed = os.read(read_end, 4)
    finally:
        os.close(read_end)
    if failed:
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        raise starter.exec_error(failed, argv[0])
    return proc


def _popen_root(
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    pass_fds: tuple[int, ...] = (),
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """The root's process, either way: own session, stdin from /dev/null, output piped."""
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=_devnull(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=pass_fds,
        preexec_fn=preexec_fn,
    )


@functools.cache
def _devnull() -> int:
    # Every root's stdin: opened once (Popen's DEVNULL opens and closes it per child).
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def _executable(name: str, env: Mapping[str, str], cwd: Path) -> str:
    """The file the root's exec runs: `name` when it holds a slash, else the first
    executable file of that name on the child's PATH (as Popen looks it up)."""
    if os.sep in name:
        return name
    for folder in os.get_exec_path(dict(env)):
        candidate = os.path.join(cwd, folder, name)  # noqa: PTH118 (a relative PATH entry)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):  # noqa: PTH113
            return os.path.join(folder, name)  # noqa: PTH118
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


# The long-lived helpers started by start_helper (preload servers), by pid.
_helpers: dict[int, subprocess.Popen[bytes]] = {}


def _helper_pids() -> set[int]:
    """The engine's own helpers, its watchdog and preload servers, while not reaped.

    A helper not reaped keeps its pid (a zombie holds it), so no process of an
    attempt can have it; once reaped, its pid may be anyone's and is not skipped.
    """
    pids = {pid for pid, proc in list(_helpers.items()) if proc.returncode is None}
    dog = leftovers.watchdog_pid()
    if dog is not None:
        pids.add(dog)
    return pids


def start_helper(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, pass_fds: Sequence[int], log: Path
) -> subprocess.Popen[bytes]:
    """Start a long-lived helper of this engine (a preload fork server) in a session of its own.

    Its output goes to `log`; it gets no attempt token, so no attempt's search claims it.
    `stop_helper` ends it and everything in its process group.
    """
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    _helpers[proc.pid] = proc
    return proc


def stop_helper(proc: subprocess.Popen[bytes], grace_s: float = 1.0) -> None:
    """Let a helper exit on its own for `grace_s` (it was told to), else kill its group; reap it."""
    try:
        proc.wait(timeout=grace_s)
        return  # it waited for its own children: nothing is left in its group
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.returncode is not None:
            _helpers.pop(proc.pid, None)
    # Still running, so its process group is still its own: no reused id is hit.
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _helpers.pop(proc.pid, None)


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdout: Sink,
    stderr: Sink,
    timeout_s: float | None,
    stack_dir: Path,
    stack_path: Path,
    cancel: threading.Event | None = None,
    native: native_stacks.Capture | None = None,
    start: Start | None = None,
    record: Path | None = None,
) -> ProcessResult:
    """Run `argv` as an attempt in its own session and return once every process of it is gone.

    Adds REPROSPEC_ATTEMPT_TOKEN and REPROSPEC_STACK_DIR (`stack_dir`, an existing folder:
    the attempt's) to `env`; the dumps its processes leave there are removed after. Closes
    both sinks.
    With `native`, the attempt may dump core (read, then deleted, after it ends) and a
    hang's processes get gdb attached before they are killed (native.py). `record`:
    the attempt's in-flight record while it runs (leftovers.py: what `--resume` ends
    if the engine dies). `start` starts the root instead of `popen_attempt(argv, ...)`
    (a fork of a preload server: forkserver.py); the root must be in a session of its
    own and carry the tag. Raises OSError when the program cannot be started.
    """
    become_subreaper()
    token = new_token()
    tag = leftovers.new_tag()
    child_env = {**env, TOKEN_VAR: token, STACK_DIR_VAR: str(stack_dir)}
    started = utc_now()
    started_wall = time.time()
    begin = time.monotonic()
    flight = leftovers.Flight(record, token, tag)
    flight.begin()
    _running_tags.add(tag)
    limit = pidlimit.create(tag)
    proc: ChildHandle
    try:
        if start is not None:
            proc = start(child_env, tag)
        else:
            with pidlimit.starting_in(limit):
                proc = popen_attempt(argv, env=child_env, cwd=cwd, native=native, tag=tag)
            pidlimit.after_start(limit, proc.pid)
    except BaseException as exc:
        _running_tags.discard(tag)
        pidlimit.kill(limit)
        pidlimit.remove(limit)
        flight.end()
        stdout.close()
        stderr.close()
        remove_stack_dumps(stack_dir)
        if isinstance(exc, OSError) and pidlimit.fork_failed(exc):
            raise OSError(exc.errno, "fork failed: process limit", exc.filename) from None
        raise
    # A fork of a preload server is the server's child: its strays are looked for as ever.
    own_root = start is None
    if own_root:
        _running_roots.add(proc.pid)
    # Whether nothing of the attempt can be left: then no search, and no zombie to reap.
    nothing_left = False
    warnings: list[str] = []
    timed_out = interrupted = False
    stack: Path | None = None
    hang_native: native_stacks.NativeStacks | None = None
    # Reaped while the attempt ran (re-parented to us, dead): their wait statuses.
    reaped: tuple[ChildExit, ...] = ()
    child_exits: tuple[ChildExit, ...] = ()
    pump = _Pump(proc, stdout, stderr)
    finished_cleanly = False
    try:
        deadline = begin + timeout_s if timeout_s and timeout_s > 0 else float("inf")
        next_sweep = time.monotonic() + ZOMBIE_SWEEP_S
        while not pump.exited:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if cancel is not None and cancel.is_set():
                interrupted = True
                break
            if now >= next_sweep:
                reaped += reap_tagged_zombies(tag, proc.pid)
                next_sweep = now + ZOMBIE_SWEEP_S
            wait = min(deadline, next_sweep) - now
            if cancel is not None:
                wait = min(wait, 0.05)
            pump.step(min(wait, 3600.0))
        if timed_out or interrupted:
            procs = find_attempt_processes(token, proc.pid, tag)
            child_exits = reap_orphans(procs, proc.pid)
            stack = collect_stacks(procs, stack_dir, stack_path, root_pid=proc.pid, pump=pump)
            if timed_out and native is not None:
                # The root first: at the deadline the processes gdb did not reach go without.
                order = sorted(procs, key=lambda pid: (pid != proc.pid, pid))
                alive = {pid: procs[pid].cmdline for pid in order if procs[pid].alive}
                hang_native = native.hang(alive, timed_out_at=deadline)
            kill_attempt(token, proc.pid, proc.pid, tag)
            proc.wait()
            duration = time.monotonic() - begin
        else:
            proc.wait()
            duration = time.monotonic() - begin
            _running_roots.discard(proc.pid)
            nothing_left = own_root and _only_known_children()
            procs = {} if nothing_left else find_attempt_processes(token, proc.pid, tag)
            child_exits = reap_orphans(procs, proc.pid)
            left = {pid: info for pid, info in procs.items() if info.alive}
            if left:
                kill_attempt(token, proc.pid, proc.pid, tag)
                names = ", ".join(
                    f"{pid} ({_short(info.cmdline, 60)})" for pid, info in left.items()
                )
                warnings.append(
                    f"killed {len(left)} process(es) left behind by the attempt: {names}"
                )
        drain_deadline = time.monotonic() + DRAIN_WAIT_S
        while pump.open_pipes and time.monotonic() < drain_deadline:
            pump.step(drain_deadline - time.monotonic())
        if pump.open_pipes:
            warnings.append(
                "the attempt's output was still open after its processes were killed: "
                "a process outside the attempt's reach holds it"
            )
        finished_cleanly = True
    except OutputLost:
        raise
    except OSError as exc:
        # The root started: whatever failed here (a pid table full of the attempt's own
        # forks among them) is no reason to call it "cannot start", nor to leave its tree.
        lost = _after_start_failure(exc)
        raise lost from None
    finally:
        if not finished_cleanly:
            # An exception in the engine itself: never leave the tree behind, even when
            # its root is gone (a fork bomb's root exits at once).
            with contextlib.suppress(OSError):
                kill_attempt(token, proc.pid, proc.pid, tag)
            pidlimit.kill(limit)
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                proc.wait()
        elif proc.poll() is None:
            kill_attempt(token, proc.pid, proc.pid, tag)
            proc.wait()
        # What the cgroup still holds escaped the tag (or outran the kill): it goes too.
        if pidlimit.kill(limit):
            warnings.append(
                "killed processes of the attempt that outlived its other processes "
                "(found in its process-limit cgroup)"
            )
        if pidlimit.reached(limit):
            warnings.append(
                f"the attempt reached its process limit ({limit.max_processes} processes): "
                "forks failed (fork failed: process limit; docs/limits.md)"
            )
        pidlimit.remove(limit)
        _running_tags.discard(tag)
        _running_roots.discard(proc.pid)
        if not nothing_left:
            # Dead strays of attempts that already ended: nobody else will reap them.
            reap_tagged_zombies(None, None)
        flight.end()
        pump.close()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        remove_stack_dumps(stack_dir)
        _close_sinks(stdout, stderr)
    child_exits = (*reaped, *child_exits)
    finished = utc_now()
    native_path: Path | None = None
    if native is not None:
        # Every process is gone: each core is complete, and the attempt's to claim.
        found = native_stacks.merge(
            hang_native,
            native.crash(
                token, cwd, proc.pid, proc.returncode, started_wall, read_cores=not interrupted
            ),
        )
        if found is not None:
            native_path = native_stacks.write(found, native.out_dir)
            if found.unavailable and native_stacks.say_once(found.unavailable):
                warnings.append(found.unavailable)
    return ProcessResult(
        returncode=proc.returncode,
        timed_out=timed_out,
        interrupted=interrupted,
        duration_s=round(duration, 6),
        started=started,
        finished=finished,
        stack_path=stack,
        warnings=tuple(warnings),
        native_path=native_path,
        child_exits=child_exits,
        ended_at=begin + duration,
    )
