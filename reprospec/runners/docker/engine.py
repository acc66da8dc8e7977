"""Talking to a Docker engine: connect, a container's config, its life, its output, its stacks.

The docker runner (runners/docker.py) runs attempts with these; nothing here
knows about verdicts. The in-container view (paths, workdir, limits) is
container.py, shared with `reprospec materialize`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.runoptions import folder_as_mounted
from reprospec.core.signals import STACK_DUMP_SIGNAL
from reprospec.core.words import NOT_PYTHON, stack_header, stacks_omitted
from reprospec.errors import InfraError
from reprospec.perturb.apply import variables
from reprospec.process import leftovers, pidlimit, tree
from reprospec.process.childprotocol import STACK_TXT, ChildPaths, Instance, child_env
from reprospec.process.output import Sink
from reprospec.process.rlimits import LAUNCH
from reprospec.process.run import ENDING_WAIT_S
from reprospec.process.stacks import (
    STACKS_TOTAL_BYTES,
    read_stack_dump,
    wait_for_stack_files,
    without_our_frames,
)
from reprospec.runners.docker import image as dockerimage
from reprospec.runners.docker.container import (
    EXIT_JSON,
    EXIT_STARTED,
    IN_ATTEMPT,
    IN_EXIT,
    IN_HARNESS,
    IN_LAUNCH,
    IN_STACKDUMP,
    PATHS,
    container_workdir,
)
from reprospec.runners.docker.removal import REMOVE_WAIT_S, remove_container

if TYPE_CHECKING:
    from reprospec.perturb.container import ContainerPerturb
    from reprospec.runners.docker.sdk import Container, ContainerConfig, DockerClient, OutputStream

DEFAULT_URL = "unix:///var/run/docker.sock"
LABEL = leftovers.CONTAINER_LABEL
ENGINE_LABEL = "org.reprospec.engine"
ENVINFO_TIMEOUT_S = 120.0
DRAIN_WAIT_S = 2.0
# One wait() call per slice, so `cancel` is noticed within a slice.
WAIT_SLICE_S = 0.5
# docker's words for GPUs asked of an engine without a GPU runtime (`could not select device
# driver "" with capabilities: [[gpu]]`), which say nothing of what is missing.
_NO_GPU_RUNTIME = "could not select device driver"
NO_GPU_RUNTIME_HINT = (
    "; this docker engine has no GPU runtime for the attempt's GPUs (install the NVIDIA "
    "Container Toolkit: `nvidia-ctk runtime configure --runtime=docker`, then restart docker)"
)


def engine_reason(exc: Exception, *, whole: bool = True) -> str:
    """What the engine said of a container it would not make or start, with what to install
    where it had no GPU runtime for the GPUs asked: the attempt's container, the package
    check's and the environment capture's alike. `whole`: docker's whole text, its HTTP
    status and endpoint with its explanation (the package check's and the capture's, as
    they said it); else the explanation alone (the attempt's container, as it said it)."""
    said = str(exc) if whole else str(getattr(exc, "explanation", None) or exc)
    return said + NO_GPU_RUNTIME_HINT if _NO_GPU_RUNTIME in said else said


# docker run's own failures: 125 the daemon, 126 not executable, 127 not found.
DOCKER_START_FAILURES = (125, 126, 127)
# 128+N from the init process means "killed by signal N" for these, where the command's
# own init left no record of its wait status (ExitRecord).
FATAL_SIGNALS = frozenset(
    int(s)
    for s in (
        signal.SIGHUP,
        signal.SIGINT,
        signal.SIGQUIT,
        signal.SIGILL,
        signal.SIGTRAP,
        signal.SIGABRT,
        signal.SIGBUS,
        signal.SIGFPE,
        signal.SIGKILL,
        signal.SIGSEGV,
        signal.SIGPIPE,
        signal.SIGALRM,
        signal.SIGTERM,
        signal.SIGXCPU,
        signal.SIGXFSZ,
        signal.SIGSYS,
    )
)
# Runs inside the container at a timeout, given the asking signal's number ($1: core/
# signals.py's STACK_DUMP_SIGNAL, SIGURG): that signal to every Python process that
# catches it (our sitecustomize registered faulthandler there); prints "P PID PPID CMDLINE"
# for those and "N PID PPID CMDLINE" for every other live process (a `sleep 600` a Python
# one started, named in stack.txt as the local runner names it), none of its own commands.
_ASK_STACKS = r"""
sig=$1
bit=$(( 1 << (sig - 1) ))
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  [ "$pid" = "$$" ] && continue
  stat=$(cat "$d/stat" 2>/dev/null) || continue
  set -- ${stat##*) }
  [ "$1" = Z ] || [ "$2" = "$$" ] && continue
  ppid=$2
  cmd=$(tr '\0\n' '  ' < "$d/cmdline" 2>/dev/null)
  [ -n "$cmd" ] || continue
  kind=N
  mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "$d/status" 2>/dev/null)
  if [ -n "$mask" ]; then
    low=$(printf '%s' "$mask" | tail -c 8)
    exe=$(readlink "$d/exe" 2>/dev/null)
    if [ $(( 0x$low & bit )) -ne 0 ]; then
      case "${exe##*/}" in python*|pypy*) kill -"$sig" "$pid" 2>/dev/null && kind=P ;; esac
    fi
  fi
  echo "$kind $pid $ppid $cmd"
done
"""


def engine_url() -> str:
    """Where the engine is expected to answer (DOCKER_HOST, else the default socket)."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_URL


def connect(base_url: str | None = None, timeout_s: float = 120.0) -> DockerClient:
    """A client of an engine that answered a ping (`timeout_s`: per request); else InfraError."""
    try:
        import docker
    except ImportError as exc:
        raise InfraError(
            "the docker runner needs the docker package: pip install 'reprospec[docker]'"
        ) from exc
    url = base_url or engine_url()
    try:
        client: DockerClient = docker.DockerClient(
            base_url=url, version="auto", max_pool_size=32, timeout=timeout_s
        )
        client.ping()
    except Exception as exc:  # the SDK raises DockerException, requests and OS errors alike
        raise InfraError(
            f"no Docker engine answered at {url}; is dockerd running? "
            "(`reprospec docker setup` installs and starts one, and builds the runner's images)"
        ) from exc
    return client


@frozen
class ExitRecord:
    """The attempt's command's end as its init saw it (launch.py `--init`, IN_EXIT): its wait
    status as subprocess gives it (-10: killed by SIGUSR1; 138: it exited 138), and its pid
    in the container."""

    pid: int
    returncode: int

    @property
    def status(self) -> int:
        """The exit status its init, as docker-init or a shell, gave the container for it."""
        return 128 - self.returncode if self.returncode < 0 else self.returncode

    @classmethod
    def take(cls, log_dir: Path) -> ExitRecord | None:
        """The record in the attempt folder, removed with what a kill left of its writing
        (launch.py's RECORD.partial) and the init's start mark (EXIT_STARTED): the folder
        keeps the files childprotocol.py names, as the local runner's. None where there is
        none (the container was killed first, an init that could not write it) or it is not
        one."""
        path = log_dir / EXIT_JSON
        found = cls.read(log_dir)
        for written in (path, path.with_name(f"{EXIT_JSON}.partial"), log_dir / EXIT_STARTED):
            with contextlib.suppress(OSError):
                written.unlink(missing_ok=True)
        return found

    @classmethod
    def read(cls, log_dir: Path) -> ExitRecord | None:
        """The record in the attempt folder, left there (`take` removes it); None where there
        is none or it is not one."""
        try:
            data = json.loads((log_dir / EXIT_JSON).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        pid = data.get("pid") if isinstance(data, dict) else None
        returncode = data.get("returncode") if isinstance(data, dict) else None
        if type(pid) is not int or type(returncode) is not int:  # bool is no status
            return None
        return cls(pid=pid, returncode=returncode)


def init_started(log_dir: Path) -> bool:
    """Whether the attempt's init (`under_init`) got as far as starting the command: it
    marks the attempt folder (EXIT_STARTED) right before. Read before ExitRecord.take."""
    return (log_dir / EXIT_STARTED).exists()


def returncode_from_status(
    status: int, oom_killed: bool = False, record: ExitRecord | None = None
) -> int:
    """The container's exit status as subprocess would give it: negative for a fatal signal.

    The command's init's `record` says which of the two a 128 + N was, where the container
    ended with the status it gives (not killed past it); without one, 128 + N is a death
    only for the signals of FATAL_SIGNALS (`exit 138` and a SIGUSR1 read alike, as an exit).
    `oom_killed` (docker's `OOMKilled`: the OOM killer killed some process of the container)
    makes it SIGKILL only where no such record says how the command itself ended: a command
    that exited 0 after the kernel killed its workers did not die of SIGKILL.
    """
    if record is not None and record.status == status:
        return record.returncode
    if oom_killed:
        return -int(signal.SIGKILL)
    if status > 128 and status - 128 in FATAL_SIGNALS:
        return -(status - 128)
    return status


def under_init(config: ContainerConfig) -> ContainerConfig:
    """`config` with its command run by launch.py as the container's init, in place of
    docker-init: the command is still pid 1's child (native.is_root, attach.py), and its wait
    status is recorded at IN_EXIT (ExitRecord). Needs the image's python3 (init_missing)."""
    argv = [*config["entrypoint"], *config["command"]]
    wrapped = config.copy()
    wrapped["entrypoint"] = ["python3", "-S", "-E", IN_LAUNCH]
    wrapped["command"] = ["--init", IN_EXIT, "--", *argv]
    wrapped["init"] = False
    return wrapped


def init_missing(reason: str | None) -> bool:
    """Whether an attempt's container could not start because its image has no python3 to
    run `under_init`: the engine's words for it (runc's exec of the entrypoint)."""
    return reason is not None and 'exec: "python3": executable file not found' in reason


def container_config(
    plan: AttemptPlan,
    *,
    image: str,
    argv: Sequence[str],
    log_dir: Path,
    token: str,
    gpu_slot: tuple[str, ...] = (),
    image_pythonpath: str = "",
    harness: bool | None = None,
    paths: ChildPaths = PATHS,
    instance: Instance | None = None,
    read_only: Path | None = None,
) -> ContainerConfig:
    """The keyword arguments of `containers.create` for one attempt (no engine needed).

    `harness` puts the harness on PYTHONPATH (default: when the plan has a workload);
    `paths` are the protocol's paths as the container sees them; `instance` the
    instance of `run.instances` it runs (its variables); `read_only` a folder of this
    host mounted read-only at its own path (RunOptions.read_only): a minimize candidate's
    links to the original workdir's files resolve there, and a write through one fails,
    where the container as root rewrote the user's file through a hard link, 0444 or not.
    """
    from docker.types import DeviceRequest, LogConfig, Mount

    environment = plan.environment
    workdir = container_workdir(plan.workdir)
    mounts = [
        Mount(IN_ATTEMPT, str(log_dir), type="bind"),
        Mount(IN_HARNESS, str(dockerimage.HARNESS_DIR), type="bind", read_only=True),
        Mount(IN_STACKDUMP, str(dockerimage.STACKDUMP_DIR), type="bind", read_only=True),
        Mount(IN_LAUNCH, str(LAUNCH), type="bind", read_only=True),
        Mount(workdir, str(plan.workdir), type="bind"),
    ]
    if read_only is not None:
        # At its own path, links kept, as the candidate's links name it; the engine mounts
        # a folder below another's after it (by depth), so a candidate's folder inside the
        # original workdir is still its own, writable.
        there = folder_as_mounted(read_only).as_posix()
        mounts.append(Mount(there, there, type="bind", read_only=True))
    # The engine renumbers the GPUs it hands over from 0; our PYTHONPATH replaces the
    # image's, so the image's entries are kept after ours. All but the image's own copy of
    # the stackdump sitecustomize: ours, mounted first, chains to it, and a copy from an
    # older image that installed its hooks again, SIGUSR1 taken over with them.
    theirs = ":".join(
        entry
        for entry in image_pythonpath.split(":")
        if entry and entry.rstrip("/") != dockerimage.IMAGE_STACKDUMP
    )
    env = child_env(
        plan,
        paths,
        gpu_ids=[str(i) for i in range(len(gpu_slot))],
        token=token,
        pythonpath_after=[theirs],
        harness=harness,
        instance=instance,
    )
    # environment.perturb's variables; the rest is the attempt's alone (perturbed_config).
    env.update(variables(plan.environment.perturb, env))
    device_requests = []
    if gpu_slot:
        device_requests.append(DeviceRequest(device_ids=list(gpu_slot), capabilities=[["gpu"]]))
    elif environment.gpus > 0:
        device_requests.append(DeviceRequest(count=environment.gpus, capabilities=[["gpu"]]))
    config: ContainerConfig = {
        "image": image,
        # The plan's argv runs as is, whatever ENTRYPOINT the image declares.
        "entrypoint": list(argv[:1]),
        "command": list(argv[1:]),
        "name": f"reprospec-{token[:12]}",
        "init": True,
        "detach": True,
        "stdin_open": False,
        "tty": False,
        "environment": env,
        "working_dir": workdir,
        "mounts": mounts,
        "network_mode": "bridge" if environment.network else "none",
        # The engine's pid: which engine made a container, when several share one daemon.
        "labels": {
            LABEL: token,
            "org.reprospec.cell": plan.cell.id,
            ENGINE_LABEL: str(os.getpid()),
        },
        # The daemon keeps a copy of the output too: bound it (we read the stream live).
        "log_config": LogConfig(type="json-file", config={"max-size": "16m", "max-file": "2"}),
        # The attempt's process limit (docs/limits.md), as the local runner's pids cgroup
        # sets it: a fork bomb in a container filled the host's pid table.
        "pids_limit": pidlimit.max_processes(),
    }
    if environment.shm_size is not None:
        config["shm_size"] = environment.shm_size
    if environment.memory is not None:
        # Swap included, as `docker run` gets it (container.run_options): the default swap
        # limit, twice the memory, let an attempt swap where it should be OOM-killed.
        config["mem_limit"] = config["memswap_limit"] = environment.memory
    if device_requests:
        config["device_requests"] = device_requests
    if os.getuid() != 0:
        # Files in the run folder stay the user's; HOME must then be writable.
        config["user"] = f"{os.getuid()}:{os.getgid()}"
        env.setdefault("HOME", "/tmp")
    return config


def perturbed_config(config: ContainerConfig, applied: ContainerPerturb) -> None:
    """Apply an attempt's perturbations (perturb/container.py) to its container's config.

    Only to an attempt's: probes of the same plan (packages, environment) run plain.
    """
    if applied.cpuset is not None:
        config["cpuset_cpus"] = applied.cpuset
    if applied.memory is not None:
        config["mem_limit"] = config["memswap_limit"] = applied.memory
    if applied.prefix:
        argv = [*applied.prefix, *config["entrypoint"], *config["command"]]
        config["entrypoint"], config["command"] = argv[:1], argv[1:]


@contextlib.contextmanager
def fresh_container(
    client: DockerClient, config: ContainerConfig, record: Path | None = None
) -> Iterator[Container]:
    """A created (not started) container, force-removed on leaving whatever happened.

    While it exists the watchdog knows its name (removed if the engine is killed), and
    `record` (an in-flight record, leftovers.py) lets `--resume` remove it.
    """
    name = str(config["name"])
    flight = leftovers.Flight(record, str(config["labels"][LABEL]), None, container=name)
    flight.begin()
    try:
        yield client.containers.create(**config)
    finally:
        if remove_container(client, name):
            flight.end()
        else:
            # Left registered: the watchdog removes it when this engine exits.
            print(
                f"reprospec: container {name} was not removed within {REMOVE_WAIT_S:.0f}s "
                f"(the engine is slow or stuck): remove it with `docker rm -f {name}`",
                file=sys.stderr,
                flush=True,
            )


class OutputPump:
    """Moves the container's demultiplexed output into the stdout and stderr sinks.

    Its own thread reads the stream; `run.stall` is judged on another (process/run.py's
    StallJudge), which asks `drain` first: an engine starved for the whole stall window
    left the container's lines unread on the attach socket, or read and not yet counted,
    and a judgement on the count alone called a stall of a container that printed all
    along (the local runner's pt40 item 3).
    """

    def __init__(
        self,
        stream: OutputStream,
        stdout: Sink,
        stderr: Sink,
        waiting: Callable[[], bool] | None = None,
    ) -> None:
        self._stream = stream
        self._stdout = stdout
        self._stderr = stderr
        # Whether the stream holds bytes its thread has not taken (the attach socket is
        # readable); a stream without a socket found: only whether the thread is asking.
        self._waiting = waiting if waiting is not None else _socket_waiting(stream)
        # Bytes moved so far (a `run.stall` watch asks whether the container printed).
        self.bytes_read = 0
        # Whether the thread is waiting on the stream for its next frame, none in hand.
        self._asking = False
        self.thread = threading.Thread(
            target=self._run, name="reprospec-docker-output", daemon=True
        )

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # a closed stream ends the pump, nothing else
            frames = iter(self._stream)
            while True:
                self._asking = True
                frame = next(frames, None)
                self._asking = False
                if frame is None:
                    break
                out, err = frame
                if out:
                    self.bytes_read += len(out)
                    self._stdout.write(out)
                if err:
                    self.bytes_read += len(err)
                    self._stderr.write(err)

    # The container's end is wait_for_exit's to see, never the output's: a container may
    # close its output and run on, and a stall must still end it.
    exited = False

    def drain(self) -> int:
        """Let the thread take what the stream holds, at most DRAIN_MOST_S: until twice in a
        row it asks for more with none waiting (a frame read off the socket is counted
        before the thread asks again). The bytes it moved meanwhile."""
        before = self.bytes_read
        deadline = time.monotonic() + DRAIN_MOST_S
        caught_up = 0
        while caught_up < 2 and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(_DRAIN_STEP_S)  # the thread runs (the GIL, a starved CPU)
            caught_up = caught_up + 1 if self._asking and not self._waiting() else 0
        return self.bytes_read - before

    def finish(self, timeout: float) -> bool:
        """Wait for the end of the output; False when it had to be cut."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            with contextlib.suppress(Exception):
                self._stream.close()
            self.thread.join(1.0)
            return False
        return True


# The most a stall's judgement waits for the output thread to catch up, and its steps.
DRAIN_MOST_S = 1.0
_DRAIN_STEP_S = 0.01


def _socket_waiting(stream: OutputStream) -> Callable[[], bool]:
    """Whether the attach stream's socket holds unread bytes, asked without waiting; found
    as the SDK's own `CancellableStream.close` finds it. A stream whose socket is not found
    (another transport, another SDK) answers False: the thread's asking alone is read."""
    sock: object = None
    with contextlib.suppress(Exception):
        raw = stream._response.raw._fp.fp.raw  # type: ignore[attr-defined]
        sock = getattr(raw, "sock", None) or getattr(raw, "_sock", None) or raw
    fileno = getattr(sock, "fileno", None)
    if not callable(fileno):
        return lambda: False
    # A TLS engine's socket (DOCKER_HOST=tcp://..., tls): bytes it read and decrypted and the
    # thread has not taken wait in the SSL object, where poll does not see them.
    pending = getattr(sock, "pending", None)

    def waiting() -> bool:
        try:
            if callable(pending) and pending():
                return True
            poll = select.poll()
            poll.register(fileno(), select.POLLIN | select.POLLPRI)
            return bool(poll.poll(0))
        except (OSError, ValueError):
            return False

    return waiting


def local_pid(container: Container) -> int | None:
    """The started container's first process as this machine's pid; None where the engine is
    elsewhere (a remote DOCKER_HOST, a VM: `docker inspect`'s pid is its machine's, this
    one's only when /proc/PID/cgroup names the container's 64-digit id) or it is gone."""
    import docker.errors

    try:
        container.reload()
    except docker.errors.APIError:
        return None
    state = container.attrs.get("State")
    pid = state.get("Pid") if isinstance(state, dict) else None
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        groups = Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8")
    except OSError:
        return None
    return pid if container.id in groups else None


def wait_for_exit(
    container: Container,
    timeout_s: float | None,
    cancel: threading.Event | None,
    stalled: Callable[[float], bool] | None = None,
) -> int | None:
    """The container's exit status, or None at the timeout, on cancel, or once `stalled`
    (asked with time.monotonic() between waits of WAIT_SLICE_S: `run.stall`) says so."""
    import requests.exceptions

    deadline = time.monotonic() + timeout_s if timeout_s and timeout_s > 0 else float("inf")
    while True:
        if cancel is not None and cancel.is_set():
            return None
        now = time.monotonic()
        left = deadline - now
        if left <= 0 or (stalled is not None and stalled(now)):
            return None
        sliced = cancel is not None or stalled is not None
        piece = min(left, WAIT_SLICE_S) if sliced else min(left, 3600.0)
        try:
            # The SDK's wait timeout surfaces as a requests error, not a TimeoutError.
            result = container.wait(timeout=max(piece, 0.05))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            continue
        code = result.get("StatusCode")
        return code if isinstance(code, int) else -1


def ended_at_stop(container: Container, log_dir: Path, config: ContainerConfig) -> int | None:
    """At a stop, before the engine signals anything in the container: its exit status where
    its command had ended or was ending of its own, else None (it was running: cut short).

    Ended: the container is gone, or the command's init has recorded its end (ExitRecord),
    the container stopping after it (a second or more on a loaded engine): it is killed
    past it, and its status is the record's (the command's own). Ending: a core being
    written, an exit under way (`tree.program_ending` of the command `config` runs, where
    its processes are this machine's), or the command reaped by the init whose record is
    not written yet: its record (or the container's end) is waited for
    ENDING_WAIT_S at most. A Ctrl-C never reaches a container's processes, so such an end
    is the program's; a SIGTERM that reached it too is the scheduler's to set aside
    (pipeline/slack.py)."""
    import docker.errors

    status = wait_for_exit(container, 0.05, None)
    if status is not None:
        return status
    record = log_dir / EXIT_JSON
    if not record.exists():
        init = local_pid(container)
        if init is None:
            return None
        kids = tree.children(init)
        # The init reaped the command and is writing its record: its end is the command's
        # own. Read as "running", a stop in that moment (a large core just written) cut a
        # finished crash short.
        reaped = not kids and init_started(log_dir)
        argv = container_command(config)
        if not reaped and not any(tree.program_ending(argv, pid) for pid in kids):
            return None
        # Its end comes as its record (an image without the init: the container's end).
        deadline = time.monotonic() + ENDING_WAIT_S
        while not record.exists() and time.monotonic() < deadline:
            status = wait_for_exit(container, 0.1, None)
            if status is not None:
                return status
    ended = ExitRecord.read(log_dir)
    if ended is None:
        return None
    # The command has ended: the container's own stopping is not waited for.
    with contextlib.suppress(docker.errors.APIError):
        container.kill()
    wait_for_exit(container, 30.0, None)
    return ended.status


def container_command(config: ContainerConfig) -> list[str]:
    """The command a container's config runs, past the init of `under_init`: the argv whose
    pid its ExitRecord holds."""
    # Past a perturbation's `nice -n N` (perturbed_config), which execs the init.
    argv = list(tree.exec_target([*config["entrypoint"], *config["command"]]))
    if argv[:4] == ["python3", "-S", "-E", IN_LAUNCH] and "--" in argv:
        return argv[argv.index("--") + 1 :]
    return argv


def collect_stacks(container: Container, log_dir: Path) -> Path | None:
    """STACK_DUMP_SIGNAL to the container's Python processes; their dumps gathered into
    stack.txt."""
    import docker.errors

    try:
        result = container.exec_run(
            ["sh", "-c", _ASK_STACKS, "sh", str(int(STACK_DUMP_SIGNAL))], stdout=True, stderr=False
        )
    except docker.errors.APIError:
        return None
    asked: dict[int, str] = {}
    others: dict[int, tuple[int, str]] = {}  # pid: (ppid, cmdline)
    for line in result.output.decode("utf-8", "replace").splitlines():
        fields = line.strip().split(" ", 3)
        if len(fields) < 4 or not (fields[1].isdigit() and fields[2].isdigit()):
            continue
        kind, number, parent, cmd = fields
        if kind == "P":
            asked[int(number)] = cmd.strip()
        else:
            others[int(number)] = (int(parent), cmd.strip())
    if not asked:
        return None
    # The programs the Python processes started (`subprocess.run(["sleep", "600"])`).
    started = {pid: cmd for pid, (ppid, cmd) in others.items() if ppid in asked}
    # Each process's dump is in the attempt folder (childprotocol: REPROSPEC_STACK_DIR).
    wait_for_stack_files(log_dir, asked)
    parts: list[str] = []
    budget = STACKS_TOTAL_BYTES
    order = sorted({*asked, *started})
    for index, pid in enumerate(order):
        if budget <= 0:
            parts.append(stacks_omitted(len(order) - index))
            break
        if pid in started:
            header = stack_header(pid, started[pid], "[in container]", NOT_PYTHON)
            parts.append(f"{header}\n(no Python stack)\n")
            budget -= len(parts[-1])
            continue
        # The dump is the container's to write: read head + tail (process/stacks.py).
        text = without_our_frames(read_stack_dump(log_dir / f"stack-{pid}.txt")).rstrip()
        body = text or "(no Python stack: the process did not answer)"
        parts.append(f"{stack_header(pid, asked[pid], '[in container]')}\n{body}\n")
        budget -= len(parts[-1])
    out = log_dir / STACK_TXT
    out.write_text("\n".join(parts), encoding="utf-8")
    return out
