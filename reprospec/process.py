"""The one place that starts, watches and kills process trees.

An attempt is a child in its own session, tagged with a token in its environment
that every descendant inherits. Its output is pumped into sinks (capture.py) by
the calling thread; at the timeout (or on cancel) every Python process of the
attempt is asked for its stacks before the whole tree is killed; whatever the
outcome, no process of the attempt survives `run_process`.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from reprospec import native as native_stacks
from reprospec.capture import Sink
from reprospec.models import ChildExit
from reprospec.signals import signal_name

TOKEN_VAR = "REPROSPEC_ATTEMPT_TOKEN"
STACK_DIR_VAR = "REPROSPEC_STACK_DIR"
STACKDUMP_DIR = Path(__file__).resolve().parent / "stackdump"

STACK_WAIT_S = 1.0
PY_SPY_TIMEOUT_S = 0.8
KILL_WAIT_S = 2.0
DRAIN_WAIT_S = 1.0
_READ_SIZE = 1 << 16
_PR_SET_CHILD_SUBREAPER = 36
_F_SETPIPE_SZ = 1031

_subreaper_lock = threading.Lock()
_subreaper_done = False


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


def utc_now() -> str:
    """The current time as ISO-8601 UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_token() -> str:
    """A fresh attempt token."""
    return uuid.uuid4().hex


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


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


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


def find_attempt_processes(token: str, root_pid: int | None = None) -> dict[int, ProcInfo]:
    """Every process of an attempt: the root's process group, its descendants, and token holders."""
    needle = f"{TOKEN_VAR}={token}".encode()
    me = os.getpid()
    uid = os.getuid()
    infos: dict[int, ProcInfo] = {}
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me:
            continue
        info = _proc_info(pid)
        if info is None:
            continue
        infos[pid] = info
        if root_pid is not None and (pid == root_pid or info.pgid == root_pid):
            found.add(pid)
            continue
        with contextlib.suppress(OSError):
            # Only our own processes can carry the token (and be read).
            if os.stat(f"/proc/{pid}").st_uid == uid and _has_token(pid, needle):
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
        exe = os.path.basename(os.readlink(f"/proc/{info.pid}/exe"))
    except OSError:
        exe = os.path.basename(info.cmdline.split(" ", 1)[0])
    return exe.startswith("python") or exe.startswith("pypy")


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _py_spy_dumps(pids: Sequence[int], budget_s: float) -> dict[int, str]:
    """`py-spy dump` for each pid in parallel, bounded; only successful dumps are returned."""
    exe = shutil.which("py-spy")
    if exe is None or not pids or budget_s <= 0:
        return {}
    running: dict[int, subprocess.Popen[bytes]] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            running[pid] = subprocess.Popen(
                [exe, "dump", "--pid", str(pid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
    deadline = time.monotonic() + budget_s
    dumps: dict[int, str] = {}
    for pid, spy in running.items():
        try:
            out, _ = spy.communicate(timeout=max(0.01, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(spy.pid, signal.SIGKILL)
            spy.communicate()
            continue
        if spy.returncode == 0 and out.strip():
            dumps[pid] = out.decode("utf-8", "replace")
    return dumps


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
    for pid in asked:
        with contextlib.suppress(OSError):
            text = (stack_dir / f"stack-{pid}.txt").read_bytes().decode("utf-8", "replace")
            if text.strip():
                dumps[pid] = text
    silent = [pid for pid, info in alive.items() if pid not in dumps and _looks_like_python(info)]
    spied = _py_spy_dumps(silent, PY_SPY_TIMEOUT_S)
    if not dumps and not spied:
        return None
    order = sorted(alive, key=lambda pid: (pid != root_pid, pid))
    parts: list[str] = []
    for pid in order:
        cmd = _short(alive[pid].cmdline, 200)
        if pid in dumps:
            parts.append(f"--- pid {pid} ({cmd}) ---\n{dumps[pid].rstrip()}\n")
        elif pid in spied:
            parts.append(f"--- pid {pid} ({cmd}) [py-spy] ---\n{spied[pid].rstrip()}\n")
        elif pid in silent:
            note = "(no Python stack: the process did not answer)"
            parts.append(f"--- pid {pid} ({cmd}) ---\n{note}\n")
    out_path.write_text("\n".join(parts), encoding="utf-8")
    return out_path


def kill_attempt(token: str, root_pid: int | None, pgid: int | None) -> dict[int, ProcInfo]:
    """SIGKILL every process of the attempt until none is left; returns all it found."""
    seen: dict[int, ProcInfo] = {}
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        if pgid is not None:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
        procs = find_attempt_processes(token, root_pid)
        seen.update(procs)
        alive = [pid for pid, info in procs.items() if info.alive]
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(set(seen) - {root_pid}, wait_s=0)
        if not alive or time.monotonic() > deadline:
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
                if not os.path.exists(f"/proc/{pid}"):
                    left.discard(pid)
                continue
            if done == pid:
                left.discard(pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.005)
    return left


class _Pump:
    """Moves bytes from the child's pipes to sinks, and notices when the child exits."""

    def __init__(self, proc: subprocess.Popen[bytes], stdout: Sink, stderr: Sink) -> None:
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
                key.data.write(chunk)
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
) -> ProcessResult:
    """Run `argv` as an attempt in its own session and return once every process of it is gone.

    Adds REPROSPEC_ATTEMPT_TOKEN and REPROSPEC_STACK_DIR to `env`. Closes both sinks.
    With `native`, the attempt may dump core (read, then deleted, after it ends) and a
    hang's processes get gdb attached before they are killed (native.py).
    Raises OSError when the program cannot be started.
    """
    become_subreaper()
    token = new_token()
    stack_dir.mkdir(parents=True, exist_ok=True)
    child_env = {**env, TOKEN_VAR: token, STACK_DIR_VAR: str(stack_dir)}
    started = utc_now()
    started_wall = time.time()
    begin = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            # RLIMIT_CORE for the child only (one setrlimit between fork and exec).
            preexec_fn=native.preexec() if native is not None else None,
        )
    except BaseException:
        stdout.close()
        stderr.close()
        shutil.rmtree(stack_dir, ignore_errors=True)
        raise
    warnings: list[str] = []
    timed_out = interrupted = False
    stack: Path | None = None
    hang_native: native_stacks.NativeStacks | None = None
    child_exits: tuple[ChildExit, ...] = ()
    pump = _Pump(proc, stdout, stderr)
    try:
        deadline = begin + timeout_s if timeout_s and timeout_s > 0 else float("inf")
        while not pump.exited:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if cancel is not None and cancel.is_set():
                interrupted = True
                break
            wait = deadline - now
            if cancel is not None:
                wait = min(wait, 0.05)
            pump.step(min(wait, 3600.0))
        if timed_out or interrupted:
            procs = find_attempt_processes(token, proc.pid)
            child_exits = reap_orphans(procs, proc.pid)
            stack = collect_stacks(procs, stack_dir, stack_path, root_pid=proc.pid, pump=pump)
            if timed_out and native is not None:
                # The root first: at the deadline the processes gdb did not reach go without.
                order = sorted(procs, key=lambda pid: (pid != proc.pid, pid))
                alive = {pid: procs[pid].cmdline for pid in order if procs[pid].alive}
                hang_native = native.hang(alive, timed_out_at=deadline)
            kill_attempt(token, proc.pid, proc.pid)
            proc.wait()
            duration = time.monotonic() - begin
        else:
            proc.wait()
            duration = time.monotonic() - begin
            procs = find_attempt_processes(token, proc.pid)
            child_exits = reap_orphans(procs, proc.pid)
            leftovers = {pid: info for pid, info in procs.items() if info.alive}
            if leftovers:
                kill_attempt(token, proc.pid, proc.pid)
                names = ", ".join(
                    f"{pid} ({_short(info.cmdline, 60)})" for pid, info in leftovers.items()
                )
                warnings.append(
                    f"killed {len(leftovers)} process(es) left behind by the attempt: {names}"
                )
        drain_deadline = time.monotonic() + DRAIN_WAIT_S
        while pump.open_pipes and time.monotonic() < drain_deadline:
            pump.step(drain_deadline - time.monotonic())
        if pump.open_pipes:
            warnings.append(
                "the attempt's output was still open after its processes were killed: "
                "a process outside the attempt's reach holds it"
            )
    finally:
        if proc.poll() is None:
            # Only on an exception in the engine itself: never leave the tree behind.
            kill_attempt(token, proc.pid, proc.pid)
            proc.wait()
        pump.close()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        stdout.close()
        stderr.close()
        shutil.rmtree(stack_dir, ignore_errors=True)
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
