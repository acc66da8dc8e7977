"""What the report leads with: the run's headline, its first failure, and the stacks of hangs.

Everything comes from the `RunResult`: an attempt carries its log excerpt and
its stacks (attempt.py took them from its files when it ended).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from reprospec.logtext import clean_log
from reprospec.models import AttemptResult, CellResult, Outcome, RunResult
from reprospec.report.markup import fence_for
from reprospec.words import outcome_phrase, plural

STACK_LINES = 300


def failing_cells(run: RunResult) -> list[CellResult]:
    """Cells where the expected failure reproduced; else any cell that failed at all."""
    reproduced = [
        c for c in run.cells if c.verdict == "reproduced" and c.expected.outcome != "pass"
    ]
    return reproduced or [c for c in run.cells if any(a.failed for a in c.attempts)]


def first_failure(run: RunResult) -> tuple[CellResult, AttemptResult, Outcome] | None:
    """The first failing attempt and its outcome, preferring cells where the failure reproduced."""
    for cell in failing_cells(run):
        for attempt in cell.attempts:
            if attempt.failed and isinstance(attempt.outcome, Outcome):
                return cell, attempt, attempt.outcome
    return None


def summary_line(run: RunResult) -> str:
    """The headline: what failed in how many cells, and how many cells did as expected.

    e.g. `hang @ import in 1 of 1 cell; as expected in every cell (2/3 attempts)`
    """
    if run.observes:
        return _observed_line(run)
    failure = first_failure(run)
    s = run.summary
    # Two different facts: where the failure happened, and whether every cell did
    # what the spec expects ("reproduced"); a pass cell can be reproduced too.
    if failure is not None:
        signature = failure[2].signature
        failing = sum(
            any(a.ran is not None and a.ran.signature == signature for a in c.attempts)
            for c in run.cells
        )
        head = f"{outcome_phrase(failure[2])} in {failing} of {plural(s['cells'], 'cell')}"
    else:
        head = "Could not run" if s["infra_error"] else "No failure"
    attempts = [a for c in run.cells for a in c.attempts]
    held = (
        "every cell"
        if s["reproduced"] == s["cells"]
        else f"{s['reproduced']} of {plural(s['cells'], 'cell')}"
    )
    text = (
        f"{head}; as expected in {held} "
        f"({sum(a.matched for a in attempts)}/{len(attempts)} attempts)"
    )
    if s["infra_error"]:
        text += f", {s['infra_error']} infra-error"
    if run.interrupted:
        text += " (interrupted)"
    return text


def _observed_line(run: RunResult) -> str:
    """`Observed 4 cells: crash SIGSEGV (worker) @ validation:7 in 1, pass in 3`."""
    from reprospec.report.signatures import outcome_groups

    s = run.summary
    groups = ", ".join(f"{g.phrase} in {len(g.cells)}" for g in outcome_groups(run))
    text = f"Observed {plural(s['cells'], 'cell')}" + (f": {groups}" if groups else "")
    if s["infra_error"]:
        text += f"; {s['infra_error']} infra-error"
    if run.interrupted:
        text += " (interrupted)"
    return text


def failure_section(run: RunResult) -> dict[str, Any] | None:
    """The failure signatures, and the first failure with its message and log excerpt."""
    found = first_failure(run)
    if found is None:
        return None
    cell, attempt, outcome = found
    signatures = Counter(
        a.ran.signature or outcome_phrase(a.ran)
        for c in run.cells
        for a in c.attempts
        if a.ran is not None and a.ran.kind != "pass"
    )
    log = attempt.excerpt or ""
    message = clean_log(outcome.message or "").strip()
    return {
        "signatures": signatures.most_common(),
        "cell": cell.cell.id,
        "attempt": attempt.attempt,
        "outcome": outcome_phrase(outcome),
        "exception": outcome.exception,
        "message": message,
        "message_fence": fence_for(message),
        "detail": clean_log(outcome.detail or "").strip(),
        "excerpt": log,
        "fence": fence_for(log),
        # gdb's view of the crash: top frames of the crashing thread, full stacks folded.
        "native": attempt.native or "",
    }


def stack_sections(run: RunResult) -> list[dict[str, Any]]:
    """The first hang of each cell with its stacks."""
    out = []
    for cell in run.cells:
        for a in cell.attempts:
            if a.ran is None or a.ran.kind != "hang":
                continue
            lines = clean_log(a.stack or "").strip().split("\n")
            if len(lines) > STACK_LINES:
                lines = [*lines[:STACK_LINES], f"… ({len(lines) - STACK_LINES} more lines)"]
            text = "\n".join(lines)
            if text:
                out.append(
                    {
                        "cell": cell.cell.id,
                        "attempt": a.attempt,
                        "text": text,
                        "fence": fence_for(text),
                        "native": a.native or "",
                    }
                )
                break
    return out
