"""The results and attempts tables at any size: alike rows counted together.

A 500-repeat cell is one attempts row (`1–500`, 500, `pass`, 0.51–0.62s), not 500;
a run of more than LARGE_RUN_CELLS cells shows its results as one row per group of
alike cells (verdict, expectation, outcome, rate), the cells named by patterns
(cellsets.py). Nothing is lost: every row says how many it holds, and results.json
keeps each cell and attempt.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import TypedDict, TypeVar

from reprospec.core.results import AttemptResult, CellResult, RunResult, VerdictKind
from reprospec.core.words import (
    STOPPED_BY_STOP_ON,
    VERDICT_MARKS,
    attempt_phrase,
    attempts_phrase,
    cell_rate_phrase,
    expectation_phrase,
    interrupted_of,
    rate_phrase,
    seconds,
    stopped_of,
)
from reprospec.report.cellsets import Picked, describe_cells
from reprospec.report.environment import CellEnvironments
from reprospec.report.markup import inline_code, show_value
from reprospec.report.slots import slot_label

T = TypeVar("T")

# A run with more cells than this shows its results grouped by outcome, each group's
# cells as patterns (cellsets.py), not one row per cell; results.json has every cell.
LARGE_RUN_CELLS = 32
# Attempt rows beyond this are grouped across cells.
MAX_ATTEMPT_ROWS = 24


class ResultRow(TypedDict):
    """One cell of the results table (see `result_rows`)."""

    mark: str
    id: str
    values: list[str]  # the cell's value of each axis, as the spec spells it
    expected: str
    actual: str
    rate: str
    verdict: VerdictKind
    reason: str
    env: str  # what differs in this cell's environment


class ResultGroup(TypedDict):
    """Alike cells of a large run's results table, as one row (see `result_groups`)."""

    mark: str
    verdict: VerdictKind
    expected: str
    actual: str
    rate: str  # `measured` with its `note` beside it, as the reports show it
    measured: str
    note: str  # `rate_note`: what cut the cells' attempts short, "" where nothing did
    env: str
    reason: str
    count: int
    cells: list[str]  # patterns naming the cells (cellsets.py)


def ranges(numbers: Sequence[int]) -> str:
    """`1–3, 5`: attempt numbers as ranges."""
    parts: list[str] = []
    ordered = sorted(numbers)
    start = prev = ordered[0]
    for n in [*ordered[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def durations(attempts: Sequence[AttemptResult]) -> str:
    """`5.02s`, or `5.01–5.40s` for several attempts."""
    low = min(a.duration_s for a in attempts)
    high = max(a.duration_s for a in attempts)
    return seconds(low) if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{seconds(high)}"


def attempt_rows(run: RunResult, short: Callable[[str], str]) -> list[dict[str, str]]:
    """Identical attempts as one row with a count: per cell, or across cells when many.

    Identical: the same outcome (in words, a child's pid left out), the same
    judgement and the same GPU slot; their numbers and durations are summed up.
    """
    groups: dict[tuple[str, str, bool, str], list[AttemptResult]] = {}
    for cell in run.cells:
        for a in cell.attempts:
            key = (cell.cell.id, attempt_phrase(a, pid=False), a.matched, slot_label(a.gpu_slot))
            groups.setdefault(key, []).append(a)
    if len(groups) > MAX_ATTEMPT_ROWS:
        return attempt_rows_across_cells(run, short)
    return [
        {
            "cell": inline_code(cell_id),
            "attempts": ranges([a.attempt for a in group]),
            "count": str(len(group)),
            "outcome": inline_code(short(phrase)),
            "matched": "yes" if matched else "no",
            "duration": durations(group),
            "gpu": gpu,
        }
        for (cell_id, phrase, matched, gpu), group in groups.items()
    ]


def attempt_rows_across_cells(run: RunResult, short: Callable[[str], str]) -> list[dict[str, str]]:
    groups: dict[tuple[str, bool, str], list[tuple[CellResult, AttemptResult]]] = {}
    for cell in run.cells:
        for a in cell.attempts:
            key = (attempt_phrase(a, pid=False), a.matched, slot_label(a.gpu_slot))
            groups.setdefault(key, []).append((cell, a))

    def cells_of(group: list[tuple[CellResult, AttemptResult]]) -> list[CellResult]:
        return list({c.cell.id: c for c, _ in group}.values())

    return [
        {
            "cell": "; ".join(inline_code(p) for p in describe_cells(cells_of(group), run.cells)),
            "attempts": "",
            "count": str(len(group)),
            "outcome": inline_code(short(phrase)),
            "matched": "yes" if matched else "no",
            "duration": durations([a for _, a in group]),
            "gpu": gpu,
        }
        for (phrase, matched, gpu), group in groups.items()
    ]


def result_rows(
    run: RunResult,
    axes: Sequence[str],
    differs: CellEnvironments,
    short: Callable[[str], str] = str,
) -> list[ResultRow]:
    """One row per cell: its values of `axes`, expected, actual, rate, what differs in it.

    `short` names paths short (report/paths.py): an outcome or reason can hold one.
    """
    said: dict[str | tuple[str, str], str] = {}
    rows: list[ResultRow] = []
    for c in run.cells:
        actual, reason = short(attempts_phrase(c.attempts)), short(c.reason)
        # The row and the reason under the table alike: the cell names the first that
        # said both (its reason, `could not run` of the same cause, says it too). Long or
        # not is the row's text alone, as in the console's table; the reason is part of
        # the key, as the list under the table shows it (a different one is said whole).
        first = said_before(c.cell.id, c.verdict, actual, said, key=(actual, reason))
        if first is not None:
            actual, reason = as_for(first), f"as for `{first}` above"
        rows.append(
            {
                "mark": VERDICT_MARKS[c.verdict],
                "id": c.cell.id,
                "values": [
                    show_value(c.cell.matrix[a]) if a in c.cell.matrix else "—" for a in axes
                ],
                "expected": expectation_phrase(c.expected),
                "actual": actual,
                "rate": rate_said(cell_rate_phrase(c.rate, c.expected), c.reason, run.interrupted),
                "verdict": c.verdict,
                "reason": reason,
                "env": ", ".join(differs.per_cell.get(c.cell.id, ())),
            }
        )
    return rows


# The length past which an infra-error's text, the same in several cells, is shown with the
# first cell alone (the others name that cell): a short one reads as quickly again. A
# bundle rerun where torch is missing printed the same five-line reason, with its three
# ways on, in each of its cells' rows (and report.md twice a cell).
SAID_ONCE = 60


def said_before(
    cell_id: str,
    verdict: str,
    actual: str,
    said: dict[str | tuple[str, str], str],
    key: str | tuple[str, str] | None = None,
) -> str | None:
    """The cell that first showed this infra-error's long `actual`, where `cell_id` repeats
    it (`said` remembers them across calls), else None: it is shown whole.

    Long is `actual`'s length in every view; `key` (default `actual`) is what must be the
    same: report.md's results, which list each cell's reason too, key on both."""
    if verdict != "infra-error" or len(actual) <= SAID_ONCE:
        return None
    first = said.setdefault(actual if key is None else key, cell_id)
    return None if first == cell_id else first


def as_for(first: str) -> str:
    """What a row says in place of the infra-error `first` showed (said_before)."""
    return f"infra-error: as for {first} above"


def result_groups(
    run: RunResult, differs: CellEnvironments, short: Callable[[str], str] = str
) -> list[ResultGroup]:
    """A large run's results: cells alike in verdict, expectation, outcome and rate, as one row.

    Each group holds its cells' positions, not the cells: a large run's are made as they are
    read (outcome/judgedcells.py), and alike cells share their parts, so each part is worded
    once (`words`), not once per cell.
    """
    groups: dict[tuple[VerdictKind, str, str, str, str, str, str], array[int]] = {}
    # (which words, id of a part) -> (the part, kept so that its id is not reused; its words)
    words: dict[tuple[int, int], tuple[object, str]] = {}

    def worded(which: int, part: T, word: Callable[[T], str]) -> str:
        found = words.get((which, id(part)))
        if found is None:
            found = words[which, id(part)] = (part, word(part))
        return found[1]

    def actual(attempts: tuple[AttemptResult, ...]) -> str:
        return short(attempts_phrase(attempts))

    for position, c in enumerate(run.cells):
        key = (
            c.verdict,
            worded(0, c.expected, expectation_phrase),
            worded(1, c.attempts, actual),
            # An observed cell's column is its count of attempts (as in result_rows); a
            # judged rate is worded once per Rate its alike cells share.
            cell_rate_phrase(c.rate, c.expected)
            if c.expected.observes
            else worded(2, c.rate, rate_phrase),
            rate_note(c.reason, run.interrupted),
            ", ".join(differs.per_cell.get(c.cell.id, ())),
            # An interrupted run's reasons say which cells it cut short ("interrupted after 1
            # of 2 attempts"): a cell that matched in the attempts it ran reads complete else.
            short(c.reason)
            if run.interrupted or c.verdict not in ("reproduced", "observed")
            else "",
        )
        if key not in groups:
            groups[key] = array("I")
        groups[key].append(position)
    # Failures first: what a reader looks for; then the most cells first.
    order = {"not-reproduced": 0, "undecided": 1, "infra-error": 2, "not-run": 4}
    ranked = sorted(groups.items(), key=lambda item: (order.get(item[0][0], 3), -len(item[1])))
    described = [describe_cells(Picked(run.cells, cells), run.cells) for _, cells in ranked]
    if ranked:
        # The biggest group, when it takes many patterns, is simply the cells no other row has.
        biggest = max(range(len(ranked)), key=lambda n: len(ranked[n][1]))
        if len(described[biggest]) > 2 and len(ranked) > 1:
            described[biggest] = ["every other cell"]
    return [
        {
            "mark": VERDICT_MARKS[verdict],
            "verdict": verdict,
            "expected": expected,
            "actual": actual,
            "rate": with_note(rate, note),
            "measured": rate,
            "note": note,
            "env": env,
            "reason": reason,
            "count": len(cells),
            "cells": patterns,
        }
        for ((verdict, expected, actual, rate, note, env, reason), cells), patterns in zip(
            ranked, described, strict=True
        )
    ]


def rate_note(reason: str, interrupted: bool) -> str:
    """What cut a cell's attempts short, said beside its rate: that run.stop_on stopped it
    where it did (its attempts short of the planned ones were skipped, not lost), or that a
    Ctrl-C did (`interrupted after 1 of 3 attempts`, where `1/1` alone read as the whole
    cell's); '' where neither did. A reproduced cell's reason is not shown beside it."""
    if stopped_of(reason):
        return STOPPED_BY_STOP_ON
    return interrupted_of(reason) if interrupted else ""


def with_note(rate: str, note: str) -> str:
    """A rate with its `rate_note` beside it: `1/1 (interrupted after 1 of 3 attempts)`."""
    return f"{rate} ({note})" if note else rate


def rate_said(rate: str, reason: str, interrupted: bool) -> str:
    """A cell's rate with its `rate_note`: what the results tables' rate column says."""
    return with_note(rate, rate_note(reason, interrupted))


__all__ = [
    "LARGE_RUN_CELLS",
    "SAID_ONCE",
    "as_for",
    "attempt_rows",
    "durations",
    "ranges",
    "rate_note",
    "rate_said",
    "result_groups",
    "result_rows",
    "said_before",
    "with_note",
]
