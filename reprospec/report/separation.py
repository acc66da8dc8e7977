"""What separates failing from passing cells, each statement made for exactly the cells it is about.

A run that failed one way compares the cells where it failed with the cells that passed:
a value in every failing cell and in no passing one (or the other way round: "only
`gpu=0` passes"), else a pair, else a few values of some axes that hold exactly the
failing cells. A run that failed several ways gets one entry per failure signature: the
failure, the cells it happened in named by patterns that hold exactly those cells
(cellsets.py), and the values that go with it against every other cell that ran. One
pattern drawn for all failing cells at once read as if it covered them all: 21 failed
cells were "attributed" to `a=0|3|6|9, b=2`, which held the 16 that failed as expected
and none of the 5 that raised an unexpected ValueError.

Then the GPU slot and the instance of `run.instances` (slots.py, instances.py), when
failing runs had slots or instances that passing ones never did. A pure function of the
`RunResult`, shared by the markdown and the HTML report.
"""

from __future__ import annotations

from collections.abc import Sequence

from reprospec.core.frozen import frozen
from reprospec.core.results import CellResult, Outcome, RunResult
from reprospec.core.words import COULD_NOT_RUN, NOT_RUN, agree, outcome_phrase, plural
from reprospec.report.cellsets import describe_cells, patterns_line, separating_patterns
from reprospec.report.instances import instance_separation
from reprospec.report.markup import inline_code
from reprospec.report.signatures import GroupKey, explain, group_key
from reprospec.report.slots import slot_separation

# A failure's cells, named one by one when no few patterns hold them, are cut here.
MAX_NAMED = 12


@frozen
class Separation:
    """One entry: a failure with its cells (`headline`, "" when the run failed one way), and
    the statements about it, one line each (markdown-ish: `code`)."""

    headline: str
    lines: tuple[str, ...]


@frozen
class _Failure:
    """The cells where one failure signature happened, and whether any attempt expected it."""

    phrase: str
    cells: tuple[CellResult, ...]
    expected: bool


def heading(run: RunResult) -> str:
    """The section's heading: what it compares. Where no attempt passed, the failures are
    compared with each other (two hangs in different functions), and "failing from passing
    cells" named cells the run did not have."""
    passed = any(a.ran is not None and not a.failed for c in run.cells for a in c.attempts)
    return "What separates failing from passing cells" if passed else "What separates the failures"


def _key(outcome: Outcome) -> GroupKey:
    """The failure an attempt counts under, as the headline counts it (two children's
    crashes of one signature are two failures: signatures.group_key)."""
    return group_key(outcome.signature or outcome_phrase(outcome, pid=False), outcome)


def _failures(run: RunResult) -> list[_Failure]:
    """Each failure signature with its cells, most cells first, then in the order first seen."""
    found: dict[GroupKey, tuple[str, list[CellResult], list[bool]]] = {}
    for cell in run.cells:
        for attempt in cell.attempts:
            outcome = attempt.ran
            if outcome is None or not attempt.failed:
                continue
            _, cells, matched = found.setdefault(
                _key(outcome), (outcome_phrase(outcome, pid=False), [], [])
            )
            if cell not in cells:
                cells.append(cell)
            matched.append(attempt.matched)
    order = list(found)
    ranked = sorted(order, key=lambda key: (-len(found[key][1]), order.index(key)))
    return [_Failure(found[key][0], tuple(found[key][1]), any(found[key][2])) for key in ranked]


def _passed(cell: CellResult) -> bool:
    return bool(cell.attempts) and all(
        a.ran is not None and a.ran.kind == "pass" for a in cell.attempts
    )


def _named(cells: tuple[CellResult, ...], every: Sequence[CellResult]) -> str:
    """`a=0|3, b=2; a=5, b=7`: the patterns holding exactly `cells`, or their ids (cut)."""
    parts = describe_cells(cells, every)
    shown = "; ".join(inline_code(p) for p in parts[:MAX_NAMED])
    if len(parts) > MAX_NAMED:
        shown += f" and {len(parts) - MAX_NAMED} more (results.json has each cell)"
    return shown


def _one_way(failing: list[CellResult], run: RunResult) -> tuple[list[str], bool]:
    """A run that failed one way: its failing cells against its passing cells, both ways;
    and whether the lines are of every cell (the patterns of the fallback), not only of
    the cells that ran."""
    passing = [c for c in run.cells if _passed(c)]
    lines = [
        e.worded("every failing cell", "no passing cell")
        if e.present
        else e.worded("every passing cell", "no failing cell")
        for e in explain(failing, passing)
    ]
    if lines:
        return lines, False
    # No one value, nor a pair: a few values of some axes may hold the failing cells, and
    # only them (every other cell, one that never ran included, is outside).
    others = [c for c in run.cells if c not in failing]
    none = "no passing cell" if len(others) == len(passing) else "no other cell"
    patterns = separating_patterns(failing, others, run.cells)
    return (
        ([patterns_line(patterns, "every failing cell", none)], True) if patterns else ([], False)
    )


def _each_way(failures: list[_Failure], run: RunResult) -> list[Separation]:
    """A run that failed several ways: each failure with exactly its cells, and its values,
    counted of the cells that ran (the line of those that did not says "of the N cells
    that ran": "in 1 of 4 cells" above it counted two that never ran)."""
    ran = [c for c in run.cells if any(a.ran is not None for a in c.attempts)]
    out = []
    for failure in failures:
        others = [c for c in ran if c not in failure.cells]
        headline = (
            f"{inline_code(failure.phrase)} in {len(failure.cells)} of "
            f"{plural(len(ran), 'cell')}{'' if failure.expected else ', not expected'}: "
            + _named(failure.cells, run.cells)
        )
        lines = tuple(e.text() for e in explain(list(failure.cells), others))
        out.append(Separation(headline, lines))
    return out


def separators(run: RunResult) -> list[Separation] | None:
    """What tells failing cells from passing ones (None: nothing to compare)."""
    failures = _failures(run)
    more = [line for line in (slot_separation(run.cells), instance_separation(run.cells)) if line]
    has_axes = any(c.cell.matrix for c in run.cells)
    if len(failures) > 1 and has_axes:
        groups = _each_way(failures, run) + ([Separation("", tuple(more))] if more else [])
        return groups + _not_run(run)
    failing = list(failures[0].cells) if failures else []
    passing = any(_passed(c) for c in run.cells)
    if not (failing and passing and has_axes) and not more:
        return None
    lines, of_every = _one_way(failing, run) if failing and passing and has_axes else ([], False)
    # [] when nothing tells them apart: the report says so in words.
    if not (lines or more):
        return []
    return [Separation("", tuple(lines + more)), *_not_run(run, of_ran=not of_every)]


def _not_run(run: RunResult, *, of_ran: bool = True) -> list[Separation]:
    """The cells no attempt of which ran, named under the statements: those are of the
    cells that ran. `n=1: in every passing cell, in no failing cell` of a run stopped after
    `n=1` passed and `n=2` hung read as "only n=1 passes", where `n=3` and `n=4` had not run
    at all (an interrupted run), or could not (infra-error: a command not found).

    `of_ran` False: the statements are of every cell (patterns against "no other cell",
    the cells that never ran included), and the cells are named without "these are of
    the N cells that ran", which contradicted them."""
    unrun = [c for c in run.cells if c.verdict == "not-run"]
    could_not = [
        c
        for c in run.cells
        if c.verdict != "not-run" and c.attempts and all(a.ran is None for a in c.attempts)
    ]
    if not unrun and not could_not:
        return []
    ran = len(run.cells) - len(unrun) - len(could_not)
    parts = [
        f"{plural(len(cells), 'cell')} {said}: {_named(tuple(cells), run.cells)}"
        for cells, said in (
            (could_not, COULD_NOT_RUN),
            (unrun, f"{agree(len(unrun))} {NOT_RUN}"),
        )
        if cells
    ]
    lead = f"these are of the {plural(ran, 'cell')} that ran; " if of_ran else ""
    return [Separation("", (lead + "; ".join(parts),))]


__all__ = ["Separation", "separators"]
