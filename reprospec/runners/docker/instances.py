"""The instances of `run.instances` as containers: N containers of one pod, released together.

Each instance is a container of its own (its pid namespace, its GPU slot, its files in
`ATTEMPT/instance-I/`) that runs its command through launch.py, which waits at the
start barrier (barrier.py: FIFOs in `ATTEMPT/barrier/`, bind-mounted into every
instance; the kernel's FIFOs work across containers, so the one close of `go` wakes
every instance at once). CLOCK_MONOTONIC is the machine's, so the release times the
instances record are comparable with each other and with the engine's.

The copies of a program on one machine share its network and its /dev/shm, and
`MASTER_ADDR=127.0.0.1` must reach rank 0: so the instances join a "pod", a container
that only holds a network namespace (the spec's network: bridge or none) and a
shareable IPC namespace, created before the instances and removed after them. With
`shm_size`, each instance has a /dev/shm of its own of that size instead, as the local
runner gives each instance. The instances also share the attempt's TMPDIR and
XDG_CACHE_HOME, as the local runner's instances do.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import Execution
from reprospec.errors import InfraError
from reprospec.process import leftovers, scratch
from reprospec.process.childprotocol import ChildPaths
from reprospec.runners.docker.container import IN_LAUNCH, PATHS
from reprospec.runners.docker.engine import ENGINE_LABEL, LABEL, fresh_container
from reprospec.runners.together import InstanceStart, instance_slots, run_together

if TYPE_CHECKING:
    from reprospec.runners.docker.sdk import ContainerConfig, DockerClient

IN_BARRIER = "/reprospec/barrier"
IN_SHARED = "/reprospec/shared"
POD_LABEL = "org.reprospec.pod"
# The pod's only process: waits for its removal (docker-init is pid 1 and reaps it).
_POD_WAIT = ["python3", "-S", "-c", "import signal; signal.pause()"]


def instance_argv(argv: Sequence[str], start: InstanceStart) -> list[str]:
    """The instance's command: launch.py (stdlib only) waits at the barrier, then execs argv.

    The image's python3 runs it, so an image without python3 cannot run instances (the
    instance cannot start, and no instance is released).
    """
    number = start.instance.number
    return [
        *("python3", "-S", "-E", IN_LAUNCH),
        *("--barrier", IN_BARRIER, "--instance", str(number), "--", *argv),
    ]


def instance_paths(start: InstanceStart) -> ChildPaths:
    """The protocol's paths in an instance: TMPDIR and XDG_CACHE_HOME are the attempt's."""
    if start.scratch is None:
        return PATHS
    return ChildPaths(
        attempt_dir=PATHS.attempt_dir,
        harness_dir=PATHS.harness_dir,
        stackdump_dir=PATHS.stackdump_dir,
        tmp_dir=f"{IN_SHARED}/tmp",
        cache_dir=f"{IN_SHARED}/cache",
    )


def join_pod(config: ContainerConfig, start: InstanceStart, pod: str) -> None:
    """Make an instance's container config join `pod` and see the barrier (every container of
    an attempt sees launch.py: container_config)."""
    from docker.types import Mount

    mounts = list(config["mounts"])
    mounts.append(Mount(IN_BARRIER, str(start.barrier), type="bind"))
    if start.scratch is not None:
        mounts.append(Mount(f"{IN_SHARED}/tmp", str(start.scratch.tmp), type="bind"))
        mounts.append(Mount(f"{IN_SHARED}/cache", str(start.scratch.cache), type="bind"))
    config["mounts"] = mounts
    config["network_mode"] = f"container:{pod}"
    if "shm_size" not in config:
        # As processes of one machine share its /dev/shm; with `shm_size` each instance
        # has its own of that size, as the local runner gives each instance.
        config["ipc_mode"] = f"container:{pod}"


def pod_config(
    plan: AttemptPlan, image: str, token: str, user: str | None, log_dir: Path
) -> ContainerConfig:
    """The pod of one attempt's instances: its network (the spec's) and its /dev/shm (the
    engine's default size: an instance with `shm_size` has its own)."""
    config: ContainerConfig = {
        "image": image,
        "entrypoint": _POD_WAIT[:1],
        "command": _POD_WAIT[1:],
        "name": f"reprospec-pod-{token[:12]}",
        "init": True,
        "detach": True,
        "network_mode": "bridge" if plan.environment.network else "none",
        "ipc_mode": "shareable",
        # Whose pod it is: the attempt folder its instances write to.
        "labels": {
            LABEL: token,
            POD_LABEL: str(log_dir),
            "org.reprospec.cell": plan.cell.id,
            ENGINE_LABEL: str(os.getpid()),
        },
    }
    if user is not None:
        config["user"] = user
    return config


class InstanceHost(Protocol):
    """What the instances of one attempt need of the docker runner (runner.py's
    DockerRunner): its engine client, the plan's image, and one container to its end.

    A Protocol, so this module does not import runner.py, which imports it.
    """

    @property
    def client(self) -> DockerClient: ...

    def _image_for(self, client: DockerClient, plan: AttemptPlan) -> str: ...

    def _run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
        instance: tuple[InstanceStart, str] | None = None,
    ) -> Execution: ...


def run_instances(
    runner: InstanceHost,
    plan: AttemptPlan,
    log_dir: Path,
    *,
    gpu_slots: Sequence[tuple[str, ...]],
    cancel: threading.Event | None = None,
) -> tuple[Execution, ...]:
    """`plan.copies` containers of `runner` in one pod, released together (the runner's
    `run_instances`). Raises InfraError when they could not all be started."""
    import docker.errors

    slots = instance_slots(plan, gpu_slots)
    log_dir = log_dir.resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    if not plan.workdir.is_dir():
        raise InfraError(f"workdir not found: {plan.workdir}")
    client = runner.client
    image = runner._image_for(client, plan)
    token = uuid.uuid4().hex
    user = f"{os.getuid()}:{os.getgid()}" if os.getuid() != 0 else None
    scratch_dirs = None
    if not plan.environment.shared_tmp:
        scratch_dirs = scratch.prepare(log_dir, socket_safe=False)

    def cleanup() -> tuple[str, ...]:
        return scratch.clean(scratch_dirs) if scratch_dirs is not None else ()

    config = pod_config(plan, image, token, user, log_dir)
    name = str(config["name"])
    try:
        # A record of it: `--resume` removes a pod a dead engine left (leftovers.py).
        record = log_dir / f"{leftovers.INFLIGHT_PREFIX}pod.json"
        with fresh_container(client, config, record) as pod:
            pod.start()

            def run_one(number: int, start: InstanceStart, stop: threading.Event) -> Execution:
                folder = log_dir / f"instance-{number}"
                return runner._run(
                    plan, folder, gpu_slot=slots[number], cancel=stop, instance=(start, name)
                )

            return run_together(
                plan, log_dir, run_one=run_one, scratch_dirs=scratch_dirs, cancel=cancel,
                cleanup=cleanup, own_network=True,
            )  # fmt: skip
    except docker.errors.APIError as exc:
        cleanup()
        raise InfraError(
            f"the {plan.copies} instances' pod did not start: {exc.explanation or exc}"
        ) from exc
