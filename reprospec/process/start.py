"""Start a process in a session of its own: an attempt's root, or a long-lived engine helper.

An attempt's root carries the attempt's tag (a soft RLIMIT_LOCKS, watchdog.py) and dies
with the engine thread that started it (PR_SET_PDEATHSIG). Both are set between fork
and exec by the starter (starter.c), so the engine vforks; without one, by a
preexec_fn. A helper (a preload fork server) gets neither: it is the engine's own, and
the tree search skips it (tree.HELPERS).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

from reprospec import native as native_stacks
from reprospec.core.recent import Recent
from reprospec.process import starter, tree, watchdog

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


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
# in) and the attempt's tag (watchdog.py), which the root must carry, and the cgroup.procs
# of the attempt's process limit (pidlimit.py), which a root not forked by the calling
# thread must join itself (None: none).
Start = Callable[[Mapping[str, str], int, str | None], ChildHandle]


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
