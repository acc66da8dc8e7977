"""Preloaded fork servers (`run.preload`, `run --preload`): attempts forked from an interpreter
that already imported torch, instead of each paying `import torch` (1-3 s) again.

One server per key: the interpreter, the attempt's whole environment except its
per-attempt variables (so PYTHONPATH and sitecustomize, OMP_*/MKL_*/OPENBLAS_*/TORCH_*/
CUDA_* and any other variable a module reads at import are the attempt's own: a toggle
of one of them is another server), the workdir, and the preload list. The server
(`harness/reprospec_forkserver.py`, stdlib only, outside the engine's import graph)
imports the modules and nothing else, then forks one attempt per request. Each attempt
is re-parented to the engine and run by `process.run_process` like any other: same
pipes, timeout, stacks, kill and classification.

An attempt runs fresh instead, and says why (`Execution.launch_note`), when forking
could change what it does:

- its expectation is at import (`expect.phase: import`, `expect.module`): an import-time
  failure cannot happen in a process that imported already;
- its command is not a plain Python entry point (`python script.py`, `python -m mod`,
  `python -c code`; the harness is `python -m reprospec_harness`), or its workload
  imports modules before torch that the preload list does not import first;
- its `environment.memory`/`shm_size` must be in place before the imports;
- the directory a fresh interpreter would put first on sys.path has another copy of a
  preloaded module than the one the server imported;
- the server could not import the modules, or is unsafe to fork (more than one thread,
  CUDA initialised: checked by the server before every fork).
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import os
import select
import shlex
import socket
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from reprospec import native as native_stacks
from reprospec import process
from reprospec.childprotocol import CELL_VAR, STACK_DIR_VAR, TOKEN_VAR
from reprospec.harness import HARNESS_ROOT
from reprospec.models import AttemptPlan

SERVER_SCRIPT = HARNESS_ROOT / "reprospec_forkserver.py"
# Variables the engine sets per attempt: never in a server's environment or key; each
# forked attempt gets its own before its entry point runs.
PER_ATTEMPT_VARS = frozenset(
    {
        "REPROSPEC_EVENTS",
        "REPROSPEC_ENV_JSON",
        STACK_DIR_VAR,
        CELL_VAR,
        TOKEN_VAR,
        "TMPDIR",
        "XDG_CACHE_HOME",
    }
)
# The server's token: as long as a real one (a uuid's hex), overwritten in each attempt.
TOKEN_PLACEHOLDER = "-" * 32
# A blank last argument of the server: room for a forked attempt's own command line,
# which it writes over the server's (what /proc/PID/cmdline shows).
ARGV_ROOM = " " * 2048
# Servers alive at once (each holds its imports: a few hundred MB for torch); the least
# recently used one goes first.
MAX_SERVERS = 4
# A server that has not imported its modules by then is given up (an import that hangs).
READY_TIMEOUT_S = 120.0
REPLY_TIMEOUT_S = 60.0

Launch = Literal["fresh", "forked"]
EntryKind = Literal["script", "module", "code"]

_PYTHON_NAMES = ("python", "python3")
# Python options that change nothing a forked attempt would not get as well.
_HARMLESS_OPTIONS = ("-u", "-B")
# Outside quotes these make /bin/sh do more than run one program with these words.
_SHELL_SPECIAL = set("$`\\;&|<>()*?[]{}~#!\n")


@dataclass(frozen=True)
class EntryPoint:
    """What `python ...` runs: a script, a module (`-m`) or code (`-c`), and its arguments."""

    kind: EntryKind
    target: str
    args: tuple[str, ...] = ()
    argv0: str = "python"
    options: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "target": self.target,
            "args": list(self.args),
            "argv0": self.argv0,
            "options": list(self.options),
        }


def shell_words(text: str) -> list[str] | None:
    """The words of a `/bin/sh -c` line that runs one program and nothing else; else None.

    Conservative: a `$`, a glob, a redirection, a pipe, a `;` or a backslash outside
    single quotes, or a `$`, backtick or backslash inside double quotes, is shell work
    a fork cannot stand in for.
    """
    quote = ""
    for char in text:
        if quote == "'":
            quote = "" if char == "'" else quote
        elif quote == '"':
            if char in "$`\\":
                return None
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in _SHELL_SPECIAL:
            return None
    if quote:
        return None
    try:
        return shlex.split(text)
    except ValueError:
        return None


def entry_point(plan: AttemptPlan, python: str) -> EntryPoint | str:
    """The Python entry point the attempt runs, or why it is none (then it runs fresh)."""
    if plan.workload is not None:
        return EntryPoint("module", "reprospec_harness", argv0=python)
    argv = plan.argv
    if not argv:
        return "nothing to run"
    words: list[str] | None = list(argv)
    if argv[:2] == ("/bin/sh", "-c") and len(argv) == 3:
        words = shell_words(argv[2])
        if words is None:
            return "the command is a shell line, not one Python program"
    assert words is not None
    if not words:
        return "the command is empty"
    program = words[0]
    if program not in _PYTHON_NAMES and os.path.abspath(program) != python:
        return f"the command runs {program}, not the run's Python interpreter"
    options: list[str] = []
    rest = words[1:]
    while rest:
        word = rest[0]
        if word in _HARMLESS_OPTIONS:
            options.append(rest.pop(0))
            continue
        flags: tuple[tuple[str, EntryKind], ...] = (("-m", "module"), ("-c", "code"))
        for flag, kind in flags:
            if word == flag and len(rest) > 1:
                return EntryPoint(kind, rest[1], tuple(rest[2:]), program, tuple(options))
            if word.startswith(flag) and len(word) > 2:
                return EntryPoint(kind, word[2:], tuple(rest[1:]), program, tuple(options))
        if word.startswith("-"):
            return f"python option {word} takes effect when the interpreter starts"
        return EntryPoint("script", word, tuple(rest[1:]), program, tuple(options))
    return "python without a script reads its program from stdin"


def _path0(entry: EntryPoint, cwd: Path) -> Path:
    """What a fresh interpreter puts first on sys.path for this entry point."""
    if entry.kind == "script":
        return Path(os.path.realpath(cwd / entry.target)).parent
    return cwd


def _shadowed(module: str, folder: Path, imported: str | None) -> bool:
    """Whether `folder`, first on a fresh interpreter's sys.path, holds another `module`
    than the file the server imported."""
    top = module.split(".", 1)[0]
    found = [folder / f"{top}.py", folder / top / "__init__.py"]
    with contextlib.suppress(OSError):
        found += [
            folder / n for n in os.listdir(folder) if n.startswith(f"{top}.") and n.endswith(".so")
        ]
    same = os.path.realpath(imported) if imported else None
    return any(path.is_file() and os.path.realpath(path) != same for path in found)


def shadowing(plan: AttemptPlan, entry: EntryPoint, files: Mapping[str, str | None]) -> str | None:
    """Why a fresh interpreter would import another copy of a preloaded module; else None."""
    folder = _path0(entry, plan.workdir)
    for module in plan.preload:
        if _shadowed(module, folder, files.get(module)):
            top = module.split(".", 1)[0]
            return f"{folder} has its own {top}, which a fresh interpreter would import instead"
    return None


def fresh_reason(plan: AttemptPlan, entry: EntryPoint | str) -> str | None:
    """Why this attempt must run in a fresh interpreter although preload was asked; else None."""
    expectation = plan.expectation
    if expectation.phase == "import" or expectation.module is not None:
        return (
            "the expectation is at import: an import-time failure cannot happen in a "
            "process that imported already"
        )
    if isinstance(entry, str):
        return entry
    environment = plan.environment
    for key, value in (("memory", environment.memory), ("shm_size", environment.shm_size)):
        if value is not None:
            return f"environment.{key} must be in place before the imports"
    workload = plan.workload
    if workload is not None:
        imports = [str(name) for name in workload.get("imports") or []]  # type: ignore[union-attr]
        if imports and list(plan.preload[: len(imports)]) != imports:
            first = ", ".join(imports)
            return (
                f"workload.imports ({first}) come before torch in a fresh attempt: "
                f"list them first in run.preload to fork"
            )
        debug = workload.get("debug")
        if isinstance(debug, dict) and any(debug.values()):
            return "workload.debug sets variables torch must see before it is imported"
    return None


def server_key(python: str, env: Mapping[str, str], cwd: Path, preload: Sequence[str]) -> str:
    """The key of the server an attempt can be forked from (see the module docstring)."""
    kept = sorted((k, v) for k, v in env.items() if k not in PER_ATTEMPT_VARS)
    text = json.dumps([python, str(cwd), list(preload), kept])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Refused(Exception):
    """The server cannot fork this attempt now; the message says why."""


class ForkedChild:
    """An attempt forked by a server and re-parented to this engine: a `Popen` to run_process."""

    def __init__(self, pid: int, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr

    def _set(self, status: int) -> int:
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        """The exit code (negative: the signal) once the attempt ended, reaping it; else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid == self.pid:
                self._set(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the attempt to end (`timeout` is not supported: run_process never gives one)."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            return self._set(status)
        return self.returncode


class ForkServer:
    """One running server: started, asked to fork, stopped. Thread-safe."""

    def __init__(
        self,
        python: str,
        modules: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        folder: Path,
    ) -> None:
        self.modules = tuple(modules)
        self.log = folder / "server.log"
        self.openblas = False
        # Where the server imported each module from (its top-level package's file).
        self.files: dict[str, str | None] = {}
        self._lock = threading.Lock()
        server_env = {k: v for k, v in env.items() if k not in PER_ATTEMPT_VARS}
        server_env[TOKEN_VAR] = TOKEN_PLACEHOLDER
        # OpenBLAS starts its thread pool when it is loaded: one thread keeps the server
        # forkable (the attempt is told when OpenBLAS is loaded; the spec may set its own).
        self.openblas_forced = "OPENBLAS_NUM_THREADS" not in server_env
        server_env.setdefault("OPENBLAS_NUM_THREADS", "1")
        tmp = folder / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        server_env["TMPDIR"] = str(tmp)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        try:
            self._proc: subprocess.Popen[bytes] | None = process.start_helper(
                [python, str(SERVER_SCRIPT), str(theirs.fileno()), *self.modules, ARGV_ROOM],
                env=server_env,
                cwd=cwd,
                pass_fds=(theirs.fileno(),),
                log=self.log,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()

    def wait_ready(self, timeout_s: float, cancel: threading.Event | None = None) -> str | None:
        """Wait until the server imported its modules; None when it can fork, else why not."""
        deadline = time.monotonic() + timeout_s
        while True:
            if cancel is not None and cancel.is_set():
                return "the run was cancelled while the preload server imported"
            left = deadline - time.monotonic()
            if left <= 0:
                names = ", ".join(self.modules)
                return f"the preload server did not finish importing {names} in {timeout_s:g}s"
            readable, _, _ = select.select([self._sock], [], [], min(left, 0.1))
            if readable:
                break
        message = self._read()
        if message is None:
            return f"the preload server exited before it was ready{self._log_tail()}"
        if "error" in message:
            return f"the preload server could not start: {message['error']}"
        self.openblas = bool(message.get("openblas"))
        files = message.get("files")
        if isinstance(files, dict):
            self.files = {str(k): str(v) if v else None for k, v in files.items()}
        threads = message.get("threads")
        if threads != 1:
            names = ", ".join(self.modules)
            return (
                f"the preload server has {threads} threads after importing {names} (a module "
                "started a thread pool or ran an op at import): forked attempts could hang"
            )
        return None

    def _read(self) -> dict[str, object] | None:
        try:
            data = self._sock.recv(1 << 20)
        except OSError:
            return None
        if not data:
            return None
        loaded = json.loads(data)
        return loaded if isinstance(loaded, dict) else None

    def _log_tail(self) -> str:
        try:
            lines = self.log.read_text("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return f" ({lines[-1].strip()})" if lines else ""

    def fork(self, request: Mapping[str, object]) -> ForkedChild:
        """Fork one attempt; raises Refused when the server cannot (then run it fresh)."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with self._lock:
                if self._proc is None:
                    raise Refused("the preload server was stopped")
                self._sock.settimeout(REPLY_TIMEOUT_S)
                try:
                    self._sock.sendmsg(
                        [json.dumps(request).encode()],
                        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [out_w, err_w]))],
                    )
                    reply = self._read()
                except OSError as exc:
                    reply = None
                    if isinstance(exc, TimeoutError):
                        self._stop_locked()
                        raise Refused(
                            f"the preload server did not answer in {REPLY_TIMEOUT_S:g}s"
                        ) from None
                if reply is None:
                    code = self._proc.poll()
                    self._stop_locked()
                    raise Refused(f"the preload server is gone (exit status {code})")
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w):
                os.close(fd)
        refused = reply.get("refused")
        pid = reply.get("pid")
        if refused is not None or not isinstance(pid, int):
            for fd in (out_r, err_r):
                os.close(fd)
            raise Refused(str(refused or f"the preload server said {reply!r}"))
        return ForkedChild(pid, open(out_r, "rb", buffering=0), open(err_r, "rb", buffering=0))

    def stop(self) -> None:
        """Close the socket (the server then exits) and reap it."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._proc is not None:
            process.stop_helper(self._proc)
            self._proc = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None


@dataclass
class _Entry:
    server: ForkServer | None
    # Why attempts of this key run fresh (the server failed or is unsafe); None: usable.
    refused: str | None = None


class Preloader:
    """The fork servers of one runner, by key; `close()` stops them all."""

    def __init__(self, python: str) -> None:
        self.python = python
        self._lock = threading.Lock()
        self._keys: OrderedDict[str, _Entry] = OrderedDict()
        self._starting: dict[str, threading.Event] = {}
        self._folder: Path | None = None
        self.closed = False

    def _workspace(self) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="reprospec-preload-"))
        return self._folder

    def launcher(
        self,
        plan: AttemptPlan,
        env: Mapping[str, str],
        *,
        fresh_argv: Sequence[str],
        native: native_stacks.Capture | None = None,
        cancel: threading.Event | None = None,
    ) -> tuple[Launcher | None, str | None]:
        """(a `start` for run_process that forks the attempt, None) or (None, why it runs fresh).

        Starts the key's server when none is running (waiting for its imports).
        """
        entry = entry_point(plan, self.python)
        reason = fresh_reason(plan, entry)
        if reason is not None:
            return None, reason
        assert isinstance(entry, EntryPoint)
        if not process.become_subreaper():
            return None, "this engine cannot adopt forked attempts (no subreaper on this system)"
        key = server_key(self.python, env, plan.workdir, plan.preload)
        server, refused = self._server(key, plan, env, cancel)
        if server is None:
            return None, refused
        shadow = shadowing(plan, entry, server.files)
        if shadow is not None:
            return None, shadow
        return Launcher(self, key, server, entry, plan.workdir, fresh_argv, native), None

    def _server(
        self,
        key: str,
        plan: AttemptPlan,
        env: Mapping[str, str],
        cancel: threading.Event | None,
    ) -> tuple[ForkServer | None, str | None]:
        while True:
            with self._lock:
                if self.closed:
                    return None, "the runner was closed"
                entry = self._keys.get(key)
                if entry is not None:
                    self._keys.move_to_end(key)
                    return entry.server, entry.refused
                starting = self._starting.get(key)
                if starting is None:
                    self._starting[key] = threading.Event()
                    break
            starting.wait()  # another thread is starting this key's server
        try:
            entry = self._start(key, plan, env, cancel)
        finally:
            with self._lock:
                self._starting.pop(key).set()
        return entry.server, entry.refused

    def _start(
        self, key: str, plan: AttemptPlan, env: Mapping[str, str], cancel: threading.Event | None
    ) -> _Entry:
        folder = self._workspace() / key
        folder.mkdir(parents=True, exist_ok=True)
        try:
            server = ForkServer(self.python, plan.preload, env, plan.workdir, folder)
        except OSError as exc:
            entry = _Entry(None, f"cannot start the preload server: {exc.strerror or exc}")
        else:
            refused = server.wait_ready(max(READY_TIMEOUT_S, plan.timeout_s), cancel)
            if refused is not None:
                server.stop()
                entry = _Entry(None, refused)
            else:
                entry = _Entry(server)
        evicted: list[ForkServer] = []
        with self._lock:
            if self.closed:
                if entry.server is not None:
                    evicted.append(entry.server)
                entry = _Entry(None, "the runner was closed")
            else:
                # A failure is remembered: every attempt of the key runs fresh, saying why.
                self._keys[key] = entry
                running = [k for k, e in self._keys.items() if e.server is not None]
                for old in running[: max(0, len(running) - MAX_SERVERS)]:
                    stale = self._keys.pop(old)
                    if stale.server is not None:
                        evicted.append(stale.server)
        for server in evicted:
            server.stop()
        return entry

    def refuse(self, key: str, reason: str) -> None:
        """Run the key's later attempts fresh (its server refused for good)."""
        stale: ForkServer | None = None
        with self._lock:
            entry = self._keys.get(key)
            if entry is not None and entry.refused is None:
                stale, entry.server, entry.refused = entry.server, None, reason
        if stale is not None:
            stale.stop()

    def close(self) -> None:
        """Stop every server and remove their folder."""
        with self._lock:
            self.closed = True
            servers = [e.server for e in self._keys.values() if e.server is not None]
            self._keys.clear()
        for server in servers:
            server.stop()
        if self._folder is not None:
            import shutil

            shutil.rmtree(self._folder, ignore_errors=True)


class Launcher:
    """`start` for run_process: forks the attempt, or starts it fresh when the server refuses.

    After the call, `forked` says which, and `note` what the report says about it.
    """

    def __init__(
        self,
        preloader: Preloader,
        key: str,
        server: ForkServer,
        entry: EntryPoint,
        cwd: Path,
        fresh_argv: Sequence[str],
        native: native_stacks.Capture | None,
    ) -> None:
        self.preloader = preloader
        self.key = key
        self.server = server
        self.entry = entry
        self.cwd = cwd
        self.fresh_argv = tuple(fresh_argv)
        self.native = native
        self.forked = False
        self.note: str | None = None
        # As random as a fresh interpreter's own seeds (os.urandom), and recorded.
        self.seed = int.from_bytes(os.urandom(8), "big") >> 1

    def __call__(self, env: Mapping[str, str]) -> process.ChildHandle:
        request = {
            "entry": self.entry.to_json(),
            "env": dict(env),
            "cwd": str(self.cwd),
            "seed": self.seed,
            # What native.Capture.preexec does for a fresh attempt: raise RLIMIT_CORE.
            "cores": self.native is not None and self.native.preexec() is not None,
            "token": env.get(TOKEN_VAR, ""),
        }
        try:
            child = self.server.fork(request)
        except Refused as exc:
            self.preloader.refuse(self.key, str(exc))
            self.note = f"ran fresh: {exc}"
            return process.popen_attempt(self.fresh_argv, env=env, cwd=self.cwd, native=self.native)
        self.forked = True
        names = ", ".join(self.server.modules)
        note = f"forked from a server that preloaded {names}; random, numpy and torch seeded "
        note += f"with {self.seed}"
        if self.server.openblas and self.server.openblas_forced:
            note += (
                "; OpenBLAS is single-threaded (OPENBLAS_NUM_THREADS=1 in the server: "
                "set it in environment.env to choose)"
            )
        self.note = note
        return child
