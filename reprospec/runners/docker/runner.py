"""The docker runner: each attempt in a fresh container, removed afterwards whatever happens.

The child protocol (docs/ARCHITECTURE.md) is the local runner's, with in-container
paths: the attempt's log folder, the harness and the stack dumper are bind-mounted,
so events.jsonl, env.json, cell.json and stack.txt land where the local runner puts
them. Exit statuses are turned back into what subprocess would report (a segfault
is -11, not 139), so classification is the same for both runners: the command runs under
launch.py as the container's init, which records its wait status (engine.ExitRecord), as
the container's 128 + N cannot tell a SIGUSR1 from an `exit 138`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.core.logtext import printable
from reprospec.core.notstarted import not_started
from reprospec.core.results import Execution
from reprospec.core.trylock import SharedHold
from reprospec.core.units import format_size
from reprospec.core.words import oom_killed, process_limit_reached
from reprospec.environment import packages
from reprospec.errors import FatalError, InfraError, UsageError
from reprospec.perturb.apply import PerturbRefused
from reprospec.perturb.competitors import start_load, stop_load
from reprospec.perturb.container import for_container
from reprospec.process import leftovers, scratch, tree
from reprospec.process.childprotocol import ChildPaths, Instance, write_cell
from reprospec.process.cpuwait import CpuWait
from reprospec.process.output import (
    CompiledMarker,
    EventWriter,
    MarkerMatcher,
    Sink,
    compile_markers,
    output_sink,
)
from reprospec.process.run import StallJudge, utc_now
from reprospec.process.stacks import keep_program_raised, remove_stack_dumps
from reprospec.runners.base import (
    AttemptFiles,
    attempt_files,
    cd_folders,
    infra_execution,
    pipeline_report,
    stall_watch,
)
from reprospec.runners.docker import image as dockerimage
from reprospec.runners.docker import probe
from reprospec.runners.docker.cache import hold_image
from reprospec.runners.docker.container import (
    PATHS,
    attempt_argv,
    container_workdir,
    read_only_clash,
)
from reprospec.runners.docker.engine import (
    DOCKER_START_FAILURES,
    DRAIN_WAIT_S,
    LABEL,
    ExitRecord,
    OutputPump,
    collect_stacks,
    connect,
    container_command,
    container_config,
    ended_at_stop,
    engine_reason,
    fresh_container,
    init_missing,
    init_started,
    local_pid,
    perturbed_config,
    returncode_from_status,
    under_init,
    wait_for_exit,
)
from reprospec.runners.docker.instances import (
    instance_argv,
    instance_paths,
    join_pod,
    run_instances,
)
from reprospec.runners.docker.native import ContainerNative
from reprospec.runners.docker.pidswatch import PidsWatch
from reprospec.runners.together import InstanceStart

if TYPE_CHECKING:
    from reprospec.runners.docker.sdk import ContainerConfig, DockerClient


def _say_on_stderr(message: str) -> None:
    print(f"reprospec: {message}", file=sys.stderr, flush=True)


class _InitFailed(Exception):
    """The container's init (engine.under_init) could not start (no python3 in the image)
    or ended before it started the attempt's command (its exit status, or the engine's
    words): the command is to run under docker-init."""

    def __init__(self, why: str | int) -> None:
        super().__init__(why)
        # The container's exit status where the image's python3 ran and failed (too old for
        # launch.py, broken): what it printed is worth a warning. None: it had no python3.
        self.status = why if isinstance(why, int) else None


@frozen
class _Streams:
    """One container's output: the attempt's two logs, and with markers their matcher and
    its events. A try whose init failed has its own, dropped before the command's rerun."""

    stdout: Sink
    stderr: Sink
    matcher: MarkerMatcher | None
    events: EventWriter | None

    @classmethod
    def open(cls, base: AttemptFiles, markers: Sequence[CompiledMarker]) -> _Streams:
        """Fresh sinks: the logs are (re)written from their first byte."""
        events = EventWriter(base["events_path"]) if markers else None
        # Markers are matched on their own thread: a slow regex never delays the timeout.
        matcher = MarkerMatcher(markers, events) if events is not None else None
        return cls(
            stdout=output_sink(base["stdout_path"], matcher=matcher),
            stderr=output_sink(base["stderr_path"], matcher=matcher),
            matcher=matcher,
            events=events,
        )

    def close(self) -> list[str]:
        """Close every sink; the matcher's warnings (markers that stalled, lines skipped)."""
        self.stdout.close()
        self.stderr.close()
        late = self.matcher.close() if self.matcher is not None else []
        if self.events is not None:
            self.events.close()
        return late


def _drop_init_try(
    streams: _Streams, base: AttemptFiles, events_size: int, failed: _InitFailed
) -> str | None:
    """Close the streams of a try whose init never started the command, and take back what
    they wrote: the logs are rewritten by the rerun's sinks, and events.jsonl is cut back to
    its size before the try (nothing else writes it while no command runs: what it gained is
    the try's markers, matched on the init's words). The warning that keeps the init's last
    words for a maintainer (None where the image had no python3: nothing ran to say any)."""
    streams.close()
    said = ""
    for log in ("stderr_path", "stdout_path"):
        with contextlib.suppress(OSError):
            text = capped.head_tail(base[log], 0, 4 << 10).decode("utf-8", "replace")
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines and not said:
                said = printable(lines[-1], one_line=True)[:300]
    with contextlib.suppress(OSError):
        if capped.size(base["events_path"]) > events_size:
            os.truncate(base["events_path"], events_size)
    if failed.status is None:
        return None
    return (
        "the image's python3 could not run reprospec's container init (launch.py, which "
        "tells a death by signal N from an `exit 128+N`): the command ran under docker-init "
        f"instead, as this image's later attempts do; the init exited {failed.status}"
        + (f": {said}" if said else " and printed nothing")
    )


class DockerRunner:
    """Runs attempts in containers of a local Docker engine (docker SDK)."""

    name = "docker"

    def __init__(
        self,
        find_links: Path | None = None,
        *,
        base_url: str | None = None,
        client: DockerClient | None = None,
        spec_dir: Path | None = None,
        say: Callable[[str], None] | None = None,
        native_stacks: bool = True,
        keep_cores: bool = False,
        read_only: Path | None = None,
    ) -> None:
        self.find_links = find_links
        # RunOptions.read_only: mounted read-only at its own path in each attempt's container.
        self.read_only = read_only
        # gdb stacks of crashes (cores) and hangs (attached), gdb running in the image.
        self.native = ContainerNative(keep_cores=keep_cores) if native_stacks else None
        # Image builds take minutes: the user hears them start, step and end.
        self.say = say if say is not None else _say_on_stderr
        self.spec_dir = spec_dir
        self._base_url = base_url
        self._client = client
        self._lock = threading.Lock()
        self._images: dict[str, str] = {}
        # Each of the runner's images this run uses, held (cache.hold_image) until close: a
        # prune meanwhile leaves it, where it removed a later cell's image under the run.
        self._holds: dict[str, SharedHold | None] = {}
        # environment -> why its image could not be had: asked once, every attempt of it is
        # an infra-error with the reason (a failed build is not started again per attempt).
        self._image_errors: dict[str, str] = {}
        self._pythonpaths: dict[str, str] = {}
        # (image, packages) -> why the image does not satisfy them (None: it does).
        self._package_checks: dict[tuple[str, tuple[str, ...]], str | None] = {}
        # (image, packages) -> the versions the check found: what a range resolved to.
        self._package_versions: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}
        self._check_lock = threading.Lock()
        # Images without the python3 that runs launch.py as the init (engine.under_init):
        # their commands run under docker-init, read without the init's record, as before.
        self._without_init: set[str] = set()

    @property
    def client(self) -> DockerClient:
        """The engine client, connected on first use (InfraError when no engine answers)."""
        with self._lock:
            if self._client is None:
                self._client = connect(self._base_url)
            return self._client

    # -- images ------------------------------------------------------------------------

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:
        """Connect, then find or build the image of every distinct environment.

        Raises InfraError only when no engine answers. An image that is missing or whose
        build fails is its own cells' matter, as a venv the venv runner cannot build is:
        their attempts are infra-errors with the reason and the other cells run (a bisect
        skips a release that cannot be installed, never ends at it).
        """
        folder = self.read_only
        for plan in plans:
            clash = None if folder is None else read_only_clash(folder, plan.workdir)
            if clash is not None:
                # The run's options, not a cell's matter: every attempt would fail alike.
                raise UsageError(
                    f"read_only {folder}: cannot be mounted read-only at its own path "
                    f"in the container: {clash}"
                )
        client = self.client
        for plan in plans:
            # Recorded by _image_for; run() makes each attempt of it an infra-error.
            with contextlib.suppress(InfraError):
                self._image_for(client, plan)

    def build_error(self, plan: AttemptPlan) -> str:
        """Why the plan's image could not be had ("" when it is there or not yet asked for)."""
        with self._lock:
            return self._image_errors.get(self._environment_key(plan), "")

    @staticmethod
    def _environment_key(plan: AttemptPlan) -> str:
        return dockerimage.environment_key(plan.environment)

    def _image_for(self, client: DockerClient, plan: AttemptPlan) -> str:
        environment = plan.environment
        key = self._environment_key(plan)
        with self._lock:
            if key in self._image_errors:
                raise InfraError(self._image_errors[key])
            # One build at a time: parallel attempts of one environment wait for it.
            if key not in self._images:
                try:
                    recipe = dockerimage.recipe_for(
                        environment,
                        spec_dir=self.spec_dir,
                        find_links=self.find_links,
                    )
                    if recipe.tag not in self._holds:
                        # Before it is found or built: a prune then leaves it until close.
                        self._holds[recipe.tag] = hold_image(recipe.tag)
                    self._images[key] = dockerimage.ensure_image(client, recipe, say=self.say)
                except InfraError as exc:
                    message = str(exc)
                    if "\n" in message:
                        # The build's log tail, once, where builds are heard: as text, its
                        # colours dropped and any other control character written out.
                        self.say(printable(dockerimage.without_colour(message)))
                    self._image_errors[key] = dockerimage.build_failure_reason(message)
                    raise InfraError(self._image_errors[key]) from exc
            return self._images[key]

    def _image_pythonpath(self, client: DockerClient, image: str) -> str:
        import docker.errors

        with self._lock:
            if image not in self._pythonpaths:
                try:
                    config = client.images.get(image).attrs.get("Config")
                except docker.errors.ImageNotFound as exc:
                    # Removed since the run found it (`docker image rm`, a prune from
                    # elsewhere): the attempt's infra-error, as when its container cannot be
                    # made of it, where the engine's 404 stopped the whole run.
                    raise InfraError(
                        f"docker image missing: {exc.explanation or exc} (removed since "
                        "this run found it)"
                    ) from exc
                env = config.get("Env") if isinstance(config, dict) else None
                found = [
                    e.split("=", 1)[1]
                    for e in (env if isinstance(env, list) else [])
                    if isinstance(e, str) and e.startswith("PYTHONPATH=")
                ]
                self._pythonpaths[image] = found[0] if found else ""
            return self._pythonpaths[image]

    def _container_config(
        self,
        plan: AttemptPlan,
        argv: Sequence[str],
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        harness: bool | None = None,
        paths: ChildPaths = PATHS,
        instance: Instance | None = None,
    ) -> tuple[DockerClient, str, ContainerConfig]:
        """(client, image, config) for one fresh container of the plan's image, with its token;
        the keywords are `container_config`'s."""
        client = self.client
        image = self._image_for(client, plan)
        config = container_config(
            plan,
            image=image,
            argv=argv,
            log_dir=log_dir,
            token=uuid.uuid4().hex,
            image_pythonpath=self._image_pythonpath(client, image),
            gpu_slot=gpu_slot,
            harness=harness,
            paths=paths,
            instance=instance,
            read_only=self.read_only,
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
        return self._run(plan, log_dir, gpu_slot=gpu_slot, cancel=cancel)

    def run_instances(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slots: Sequence[tuple[str, ...]],
        cancel: threading.Event | None = None,
    ) -> tuple[Execution, ...]:
        """Run `plan.copies` instances of one attempt, a container each, released together.

        They share a pod's network and /dev/shm and the attempt's TMPDIR and
        XDG_CACHE_HOME (dockerinstances.py). Raises InfraError when the instances could
        not all be started; no container of the attempt survives the return.
        """
        return run_instances(self, plan, log_dir, gpu_slots=gpu_slots, cancel=cancel)

    def _run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
        instance: tuple[InstanceStart, str] | None = None,
    ) -> Execution:
        """One container to its end; `instance`: (how it starts, the pod it joins)."""
        log_dir = log_dir.resolve()
        base = attempt_files(plan, log_dir, gpu_slot)
        events_path = base["events_path"]

        def infra(reason: str, warnings: Sequence[str] = ()) -> Execution:
            now = utc_now()
            return infra_execution(base, reason, started=now, finished=now, warnings=warnings)

        argv = attempt_argv(plan)
        if argv is None:
            return infra("nothing to run: the plan has neither a command nor a workload")
        program = argv[0]
        tool = plan.environment.debug.compute_sanitizer
        if tool is not None:
            # The image would need compute-sanitizer and the container the GPU driver's
            # debugger interface: not done yet (the other diagnostics are variables, applied).
            return infra(
                f"environment.debug.compute_sanitizer: {tool} runs on the local and venv "
                "runners only"
            )

        garbled = _garbled_by_the_api(argv, plan.environment.env)
        if garbled is not None:
            return infra(garbled)

        try:
            # Before anything starts: a perturbation the container cannot get is the
            # attempt's infra-error, never a plain run (perturb/container.py).
            perturbed = for_container(plan.environment.perturb, memory=plan.environment.memory)
        except PerturbRefused as exc:
            return infra(str(exc))
        if not plan.workdir.is_dir():
            return infra(f"workdir not found: {plan.workdir}")
        paths, number = PATHS, None
        if instance is not None:
            argv = instance_argv(argv, instance[0])
            paths, number = instance_paths(instance[0]), instance[0].instance
        try:
            client, image, config = self._container_config(
                plan, argv, log_dir, gpu_slot=gpu_slot, paths=paths, instance=number
            )
        except FatalError as exc:
            return infra(str(exc))
        perturbed_config(config, perturbed)
        if instance is not None:
            join_pod(config, *instance)
        if self.native is not None:
            ulimits = self.native.core_limit(client, image)
            if ulimits:
                config["ulimits"] = ulimits
        refused = self._packages_refused(plan, log_dir)
        if refused:
            return infra(refused)
        # A record an earlier attempt left in this folder is not this one's end.
        ExitRecord.take(log_dir)
        with self._lock:
            plain = image in self._without_init
        if plan.workload is not None:
            write_cell(plan, log_dir / "cell.json")
        # The attempt folder is bind-mounted: TMPDIR and XDG_CACHE_HOME point into it.
        # The container's /dev/shm is its own and goes with it: no leak to look for.
        scratch_dirs = None
        # An instance's scratch is its attempt's, made and cleaned by run_instances.
        if not plan.environment.shared_tmp and instance is None:
            scratch_dirs = scratch.prepare(log_dir, socket_safe=False)
        markers, warnings = compile_markers(plan.markers)
        # Before the try under the init: what events.jsonl holds that is not its doing.
        events_size = capped.size(events_path)
        streams = _Streams.open(base, markers)
        # Cores held from their creation while the container runs (native/corewatch.py).
        watched = (
            self.native.watch(plan.workdir, shared=instance is not None, elsewhere=cd_folders(plan))
            if self.native is not None
            else ()
        )
        load = None
        try:
            # The competitors run on this machine, the daemon's, on the container's CPUs.
            load = start_load(plan.environment.perturb, perturbed.cpu_list, log_dir)
            execution = None
            if not plain:
                # _InitFailed: its status is no verdict, the command runs under docker-init.
                try:
                    execution = self._run_container(
                        client, plan, under_init(config), log_dir, streams.stdout,
                        streams.stderr, cancel, warnings, base, program,
                        shared=instance is not None, init=True,
                    )  # fmt: skip
                except _InitFailed as failed:
                    # What the init printed (a 3.6's SyntaxError) is not the program's: the
                    # rerun's logs hold its output alone, for `expect`, the report's excerpt
                    # and the signature; the init's last words are a warning.
                    said = _drop_init_try(streams, base, events_size, failed)
                    if said is not None:
                        warnings.append(said)
                    streams = _Streams.open(base, markers)
            if execution is None:
                # Nothing ran (no python3 to start the init, or one that could not run it:
                # too old for launch.py, broken): the command itself, under docker-init, as
                # before the init's record, never the init's own status read as its; once
                # per image.
                if not plain:
                    with self._lock:
                        self._without_init.add(image)
                execution = self._run_container(
                    client, plan, config, log_dir, streams.stdout, streams.stderr, cancel,
                    warnings, base, program, shared=instance is not None,
                )  # fmt: skip
        except PerturbRefused as exc:
            execution = infra(str(exc), warnings)
        finally:
            stop_load(load, log_dir)
            for folder in watched:
                native.WATCH.release(folder)
            late = streams.close()
            remove_stack_dumps(log_dir)
        if late:
            execution = dataclasses.replace(execution, warnings=(*execution.warnings, *late))
        if perturbed.notes and execution.infra_error is None:
            execution = dataclasses.replace(execution, perturbed=perturbed.notes)
        if scratch_dirs is None:
            return execution
        cleaned = scratch.clean(scratch_dirs)
        return dataclasses.replace(execution, warnings=(*execution.warnings, *cleaned))

    def _run_container(
        self,
        client: DockerClient,
        plan: AttemptPlan,
        config: ContainerConfig,
        log_dir: Path,
        stdout: Sink,
        stderr: Sink,
        cancel: threading.Event | None,
        warnings: list[str],
        base: AttemptFiles,
        program: str,
        shared: bool = False,
        init: bool = False,
    ) -> Execution:
        """Create, start and wait for the container; `program`: the command's, named when it
        could not run; `shared`: an instance's (its workdir is its attempt's other
        instances' too); `init`: `config` runs the command under launch.py (under_init),
        which raises _InitFailed when the container ended before it started the command."""
        import docker.errors

        started = utc_now()
        begin = time.monotonic()
        started_wall = time.time()
        timed_out = interrupted = stall = False
        stack_path: Path | None = None
        hang_native: native.NativeStacks | None = None
        try:
            with fresh_container(client, config, log_dir / leftovers.INFLIGHT) as container:
                # Attached before start: not a byte of output is missed.
                stream = container.attach(stdout=True, stderr=True, stream=True, demux=True)
                pump = OutputPump(stream, stdout, stderr)
                pump.thread.start()
                started_wall = time.time()
                container.start()
                begin = time.monotonic()
                watch = stall_watch(plan, base["events_path"])
                root = local_pid(container)
                # Its pids limit's refusals, read while its cgroup is there (pidswatch.py).
                pids = PidsWatch(root)
                try:
                    if watch is not None and root is not None:
                        # The container's init reaps its orphans: every process of the attempt
                        # is below it. A remote engine's container has no pid here: wall clock.
                        watch.count_cpu_wait(CpuWait(lambda: tree.descendants(root)))
                    stalled_at: list[float] = []
                    judge = StallJudge(watch, pump) if watch is not None else None

                    def stalled(now: float) -> bool:
                        """`run.stall`, asked by wait_for_exit between its waits; a stall the
                        watch sees is judged again once the output thread has caught up."""
                        assert watch is not None
                        assert judge is not None
                        watch.output(now, pump.bytes_read)
                        if judge.stalled(now):
                            stalled_at.append(now)
                        return bool(stalled_at)

                    try:
                        status = wait_for_exit(
                            container, plan.timeout_s, cancel, stalled if watch else None
                        )
                    finally:
                        if watch is not None:
                            watch.close()
                    if status is None and cancel is not None and cancel.is_set():
                        # Stopped: a command that had ended (or was ending) is finished, not
                        # cut short; the container's stopping is no part of the program.
                        status = ended_at_stop(container, log_dir, config)
                    if status is None:
                        timed_out = not (cancel is not None and cancel.is_set())
                        interrupted = not timed_out
                        stall = bool(stalled_at) and timed_out
                        # Native stacks first, as the local runner reads them: the asking
                        # signal's handler (SIGURG) ends a wait the kernel never restarts
                        # (pause, sigsuspend, a C poll without an EINTR retry), and a process
                        # read after it showed where it went next (native-stacks.md).
                        if timed_out and self.native is not None:
                            hang_native = self.native.hang(
                                client, container, str(config["image"]),
                                timed_out_at=stalled_at[0] if stall
                                else begin + (plan.timeout_s or 0.0),
                            )  # fmt: skip
                        if timed_out or not init or init_started(log_dir):
                            stack_path = collect_stacks(container, log_dir)
                        # else stopped before its init started the command: nothing of the
                        # program to ask, and the asking (a second or more) let the command
                        # start and run after the stop, its output in a folder not kept.
                        with contextlib.suppress(docker.errors.APIError):
                            container.kill()
                        status = wait_for_exit(container, 30.0, None)
                    duration = time.monotonic() - begin
                    refused = pids.stop()
                    if not pump.finish(DRAIN_WAIT_S):
                        warnings.append("the container's output was still open after it exited")
                    container.reload()
                    inspected = container.attrs.get("State")
                    state = inspected if isinstance(inspected, dict) else {}
                    oom = bool(state.get("OOMKilled"))
                    if status is None:
                        code = state.get("ExitCode")
                        status = code if isinstance(code, int) else -1
                    raw = status
                finally:
                    # Also where the wait, the drain or the reload raised (an APIError, a Ctrl-C):
                    # its thread would otherwise read on until the file went.
                    pids.stop()
        except docker.errors.ImageNotFound as exc:
            return self._infra(base, started, f"docker image missing: {exc.explanation or exc}")
        except docker.errors.APIError as exc:
            reason = f"the container could not start: {engine_reason(exc, whole=False)}"
            if init and init_missing(reason):
                raise _InitFailed(reason) from exc  # no python3 in the image to run it
            return self._infra(base, started, reason)
        finished = utc_now()
        ran = init_started(log_dir)
        record = ExitRecord.take(log_dir)
        # The program's record of the exception it died of, kept by the local runner's rule
        # (process/stacks.py): its pids are the container's own, as the init's record and
        # the sitecustomize's raised-PID.txt both give them. Without the init's record (an
        # image run under docker-init, a container killed first) no root is known: nothing
        # is kept, and classify reads stderr, where threads' tracebacks interleave.
        keep_program_raised(
            container_command(config), record.pid if record is not None else None, log_dir
        )
        if init and record is None and not ran and not (timed_out or interrupted or oom):
            # The init ended before the command could start (a python3 too old for launch.py,
            # a broken one): its exit status is no verdict on a command that never ran.
            raise _InitFailed(raw)
        returncode = returncode_from_status(raw, oom, record)
        # The one program of a string command died of a signal its shell reports as 128 + N
        # (the image's dash forks it), as its own record says: the local runner's rule
        # (process/tree.py), the records' pids and the init's the container's own.
        program_died = record is not None and tree.program_died(
            container_command(config), record.pid, log_dir, returncode
        )
        if self.native is not None:
            # The container is gone: every core is complete, and the attempt's to claim.
            found = native.merge(
                hang_native,
                self.native.crash(
                    client, config, log_dir=log_dir, workdir=plan.workdir,
                    token=str(config["labels"][LABEL]), started=started_wall,
                    returncode=returncode, read_cores=not interrupted,
                    shared=shared, cd_folders=cd_folders(plan),
                    root_pid=record.pid if record is not None else None,
                    stderr=pipeline_report(plan, base["stderr_path"]),
                ),
            )  # fmt: skip
            if found is not None:
                native.write(found, log_dir)
                if found.unavailable and native.say_once(found.unavailable):
                    warnings.append(found.unavailable)
        oom_said = None
        if oom:
            limit = config.get("mem_limit", plan.environment.memory)
            oom_said = f"{oom_killed()}: the container's memory limit, {format_size(limit)}"
        process_limit = None
        if refused:
            # As the local runner says it (process/run.py): its warning, and the failure's
            # detail names it (classify.py).
            process_limit = process_limit_reached(config["pids_limit"])
            warnings.append(process_limit)
        infra_error = None
        if raw in DOCKER_START_FAILURES and not timed_out and not interrupted:
            last = _last_line(base["stderr_path"])
            # A shell command's program not found is said as the local runner says it, not
            # as `/bin/sh` that could not run (it ran, and said why).
            infra_error = not_started(raw, last) or (
                f"the container could not run {program!r} (exit {raw}: {last})"
            )
        return Execution(
            returncode=None if infra_error else returncode,
            timed_out=timed_out,
            stalled=stall,
            duration_s=round(duration, 6),
            # The engine's clock (CLOCK_MONOTONIC): instances' ends are compared by it.
            ended_at=begin + duration,
            started=started,
            finished=finished,
            stack_path=stack_path,
            infra_error=infra_error,
            interrupted=interrupted,
            warnings=tuple(warnings),
            oom=oom_said,
            process_limit=process_limit,
            program_died=program_died,
            launch_note="ran fresh: the docker runner starts a new container for every attempt"
            if plan.preload
            else None,
            # The workdir as `docker run` mounted it (engine.py): its dumps' paths.
            container_workdir=container_workdir(plan.workdir),
            **base,
        )

    def _packages_refused(self, plan: AttemptPlan, log_dir: Path) -> str | None:
        """Why the plan's image does not satisfy the cell's `packages` (dockerprobe.py)."""
        return probe.packages_refused(self, plan, log_dir)

    def pins(self, plan: AttemptPlan) -> tuple[str, ...]:
        """The plan's packages pinned at the versions its image holds, as the package check
        read them (`six<1.17`: `six==1.16.0`); () before the check ran."""
        with self._lock:
            image = self._images.get(self._environment_key(plan))
        if image is None:
            return ()
        return packages.pins(plan.environment.packages, probe.package_versions(self, image, plan))

    @staticmethod
    def _infra(base: AttemptFiles, started: str, reason: str) -> Execution:
        return infra_execution(base, reason, started=started, finished=utc_now())

    def close(self) -> None:
        """Let the images go (`_holds`); nothing to stop: every container is removed when
        its attempt ends."""
        with self._lock:
            holds, self._holds = list(self._holds.values()), {}
        for handle in holds:
            if handle is not None:
                handle.close()

    # -- environment -------------------------------------------------------------------

    def capture_environment(self, plan: AttemptPlan, log_dir: Path) -> Mapping[str, JsonValue]:
        """`python3 -m reprospec_harness.envinfo` in a container of the plan's image."""
        return probe.capture_environment(self, plan, log_dir)


def _last_line(path: Path) -> str:
    try:
        data = capped.head_tail(path, 0, 64 << 10)
    except OSError:
        return ""
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no output"


def _garbled_by_the_api(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why the container cannot get the attempt's argv or variables as they are, or None.

    The engine's API is JSON, UTF-8 text: a word or a value that is not UTF-8 (`${{ env.X }}`
    of `X=$'\\x80'`) reached the program as U+FFFD's bytes, and a program that tested its
    bytes failed in the container where it passed on the local runner, its verdict untrue
    to what the spec asks."""
    from reprospec.core.logtext import not_utf8

    found = [(f"the command's word {i}", word) for i, word in enumerate(argv)]
    found += [(f"environment.env.{name}", value) for name, value in env.items()]
    then = (
        "the docker runner hands it to the container through the engine's API, UTF-8 "
        "text, which would change it; the local runner passes its bytes as they are"
    )
    # Not shown: a variable's value may be a secret.
    wrong = (not_utf8(what, text, shown=False, then=then) for what, text in found)
    return next((w for w in wrong if w is not None), None)
