"""What the report leads with: the run's headline, its first failure, and the stacks of hangs.

Everything comes from the `RunResult`: an attempt carries its log excerpt and
its stacks (attempt.py took them from its files when it ended).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from reprospec.core.logtext import clean_log
from reprospec.core.results import (
    AttemptResult,
    CellResult,
    CrashedChild,
    Outcome,
    RunResult,
    alike,
)
from reprospec.core.runoptions import SEARCH_PURPOSES
from reprospec.core.words import (
    NOT_RUN,
    NOTHING_KEPT,
    died_before_the_hang,
    injected_phrase,
    outcome_phrase,
    plural,
    ran_process,
    shorten,
    shorten_command,
)
from reprospec.report.markup import fence_for, inline_code
from reprospec.report.paths import PathNames

if TYPE_CHECKING:
    from reprospec.report.signatures import GroupKey

STACK_LINES = 300
# Failures besides the first one, shown with their log excerpt (the unexpected ones first).
MAX_OTHER_FAILURES = 5


class OtherFailure(TypedDict):
    """A failure signature besides the first failure's, as first seen (see `other_failures`)."""

    outcome: str
    # Some attempt of this signature matched its cell's expect (an expected second failure).
    expected: bool
    # `Not expected`, `Expected as well`, or, where its cells were observed (`--observe`:
    # nothing expected, so every attempt matches), `Also seen`.
    heading: str
    cells: int
    cell: str
    attempt: int
    message: str
    message_fence: str
    excerpt: str
    fence: str


class FailureSection(TypedDict):
    """The report's first failure, as the templates show it (see `failure_section`)."""

    chain: list[str]
    # An exception group's members (markdown, one each; [] for any other exception).
    members: list[str]
    # (signature, attempts, injected phrase, where a hang sits as its stacks show: markdown)
    signatures: list[tuple[str, int, str, str]]
    cell: str
    attempt: int
    outcome: str
    exception: str | None
    message: str
    message_fence: str
    # The last traceback printed where the process went on after it (markdown, or ''):
    # named as such, never as the exception that ended the run.
    last_traceback: str
    detail: str
    excerpt: str
    fence: str
    worker_stack: str
    worker_fence: str
    worker_who: str
    worker_source: str
    native: str
    native_top: str
    native_details: str
    # What environment.debug's GPU diagnostics found (markdown), first in the section.
    gpu: str
    # A hang's Python stacks (every process of the attempt), leading as a dead worker's does.
    hang_stack: str
    hang_fence: str
    # The other failures no attempt expected, each with its evidence; how many more there were.
    others: list[OtherFailure]
    others_more: int


class StackSection(TypedDict):
    """One cell's first hang (or child crash) with its stacks (see `stack_sections`)."""

    cell: str
    attempt: int
    what: str
    text: str
    fence: str
    native: str


def failing_cells(run: RunResult) -> list[CellResult]:
    """Cells where the expected failure reproduced; else any cell that failed at all."""

    def reproduced(c: CellResult) -> bool:
        return c.failure_reproduced

    def failed(c: CellResult) -> bool:
        return any(a.failed for a in c.attempts)

    # Each pass only where some alike cells hold one: a large run's cells are made as
    # they are read (core.results.alike).
    for wanted in (reproduced, failed):
        if any(wanted(c) for c, _ in alike(run.cells)):
            return [c for c in run.cells if wanted(c)]
    return []


def first_failure(run: RunResult) -> tuple[CellResult, AttemptResult, Outcome] | None:
    """The first failing attempt and its outcome, preferring cells where the failure reproduced."""
    for cell in failing_cells(run):
        for attempt in cell.attempts:
            if attempt.failed and isinstance(attempt.outcome, Outcome):
                return cell, attempt, attempt.outcome
    return None


def summary_line(run: RunResult) -> str:
    """The headline: what failed in how many cells, and how many cells did as expected.

    e.g. `hang @ import in 1 of 1 cell; as expected in every cell (2/3 attempts)`, or
    with several failures `2 of 4 cells failed: crash SIGSEGV (worker) @ validation:7 in 1,
    error exit 1 ValueError @ train:3 in 1; ...` (most cells first). A failure the
    spec's faults caused says so: `... in 1 of 4 cells, injected by the spec:
    workload.faults[0]`. Cells an interrupted run never reached are `not run`. The
    attempts are counted as the cells' rates count them (those that ran); attempts that
    could not run are named apart: `(0/0 attempts, 1 could not run)`.
    """
    if run.observes:
        return _observed_line(run)
    s = run.summary
    signatures = failure_signatures(run)
    not_run = s.get("not_run", 0)
    ran = s["cells"] - not_run
    # Two different facts: where the failure happened, and whether every cell did
    # what the spec expects ("reproduced"); a pass cell can be reproduced too.
    if len(signatures) == 1:
        phrase, count, injected = signatures[0]
        head = f"{phrase} in {count} of {plural(s['cells'], 'cell')}" + _injected(injected)
    elif signatures:
        failed = sum(n for c, n in alike(run.cells) if any(a.failed for a in c.attempts))
        head = f"{failed} of {plural(s['cells'], 'cell')} failed"
        if failed == 1:
            # One cell failed more than one way: "in 1 ..., in 1" would read as two cells.
            head += f", {len(signatures)} ways: " + ", ".join(
                f"{phrase}{_injected(injected)}" for phrase, _, injected in signatures
            )
        else:
            head += ": " + ", ".join(
                f"{phrase} in {count}{_injected(injected)}"
                for phrase, count, injected in signatures
            )
            if sum(count for _, count, _ in signatures) > failed:
                head += " (a cell that failed more than one way counts in each)"
    elif s["infra_error"] and s["infra_error"] == ran:
        head = "Could not run"
    elif not ran:
        # Every cell cut short before an attempt ended: "as expected in 0 of 3 cells (0/0
        # attempts)" after it would count what never ran.
        return f"{NOTHING_KEPT}: {plural(not_run, 'cell')} {NOT_RUN}" if not_run else "Nothing ran"
    else:
        head = "No failure"
    # The attempts that ran, as each cell's rate counts them in the results table: one
    # that could not run was not judged (it read "0/1 attempts" beside the table's 0/0).
    matched = attempts = broken = 0
    for cell, alike_cells in alike(run.cells):
        matched += alike_cells * cell.rate.matched
        attempts += alike_cells * cell.rate.attempts
        broken += alike_cells * sum(a.ran is None for a in cell.attempts)
    held = (
        "every cell"
        if s["reproduced"] == s["cells"]
        else f"{s['reproduced']} of {plural(s['cells'], 'cell')}"
    )
    could_not = f", {broken} could not run" if broken else ""
    searched = run.options.get("purpose")
    if isinstance(searched, str) and searched in SEARCH_PURPOSES:
        # A search's probe: its cells' verdicts are the engine's rule (every attempt of a
        # cell without a rate), which the search does not ask; it judges the attempts by
        # its own (minimize: a candidate fails at its first matching attempt). "as expected
        # in 0 of 1 cell (1/2 attempts)" read as a failure the search then accepted, and a
        # cell's "undecided" is that rule's verdict too, left out.
        text = (
            f"{head}; a probe of {searched}: {matched}/{attempts} attempts as expected"
            f"{could_not}, which the {searched} search judges by its own rule (its report), "
            "not cell by cell"
        )
    else:
        text = f"{head}; as expected in {held} ({matched}/{attempts} attempts{could_not})"
        if s["undecided"]:
            text += f", {s['undecided']} undecided"
    if s["infra_error"]:
        text += f", {s['infra_error']} infra-error"
    if not_run:
        text += f", {not_run} {NOT_RUN}"
    elif run.interrupted:
        text += " (interrupted)"
    return text


def _injected(injected: str | None) -> str:
    return f", {injected_phrase(injected)}" if injected else ""


def failure_signatures(run: RunResult) -> list[tuple[str, int, str | None]]:
    """(phrase, cells, injected) of each failure signature, most cells first, then first seen.

    The first failure (`first_failure`) leads a tie; a cell counts once per signature (and
    crashed child: `signatures.group_key`).
    The phrase leaves the injected label out: the headline words it after the count.
    """
    if not any(a.failed for c, _ in alike(run.cells) for a in c.attempts):
        return []  # nothing failed: no signature to name (nor their module to import)
    from reprospec.report.signatures import group_key, shared_phrase, signatures_of, told_apart

    first = first_failure(run)
    cells: dict[GroupKey, set[str]] = {}
    grouped: dict[GroupKey, list[Outcome]] = {}
    signature_of = signatures_of(run.cells)
    outcomes = [
        (c.cell.id, a.ran, signature_of(a)) for c in run.cells for a in c.attempts if a.failed
    ]
    if first is not None:
        outcomes.insert(0, (first[0].cell.id, first[2], signature_of(first[1])))
    for cell_id, outcome, signature in outcomes:
        assert outcome is not None
        key = group_key(signature or outcome_phrase(outcome, pid=False), outcome)
        grouped.setdefault(key, []).append(outcome)
        cells.setdefault(key, set()).add(cell_id)
    order = list(cells)
    ranked = sorted(order, key=lambda key: (-len(cells[key]), order.index(key)))
    told = told_apart(
        {
            key: shared_phrase([replace(o, injected=None) for o in outcomes])
            for key, outcomes in grouped.items()
        }
    )
    return [(told[key], len(cells[key]), grouped[key][0].injected) for key in ranked]


def _observed_line(run: RunResult) -> str:
    """`Observed 4 cells: crash SIGSEGV (worker) @ validation:7 in 1, pass in 3`."""
    from reprospec.report.signatures import outcome_groups

    s = run.summary
    found = outcome_groups(run)
    if s["cells"] == 1 and found and found[0].of_attempts:
        # One cell: each outcome in it "in 1" said nothing; its share of the attempts does.
        # An attempt that did not run (a NotRun's) is in no group: said, not left out.
        of, every = found[0].of_attempts, found[0].all_attempts
        groups = ", ".join(f"{g.phrase} in {g.attempts}" for g in found)
        attempts = plural(every, "attempt")  # every >= of: those that ran are some of them
        text = f"Observed 1 cell, {attempts}" + (f" ({every - of} not run)" if every > of else "")
        text += f": {groups}" if groups else ""
    else:
        groups = ", ".join(f"{g.phrase} in {len(g.cells)}" for g in found)
        text = f"Observed {plural(s['cells'], 'cell')}" + (f": {groups}" if groups else "")
    if s["infra_error"]:
        text += f"; {s['infra_error']} infra-error"
    if run.interrupted:
        text += " (interrupted)"
    return text


def failure_section(run: RunResult, paths: PathNames | None = None) -> FailureSection | None:
    """The failure signatures, and the first failure with its message and log excerpt.

    A dead DataLoader worker leads with its own stack (`worker_stack`), then the main
    process's view. `paths` names the paths short (report/paths.py).
    """
    found = first_failure(run)
    if found is None:
        return None
    from reprospec.report.signatures import group_key, signatures_of

    short = (paths or PathNames({})).shorten
    cell, attempt, outcome = found
    # By signature, and hangs apart by where they sat, each line saying where: `hang` (2
    # attempts) named the first cell's frame alone, where the other hung in another
    # function. Crashed children stay one line: nothing on it would tell them apart.
    counts: Counter[GroupKey] = Counter()
    injected: dict[GroupKey, str | None] = {}
    stuck: dict[GroupKey, str] = {}
    signature_of = signatures_of(run.cells)
    for c in run.cells:
        for a in c.attempts:
            if a.ran is not None and a.ran.kind != "pass":
                signature = signature_of(a) or outcome_phrase(a.ran)
                key = group_key(signature, a.ran) if a.ran.kind == "hang" else (signature, "")
                counts[key] += 1
                injected.setdefault(key, a.ran.injected)
                if a.ran.kind == "hang" and key not in stuck:
                    stuck[key] = _hang_where(c, a, short)
    log = short(attempt.excerpt or "")
    message = short(clean_log(outcome.message or "").strip())
    worker = short(attempt.stack or "") if _died_in_worker(outcome) else ""
    worker_who = _worker_of(outcome)
    native = short(attempt.native or "")
    hang = _stack_text(attempt.stack, short) if outcome.kind == "hang" else ""
    if outcome.crashed_child is not None and attempt.dead_child_stack:
        # The child that died before the hang leads, as a dead worker does: its stack,
        # then the hung processes' (the main process's view).
        worker = short(attempt.dead_child_stack)
        worker_who = _dead_child_of(outcome.crashed_child, short)
    # The top frames go with the worker's own stack; gdb's full stacks (folded) last.
    cut = native.find("<details>")
    native_top, native_details = (native[:cut], native[cut:]) if cut >= 0 else (native, "")
    others = other_failures(run, short)
    return {
        "chain": [short(line) for line in chain_lines(outcome)],
        "members": [short(line) for line in member_lines(outcome)],
        "signatures": [
            (
                key[0],
                n,
                injected_phrase(label) if (label := injected[key]) else "",
                stuck.get(key, ""),
            )
            for key, n in counts.most_common()
        ],
        "cell": cell.cell.id,
        "attempt": attempt.attempt,
        "outcome": short(outcome_phrase(outcome)),
        "exception": outcome.exception,
        "message": message,
        "message_fence": fence_for(message),
        "last_traceback": last_traceback_line(outcome, short),
        "detail": short(clean_log(outcome.detail or "").strip()),
        "excerpt": log,
        "fence": fence_for(log),
        # The stack of the worker that died, as it printed it (or as read from its core:
        # by py-spy where eu-stack reads the native frames, else by gdb's py-bt, so the
        # report names no tool: "as gdb read it" was said of py-spy's reading).
        "worker_stack": worker,
        "worker_fence": fence_for(worker),
        "worker_who": worker_who,
        "worker_source": (
            "as it printed it"
            if worker.startswith("Fatal Python error")
            else "as read from its core"
        ),
        # gdb's view of the crash: top frames of the crashing thread, full stacks folded.
        "native": native,
        "native_top": native_top.strip(),
        "native_details": native_details.strip(),
        # What environment.debug's GPU diagnostics found: the report leads with it.
        "gpu": short(attempt.gpu or ""),
        "hang_stack": hang,
        "hang_fence": fence_for(hang),
        "others": others[:MAX_OTHER_FAILURES],
        "others_more": max(0, len(others) - MAX_OTHER_FAILURES),
    }


def other_failures(run: RunResult, short: Callable[[str], str] = str) -> list[OtherFailure]:
    """Each failure signature but the first failure's: those no attempt expected first, then
    those some attempt expected, most cells first within each.

    Only the first failure used to show its log: a run whose expected crash reproduced in
    16 cells and that raised an unexpected ValueError in 5 more showed the crash's excerpt
    and nothing of the ValueError, the one failure nobody had seen yet. A second expected
    failure (a spec expecting a SIGSEGV in one cell and a ValueError in another) got only its
    signature line, though the maintainer reading the report needs its log as much.
    """
    first = first_failure(run)
    shown = _signature(first[2]) if first is not None else None
    found: dict[GroupKey, list[tuple[CellResult, AttemptResult, Outcome]]] = {}
    for cell in run.cells:
        for attempt in cell.attempts:
            if attempt.failed and (outcome := attempt.ran) is not None:
                found.setdefault(_signature(outcome), []).append((cell, attempt, outcome))
    rest = [
        (any(attempt.matched for _, attempt, _ in seen), seen)
        for key, seen in found.items()
        if key != shown
    ]
    rest.sort(key=lambda each: (each[0], -len({cell.cell.id for cell, _, _ in each[1]})))
    out: list[OtherFailure] = []
    for expected, seen in rest:
        cell, attempt, outcome = seen[0]
        log = short(attempt.excerpt or "")
        message = short(clean_log(outcome.message or "").strip())
        observed = all(c.verdict == "observed" for c, _, _ in seen)
        out.append(
            {
                "outcome": short(outcome_phrase(outcome, pid=False)),
                "expected": expected,
                "heading": "Also seen"
                if observed
                else "Expected as well"
                if expected
                else "Not expected",
                "cells": len({c.cell.id for c, _, _ in seen}),
                "cell": cell.cell.id,
                "attempt": attempt.attempt,
                "message": message,
                "message_fence": fence_for(message),
                "excerpt": log,
                "fence": fence_for(log),
            }
        )
    return out


def _signature(outcome: Outcome) -> GroupKey:
    """The failure an attempt counts under, as the headline counts it (two children's
    crashes of one signature are two failures, each with its log: signatures.group_key)."""
    from reprospec.report.signatures import group_key

    return group_key(outcome.signature or outcome_phrase(outcome, pid=False), outcome)


def _hang_where(cell: CellResult, attempt: AttemptResult, short: Callable[[str], str]) -> str:
    """`the DataLoader worker pid 4242 was fetching an item, in `train.py:19 in __getitem__`
    (cell `w=2`, attempt 1)`: where a hang sits as its stacks show, or a C program's
    native place, `in `clock_nanosleep@libc<-main@nap` (...)` ('' where neither shows
    one). A hang the first failure was not got only `hang` (2 attempts), its stuck frame
    in the folded Stacks block.

    The dump is read again with no file (`unread`): the lines that rank a join's threads
    were read from the attempt's text when it was classified, and the thread it named
    stored (`hung_in`), first here. Today's files, or another machine's (a run reported
    later, a bundle, a program since edited), named another thread than the title's."""
    from reprospec.outcome.hangsource import unread
    from reprospec.outcome.hungstacks import where_stuck

    stored = attempt.ran.hung_in if attempt.ran is not None else None
    found = where_stuck(attempt.stack, source=unread, first=stored)
    if found is not None:
        where = found.describe(lambda frame: inline_code(short(frame)))
        if attempt.ran is not None and attempt.ran.hung_native is not None:
            # A child with no Python stack its parent waits for: its native place too, and
            # the process it ran that place is in (`./nap` under `./pp`), as the run's line
            # says: the pid described is the child's, not the one that sleeps.
            ran = attempt.ran
            if ran.hung_process:
                where += f", in {ran_process(ran.hung_process)},"
            where += f" in {inline_code(ran.hung_native)}"
    elif attempt.ran is not None and attempt.ran.hung_native is not None:
        # A C program's hang has no Python stack: its native place, where the first attempt
        # sat at one live sample (no grouping key: group_key leaves it out), says where.
        # A launcher's child's (`./nap` under `./pp`): that process too, as the title says.
        ran = attempt.ran
        where = f"in {inline_code(ran.hung_native)}"
        if ran.hung_process:
            where = f"in {ran_process(ran.hung_process)}, {where}"
    else:
        return ""
    return f"{where} (cell {inline_code(cell.cell.id)}, attempt {attempt.attempt})"


def _stack_text(stack: str | None, short: Callable[[str], str]) -> str:
    """A stack dump for the report: paths named short, at most STACK_LINES lines; each
    DataLoader worker's stack labelled so (its command line is its parent's)."""
    from reprospec.outcome.hungstacks import label_workers, readable_frames

    lines = short(clean_log(label_workers(readable_frames(stack or "")))).strip().split("\n")
    if len(lines) > STACK_LINES:
        lines = [*lines[:STACK_LINES], f"… ({len(lines) - STACK_LINES} more lines)"]
    return "\n".join(lines).strip()


def _died_in_worker(outcome: Outcome) -> bool:
    return outcome.kind == "crash" and outcome.where == "worker"


def _worker_of(outcome: Outcome) -> str:
    """`the DataLoader worker pid 4242`: whose stack a worker crash shows."""
    return "the DataLoader worker" + (f" pid {outcome.pid}" if outcome.pid is not None else "")


def last_traceback_line(outcome: Outcome, short: Callable[[str], str] = str) -> str:
    """`` `KeyError: 'missing'` ``: the last traceback printed, where it did not end the
    process (its first line; '' where there is none)."""
    printed = outcome.last_traceback
    if printed is None:
        return ""
    message = clean_log(printed.message or "").strip().split("\n")[0]
    text = f"{printed.named}: {message}" if message else printed.named
    return inline_code(short(shorten(text, 200)))


def member_lines(outcome: Outcome) -> list[str]:
    """The members of the exception group that ended the attempt, in the order printed,
    one markdown line each (`` `ValueError`: `boom` ``); [] for any other exception. The
    group's own message says only how many (`unhandled errors in a TaskGroup (1
    sub-exception)`): the members are the failure."""
    return [_exception_line(member.type, member.message) for member in outcome.members]


def _exception_line(name: str, message: str | None) -> str:
    """`` `ValueError`: `boom` ``: an exception's markdown line, its message's first line
    (shortened) where it has one."""
    first = clean_log(message or "").strip().split("\n")[0]
    text = inline_code(name)
    return f"{text}: {inline_code(shorten(first, 200))}" if first else text


def chain_lines(outcome: Outcome) -> list[str]:
    """The exception chain, primary first, one markdown line each; [] for a lone exception."""
    if len(outcome.chain) < 2:
        return []
    lines: list[str] = []
    previous: str | None = None
    for link in outcome.chain:
        text = _exception_line(link.named, link.message)
        if previous == "cause":
            text = f"raised from it (direct cause): {text}"
        elif previous == "context":
            text = f"raised while handling it: {text}"
        lines.append(text)
        previous = link.link
    return lines


def stack_sections(run: RunResult, paths: PathNames | None = None) -> list[StackSection]:
    """The first hang of each cell with its stacks, and the first crash of a child with its own."""
    short = (paths or PathNames({})).shorten
    out: list[StackSection] = []
    if not any(_stacked(a.ran) for c, _ in alike(run.cells) for a in c.attempts):
        return out
    first = first_failure(run)
    # The first failure's hang stacks lead the Failure section: not shown twice.
    shown = (first[0].cell.id, first[1].attempt) if first and first[2].kind == "hang" else None
    for cell in run.cells:
        for a in cell.attempts:
            if a.ran is None or not _stacked(a.ran):
                continue
            if (cell.cell.id, a.attempt) == shown:
                break
            text = _stack_text(_with_dead_child(a), short)
            if text:
                out.append(
                    {
                        "cell": cell.cell.id,
                        "attempt": a.attempt,
                        "what": "" if a.ran.kind == "hang" else f", {_child_of(a.ran, short)}",
                        "text": text,
                        "fence": fence_for(text),
                        "native": short(a.native or ""),
                    }
                )
                break
    return out


def _with_dead_child(attempt: AttemptResult) -> str | None:
    """An attempt's stacks as one Stacks section shows them: a hang's after the child that
    died before it (under `died_before_the_hang`'s line, its own stack first, as the first
    failure shows it), else its `stack` alone."""
    child = attempt.ran.crashed_child if attempt.ran is not None else None
    if child is None or not attempt.dead_child_stack:
        return attempt.stack
    dead = f"{died_before_the_hang(child)}\n{attempt.dead_child_stack}"
    return f"{dead}\n\n{attempt.stack}" if attempt.stack else dead


def _dead_child_of(child: CrashedChild, short: Callable[[str], str]) -> str:
    """`the child pid 4242 (python pool.py), of SIGSEGV before the hang`: whose stack
    leads a hang's report (`The stack of the process that died (...)`)."""
    who = "the child" + (f" pid {child.pid}" if child.pid is not None else "")
    if child.cmdline:
        who += f" ({inline_code(shorten_command(short(child.cmdline), 80))})"
    return who + (f", of {child.signal}" if child.signal else "") + " before the hang"


def _stacked(outcome: Outcome | None) -> bool:
    """Whether the stack section shows this outcome's stacks: a hang, a child's crash."""
    return outcome is not None and (
        outcome.kind == "hang" or (outcome.kind == "crash" and outcome.where == "child")
    )


def _child_of(outcome: Outcome, short: Callable[[str], str]) -> str:
    """`the crashed child pid 4242 (./test_ops)`: whose stack a child crash shows."""
    who = "the crashed child"
    if outcome.pid is not None:
        who += f" pid {outcome.pid}"
    if outcome.cmdline:
        who += f" ({inline_code(shorten_command(short(outcome.cmdline), 80))})"
    return who
