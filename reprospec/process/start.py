"""Start a process in a session of its own: an attempt's root, or a long-lived engine helper.

An attempt's root carries the attempt's tag (a soft RLIMIT_LOCKS, watchdog.py), dies
with the engine thread that started it (PR_SET_PDEATHSIG) and joins the attempt's pids
cgroup (pidlimit.py). All three are set between fork and exec by the starter
(starter.c), which the engine starts with posix_spawn; without one, by a preexec_fn
through Popen. A helper (a preload fork server) gets none: it is the engine's own, and
the tree search skips it (tree.HELPERS).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from reprospec import native as native_stacks
from reprospec.core.recent import Recent
from reprospec.process import pidlimit, starter, tree, watchdog

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


class Pipe(Protocol):
    """The engine's end of a pipe from the root, as run_process reads it (by descriptor)."""

    def fileno(self) -> int: ...

    def close(self) -> None: ...


class ChildHandle(Protocol):
    """The root process of an attempt as run_process drives it: a root the starter started
    (`SpawnedRoot`), a `subprocess.Popen`, or a process forked by a preload server and
    re-parented to the engine (forkserver.py)."""

    pid: int
    returncode: int | None

    @property
    def stdout(self) -> Pipe | None: ...

    @property
    def stderr(self) -> Pipe | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class _Descriptor:
    """A pipe's read end as a bare descriptor: run_process reads it with os.read, and a file
    object would cost an fstat, an ioctl and an lseek per pipe (two pipes an attempt)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


class SpawnedRoot:
    """An attempt's root started through the starter: what run_process asks of a Popen.

    Waited for as Popen waits (a root reaped by someone else reads as exit status 0, as
    Popen has it); `wait`'s timeout is not supported: run_process never gives one.
    """

    def __init__(self, pid: int, stdout: int, stderr: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = _Descriptor(stdout)
        self.stderr = _Descriptor(stderr)

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:  # noqa: ARG002 (ChildHandle protocol)
        while self.returncode is None:
            self._reap(0)
        return self.returncode

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)


# Starts the attempt's root with the environment run_process built (token and stack dir
# in) and the attempt's tag (watchdog.py), which the root must carry, and the cgroup.procs
# of the attempt's process limit (pidlimit.py), which a root not forked by the calling
# thread must join itself (None: none).
Start = Callable[[Mapping[str, str], int, str | None], ChildHandle]


def _child_setup(
    tag: int,
    parent: int,
    cgroup: str | None,
    then: Callable[[], None] | None,
    nproc: int | None = None,
) -> Callable[[], None]:
    """What the attempt's leader runs between fork and exec: its tag, death with its parent,
    its cgroup or its RLIMIT_NPROC (the starter's steps, starter.c).

    Only async-signal-safe work here (the engine has threads): setrlimit, prctl, a write.
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
        if cgroup is not None:
            with contextlib.suppress(OSError):
                pidlimit.join(cgroup)
        if nproc is not None:
            with contextlib.suppress(OSError, ValueError):
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if then is not None:
            then()

    return setup


def popen_attempt(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    native: native_stacks.Capture | None = None,
    tag: int,
    cgroup: str | None = None,
    nproc: int | None = None,
) -> ChildHandle:
    """Start an attempt's root: its own session, stdin from /dev/null, stdout and stderr
    piped, the attempt's tag, death with the engine, the cgroup whose cgroup.procs is
    `cgroup` joined (pidlimit.procs_file), and RLIMIT_NPROC `nproc` where no cgroup limits
    it (pidlimit.user_limit), both before the root runs anything.

    Through the starter (starter.py) when this machine has one: the engine spawns it
    and it sets the working directory, the tag, the death signal and the cgroup, then
    execs the root. Else the same is done by `_child_setup` in a Popen's preexec_fn.
    Either way a program (or working directory) that cannot be used raises the OSError
    Popen raises.
    """
    cores = native is not None and native.dumps_cores()
    found = starter.find()
    if found.path is not None:
        try:
            return _through_starter(
                found.path, argv, env=env, cwd=cwd, tag=tag, cores=cores, cgroup=cgroup,
                nproc=nproc,
            )  # fmt: skip
        except OSError as exc:
            if exc.filename != str(found.path):
                raise  # the command, or the working directory: not the starter
            starter.lost(str(exc))
    # The tag, PR_SET_PDEATHSIG and the cgroup; RLIMIT_CORE with `native`: the child's only.
    then = native_stacks.allow_cores if cores else None
    setup = _child_setup(tag, os.getpid(), cgroup, then, nproc)
    return _popen_root(list(argv), env=env, cwd=cwd, preexec_fn=setup)


# The signals Python ignores from its start, which Popen's restore_signals gives a child
# back at their default (an ignored signal stays ignored across exec).
_DEFAULT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)
)
# Where the child's stdin, stdout, stderr and the starter's error pipe go (starter.c: ERRFD).
_ERRFD = 3


def _through_starter(
    path: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    tag: int,
    cores: bool,
    cgroup: str | None,
    nproc: int | None = None,
) -> SpawnedRoot:
    """Start the root through the starter with posix_spawn; a chdir or exec that fails raises
    as Popen's would.

    posix_spawn (a vfork and the starter's exec, as Popen) with the environment encoded in
    C: Popen's Python side (every variable encoded in Python, the descriptors, the error
    pipe's protocol) cost the engine more than the rest of the start, per attempt. What
    Popen's options did is done the same: `start_new_session` (setsid), `restore_signals`
    (setsigdef), `close_fds` (the starter closes every descriptor above its error pipe),
    `cwd` (the starter's chdir, reported as Popen reports it).
    """
    program = _executable(argv[0], env, cwd)
    opened: list[int] = []
    try:
        out_read, out_write = _pipe(opened)
        err_read, err_write = _pipe(opened)
        fail_read, fail_write = _pipe(opened)
        # starter.c: ERRFD TAG PARENT CORES CWD CGROUP NPROC PATH ARGV0 [ARG...]
        args = [str(path), str(_ERRFD), str(tag), str(os.getpid()), "01"[cores], str(cwd)]
        limits = [cgroup or "", str(nproc) if nproc is not None else ""]
        pid = os.posix_spawn(
            str(path),
            [*args, *limits, program, *argv],
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, _devnull(), 0),
                (os.POSIX_SPAWN_DUP2, out_write, 1),
                (os.POSIX_SPAWN_DUP2, err_write, 2),
                (os.POSIX_SPAWN_DUP2, fail_write, _ERRFD),
            ],
            setsid=True,
            setsigdef=_DEFAULT_SIGNALS,
        )
        for fd in (out_write, err_write, fail_write):
            opened.remove(fd)
            os.close(fd)  # the starter holds its own copies
        # EOF once the root is exec'd (close-on-exec); errno and the step if it could not be.
        failed = os.read(fail_read, 8)
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise
    os.close(fail_read)
    if failed:
        os.waitpid(pid, 0)
        os.close(out_read)
        os.close(err_read)
        raise starter.exec_error(failed, argv[0], cwd)
    return SpawnedRoot(pid, out_read, err_read)


def _pipe(opened: list[int]) -> tuple[int, int]:
    """A close-on-exec pipe whose ends are above the child's descriptors 0-3 (posix_spawn's
    dup2 targets, which a source among them would clobber: only where the engine runs with
    some of 0-2 closed), both added to `opened`."""
    ends = os.pipe2(os.O_CLOEXEC)
    opened.extend(ends)
    return _above_errfd(ends[0], opened), _above_errfd(ends[1], opened)


def _above_errfd(fd: int, opened: list[int]) -> int:
    if fd > _ERRFD:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _ERRFD + 1)
    opened[opened.index(fd)] = moved
    os.close(fd)
    return moved


def _popen_root(
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """The root's process without a starter: own session, stdin from /dev/null, output piped."""
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=_devnull(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )


@functools.cache
def _devnull() -> int:
    # Every root's stdin: opened once (Popen's DEVNULL opens and closes it per child), above
    # the descriptors posix_spawn's dup2 writes to (_pipe).
    opened = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)]
    return _above_errfd(opened[0], opened)


def _executable(name: str, env: Mapping[str, str], cwd: Path) -> str:
    """The file the root's exec runs: `name` when it holds a slash, else the first
    executable file of that name on the child's PATH (as Popen looks it up)."""
    if os.sep in name:
        return name
    path = env.get("PATH", os.defpath)
    key = (name, path, str(cwd))
    kept = _FOUND.get(key, FOUND_TTL_S)
    if kept is not None:
        return kept
    # os.get_exec_path(env) without its copy of the environment and its warnings guard
    # (once per attempt): the child's environment is str to str.
    for folder in path.split(os.pathsep):
        candidate = os.path.join(cwd, folder, name)  # noqa: PTH118 (a relative PATH entry)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):  # noqa: PTH113
            return _FOUND.put(key, os.path.join(folder, name))  # noqa: PTH118
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


# A program's lookup on PATH, kept this long (seconds) by (name, PATH, working directory):
# attempts of a short command start many times a second, and the lookup stats every folder
# of PATH before the program's own (a tenth of starting the root, in Python). A program
# that goes away meanwhile fails at its exec as it would at the lookup; one installed
# into an earlier folder of PATH is found at most this late.
FOUND_TTL_S = 1.0
_FOUND: Recent[tuple[str, str, str], str] = Recent()


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
    tree.HELPERS[proc.pid] = proc
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
            tree.HELPERS.pop(proc.pid, None)
    # Still running, so its process group is still its own: no reused id is hit.
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    tree.HELPERS.pop(proc.pid, None)
