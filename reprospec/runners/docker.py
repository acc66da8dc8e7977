"""The docker runner: each attempt in a fresh container, removed afterwards whatever happens.

The child protocol (docs/ARCHITECTURE.md) is the local runner's, with in-container
paths: the attempt's log folder, the harness and the stack dumper are bind-mounted,
so events.jsonl, env.json, cell.json and stack.txt land where the local runner puts
them. Exit statuses are turned back into what subprocess would report (a segfault
is -11, not 139), so classification is the same for both runners.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from reprospec import dockerimage
from reprospec.capture import EventWriter, MarkerMatcher, Sink, compile_markers, output_sink
from reprospec.errors import FatalError, InfraError
from reprospec.models import AttemptPlan, Execution
from reprospec.process import utc_now, wait_for_stack_files
from reprospec.runners.base import attempt_files, infra_execution, json_default, write_cell

DEFAULT_URL = "unix:///var/run/docker.sock"
IN_ATTEMPT = "/reprospec/attempt"
IN_HARNESS = "/reprospec/harness"
IN_STACKDUMP = "/reprospec/stackdump"
LABEL = "org.reprospec.attempt"
ENVINFO_TIMEOUT_S = 120.0
DRAIN_WAIT_S = 2.0
# One wait() call per slice, so `cancel` is noticed within a slice.
WAIT_SLICE_S = 0.5
# docker run's own failures: 125 the daemon, 126 not executable, 127 not found.
DOCKER_START_FAILURES = (125, 126, 127)
# 128+N from the init process means "killed by signal N" for these.
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
# Paths a workdir must not shadow inside the container: such a workdir goes to /work.
_SYSTEM_ROOTS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/opt",
    "/proc",
    "/reprospec",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)
# Runs inside the container at a timeout: SIGUSR1 to every Python process that
# catches it (our sitecustomize registered faulthandler there); prints "PID CMDLINE".
_ASK_STACKS = r"""
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  [ "$pid" = "$$" ] && continue
  mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "$d/status" 2>/dev/null)
  [ -n "$mask" ] || continue
  low=$(printf '%s' "$mask" | tail -c 8)
  [ $(( 0x$low & 0x200 )) -ne 0 ] || continue
  exe=$(readlink "$d/exe" 2>/dev/null)
  case "${exe##*/}" in python*|pypy*) ;; *) continue ;; esac
  kill -USR1 "$pid" 2>/dev/null || continue
  echo "$pid $(tr '\0\n' '  ' < "$d/cmdline" 2>/dev/null)"
done
"""
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def engine_url() -> str:
    """Where the engine is expected to answer (DOCKER_HOST, else the default socket)."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_URL


def connect(base_url: str | None = None) -> Any:
    """A client of an engine that answered a ping; InfraError (exit 3) otherwise."""
    try:
        import docker
    except ImportError as exc:
        raise InfraError(
            "the docker runner needs the docker package: pip install 'reprospec[docker]'"
        ) from exc
    url = base_url or engine_url()
    try:
        client = docker.DockerClient(base_url=url, version="auto", max_pool_size=32, timeout=120)
        client.ping()
    except Exception as exc:  # the SDK raises DockerException, requests and OS errors alike
        raise InfraError(f"no Docker engine answered at {url}; is dockerd running?") from exc
    return client


def docker_size(value: Any) -> str | int | None:
    """`64m`, `4GiB`, `1.5g`, 1024 -> what the engine accepts (bytes or `<n><unit>`)."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return int(value)
    found = _SIZE.match(str(value))
    if found is None:
        raise InfraError(f"not a size: {value!r} (expected e.g. 64m, 4g)")
    number, unit = found.groups()
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit.lower()]
    return int(float(number) * scale)


def returncode_from_status(status: int, oom_killed: bool = False) -> int:
    """The container's exit status as subprocess would give it: negative for a fatal signal."""
    if oom_killed:
        return -int(signal.SIGKILL)
    if status > 128 and status - 128 in FATAL_SIGNALS:
        return -(status - 128)
    return status


def container_workdir(host: Path) -> str:
    """The workdir's path inside the container: the same path unless it would shadow the system."""
    text = host.as_posix()
    if text == "/" or any(text == r or text.startswith(r + "/") for r in _SYSTEM_ROOTS):
        return "/work"
    return text


def spec_dir_of(plan: AttemptPlan) -> Path | None:
    """The spec's folder, worked back from the workdir (which is relative to the spec)."""
    workdir = Path(str(plan.environment.get("workdir") or "."))
    if workdir.is_absolute() or ".." in workdir.parts:
        return None
    folder = plan.workdir
    for _ in workdir.parts:
        folder = folder.parent
    return folder


def attempt_argv(plan: AttemptPlan) -> list[str] | None:
    """What the container runs: the harness for a workload, else the plan's argv."""
    if plan.workload is not None:
        return ["python3", "-m", "reprospec_harness"]
    return list(plan.argv) if plan.argv else None


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
) -> dict[str, Any]:
    """The keyword arguments of `containers.create` for one attempt (no engine needed).

    `harness` puts the harness on PYTHONPATH (default: when the plan has a workload).
    """
    from docker.types import DeviceRequest, LogConfig, Mount

    environment = plan.environment
    workdir = container_workdir(plan.workdir)
    mounts = [
        Mount(IN_ATTEMPT, str(log_dir), type="bind"),
        Mount(IN_HARNESS, str(dockerimage.HARNESS_DIR), type="bind", read_only=True),
        Mount(IN_STACKDUMP, str(dockerimage.STACKDUMP_DIR), type="bind", read_only=True),
        Mount(workdir, str(plan.workdir), type="bind"),
    ]
    env = {str(k): str(v) for k, v in plan.env.items()}
    paths = [IN_STACKDUMP]
    if harness or (harness is None and plan.workload is not None):
        paths.append(IN_HARNESS)
    if plan.workload is not None:
        env["REPROSPEC_CELL"] = f"{IN_ATTEMPT}/cell.json"
    # Our PYTHONPATH replaces the image's: keep the image's entries after ours.
    paths += [p for p in (env.get("PYTHONPATH", ""), image_pythonpath) if p]
    env["PYTHONPATH"] = ":".join(paths)
    env["REPROSPEC_EVENTS"] = f"{IN_ATTEMPT}/events.jsonl"
    env["REPROSPEC_ENV_JSON"] = f"{IN_ATTEMPT}/env.json"
    env["REPROSPEC_STACK_DIR"] = f"{IN_ATTEMPT}/stacks"
    env["REPROSPEC_ATTEMPT_TOKEN"] = token
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    device_requests = []
    if gpu_slot:
        device_requests.append(DeviceRequest(device_ids=list(gpu_slot), capabilities=[["gpu"]]))
        # The engine renumbers the GPUs it hands over from 0.
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(gpu_slot)))
    elif int(environment.get("gpus") or 0) > 0:
        count = int(environment["gpus"])
        device_requests.append(DeviceRequest(count=count, capabilities=[["gpu"]]))
    config: dict[str, Any] = {
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
        "network_mode": "bridge" if environment.get("network") else "none",
        "labels": {LABEL: token, "org.reprospec.cell": plan.cell.id},
        # The daemon keeps a copy of the output too: bound it (we read the stream live).
        "log_config": LogConfig(type="json-file", config={"max-size": "16m", "max-file": "2"}),
    }
    shm = docker_size(environment.get("shm_size"))
    if shm is not None:
        config["shm_size"] = shm
    memory = docker_size(environment.get("memory"))
    if memory is not None:
        config["mem_limit"] = memory
    if device_requests:
        config["device_requests"] = device_requests
    if os.getuid() != 0:
        # Files in the run folder stay the user's; HOME must then be writable.
        config["user"] = f"{os.getuid()}:{os.getgid()}"
        env.setdefault("HOME", "/tmp")
    return config


@contextlib.contextmanager
def fresh_container(client: Any, config: Mapping[str, Any]) -> Iterator[Any]:
    """A created (not started) container, force-removed on leaving whatever happened."""
    import docker.errors

    name = str(config["name"])
    container = None
    try:
        container = client.containers.create(**config)
        yield container
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            try:
                (container or client.containers.get(name)).remove(force=True, v=True)
            except docker.errors.APIError:
                # "removal already in progress" and the like: give the engine a moment, once.
                time.sleep(0.2)
                with contextlib.suppress(docker.errors.APIError):
                    client.containers.get(name).remove(force=True, v=True)


class _OutputPump:
    """Moves the container's demultiplexed output into the stdout and stderr sinks."""

    def __init__(self, stream: Any, stdout: Sink, stderr: Sink) -> None:
        self._stream = stream
        self._stdout = stdout
        self._stderr = stderr
        self.thread = threading.Thread(
            target=self._run, name="reprospec-docker-output", daemon=True
        )

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # a closed stream ends the pump, nothing else
            for out, err in self._stream:
                if out:
                    self._stdout.write(out)
                if err:
                    self._stderr.write(err)

    def finish(self, timeout: float) -> bool:
        """Wait for the end of the output; False when it had to be cut."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            with contextlib.suppress(Exception):
                self._stream.close()
            self.thread.join(1.0)
            return False
        return True


class DockerRunner:
    """Runs attempts in containers of a local Docker engine (docker SDK)."""

    name = "docker"

    def __init__(
        self,
        find_links: Path | None = None,
        *,
        base_url: str | None = None,
        client: Any = None,
        spec_dir: Path | None = None,
    ) -> None:
        self.find_links = find_links
        self.spec_dir = spec_dir
        self._base_url = base_url
        self._client = client
        self._lock = threading.Lock()
        self._images: dict[str, str] = {}
        self._pythonpaths: dict[str, str] = {}

    @property
    def client(self) -> Any:
        """The engine client, connected on first use (InfraError when no engine answers)."""
        with self._lock:
            if self._client is None:
                self._client = connect(self._base_url)
            return self._client

    # -- images ------------------------------------------------------------------------

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:
        """Connect, then find or build the image of every distinct environment."""
        client = self.client
        for plan in plans:
            self._image_for(client, plan)

    def _image_for(self, client: Any, plan: AttemptPlan) -> str:
        environment = plan.environment
        key = json.dumps(environment, sort_keys=True, default=json_default)
        with self._lock:
            # One build at a time: parallel attempts of one environment wait for it.
            if key not in self._images:
                recipe = dockerimage.recipe_for(
                    environment,
                    spec_dir=self.spec_dir or spec_dir_of(plan),
                    find_links=self.find_links,
                )
                self._images[key] = dockerimage.ensure_image(client, recipe)
            return self._images[key]

    def _image_pythonpath(self, client: Any, image: str) -> str:
        with self._lock:
            if image not in self._pythonpaths:
                env = client.images.get(image).attrs.get("Config", {}).get("Env") or []
                found = [e.split("=", 1)[1] for e in env if e.startswith("PYTHONPATH=")]
                self._pythonpaths[image] = found[0] if found else ""
            return self._pythonpaths[image]

    def _container_config(
        self, plan: AttemptPlan, argv: Sequence[str], log_dir: Path, **options: Any
    ) -> tuple[Any, str, dict[str, Any]]:
        """(client, image, config) for one fresh container of the plan's image, with its token."""
        client = self.client
        image = self._image_for(client, plan)
        config = container_config(
            plan,
            image=image,
            argv=argv,
            log_dir=log_dir,
            token=uuid.uuid4().hex,
            image_pythonpath=self._image_pythonpath(client, image),
            **options,
        )
        return client, image, config

    # -- attempts ----------------------------------------------------------------------

    def run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
    ) -> Execution:
        """Run one attempt in a fresh container to its end, timeout or cancel."""
        log_dir = log_dir.resolve()
        base = attempt_files(plan, log_dir, gpu_slot)
        events_path = base["events_path"]

        def infra(reason: str, warnings: Sequence[str] = ()) -> Execution:
            now = utc_now()
            return infra_execution(base, reason, started=now, finished=now, warnings=warnings)

        argv = attempt_argv(plan)
        if argv is None:
            return infra("nothing to run: the plan has neither a command nor a workload")
        if not plan.workdir.is_dir():
            return infra(f"workdir not found: {plan.workdir}")
        try:
            client, _, config = self._container_config(plan, argv, log_dir, gpu_slot=gpu_slot)
        except FatalError as exc:
            return infra(str(exc))
        if plan.workload is not None:
            write_cell(plan, log_dir / "cell.json")
        (log_dir / "stacks").mkdir(exist_ok=True)
        markers, warnings = compile_markers(plan.markers)
        events = EventWriter(events_path) if markers else None
        # Markers are matched on their own thread: a slow regex never delays the timeout.
        matcher = MarkerMatcher(markers, events) if events is not None else None
        stdout = output_sink(base["stdout_path"], matcher=matcher)
        stderr = output_sink(base["stderr_path"], matcher=matcher)
        late: list[str] = []
        try:
            execution = self._run_container(
                client, plan, config, log_dir, stdout, stderr, cancel, warnings, base
            )
        finally:
            stdout.close()
            stderr.close()
            if matcher is not None:
                late = matcher.close()
            if events is not None:
                events.close()
            _remove_tree(log_dir / "stacks")
        if late:
            execution = dataclasses.replace(execution, warnings=(*execution.warnings, *late))
        return execution

    def _run_container(
        self,
        client: Any,
        plan: AttemptPlan,
        config: Mapping[str, Any],
        log_dir: Path,
        stdout: Sink,
        stderr: Sink,
        cancel: threading.Event | None,
        warnings: list[str],
        base: dict[str, Any],
    ) -> Execution:
        import docker.errors

        started = utc_now()
        begin = time.monotonic()
        timed_out = interrupted = False
        stack_path: Path | None = None
        try:
            with fresh_container(client, config) as container:
                # Attached before start: not a byte of output is missed.
                stream = container.attach(stdout=True, stderr=True, stream=True, demux=True)
                pump = _OutputPump(stream, stdout, stderr)
                pump.thread.start()
                container.start()
                begin = time.monotonic()
                status = _wait(container, plan.timeout_s, cancel)
                if status is None:
                    timed_out = not (cancel is not None and cancel.is_set())
                    interrupted = not timed_out
                    stack_path = collect_stacks(container, log_dir)
                    with contextlib.suppress(docker.errors.APIError):
                        container.kill()
                    status = _wait(container, 30.0, None)
                duration = time.monotonic() - begin
                if not pump.finish(DRAIN_WAIT_S):
                    warnings.append("the container's output was still open after it exited")
                container.reload()
                state = container.attrs.get("State", {})
                oom = bool(state.get("OOMKilled"))
                raw = int(status if status is not None else state.get("ExitCode", -1))
        except docker.errors.ImageNotFound as exc:
            return self._infra(base, started, f"docker image missing: {exc.explanation or exc}")
        except docker.errors.APIError as exc:
            return self._infra(
                base, started, f"the container could not start: {exc.explanation or exc}"
            )
        finished = utc_now()
        if oom:
            warnings.append(
                f"the container was killed by the kernel's OOM killer "
                f"(memory limit {plan.environment.get('memory')})"
            )
        infra_error = None
        if raw in DOCKER_START_FAILURES and not timed_out and not interrupted:
            infra_error = (
                f"the container could not run {config['entrypoint'][0]!r} "
                f"(exit {raw}: {_last_line(base['stderr_path'])})"
            )
        env_json = log_dir / "env.json"
        return Execution(
            returncode=None if infra_error else returncode_from_status(raw, oom),
            timed_out=timed_out,
            duration_s=round(duration, 6),
            started=started,
            finished=finished,
            stack_path=stack_path,
            env_path=env_json if env_json.is_file() and env_json.stat().st_size else None,
            infra_error=infra_error,
            interrupted=interrupted,
            warnings=tuple(warnings),
            **base,
        )

    @staticmethod
    def _infra(base: Mapping[str, Any], started: str, reason: str) -> Execution:
        return infra_execution(base, reason, started=started, finished=utc_now())

    # -- environment -------------------------------------------------------------------

    def capture_environment(self, plan: AttemptPlan, log_dir: Path) -> Mapping[str, Any]:
        """`python3 -m reprospec_harness.envinfo` in a container of the plan's image."""
        import docker.errors

        try:
            log_dir = log_dir.resolve()
            log_dir.mkdir(parents=True, exist_ok=True)
            argv = ["python3", "-m", "reprospec_harness.envinfo"]
            client, image, config = self._container_config(plan, argv, log_dir, harness=True)
            config["environment"].pop("REPROSPEC_CELL", None)
            config["labels"] = {LABEL: config["labels"][LABEL], "org.reprospec.envinfo": "1"}
            with fresh_container(client, config) as container:
                container.start()
                status = _wait(container, ENVINFO_TIMEOUT_S, None)
                if status is None:
                    return {"error": f"environment capture timed out after {ENVINFO_TIMEOUT_S:g}s"}
                out = container.logs(stdout=True, stderr=False)
                err = container.logs(stdout=False, stderr=True)
        except (FatalError, docker.errors.APIError) as exc:
            return {"error": f"environment capture failed: {exc}"}
        if status != 0:
            last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return {"error": f"environment capture exited with {status}: {last[0]}"}
        try:
            data = json.loads(out)
        except ValueError as exc:
            return {"error": f"environment capture printed no JSON: {exc}"}
        if not isinstance(data, dict):
            return {"error": "environment capture printed no JSON object"}
        data.setdefault("container", {"runtime": "docker", "image": image})
        return data


def _wait(container: Any, timeout_s: float | None, cancel: threading.Event | None) -> int | None:
    """The container's exit status, or None at the timeout or on cancel."""
    import requests.exceptions

    deadline = time.monotonic() + timeout_s if timeout_s and timeout_s > 0 else float("inf")
    while True:
        if cancel is not None and cancel.is_set():
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        piece = min(left, WAIT_SLICE_S) if cancel is not None else min(left, 3600.0)
        try:
            # The SDK's wait timeout surfaces as a requests error, not a TimeoutError.
            result = container.wait(timeout=max(piece, 0.05))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            continue
        return int(result.get("StatusCode", -1))


def collect_stacks(container: Any, log_dir: Path) -> Path | None:
    """SIGUSR1 to the container's Python processes; their dumps gathered into stack.txt."""
    import docker.errors

    try:
        result = container.exec_run(["sh", "-c", _ASK_STACKS], stdout=True, stderr=False)
    except docker.errors.APIError:
        return None
    asked: dict[int, str] = {}
    for line in result.output.decode("utf-8", "replace").splitlines():
        pid, _, cmd = line.strip().partition(" ")
        if pid.isdigit():
            asked[int(pid)] = cmd.strip()
    if not asked:
        return None
    stack_dir = log_dir / "stacks"
    wait_for_stack_files(stack_dir, asked)
    parts: list[str] = []
    for pid in sorted(asked):
        cmd = asked[pid] if len(asked[pid]) <= 200 else asked[pid][:197] + "..."
        try:
            text = (stack_dir / f"stack-{pid}.txt").read_text("utf-8", "replace").rstrip()
        except OSError:
            text = ""
        body = text or "(no Python stack: the process did not answer)"
        parts.append(f"--- pid {pid} ({cmd}) [in container] ---\n{body}\n")
    out = log_dir / "stack.txt"
    out.write_text("\n".join(parts), encoding="utf-8")
    return out


def _last_line(path: Path) -> str:
    try:
        lines = path.read_bytes().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else "no output"


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
