"""docker's words for GPUs asked of an engine without a GPU runtime, with what to install
(engine.py's `engine_reason`): the attempt's container had them, the package check's and
the environment capture's (the same device requests) failed first without them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")

import docker.errors as docker_errors

from reprospec.core.inputs import AttemptPlan
from reprospec.runners.docker import probe
from reprospec.runners.docker.engine import LABEL, NO_GPU_RUNTIME_HINT, engine_reason
from tests.support.plans import attempt_plan

NO_DRIVER = 'could not select device driver "" with capabilities: [[gpu]]'


def test_a_gpu_request_without_a_runtime_says_what_to_install() -> None:
    exc = docker_errors.APIError("500 Server Error", explanation=NO_DRIVER)
    assert engine_reason(exc, whole=False) == NO_DRIVER + NO_GPU_RUNTIME_HINT
    # The package check's and the capture's keep docker's HTTP status and endpoint, which
    # they lost to the explanation alone (review).
    assert engine_reason(exc) == f'500 Server Error ("{NO_DRIVER}")' + NO_GPU_RUNTIME_HINT
    # Any other refusal is the engine's words alone.
    assert engine_reason(docker_errors.APIError("no such image")) == "no such image"
    refused = docker_errors.APIError("409 Client Error", explanation="Conflict")
    assert engine_reason(refused) == '409 Client Error ("Conflict")'


class _Engine:
    """A docker runner whose image's containers are configured as any: the engine refuses
    to make one (`fresh_container`, below)."""

    def __init__(self) -> None:
        self._check_lock = threading.Lock()
        self._package_checks: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self._package_versions: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}

    def _container_config(
        self,
        plan: AttemptPlan,
        argv: Sequence[str],
        log_dir: Path,
        *,
        harness: bool | None = None,
    ) -> tuple[Any, str, Any]:
        del plan, argv, log_dir, harness
        config = {"name": "c", "labels": {LABEL: "run"}, "environment": {}}
        return SimpleNamespace(), "img", config


@contextlib.contextmanager
def _no_gpu_runtime(*_args: object) -> Iterator[Any]:
    raise docker_errors.APIError("500 Server Error", explanation=NO_DRIVER)
    yield  # (a generator: the context manager's)


def test_the_package_check_and_the_capture_say_it_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe, "fresh_container", _no_gpu_runtime)
    plan = attempt_plan(["python", "t.py"], tmp_path, environment={"packages": ["six"]})
    refused = probe.packages_refused(_Engine(), plan, tmp_path)
    assert refused is not None
    assert refused.startswith("cannot check the cell's packages in img: ")
    assert refused.endswith(NO_GPU_RUNTIME_HINT)
    assert "500 Server Error" in refused
    captured = probe.capture_environment(_Engine(), plan, tmp_path)
    assert str(captured["error"]).endswith(NO_GPU_RUNTIME_HINT)
    assert "500 Server Error" in str(captured["error"])
