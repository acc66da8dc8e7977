"""What the docker runner asks an image in a throwaway container: its packages, its environment.

Both run a small stdlib program with the image's python3 in a fresh container of the
plan's image (labelled, always removed) and read what it printed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reprospec.core import capped
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.environment import packages
from reprospec.environment.probe import without_our_path
from reprospec.errors import FatalError
from reprospec.process import leftovers
from reprospec.process.stacks import STACK_DIR_VAR
from reprospec.runners.docker.container import IN_HARNESS, IN_STACKDUMP
from reprospec.runners.docker.engine import (
    ENVINFO_TIMEOUT_S,
    LABEL,
    engine_reason,
    fresh_container,
    wait_for_exit,
)
from reprospec.runners.docker.image import IMAGE_HARNESS, IMAGE_STACKDUMP

if TYPE_CHECKING:
    from reprospec.runners.docker.sdk import Container, ContainerConfig, DockerClient


class ProbeHost(Protocol):
    """What a probe needs of the docker runner (runner.py's DockerRunner): the config of a
    fresh container of the plan's image, and the runner's cache of package checks.

    A Protocol, so this module does not import runner.py, which imports it.
    """

    _check_lock: threading.Lock
    _package_checks: dict[tuple[str, tuple[str, ...]], str | None]
    _package_versions: dict[tuple[str, tuple[str, ...]], dict[str, str]]

    def _container_config(
        self,
        plan: AttemptPlan,
        argv: Sequence[str],
        log_dir: Path,
        *,
        harness: bool | None = None,
    ) -> tuple[DockerClient, str, ContainerConfig]: ...


def packages_refused(runner: ProbeHost, plan: AttemptPlan, log_dir: Path) -> str | None:
    """Why the plan's image does not satisfy the cell's `packages` (checked in a container).

    Once per image and package list: the stdlib probe of `reprospec.environment.packages` runs
    with the image's python3, and its answer is compared here (issue 9: never a
    verdict on the wrong environment, whatever the runner).
    """
    import docker.errors

    requirements = plan.environment.packages
    # A Dockerfile's image gets no `packages` installed, only checked: an entry that names
    # nothing to check (`./mypkg`, which the refusal of a built image's path sends here) ran
    # the cell unchecked. An image built of `packages` installed such an entry itself.
    if plan.environment.dockerfile is not None:
        refused = packages.unchecked(requirements)
        if refused:
            return refused + dockerfile_note(plan)
    names = packages.requirement_names(requirements)
    if not names:
        return None
    argv = ["python3", "-c", packages.PROBE_CODE, *packages.probe_args(requirements)]
    with runner._check_lock:
        try:
            client, image, config = runner._container_config(plan, argv, log_dir)
        except FatalError as exc:
            return str(exc)
        key = (image, tuple(requirements))
        if key in runner._package_checks:
            return runner._package_checks[key]
        _no_attempt_files(config)
        config["labels"] = {LABEL: config["labels"][LABEL], "org.reprospec.probe": "1"}
        reason: str | None
        try:
            record = log_dir / f"{leftovers.INFLIGHT_PREFIX}probe.json"
            with fresh_container(client, config, record) as container:
                container.start()
                status = wait_for_exit(container, ENVINFO_TIMEOUT_S, None)
                out = _logs(container, stdout=True).decode("utf-8", "replace")
                err = _logs(container, stdout=False).decode("utf-8", "replace")
            if status != 0:
                last = (err.strip().splitlines() or [f"exit {status}"])[-1]
                reason = f"cannot check the cell's packages in {image}: {last}"
            else:
                installed = packages.parse_probe(out, image)
                problems = packages.mismatches(requirements, installed)
                reason = (
                    packages.describe(image, problems) + dockerfile_note(plan) if problems else None
                )
                runner._package_versions[key] = {
                    name: version for name, version in installed.versions.items() if version
                }
        except (FatalError, docker.errors.APIError) as exc:
            reason = f"cannot check the cell's packages in {image}: {engine_reason(exc)}"
        runner._package_checks[key] = reason
        return reason


def dockerfile_note(plan: AttemptPlan) -> str:
    """What a cell whose image is its spec's Dockerfile's is told of its missing packages.

    Such an image is built as the Dockerfile says, `packages` not installed into it (they
    are checked against it): "six is not installed" alone read as a failed install.
    """
    dockerfile = plan.environment.dockerfile
    if dockerfile is None:
        return ""
    return (
        f"; an image built from environment.dockerfile ({dockerfile}) gets no `packages` "
        "installed: install them in the Dockerfile, or leave them out of the spec"
    )


def _no_attempt_files(config: ContainerConfig) -> None:
    """A probe is no attempt: no cell, and no stack or end records of its processes, which
    the sitecustomize wrote into the run folder it was given (`stack-7.txt`, `ended-7.txt`
    beside results.json after every docker run)."""
    for name in ("REPROSPEC_CELL", STACK_DIR_VAR):
        config["environment"].pop(name, None)


def package_versions(runner: ProbeHost, image: str, plan: AttemptPlan) -> dict[str, str]:
    """The versions `packages_refused` found in `image` for the plan's packages ({} where it
    has not asked)."""
    with runner._check_lock:
        return runner._package_versions.get((image, tuple(plan.environment.packages)), {})


def capture_environment(runner: ProbeHost, plan: AttemptPlan, log_dir: Path) -> JsonObject:
    """`python3 -m reprospec_harness.envinfo` in a container of the plan's image."""
    import docker.errors

    try:
        log_dir = log_dir.resolve()
        log_dir.mkdir(parents=True, exist_ok=True)
        # The spec's packages by name, as the local runner's probe asks: the Packages row
        # names their versions in the image (which the image was built to hold).
        named = [arg for name in plan.environment.packages for arg in ("--package", name)]
        # torch imported only where the spec says it uses torch, as the local runner's
        # probe does: else a container's run listed torch's build beside a local run's
        # "not captured" in `compare`, and every capture paid torch's import (1-3 s).
        torch = [] if plan.uses_torch else ["--no-torch"]
        argv = ["python3", "-m", "reprospec_harness.envinfo", *named, *torch]
        client, image, config = runner._container_config(plan, argv, log_dir, harness=True)
        _no_attempt_files(config)
        config["labels"] = {LABEL: config["labels"][LABEL], "org.reprospec.envinfo": "1"}
        record = log_dir / f"{leftovers.INFLIGHT_PREFIX}envinfo.json"
        with fresh_container(client, config, record) as container:
            container.start()
            status = wait_for_exit(container, ENVINFO_TIMEOUT_S, None)
            if status is None:
                return {"error": f"environment capture timed out after {ENVINFO_TIMEOUT_S:g}s"}
            out = _logs(container, stdout=True)
            err = _logs(container, stdout=False)
    except (FatalError, docker.errors.APIError) as exc:
        return {"error": f"environment capture failed: {engine_reason(exc)}"}
    if status != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return {"error": f"environment capture exited with {status}: {last[0]}"}
    try:
        data: JsonValue = json.loads(out)
    except ValueError as exc:
        return {"error": f"environment capture printed no JSON: {exc}"}
    if not isinstance(data, dict):
        return {"error": "environment capture printed no JSON object"}
    data.setdefault("container", {"runtime": "docker", "image": image})
    return without_our_path(data, (IN_HARNESS, IN_STACKDUMP, IMAGE_HARNESS, IMAGE_STACKDUMP))


# A probe's output (JSON of an environment) is far below this; an image that prints more
# (a noisy entrypoint, a .pth file) must not take the engine's memory with it.
PROBE_OUTPUT_BYTES = 4 << 20


def _logs(container: Container, *, stdout: bool) -> bytes:
    """One stream of a finished container's output, head + tail (capped.py)."""
    kept = capped.HeadTail(PROBE_OUTPUT_BYTES, PROBE_OUTPUT_BYTES // 4)
    for chunk in container.logs(stdout=stdout, stderr=not stdout, stream=True):
        kept.write(chunk)
    return kept.value()
