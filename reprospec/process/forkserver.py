"""Preloaded fork servers (`run.preload`, `run --preload`): attempts forked from an interpreter
that already imported torch, instead of each paying `import torch` (1-3 s) again.

One server per key (preload.server_key): the interpreter, the attempt's whole environment
except its per-attempt variables (so PYTHONPATH and sitecustomize, OMP_*/MKL_*/OPENBLAS_*/
TORCH_*/CUDA_* and any other variable a module reads at import are the attempt's own: a
toggle of one of them is another server), the workdir, and the preload list. The server
(`harness/reprospec_forkserver.py`, stdlib only, outside the engine's import graph)
imports the modules and nothing else, then forks one attempt per request. Each attempt
is the server's child (the server reaps it and sends its wait status), and is run by
`run.run_process` like any other: same pipes, timeout, stacks, kill of its whole
tree (what it leaves behind is re-parented to the engine, the subreaper) and
classification.

Which attempts run fresh instead, and why, is preload.py; here, besides, an attempt runs
fresh when its server could not import the modules, or is unsafe to fork (more than one
thread, CUDA initialised: checked by the server before every fork), or when MAX_SERVERS
servers already run and each has an attempt in flight.

A forked attempt dies with its server (PR_SET_PDEATHSIG), so a server is stopped only
once no attempt it forked is running: each attempt holds a lease on its server from the
moment it is handed one to its end (`Launcher.release`). Where a server dies under an
attempt anyway (killed, out of memory), the attempt's SIGKILL is the server's end, not the
program's: `ForkedChild.lost` says so, and the runner makes the attempt an infra-error.
"""

from __future__ import annotations

import array
import contextlib
import errno
import json
import os
import queue
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from reprospec import native as native_stacks
from reprospec.core.inputs import AttemptPlan
from reprospec.core.signals import signal_name
from reprospec.core.words import preload_note
from reprospec.harness import HARNESS_ROOT
from reprospec.process import start, tree
from reprospec.process.childprotocol import TOKEN_VAR
from reprospec.process.preload import (
    PER_ATTEMPT_VARS,
    EntryPoint,
    entry_point,
    fresh_reason,
    module_sources,
    server_key,
    shadowing,
)
from reprospec.process.scratch import ORPHAN_PREFIX

SERVER_SCRIPT = HARNESS_ROOT / "reprospec_forkserver.py"
# The server's token: as long as a real one (a uuid's hex), overwritten in each attempt.
TOKEN_PLACEHOLDER = "-" * 32
# A blank last argument of the server: room for a forked attempt's own command line,
# which it writes over the server's (what /proc/PID/cmdline shows).
ARGV_ROOM = " " * 2048
# Servers alive at once (each holds its imports: a few hundred MB for torch). A new key's
# server replaces the least recently used idle one; when every one has an attempt in flight,
# the new key's attempt runs fresh (BUSY) rather than stop a server under its attempts (they
# die with it) or hold the attempt until one is idle (its -j slot idle meanwhile).
MAX_SERVERS = 4
BUSY = (
    f"the {MAX_SERVERS} preload servers that may run at once (one per interpreter, "
    "environment, workdir and preload list) all have attempts running"
)
# A server that has not imported its modules by then is given up (an import that hangs).
READY_TIMEOUT_S = 120.0
REPLY_TIMEOUT_S = 60.0
# A key's server that died (killed, out of memory) is started again for its next attempt,
# this many times in a run: one death among hundreds of attempts no longer runs all the
# rest fresh, while a program that kills its server each time does not restart it forever.
MAX_RESTARTS = 3


class Refused(Exception):
    """The server cannot fork this attempt now; the message says why."""


class Gone(Refused):
    """The server died: this attempt runs fresh, and a new server may serve the next."""


class ForkedChild:
    """An attempt forked by a server (its child): a `Popen` to run_process.

    The server reaps it and sends its wait status, which `poll` and `wait` read. Should the
    server die first, the attempt is re-parented to this engine (the subreaper), which
    then reaps it itself.
    """

    def __init__(
        self, server: ForkServer, pid: int, serial: int, stdout: IO[bytes], stderr: IO[bytes]
    ) -> None:
        self.server = server
        self.pid = pid
        self.serial = serial
        self.returncode: int | None = None
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        # Its /proc/PID/stat as a zombie, which the server reaps (process/tree.py reads it).
        self.zombie_stat: bytes | None = None
        # Why its exit status is not the program's (its server died under it); None: it is.
        self.lost: str | None = None

    def _set(self, status: int, *, orphan: bool = False) -> int:
        self.returncode = os.waitstatus_to_exitcode(status)
        if orphan and self.returncode == -signal.SIGKILL:
            # The server died before it told us: the attempt either died of that
            # (PR_SET_PDEATHSIG) or was reaped by it with its word lost. One that ended on
            # its own first was a zombie re-parented to us, and its own status is read (a
            # SIGKILL of its own in that moment reads as the server's: no verdict either way).
            self.lost = (
                f"{self.server.end()} while the attempt ran, and a forked attempt dies with "
                "its server: its SIGKILL is not the program's (rerun it; --preload none "
                "runs it fresh)"
            )
        else:
            self.zombie_stat = self.server.zombie_stat(self.serial)
        return self.returncode

    def poll(self) -> int | None:
        """The exit code (negative: the signal) once the attempt ended; else None."""
        if self.returncode is None:
            status = self.server.exit_status(self.serial, wait=False)
            if status is None and not self.server.alive:
                status = self._orphan_status(wait=False)
                if status is not None:
                    self._set(status, orphan=True)
            elif status is not None:
                self._set(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:  # noqa: ARG002 (ChildHandle protocol)
        """Wait for the attempt to end (`timeout` is not supported: run_process never gives one)."""
        while self.returncode is None:
            status = self.server.exit_status(self.serial, wait=True)
            if status is None:  # the server is gone
                status = self._orphan_status(wait=True)
                if status is not None:
                    self._set(status, orphan=True)
            else:
                self._set(status)
        return self.returncode

    def _orphan_status(self, wait: bool) -> int | None:
        """The wait status once this engine adopted the attempt (its server died)."""
        while True:
            try:
                pid, status = os.waitpid(self.pid, 0 if wait else os.WNOHANG)
            except ChildProcessError:
                if not os.path.exists(f"/proc/{self.pid}"):  # noqa: PTH110 (as tree.py)
                    # Reaped by the server, whose word of it was lost with the server.
                    return signal.SIGKILL  # a wait status: killed by SIGKILL
                if not wait:
                    return None
                time.sleep(0.01)  # not re-parented yet
                continue
            return status if pid == self.pid else None


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
        self.cwd = cwd
        self.log = folder / "server.log"
        self.openblas = False
        # Where the server imported each module from (its top-level package's file).
        self.files: dict[str, str | None] = {}
        self._lock = threading.Lock()
        # What the reader thread hears: replies to forks, and attempts' wait statuses.
        self._replies: queue.Queue[dict[str, object] | None] = queue.Queue()
        self._exits: dict[int, int] = {}
        # Each ended attempt's /proc/PID/stat as the server read it before reaping it.
        self._stats: dict[int, bytes] = {}
        self._ended = threading.Condition()
        self.alive = True
        # Attempts handed this server and not yet ended (the Preloader's lock guards it): it
        # is stopped only at none, since its forked attempts die with it.
        self.leases = 0
        # Given up (refused, replaced): stopped at its last lease's release.
        self.retired = False
        # Why the engine stopped it (None: it was not, or not yet), and its exit status.
        self.stopped: str | None = None
        self.returncode: int | None = None
        # Which start of the runner's servers this is (1, 2, ...), and the number of the
        # server of its key that died before it (None: none did): its attempts' notes say
        # both (words.preload_note), so that the report does not say the modules were
        # imported once where a server died and its successor imported them again.
        self.number = 0
        self.replaces: int | None = None
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
            self._proc: subprocess.Popen[bytes] | None = start.start_helper(
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
            return f"the preload server could not start: {message['error']}{self._local()}"
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
        self._sock.settimeout(None)
        threading.Thread(target=self._listen, name="reprospec-preload", daemon=True).start()
        return None

    def _local(self) -> str:
        """Why a module of the workdir is not found: the server's sys.path is the
        interpreter's, without the folder a fresh `python script.py` puts first (the server
        serves every command of its key, whose scripts' folders differ)."""
        for module in self.modules:
            for path in module_sources(module, self.cwd):
                if path.is_file():
                    return (
                        f"; {path} is in the workdir, which is not on the preload server's "
                        "sys.path (only the interpreter's and PYTHONPATH): set PYTHONPATH "
                        "in environment.env to preload it, which the attempts get too"
                    )
        return ""

    def _listen(self) -> None:
        """The reader: replies go to the asking thread, wait statuses to their attempts."""
        while True:
            message = self._read()
            if message is None:
                break
            serial, status = message.get("serial"), message.get("status")
            if "exit" in message and isinstance(serial, int) and isinstance(status, int):
                stat = message.get("stat")
                with self._ended:
                    self._exits[serial] = status
                    if isinstance(stat, str):
                        self._stats[serial] = stat.encode("latin-1")
                    self._ended.notify_all()
            else:
                self._replies.put(message)
        with self._ended:
            self.alive = False
            self._ended.notify_all()
        self._replies.put(None)

    def exit_status(self, serial: int, *, wait: bool) -> int | None:
        """The wait status of attempt `serial` once the server reaped it; None while it runs
        (`wait=False`) or when the server is gone."""
        with self._ended:
            while serial not in self._exits:
                if not wait or not self.alive:
                    return None
                self._ended.wait()
            return self._exits.pop(serial)

    def zombie_stat(self, serial: int) -> bytes | None:
        """Attempt `serial`'s /proc/PID/stat, read by the server while it was a zombie (once
        its exit status came); None where the server could not read it."""
        with self._ended:
            return self._stats.pop(serial, None)

    def _read(self) -> dict[str, object] | None:
        """The server's next message; None at its end. Raises TimeoutError past the timeout."""
        try:
            data = self._sock.recv(1 << 20)
        except TimeoutError:
            raise
        except OSError:
            return None
        if not data:
            return None
        loaded = json.loads(data)
        return loaded if isinstance(loaded, dict) else None

    def end(self) -> str:
        """How this server ended, for the attempts it took with it."""
        if self.stopped is not None:
            return f"the engine stopped its preload server ({self.stopped})"
        proc = self._proc
        code = self.returncode
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                # Its socket is closed already: its exit is a moment away at most.
                code = proc.wait(timeout=1.0)
        if code is None:
            return "its preload server ended"
        if code < 0:
            return f"its preload server was killed by {signal_name(-code)}"
        return f"its preload server exited with status {code}"

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
                data = json.dumps(request).encode()
                try:
                    self._sock.sendmsg(
                        [data],
                        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [out_w, err_w]))],
                    )
                except OSError as exc:
                    if exc.errno == errno.EMSGSIZE:  # the server is fine: this one is too big
                        raise Refused(
                            f"the attempt's environment and command ({len(data)} bytes) are "
                            "too large to send to the preload server"
                        ) from None
                    self._stop_locked(None)  # dead already: end() reads its status
                    raise Gone(f"{self.end()} ({exc.strerror or exc})") from None
                try:
                    reply = self._replies.get(timeout=REPLY_TIMEOUT_S)
                except queue.Empty:
                    # An attempt it forked late would run with no one to wait for it.
                    self._stop_locked(f"it did not answer a fork in {REPLY_TIMEOUT_S:g}s")
                    raise Refused(
                        f"the preload server did not answer in {REPLY_TIMEOUT_S:g}s"
                    ) from None
                if reply is None:
                    self._stop_locked(None)  # dead already: end() reads its status
                    raise Gone(self.end())
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w):
                os.close(fd)
        refused = reply.get("refused")
        pid, serial = reply.get("pid"), reply.get("serial")
        if refused is not None or not isinstance(pid, int) or not isinstance(serial, int):
            for fd in (out_r, err_r):
                os.close(fd)
            raise Refused(str(refused or f"the preload server said {reply!r}"))
        # Closed by run_process with the attempt's other pipes.
        # File descriptors, not paths: no Path can open them.
        out = open(out_r, "rb", buffering=0)  # noqa: SIM115, PTH123
        err = open(err_r, "rb", buffering=0)  # noqa: SIM115, PTH123
        return ForkedChild(self, pid, serial, out, err)

    def stop(self, why: str) -> None:
        """Close the socket (the server then exits) and reap it; `why` is what an attempt
        still running (it dies with the server) is told."""
        with self._lock:
            self._stop_locked(why)

    def _stop_locked(self, why: str | None) -> None:
        if self.stopped is None and why is not None:
            self.stopped = why
        with contextlib.suppress(OSError):
            # Wakes the reader (a close alone may not), and the server reads its end.
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._proc is not None:
            start.stop_helper(self._proc)
            self.returncode = self._proc.returncode
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
    """The fork servers of one runner, by key; `close()` stops them all.

    At most MAX_SERVERS run at once, those being started and those given up but still
    serving an attempt counted. An attempt holds a lease on its server (`_server` takes
    it, `release` gives it back): a server with one is never stopped, since its forked
    attempts die with it. A new key replaces the least recently used idle server; when
    none is idle its attempt runs fresh (BUSY), so memory stays bounded and no attempt
    waits for another's end.
    """

    def __init__(self, python: str) -> None:
        self.python = python
        self._lock = threading.Lock()
        self._keys: OrderedDict[str, _Entry] = OrderedDict()
        self._starting: dict[str, threading.Event] = {}
        # Every server started and not yet stopped: the keys' and the retired ones.
        self._live: set[ForkServer] = set()
        self._folder: Path | None = None
        self.closed = False
        # How often each key's server died and was started again (MAX_RESTARTS).
        self._restarts: dict[str, int] = {}
        # Servers started so far (ForkServer.number), and by key the number of the
        # one that died, which its next server replaces.
        self._started = 0
        self._died: dict[str, int] = {}

    def _workspace(self) -> Path:
        if self._folder is None:
            # Named as scratch.py's short TMPDIRs: a later engine removes it if this one
            # is killed before close() (scratch.sweep_orphans).
            prefix = f"{ORPHAN_PREFIX}{os.getpid()}-preload-"
            self._folder = Path(tempfile.mkdtemp(prefix=prefix))
        return self._folder

    def launcher(
        self,
        plan: AttemptPlan,
        env: Mapping[str, str],
        *,
        fresh_argv: Sequence[str],
        native: native_stacks.Capture | None = None,
        cancel: threading.Event | None = None,
        perturb: Mapping[str, str] | None = None,
    ) -> tuple[Launcher | None, str | None]:
        """(a `start` for run_process that forks the attempt, None) or (None, why it runs fresh).

        `env` is the server's: the attempt's without its perturbation's variables, which the
        attempt's own (run_process's) carry; `perturb`: what the fork applies as launch.py
        would (perturb/fork.py's `fork_options`). Starts the key's server when none is
        running (waiting for its imports). The launcher holds a lease on its server: the
        caller must `release()` it once the attempt ended (or will not run).
        """
        entry = entry_point(plan, self.python)
        reason = fresh_reason(plan, entry)
        if reason is not None:
            return None, reason
        assert isinstance(entry, EntryPoint)
        if not tree.become_subreaper():
            # What a forked attempt leaves behind must come back to the engine, as for any.
            return None, "this engine cannot be a subreaper here: forked attempts' orphans escape"
        key = server_key(self.python, env, plan.workdir, plan.preload)
        server, refused = self._server(key, plan, env, cancel)
        if server is None:
            return None, refused
        shadow = shadowing(plan, entry, server.files)
        if shadow is not None:
            self.release(server)
            return None, shadow
        launcher = Launcher(self, key, server, entry, plan.workdir, fresh_argv, native, perturb)
        return launcher, None

    def _server(
        self,
        key: str,
        plan: AttemptPlan,
        env: Mapping[str, str],
        cancel: threading.Event | None,
    ) -> tuple[ForkServer | None, str | None]:
        """The key's server with a lease taken on it, or (None, why the attempt runs fresh)."""
        dead: list[ForkServer] = []
        try:
            return self._take_server(key, plan, env, cancel, dead)
        finally:
            for server in dead:
                server.stop("it died")  # reaped; its attempts were told (ForkedChild.lost)

    def _take_server(
        self,
        key: str,
        plan: AttemptPlan,
        env: Mapping[str, str],
        cancel: threading.Event | None,
        dead: list[ForkServer],
    ) -> tuple[ForkServer | None, str | None]:
        idle: ForkServer | None = None
        while True:
            with self._lock:
                if self.closed:
                    return None, "the runner was closed"
                entry = self._keys.get(key)
                if entry is not None and entry.server is not None and not entry.server.alive:
                    # Died since its last attempt: started again (within MAX_RESTARTS).
                    dead.append(entry.server)
                    entry = self._dead_locked(key, entry, entry.server.end())
                if entry is not None:
                    self._keys.move_to_end(key)
                    if entry.server is not None:
                        entry.server.leases += 1
                    return entry.server, entry.refused
                starting = self._starting.get(key)
                if starting is None:
                    if len(self._live) + len(self._starting) >= MAX_SERVERS:
                        idle = self._evict_locked()
                        if idle is None:
                            return None, BUSY
                    self._starting[key] = threading.Event()
                    break
            starting.wait()  # another thread is starting this key's server
        try:
            if idle is not None:  # stopped before the new one imports: memory stays bounded
                idle.stop("it was idle, and another key's server took its place")
            entry = self._start(key, plan, env, cancel)
        finally:
            with self._lock:
                self._starting.pop(key).set()
        return entry.server, entry.refused

    def _dead_locked(self, key: str, entry: _Entry, how: str) -> _Entry | None:
        """The key's server died: None (start a new one) while it has restarts left, else
        the key's entry refused for good, saying why."""
        server = entry.server
        if server is not None:
            self._live.discard(server)
            self._died[key] = server.number
        restarts = self._restarts.get(key, 0)
        if restarts >= MAX_RESTARTS:
            entry.server = None
            entry.refused = f"{how}, and had been started again {restarts} times in this run"
            return entry
        self._restarts[key] = restarts + 1
        del self._keys[key]
        return None

    def lost(self, key: str, server: ForkServer) -> None:
        """`server` was found dead at a fork (that attempt runs fresh): the key's next attempt
        starts a new one, while restarts are left."""
        with self._lock:
            entry = self._keys.get(key)
            if entry is not None and entry.server is server:
                self._dead_locked(key, entry, server.end())

    def _evict_locked(self) -> ForkServer | None:
        """Take the least recently used server with no attempt in flight out of the pool
        (the caller stops it); None when every one has one."""
        for key, entry in self._keys.items():
            server = entry.server
            if server is not None and server.leases == 0:
                del self._keys[key]
                self._live.discard(server)
                return server
        return None

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
            with self._lock:
                self._started += 1
                server.number = self._started
                server.replaces = self._died.pop(key, None)
            # Bounded by the attempt's own timeout: an import that hangs must not hold the
            # attempt (and the run) past what the spec allowed it; it then runs fresh.
            bound = min(READY_TIMEOUT_S, plan.timeout_s) if plan.timeout_s else READY_TIMEOUT_S
            refused = server.wait_ready(bound, cancel)
            if refused is not None and bound < READY_TIMEOUT_S and "did not finish" in refused:
                refused += " (the attempt's timeout)"
            if refused is not None:
                server.stop(refused)
                entry = _Entry(None, refused)
            else:
                entry = _Entry(server)
        with self._lock:
            if self.closed:
                closed = entry.server
                entry = _Entry(None, "the runner was closed")
            else:
                closed = None
                # A failure is remembered: every attempt of the key runs fresh, saying why.
                self._keys[key] = entry
                if entry.server is not None:
                    entry.server.leases = 1  # the attempt that started it
                    self._live.add(entry.server)
        if closed is not None:
            closed.stop("the runner was closed")
        return entry

    def release(self, server: ForkServer) -> None:
        """An attempt on `server` ended (or runs fresh after all): a retired server with no
        attempt left is stopped now."""
        with self._lock:
            server.leases -= 1
            done = server.retired and server.leases <= 0 and server in self._live
            if done:
                self._live.discard(server)
        if done:
            server.stop("it was given up")

    def refuse(self, key: str, reason: str) -> None:
        """Run the key's later attempts fresh (its server refused for good); the server
        itself stops once no attempt it forked is running."""
        stale: ForkServer | None = None
        with self._lock:
            entry = self._keys.get(key)
            if entry is not None and entry.refused is None and entry.server is not None:
                stale, entry.server, entry.refused = entry.server, None, reason
                stale.retired = True
                if stale.leases > 0:
                    stale = None  # its last release stops it
                else:
                    self._live.discard(stale)
        if stale is not None:
            stale.stop(reason)

    def close(self) -> None:
        """Stop every server and remove their folder."""
        with self._lock:
            self.closed = True
            servers = list(self._live)
            self._live.clear()
            self._keys.clear()
        for server in servers:
            server.stop("the runner was closed")
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
        perturb: Mapping[str, str] | None = None,
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
        self.child: ForkedChild | None = None
        # What the fork applies as launch.py would ({"cpus": "0", "nice": "5", ...}).
        self.perturb = dict(perturb or {})
        self._released = False
        # As random as a fresh interpreter's own seeds (os.urandom), and recorded.
        self.seed = int.from_bytes(os.urandom(8), "big") >> 1

    def __call__(self, env: Mapping[str, str], tag: int, procs: str | None) -> start.ChildHandle:
        request = {
            # The attempt's process limit (pidlimit.py): the fork joins it before it runs.
            "cgroup_procs": procs,
            "entry": self.entry.to_json(),
            "env": dict(env),
            "cwd": str(self.cwd),
            "seed": self.seed,
            # The attempt's tag (watchdog.py): its RLIMIT_LOCKS, as a fresh attempt's.
            "tag": tag,
            # As for a fresh attempt (native.Capture.dumps_cores): raise RLIMIT_CORE.
            "cores": self.native is not None and self.native.dumps_cores(),
            "token": env.get(TOKEN_VAR, ""),
            # environment.perturb's launch.py part; the rest is in env (REPROSPEC_PERTURB).
            "perturb": self.perturb,
        }
        try:
            child = self.server.fork(request)
        except Refused as exc:
            if isinstance(exc, Gone):
                self.preloader.lost(self.key, self.server)
            else:
                self.preloader.refuse(self.key, str(exc))
            self.release()  # this attempt runs fresh: the server may stop now
            self.note = f"ran fresh: {exc}"
            return start.popen_attempt(
                self.fresh_argv, env=env, cwd=self.cwd, native=self.native, tag=tag, cgroup=procs
            )
        self.forked = True
        self.child = child
        note = preload_note(self.server.number, self.server.replaces, self.server.modules)
        note += f"; random, numpy and torch seeded with {self.seed}"
        if self.server.openblas and self.server.openblas_forced:
            note += (
                "; OpenBLAS is single-threaded (OPENBLAS_NUM_THREADS=1 in the server: "
                "set it in environment.env to choose)"
            )
        self.note = note
        return child

    @property
    def lost(self) -> str | None:
        """Why the forked attempt's exit status is not the program's (its server died
        under it); None when it is, or when it ran fresh."""
        return self.child.lost if self.child is not None else None

    def release(self) -> None:
        """The attempt is over: its server may be stopped now (once, however often called)."""
        if not self._released:
            self._released = True
            self.preloader.release(self.server)
