"""The Runner protocol: how the engine asks for one attempt to be run."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from reprospec.models import AttemptPlan, Execution


class Runner(Protocol):
    """Runs attempts in isolation and reports raw facts (an Execution), never verdicts."""

    name: str

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:
        """Once per run, before any attempt: build images, check interpreters.

        Raises InfraError when nothing can run (no engine, interpreter missing).
        """

    def run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
    ) -> Execution:
        """Run one attempt to its end (or timeout, or `cancel`), blocking.

        Writes stdout.log, stderr.log, events.jsonl, env.json (workload), stack.txt
        (hang) into `log_dir`. No process of the attempt survives the return.
        Safe to call from several threads at once.
        """
        ...

    def capture_environment(self, plan: AttemptPlan, log_dir: Path) -> Mapping[str, Any]:
        """The target environment as the harness sees it (run in a child, never here)."""
        ...
