"""One attempt end to end: execute it with a runner, read its evidence once, classify, judge.

`AttemptExecutor` is the `RunAttempt` function the scheduler is given for a
real run; tests give the scheduler other functions. The attempt's files are
read here, once (`Evidence.read`); what the report needs later (a hang's
stacks, a failure's log excerpt) goes into the `AttemptResult`, so nothing
downstream opens them again.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from reprospec import native, ranks
from reprospec.errors import InfraError
from reprospec.evidence import Evidence
from reprospec.judge import judge_attempt
from reprospec.models import AttemptPlan, AttemptResult, Execution, NotRun, Outcome
from reprospec.outcome import classify, crash_stack, worker_stack
from reprospec.runfolder import RunFolder
from reprospec.runners.base import Runner
from reprospec.tracebacks import current_thread_first


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
        return attempt_result(plan, execution, Evidence.read(execution), logs)


def attempt_result(
    plan: AttemptPlan, execution: Execution, evidence: Evidence, logs: str = ""
) -> AttemptResult:
    """Classify and judge one finished execution from its evidence."""
    outcome = with_native_and_ranks(
        classify(execution, evidence, packages=plan.environment.packages), evidence
    )
    verdict = judge_attempt(outcome, plan.expectation, evidence)
    failed = isinstance(outcome, Outcome) and outcome.kind != "pass"
    stack = evidence.stack if isinstance(outcome, Outcome) else None
    excerpt = evidence.excerpt() if failed else None
    if isinstance(outcome, Outcome) and outcome.where == "child":
        # A child's crash: its own stack, which the main process's traceback is not.
        stack = crash_stack(execution, evidence) or stack
    dead_worker = worker_stack(outcome, evidence) if isinstance(outcome, Outcome) else None
    if dead_worker is not None:
        # The worker's own stack leads the report; the excerpt is the main process's view.
        stack = current_thread_first(dead_worker.stack)
        excerpt = evidence.excerpt(without=dead_worker.stack)
    return AttemptResult(
        attempt=plan.attempt,
        duration_s=round(execution.duration_s, 3),
        outcome=outcome,
        matched=verdict.matched,
        mismatches=verdict.mismatches,
        logs=logs,
        started=execution.started,
        finished=execution.finished,
        gpu_slot=execution.gpu_slot,
        warnings=execution.warnings,
        stack=stack,
        child_warnings=evidence.warnings(),
        # Only a failure's log is quoted in a report; "" says there was nothing to quote.
        excerpt=excerpt,
        native=native.render_markdown(evidence.native, pid=_pid(outcome))
        if failed and evidence.native is not None
        else None,
    )


def with_native_and_ranks(outcome: Outcome | NotRun, evidence: Evidence) -> Outcome | NotRun:
    """A crash's signature gains its top in-library native frame, so two different
    segfaults are told apart; a distributed hang's detail names the rank out of step."""
    if not isinstance(outcome, Outcome):
        return outcome
    if outcome.kind == "crash" and evidence.native is not None:
        outcome = replace(
            outcome,
            signature=native.with_native_frame(
                outcome.signature, evidence.native, pid=_pid(outcome)
            ),
        )
    if outcome.kind in ("hang", "crash", "error") and evidence.ranks is not None:
        said = ranks.describe(evidence.ranks)
        if said and said not in (outcome.detail or ""):
            detail = f"{outcome.detail}; {said}" if outcome.detail else said
            outcome = replace(outcome, detail=detail)
    return outcome



def _pid(outcome: Outcome | NotRun) -> int | None:
    """The pid of the process that crashed (a worker or child), whose core the report shows."""
    return outcome.pid if isinstance(outcome, Outcome) else None
