"""The local runner refuses an interpreter that does not exist, before it starts anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reprospec.core.inputs import AttemptPlan, Marker
from reprospec.errors import InfraError
from reprospec.runners.local import LocalRunner
from tests.support.paths import CHILDREN
from tests.support.plans import attempt_plan


def make_plan(
    argv: list[str] | str | None,
    *,
    workdir: Path | None = None,
    timeout_s: float = 30.0,
    env: dict[str, str] | None = None,
    markers: tuple[Marker, ...] = (),
    workload: dict[str, Any] | None = None,
) -> AttemptPlan:
    return attempt_plan(
        argv,
        workdir or CHILDREN,
        timeout_s=timeout_s,
        env=env,
        environment={"device": "cpu"},
        workload=workload,
        markers=markers,
    )


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def test_missing_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "python9"
    runner = LocalRunner(python=str(missing))
    with pytest.raises(InfraError, match=f"interpreter not found: {missing}"):
        runner.prepare([])
    ex = runner.run(make_plan(["true"]), tmp_path / "logs")
    assert ex.infra_error is not None
    assert ex.infra_error.startswith("interpreter not found")
    env = runner.capture_environment(make_plan(["true"]), tmp_path / "env")
    assert env["python"] is None
    assert "error" in env
