"""reprospec's fork server: import the preloaded modules once, then fork one attempt per request.

    python reprospec_forkserver.py FD MODULE... ROOM

(ROOM: a blank argument, room for an attempt's command line: see `_argv_slot`.)

The engine (reprospec/process/forkserver.py) starts one server per key: the interpreter,
the attempt's whole environment but for its per-attempt variables (so PYTHONPATH,
sitecustomize, OMP_*/MKL_*/TORCH_*/CUDA_* and every other variable read at import
time are the ones the attempt would have had), its workdir and the preload list.
The server imports the modules and nothing else (but `resource` and `faulthandler`, which
every fork imports): it never runs an op of what it
imported, because a thread pool or a CUDA context started here would be copied
into every fork without its threads, and the forks would hang in their first op.

Protocol, over the SOCK_SEQPACKET socket FD (one JSON object per message):

    server -> engine  {"ready": true, "pid": N, "threads": N, "openblas": bool,
                       "files": {module: the file its top-level package came from}}
                      or {"error": "ModuleNotFoundError: No module named 'torch'"}
    engine -> server  {"entry": {"kind": "script"|"module"|"code", "target": ..., "args": [...],
                       "argv0": ..., "options": [...]}, "env": {...}, "cwd": ..., "seed": N,
                       "cores": bool, "token": "...", "cgroup_procs": path or null,
                       "perturb": {"cpus": "0,1", "nice": "5", "cgroup": path,
                                   "memory": "BYTES", "refused": path}}
                      with two file descriptors
                       (the attempt's stdout and stderr)
    server -> engine  {"pid": N, "serial": N} or {"refused": "why this server cannot fork now"}
    server -> engine  {"exit": PID, "serial": N, "status": WAIT_STATUS, "stat": TEXT}  when an
                      attempt ends (TEXT: its /proc/PID/stat as a zombie, or null)

Before every fork the server checks that it still has exactly one thread and that
CUDA is not initialised in it; otherwise it refuses, and the engine runs that attempt
in a fresh process and says why. Each attempt is the server's child: the server reaps
it and sends its wait status; what the attempt leaves running when it ends is
re-parented to the engine (its subreaper), as for any attempt.

The attempt then becomes what a fresh `python ...` would have been: its own session
and process group (made, with its token, before the engine is told its pid), the
attempt's environment, working directory and core limit,
stdin from /dev/null and its logs on fd 1 and 2, faulthandler and the SIGURG stack
dump armed, `random`, numpy and torch reseeded from the attempt's seed,
`environment.perturb` applied (`_perturb_process`, `_perturb_interpreter`), then the
script, module (`-m`, the harness too) or code (`-c`) runs as `__main__`. It ends as
the interpreter's shutdown does (threads joined, atexit handlers, stdio flushed) but
without the teardown that follows (see `_finish`).

Standard library only; it imports nothing of the engine. End of the engine's socket
(the engine exited, even by SIGKILL) ends the server.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import socket
import sys
import time

# typing's constant without importing typing: the server imports no more than it must (what
# it has imported, every attempt starts with). Type checkers read the block below.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TypedDict

    class _EntryBase(TypedDict):
        kind: str  # "script" | "module" | "code"
        target: str
        args: list[str]

    class Entry(_EntryBase, total=False):
        """What the attempt runs (reprospec/process/preload.py's EntryPoint.to_json)."""

        argv0: str
        options: list[str]

    class _RequestBase(TypedDict):
        entry: Entry
        env: dict[str, str]
        cwd: str
        seed: int

    class Request(_RequestBase, total=False):
        """One attempt to fork, as the engine's reprospec/process/forkserver.py sends it."""

        tag: int
        cores: bool
        token: str
        cgroup_procs: str | None
        perturb: dict[str, str]


_MAX_MESSAGE = 1 << 22
# The placeholder the engine puts in the server's environment; each attempt writes its
# own token over it, in the environment block /proc/PID/environ shows (see _token_slot).
TOKEN_VAR = "REPROSPEC_ATTEMPT_TOKEN"
HERE = os.path.dirname(os.path.realpath(__file__))


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    sock.send(json.dumps(message).encode())


def _receive(sock: socket.socket) -> tuple[Request | None, list[int]]:
    """The next request and the file descriptors sent with it; (None, []) at the engine's end."""
    fds = array.array("i")
    data, ancillary, _flags, _addr = sock.recvmsg(_MAX_MESSAGE, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    request: Request = json.loads(data)  # the engine's own message: trusted as it is
    return request, list(fds)


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _unsafe() -> str | None:
    """Why forking this process now could hang or break the child; None when it is safe."""
    threads = _threads()
    if threads != 1:
        return (
            f"the preload server has {threads} threads (a preloaded module started a thread "
            "pool or ran an op at import); a fork copies their locks but not the threads, "
            "so the attempt could hang in its first parallel op"
        )
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    initialized = getattr(cuda, "is_initialized", None)
    if initialized is not None:
        try:
            if initialized():
                return "CUDA is initialised in the preload server; a forked child cannot use it"
        except Exception as exc:  # torch half-imported: do not fork what we cannot check
            return f"cannot tell whether CUDA is initialised in the preload server: {exc}"
    return None


def _stat_fields() -> list[bytes]:
    """/proc/self/stat after the command name: index N - 3 holds field N (1-based)."""
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rfind(b")") + 2 :].split()


def _argv_slot() -> tuple[int, int] | None:
    """(address, length) of the command line /proc/PID/cmdline shows (fields 48 and 49).

    The engine pads the server's command line so that an attempt's fits: a forked
    attempt (and its forked children) then show `python train.py ...` as a fresh one
    would, in `ps`, in stack dumps and in the words of a child's crash.
    """
    try:
        fields = _stat_fields()
        start, end = int(fields[45]), int(fields[46])
    except Exception:
        return None
    return (start, end - start) if 0 < start < end else None


def _write_argv(slot: tuple[int, int] | None, words: list[str]) -> None:
    if slot is None:
        return
    data = b"\0".join(os.fsencode(word) for word in words)[: slot[1] - 1]
    try:
        import ctypes

        ctypes.memmove(slot[0], data.ljust(slot[1], b"\0"), slot[1])
    except Exception:
        pass


def _token_slot() -> tuple[int, int] | None:
    """(address, length) of the token placeholder inside the process's first environment block.

    /proc/PID/environ shows that block, not what os.environ holds later: writing the
    attempt's token over the placeholder lets the engine find the attempt's processes
    (and claim their cores) by token, as it does for attempts it started itself.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_void_p
        libc.getenv.argtypes = [ctypes.c_char_p]
        address = libc.getenv(TOKEN_VAR.encode())
        value = os.environ.get(TOKEN_VAR, "")
        fields = _stat_fields()
        # env_start and env_end are fields 50 and 51 of /proc/PID/stat (1-based).
        env_start, env_end = int(fields[47]), int(fields[48])
    except Exception:
        return None
    if not address or not value or not env_start <= address < address + len(value) <= env_end:
        return None
    return address, len(value)


def _write_token(slot: tuple[int, int] | None, token: str) -> None:
    if slot is None or len(token) != slot[1]:
        return
    try:
        import ctypes

        ctypes.memmove(slot[0], token.encode(), slot[1])
    except Exception:
        pass


class Job:
    """What the forked attempt runs (only ever built in the attempt's process)."""

    def __init__(
        self,
        request: Request,
        fds: list[int],
        slot: tuple[int, int] | None,
        argv_slot: tuple[int, int] | None,
    ) -> None:
        self.request = request
        self.fds = fds
        self.slot = slot
        self.argv_slot = argv_slot
        # What the server had imported: what the attempt imports beyond it is worth telling.
        self.preloaded = frozenset(sys.modules)


# RLIMIT_LOCKS (Python's resource module has no name for it): its soft limit carries the
# attempt's tag, as the engine's watchdog.py sets it for a fresh attempt.
TAG_RESOURCE = 10
_PR_SET_PDEATHSIG = 1


def _tag(tag: object, server: int) -> None:
    """The attempt's tag, and death with the server (which ends with the engine)."""
    import resource

    if isinstance(tag, int):
        with contextlib.suppress(OSError, ValueError):
            _, hard = resource.getrlimit(TAG_RESOURCE)
            if hard == resource.RLIM_INFINITY or hard >= tag:
                resource.setrlimit(TAG_RESOURCE, (tag, hard))
    prctl = _prctl()
    if prctl is None:
        return
    try:
        prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)  # SIGKILL
    except Exception:
        return
    if os.getppid() != server:
        os._exit(125)  # the server is gone already: nothing to run for


_prctls: list[object] = []


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up once (in the server: every fork has it then)."""
    if not _prctls:
        try:
            import ctypes

            _prctls.append(ctypes.CDLL(None).prctl)
        except Exception:
            _prctls.append(None)
    found = _prctls[0]
    return found if callable(found) else None


def _join_cgroup(procs: object) -> None:
    """Into the attempt's pids cgroup (the engine's pidlimit.py) before anything runs: its
    process limit holds for the fork and all it starts, as for a fresh attempt's root."""
    if not isinstance(procs, str):
        return
    with contextlib.suppress(OSError):
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, b"0\n")
        finally:
            os.close(fd)


# The attempts running now: pid -> the serial the engine knows each one by.
_running: dict[int, int] = {}
_serials = [0]


def _reap(sock: socket.socket) -> None:
    """SIGCHLD: reap the attempts that ended and tell the engine how each one did, with the
    attempt's /proc/PID/stat read while it was still a zombie: its count of the children it
    reaped, which the engine reads of a root it waits for itself (process/tree.py
    `waited_for_children`), is gone with the wait. Read by the engine instead, it raced
    this reaping: the same program's attempts were judged two ways."""
    while True:
        try:
            # WNOWAIT: which attempt ended, left a zombie to read.
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if ended is None or ended.si_pid == 0:
            return
        pid = ended.si_pid
        stat: str | None = None
        with contextlib.suppress(OSError), open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read().decode("latin-1")
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            continue
        serial = _running.pop(pid, None)
        if serial is not None:
            with contextlib.suppress(OSError):
                _send(sock, {"exit": pid, "serial": serial, "status": status, "stat": stat})


def _fork_attempt(
    sock: socket.socket,
    request: Request,
    fds: list[int],
    slot: tuple[int, int] | None,
    argv_slot: tuple[int, int] | None,
) -> Job | None:
    """Fork the attempt: there, return its Job; here, reply and return None.

    The attempt is this server's child: the server reaps it (SIGCHLD) and sends the engine
    its wait status. Its own children that outlive it are re-parented to the engine, the
    subreaper, as any attempt's are. SIGCHLD stays blocked from the fork to the reply, so
    the engine hears of an attempt before it hears of its end.
    """
    import signal

    started, ready = os.pipe()
    server = os.getpid()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    pid = -1
    try:
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(started)
            os.close(ready)
            _send(sock, {"refused": f"fork failed: {exc}"})
            return None
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            # Its own session and process group, its tag and its token, before the engine
            # hears of it: the engine may kill its group or look for it at once.
            os.setsid()
            _join_cgroup(request.get("cgroup_procs"))
            _tag(request.get("tag"), server)
            _write_token(slot, request.get("token", ""))
            os.close(started)
            os.write(ready, b".")
            os.close(ready)
            sock.close()
            return Job(request, fds, slot, argv_slot)
        os.close(ready)
        for fd in fds:
            os.close(fd)
        os.read(started, 1)  # the attempt is set up (or died: end of file)
        os.close(started)
        _serials[0] += 1
        _running[pid] = _serials[0]
        _send(sock, {"pid": pid, "serial": _serials[0]})
        return None
    finally:
        if pid != 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


# The environment variables the preloaded modules' Python code read while they were
# imported (torch reads TORCH_LOGS, PYTORCH_JIT, TORCH_COMPILE_DEBUG, ... then): a program
# that sets one before its own `import torch` changes what a fresh interpreter's import does,
# and nothing in a fork, whose torch was imported by the server (see `_watch_environ`).
READ_AT_IMPORT: set[str] = set()
# Read with getenv by native libraries as they are loaded, which no Python code sees:
# OpenMP's and the BLAS libraries' thread settings (OMP_NUM_THREADS sizes torch's pool).
NATIVE_AT_LOAD = ("OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_")


@contextlib.contextmanager
def _reading_environ() -> Iterator[None]:
    """Record in READ_AT_IMPORT each variable read through os.environ meanwhile (a variable
    unset counts: setting it is what a program does before its import)."""
    environ = type(os.environ)
    read = environ.__getitem__

    def getitem(self: object, key: str) -> str:
        if self is os.environ and isinstance(key, str):
            READ_AT_IMPORT.add(key)
        return read(self, key)  # type: ignore[arg-type]

    environ.__getitem__ = getitem  # type: ignore[method-assign]
    try:
        yield
    finally:
        environ.__getitem__ = read  # type: ignore[method-assign]


def serve(fd: int, modules: list[str]) -> Job | None:
    """Import `modules`, say ready, then fork on request until the engine goes; None then."""
    sock = socket.socket(fileno=fd)
    # `python THIS_FILE` put this folder first on sys.path: an attempt never has it.
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == HERE:
        del sys.path[0]
    import importlib

    with _reading_environ():
        for name in modules:
            try:
                importlib.import_module(name)
            except BaseException as exc:  # the attempt would see the same: it runs fresh
                _send(sock, {"error": f"import {name} failed: {type(exc).__name__}: {exc}"})
                return None
    slot = _token_slot()
    argv_slot = _argv_slot()
    # What every fork does before the attempt runs, done here once instead (each fork
    # imported `resource` and `faulthandler` and looked up prctl again, and marked the
    # imports' finalizers in its own copy-on-write pages: 2 ms of each attempt).
    import faulthandler  # noqa: F401 (imported by every fork: _arm_fatal)
    import resource  # noqa: F401 (imported by every fork: _tag)

    _prctl()
    _skip_import_finalizers()
    # What the imports made is never collected in a fork: a collection there would touch
    # (and so copy) every page of it.
    import gc

    gc.freeze()
    maps = ""
    try:
        with open("/proc/self/maps", errors="replace") as f:  # a path need not be UTF-8
            maps = f.read()
    except OSError:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    files: dict[str, str | None] = {}
    for name in modules:
        top = sys.modules.get(name.split(".", 1)[0])
        files[name] = getattr(top, "__file__", None)
    import signal

    signal.signal(signal.SIGCHLD, lambda _signum, _frame: _reap(sock))
    _send(
        sock,
        {
            "ready": True,
            "pid": os.getpid(),
            "threads": _threads(),
            "openblas": "openblas" in maps,
            "files": files,
        },
    )
    while True:
        try:
            request, fds = _receive(sock)
        except OSError:
            return None
        if request is None:
            return None  # the engine closed its end, or died: so does the server
        refused = _unsafe()
        if refused is not None:
            for each in fds:
                os.close(each)
            _send(sock, {"refused": refused})
            continue
        job = _fork_attempt(sock, request, fds, slot, argv_slot)
        if job is not None:
            return job


# -- the attempt ---------------------------------------------------------------------------


def _stack_dump() -> None:
    """SIGURG -> every thread's stack into $REPROSPEC_STACK_DIR/stack-<pid>.txt.

    SIGURG: the engine's asking signal (core/signals.py's STACK_DUMP_SIGNAL), ignored by
    default, so a program's own SIGUSR1 stays its own.
    """
    import faulthandler
    import signal

    folder = os.environ.get("REPROSPEC_STACK_DIR")
    if not folder or not hasattr(signal, "SIGURG"):
        return
    try:
        handle = os.open(
            os.path.join(folder, f"stack-{os.getpid()}.txt"),
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
            0o644,
        )
    except OSError:
        return
    # chain=False: the engine's ask runs no other handler.
    faulthandler.register(signal.SIGURG, file=handle, all_threads=True, chain=False)


def _arm_fatal() -> None:
    """faulthandler as the engine's sitecustomize arms it in a fresh interpreter: the stack of
    the thread that took a fatal signal, every thread's where PYTHONFAULTHANDLER asks."""
    import faulthandler

    faulthandler.enable(all_threads=bool(os.environ.get("PYTHONFAULTHANDLER")))


def _skip_import_finalizers() -> None:
    """The weakref.finalize callbacks the preloaded modules registered stay out of the exit.

    They are the imports' teardown (torch registers some 130 that unregister its operator
    libraries): in a fork they copy-on-write what they touch, 30 ms of each attempt, and
    the teardown is skipped anyway (`_finish`). The server marks them once, before its
    first fork (marked in each fork, they cost 1 ms of its copy-on-write pages); the server
    itself skips them at its exit too, which frees nothing another process needs. The
    attempt's own finalizers, and every atexit handler (logging, multiprocessing, the
    DataLoader's), still run.
    """
    weakref = sys.modules.get("weakref")
    registry = getattr(getattr(weakref, "finalize", None), "_registry", None)
    if not isinstance(registry, dict):
        return
    for finalizer in list(registry):
        with contextlib.suppress(Exception):
            finalizer.atexit = False


def _reseed(seed: int) -> None:
    """Every fork would otherwise share the server's random state; a fresh process would not."""
    import random

    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        with contextlib.suppress(Exception):
            numpy.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            # A fresh interpreter seeds torch's CPU generator at random: so does this, from the
            # seed. Only that one: the server never started a device (CUDA is checked before
            # every fork), so the fork makes each device's generator at its first use, seeded
            # as a fresh interpreter's is. torch.manual_seed would queue a seeding of every
            # device, each with a formatted stack (linecache reads the source files): 5 ms of
            # every forked attempt.
            torch.default_generator.manual_seed(seed)
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None:
        with contextlib.suppress(Exception):
            # Made at import, from os.urandom: each fresh interpreter has its own.
            multiprocessing.current_process().authkey = os.urandom(32)


def _become(job: Job) -> None:
    """Turn this forked process into the attempt, run its entry point as `__main__`, exit."""
    request = job.request
    if request.get("cores"):
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out, err = job.fds
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (out, err):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    _write_argv(job.argv_slot, _command_line(request["entry"]))
    os.environ.clear()
    os.environ.update(request["env"])
    if "tempfile" in sys.modules:  # (imported already: the import only names it here)
        import tempfile

        tempfile.tempdir = None  # cached from the server's TMPDIR: the attempt has its own
    perturb = request.get("perturb") or {}
    _perturb_process(perturb)
    _perturb_interpreter()
    if "cpus" in perturb:
        _torch_threads_for_cpus()
    _arm_fatal()
    _stack_dump()
    _reseed(int(request["seed"]))
    _watch_environ()
    entry = request["entry"]
    if "-B" in entry.get("options", ()):
        sys.dont_write_bytecode = True
    status, interrupted = _run_main(entry)
    _say_missed(job.preloaded)
    _finish(status, interrupted)


# launch.py's exit status when a perturbation cannot be applied: the engine reads the reason.
EXIT_NOT_PERTURBED = 126


def _perturb_process(options: dict[str, str]) -> None:
    """environment.perturb's process part, as launch.py applies it before a fresh attempt's
    interpreter starts: its CPUs, nice value and memory cgroup, then RLIMIT_AS where no
    cgroup could be made (a limit: not applied, it is said and the attempt runs). A
    perturbation that cannot be applied ends the attempt as launch.py ends it: the reason in
    the `refused` file, exit 126, which the engine makes an infra-error."""
    refused = options.get("refused")
    for name, value in options.items():
        try:
            if name == "cpus":
                os.sched_setaffinity(0, {int(cpu) for cpu in value.split(",")})
            elif name == "nice":
                os.setpriority(os.PRIO_PROCESS, 0, int(value))
            elif name == "cgroup":
                fd = os.open(os.path.join(value, "cgroup.procs"), os.O_WRONLY)
                try:
                    os.write(fd, str(os.getpid()).encode())
                finally:
                    os.close(fd)
            elif name == "memory":
                import resource

                try:
                    resource.setrlimit(resource.RLIMIT_AS, (int(value), int(value)))
                except (OSError, ValueError) as exc:
                    sys.stderr.write(f"reprospec: memory not applied: {exc}\n")
            elif name != "refused":
                raise ValueError(f"the preload server cannot apply {name}")
        except Exception as exc:
            reason = f"perturb {name} {value} not applied: {exc}"
            with contextlib.suppress(Exception):
                sys.stderr.write(f"reprospec: {reason}\n")
                sys.stderr.flush()
            if refused:
                with contextlib.suppress(OSError):
                    fd = os.open(refused, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    os.write(fd, reason.encode("utf-8", "replace"))
                    os.close(fd)
            os._exit(EXIT_NOT_PERTURBED)


def _perturb_interpreter() -> None:
    """environment.perturb's interpreter part (REPROSPEC_PERTURB: `switch_interval=1e-06;
    gc=1,1,1;torch_threads=2;torch_interop_threads=2`), as the engine's sitecustomize applies
    it at a fresh interpreter's start: the server started without it, and a fork starts no
    interpreter. torch's pools are set now where the server imported torch, else right after
    the attempt imports it; the server never ran an op, so its inter-op pool is not started
    (set_num_interop_threads works only before that)."""
    text = os.environ.get("REPROSPEC_PERTURB")
    if not text:
        return
    settings = dict(item.split("=", 1) for item in text.split(";") if "=" in item)
    try:
        if "switch_interval" in settings:
            sys.setswitchinterval(float(settings["switch_interval"]))
        if "gc" in settings:
            import gc

            gc.set_threshold(*(int(n) for n in settings["gc"].split(",")))
        threads = settings.get("torch_threads")
        interop = settings.get("torch_interop_threads")
        if threads or interop:
            torch = sys.modules.get("torch")
            if torch is not None:
                _torch_threads(torch, threads, interop)
            else:
                _after_import("torch", lambda module: _torch_threads(module, threads, interop))
    except Exception as exc:
        _not_perturbed(exc)


def _torch_threads_for_cpus() -> None:
    """perturb.cpus in a fork of a server that imported torch: torch's intra-op pool is
    sized to the CPUs the attempt may use, as a fresh interpreter's torch sizes it when it
    loads under that affinity (OpenMP counts the affinity's CPUs), where the pool kept the
    server's size (2 threads on 1 CPU under cpus=1). Not where torch.num_threads sets it,
    nor where OMP_NUM_THREADS or MKL_NUM_THREADS does (a fresh start reads those; the
    server read the same ones). Where the attempt imports torch itself it loads under the
    affinity already."""
    torch = sys.modules.get("torch")
    text = os.environ.get("REPROSPEC_PERTURB") or ""
    if (
        torch is None
        or "torch_threads=" in text
        or "OMP_NUM_THREADS" in os.environ
        or "MKL_NUM_THREADS" in os.environ
    ):
        return
    try:
        cpus = len(os.sched_getaffinity(0))
        if torch.get_num_threads() > cpus:
            torch.set_num_threads(cpus)
    except Exception as exc:
        _not_perturbed(exc)


def _not_perturbed(exc: BaseException) -> None:
    """As the engine's sitecustomize says it: the attempt runs on (the report has its stderr)."""
    with contextlib.suppress(Exception):
        sys.stderr.write(f"reprospec: perturbation not applied: {type(exc).__name__}: {exc}\n")


def _torch_threads(torch: object, threads: str | None, interop: str | None) -> None:
    if threads:
        torch.set_num_threads(int(threads))  # type: ignore[attr-defined]
    if interop:
        torch.set_num_interop_threads(int(interop))  # type: ignore[attr-defined]


def _after_import(name: str, then: Callable[[object], None]) -> None:
    """Call `then(module)` once the attempt has imported `name` (its loader wrapped)."""
    import importlib.util

    class _Finder:
        def find_spec(
            self,
            fullname: str,
            path: object = None,  # noqa: ARG002 (the finder protocol)
            target: object = None,  # noqa: ARG002
        ) -> object:
            if fullname != name:
                return None
            sys.meta_path.remove(self)  # type: ignore[arg-type]
            spec = importlib.util.find_spec(fullname)
            loader = getattr(spec, "loader", None)
            if loader is None:
                return spec
            run = loader.exec_module

            def exec_module(module: object) -> None:
                run(module)
                try:
                    then(module)
                except Exception as exc:
                    _not_perturbed(exc)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())  # type: ignore[arg-type]


def _command_line(entry: Entry) -> list[str]:
    """The command line a fresh interpreter would have had: `python [-u] script.py ARGS`."""
    kind, target = entry["kind"], entry["target"]
    program = [entry.get("argv0") or sys.executable, *entry.get("options", ())]
    what = ["-m", target] if kind == "module" else ["-c", target] if kind == "code" else [target]
    return program + what + list(entry["args"])


def _run_main(entry: Entry) -> tuple[int, bool]:
    """Run the entry point as `python` would; (exit status, ended by KeyboardInterrupt).

    An uncaught exception is printed as the interpreter prints it (without this file's
    frames), SystemExit's code is the status as the interpreter makes it.
    """
    import builtins
    import types

    kind, target, args = entry["kind"], entry["target"], list(entry["args"])
    sys.orig_argv = _command_line(entry)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    try:
        if kind == "module":
            import runpy

            sys.argv = ["-m", *args]
            sys.path.insert(0, os.getcwd())
            # As `python -m`: runs in the (new) __main__ module, sys.argv[0] its file.
            runpy._run_module_as_main(target, alter_argv=True)  # type: ignore[attr-defined]
        elif kind == "code":
            sys.argv = ["-c", *args]
            sys.path.insert(0, "")
            main.__dict__.update(__spec__=None, __loader__=None)
            exec(compile(target, "<string>", "exec"), main.__dict__)
        else:
            path = os.path.abspath(target)
            try:
                with open(path, "rb") as f:
                    source = f.read()
            except OSError as exc:
                print(
                    f"{sys.executable}: can't open file {path!r}: [Errno {exc.errno}] "
                    f"{exc.strerror}",
                    file=sys.stderr,
                )
                return 2, False
            sys.argv = [target, *args]
            sys.path.insert(0, os.path.dirname(os.path.realpath(path)))
            from importlib.machinery import SourceFileLoader

            main.__dict__.update(
                __file__=path,
                __spec__=None,
                __cached__=None,
                __loader__=SourceFileLoader("__main__", path),
            )
            exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as exc:
        return _exit_status(exc), False
    except BaseException as exc:
        # What the interpreter does with an uncaught exception, without this file's frames.
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        # The hook prints the exception's own __traceback__: it must be the trimmed one.
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1, isinstance(exc, KeyboardInterrupt)
    return 0, False


def _exit_status(exc: SystemExit) -> int:
    """The status `python` exits with for this SystemExit (None 0, an int, else printed and 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr)
    return 1


def _watch_environ() -> None:
    """An event when the program sets or removes a variable the preloaded modules read as
    they were imported (READ_AT_IMPORT, NATIVE_AT_LOAD), once per variable.

    `os.environ["OMP_NUM_THREADS"] = "1"` before `import torch` gives a fresh interpreter's
    torch one thread; in a fork `import torch` is the server's module, which read the
    variable before the program ran, so the attempt may pass or fail where a fresh one would
    not. The engine turns the event into a warning of the attempt that names the variable
    (never its value: it may be a secret). Set at the attempt's start (the spec's
    `environment.env`), a variable is the server's own: its key holds it.
    """
    environ = type(os.environ)
    setitem, delitem = environ.__setitem__, environ.__delitem__
    start = dict(os.environ)
    said: set[str] = set()

    def changed(key: object, value: str | None) -> None:
        if (
            not isinstance(key, str)
            or key in said
            or start.get(key) == value
            or not (key in READ_AT_IMPORT or key.startswith(NATIVE_AT_LOAD))
        ):
            return
        said.add(key)
        _event({"event": "preload_environ", "name": key})

    def watched_set(self: object, key: str, value: str) -> None:
        setitem(self, key, value)  # type: ignore[arg-type]
        if self is os.environ:
            changed(key, value)

    def watched_del(self: object, key: str) -> None:
        delitem(self, key)  # type: ignore[arg-type]
        if self is os.environ:
            changed(key, None)

    environ.__setitem__ = watched_set  # type: ignore[method-assign]
    environ.__delitem__ = watched_del  # type: ignore[method-assign]


def _event(event: dict[str, object]) -> None:
    """One event appended to the attempt's $REPROSPEC_EVENTS (none without it)."""
    path = os.environ.get("REPROSPEC_EVENTS")
    if not path:
        return
    event = {"t": time.time(), **event}
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(event) + "\n").encode())
        finally:
            os.close(fd)


# An attempt that imported this many modules the server had not is told which.
MISSED_MODULES = 100


def _say_missed(preloaded: frozenset[str]) -> None:
    """An event naming the packages the attempt imported that the server had not.

    torch's optimizers import torch._dynamo (and sympy) at their first step: with only
    torch preloaded, every attempt pays that import again. The engine turns the event
    into a warning of the attempt.
    """
    new = [name for name in list(sys.modules) if name not in preloaded]
    if len(new) < MISSED_MODULES:
        return
    roots = {name.split(".", 1)[0] for name in preloaded}
    counts: dict[str, int] = {}
    for name in new:
        parts = name.split(".")
        # A new part of a preloaded package is named by its subpackage (torch._dynamo).
        key = ".".join(parts[:2]) if parts[0] in roots and len(parts) > 1 else parts[0]
        counts[key] = counts.get(key, 0) + 1
    biggest = sorted(counts.items(), key=lambda item: -item[1])[:3]
    _event(
        {
            "event": "preload_missed",
            "modules": len(new),
            "packages": [{"name": name, "modules": n} for name, n in biggest],
        }
    )


def _finish(status: int, interrupted: bool) -> None:
    """End as the interpreter's shutdown does, minus the teardown; never returns.

    Non-daemon threads are joined, atexit handlers run (the finalizers the preloaded
    modules registered excepted: `_skip_import_finalizers`) and stdio is flushed (a failed
    flush exits 120), as in Py_FinalizeEx. Then os._exit: the interpreter's module teardown
    and final collection, and the native libraries' exit handlers, are skipped. In a fork of a
    server holding torch they would copy-on-write most of its memory: 0.7-2 s, more than the
    attempt itself.
    """
    threading = sys.modules.get("threading")
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        with contextlib.suppress(BaseException):
            shutdown()
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            status = status or 120
    if interrupted:
        import signal

        # As the interpreter does after an uncaught KeyboardInterrupt: die of SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


if __name__ == "__main__":
    # Blank arguments are the room the engine leaves for an attempt's command line.
    _job = serve(int(sys.argv[1]), [arg for arg in sys.argv[2:] if arg.strip()])
    if _job is not None:
        _become(_job)  # a fork: the attempt, which never returns
    # The engine is done with this server. Its interpreter's teardown of what it imported
    # (torch's modules, atexit handlers, every object freed) is 0.15-0.2 s of CPU that
    # nothing reads, and the engine waits for it: end now (its log flushed).
    for _stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            _stream.flush()
    os._exit(0)
