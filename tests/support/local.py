"""Hand-built plans for the local runner and the child programs of tests/data/children/."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from reprospec.core.inputs import AttemptPlan, Marker
from tests.support.paths import CHILDREN
from tests.support.plans import attempt_plan

PY = sys.executable


def make_plan(
    argv: list[str] | str | None,
    *,
    workdir: Path | None = None,
    timeout_s: float = 30.0,
    env: dict[str, str] | None = None,
    markers: tuple[Marker, ...] = (),
    workload: dict[str, Any] | None = None,
) -> AttemptPlan:
    """A CPU plan run in tests/data/children/ (or `workdir`): the local runner's unit and
    functional tests build their plans here."""
    return attempt_plan(
        argv,
        workdir or CHILDREN,
        timeout_s=timeout_s,
        env=env,
        environment={"device": "cpu"},
        workload=workload,
        markers=markers,
    )


def child(name: str, *args: str) -> list[str]:
    return [PY, str(CHILDREN / name), *args]
