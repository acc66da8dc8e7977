"""One attempt end to end: execute it with a runner, classify what happened, judge it.

`AttemptExecutor` is the `RunAttempt` function the scheduler is given for a
real run; tests give the scheduler other functions.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from reprospec.errors import InfraError
from reprospec.judge import judge_attempt
from reprospec.models import AttemptPlan, AttemptResult, Execution
from reprospec.outcome import classify, infra_reason
from reprospec.runfolder import RunFolder
from reprospec.runners.base import Runner


class AttemptExecutor:
    """Runs attempts with `runner`, their files in `folder`; safe to call from many threads."""

    def __init__(self, runner: Runner, folder: RunFolder) -> None:
        self.runner = runner
        self.folder = folder

    def __call__(
        self, plan: AttemptPlan, gpu_slot: tuple[str, ...], cancel: threading.Event
    ) -> AttemptResult | None:
        log_dir = self.folder.attempt_dir(plan.cell.id, plan.attempt)
        logs = self.folder.attempt_logs(plan.cell.id, plan.attempt)
        try:
            execution = self.runner.run(plan, log_dir, gpu_slot=gpu_slot, cancel=cancel)
        except InfraError as exc:
            return AttemptResult.not_run(plan.attempt, str(exc), logs)
        if execution.interrupted:
            return None
        infra = infra_reason(execution)
        outcome = classify(execution) if infra is None else None
        if outcome is None:
            return _not_run(plan, logs, infra or "the runner reported no outcome", execution)
        output_tail = _tail_text(execution.stderr_path) + _tail_text(execution.stdout_path)
        matched, mismatches = judge_attempt(outcome, plan.expectation, output_tail=output_tail)
        return AttemptResult(
            attempt=plan.attempt,
            duration_s=round(execution.duration_s, 3),
            outcome=outcome,
            matched=matched,
            mismatches=tuple(mismatches),
            logs=logs,
            started=execution.started,
            finished=execution.finished,
            gpu_slot=execution.gpu_slot,
            warnings=execution.warnings,
            stack=_read_text(execution.stack_path),
        )


def _not_run(plan: AttemptPlan, logs: str, reason: str, execution: Execution) -> AttemptResult:
    return AttemptResult(
        attempt=plan.attempt,
        duration_s=round(execution.duration_s, 3),
        outcome=None,
        matched=False,
        mismatches=(),
        logs=logs,
        started=execution.started,
        finished=execution.finished,
        gpu_slot=execution.gpu_slot,
        infra_error=reason,
        warnings=execution.warnings,
    )


def _tail_text(path: Path | None, limit: int = 64 * 1024) -> str:
    if path is None or not path.exists():
        return ""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - limit))
        return fh.read().replace(b"\0", b"").decode("utf-8", errors="replace")


def _read_text(path: Path | None) -> str | None:
    if path is None or not path.exists():
        return None
    return path.read_text(encoding="utf-8", errors="replace")
