"""Whether the GPU slot an attempt ran on separates failing attempts from passing ones.

A crash on one GPU of four (a bad card, a slot on another PCIe switch, a MIG
partition) shows only when attempts are told apart by the slot they got
(`AttemptResult.gpu_slot`). Pure functions over judged cells, for the report:

    slot_label(("1",)) -> "1";  slot_label(("0", "1")) -> "0+1";  slot_label(()) -> ""
    slot_separation(cells) -> "fails on GPU slots 1-3 (6 of 6 attempts), never on slot 0
                               (0 of 3 attempts)" | None

An attempt fails when its outcome is not `pass`; attempts that could not run
(`NotRun`) say nothing. Only cells that failed at least once and ran on
two or more slots are looked at: a cell that never fails says nothing about
slots, and a cell that ran on one slot cannot tell its toggles from its slot.
An attempt with `run.instances` counts as its instances, each on its own slot
("fails on GPU slots 1-3 (3 of 3 instances)").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from reprospec.core.frozen import frozen
from reprospec.core.results import AttemptResult, CellResult
from reprospec.core.words import noun


@frozen
class SlotRun:
    """One process tree on one GPU slot: a plain attempt, or one instance of an attempt."""

    gpu_slot: tuple[str, ...]
    failed: bool
    matched: bool
    instance: bool  # one instance of `run.instances`


def slot_runs(attempt: AttemptResult) -> list[SlotRun]:
    """The runs of an attempt that ran: itself, or each of its instances."""
    if attempt.instances:
        return [
            SlotRun(i.gpu_slot, i.failed, i.matched, True)
            for i in attempt.instances
            if i.ran is not None
        ]
    if attempt.ran is None:
        return []
    return [SlotRun(attempt.gpu_slot, _failed(attempt), attempt.matched, False)]


def runs_noun(runs: Iterable[SlotRun], count: int) -> str:
    """`attempt`, `instance` or `run` (both kinds) for `count` of `runs`, as `noun` words it."""
    kinds = {run.instance for run in runs}
    word = "run" if len(kinds) > 1 else "instance" if kinds == {True} else "attempt"
    return noun(count, word)


def slot_label(slot: Sequence[str]) -> str:
    """The slot as the attempts table shows it: `1`, `0+1` (two GPUs), `` (none)."""
    return "+".join(slot)


K = TypeVar("K")


@frozen
class Separation(Generic[K]):
    """Keys (GPU slots, instance numbers) some of which failed while the others never did:
    each side in the tally's order, its failures and its runs."""

    failing: tuple[K, ...]
    clean: tuple[K, ...]
    failed: int  # failures of the failing keys
    runs_failing: int
    runs_clean: int


def separation(tally: Mapping[K, Sequence[int]]) -> Separation[K] | None:
    """What a tally of [failed, runs] by key separates; None unless some keys failed and
    others never did. One rule for the slots' sentence and the instances'."""
    failing = tuple(key for key, (failed, _) in tally.items() if failed)
    clean = tuple(key for key, (failed, _) in tally.items() if not failed)
    if not failing or not clean:
        return None
    return Separation(
        failing,
        clean,
        failed=sum(tally[key][0] for key in failing),
        runs_failing=sum(tally[key][1] for key in failing),
        runs_clean=sum(tally[key][1] for key in clean),
    )


def slot_separation(cells: Iterable[CellResult]) -> str | None:
    """A sentence when some slots fail and others never do; None when the slot separates nothing."""
    tally: dict[str, list[int]] = {}  # slot -> [failed, runs]
    informative = 0
    seen: list[SlotRun] = []
    for cell in cells:
        ran = [run for a in cell.attempts for run in slot_runs(a) if run.gpu_slot]
        if len({run.gpu_slot for run in ran}) < 2 or not any(run.failed for run in ran):
            continue
        informative += 1
        seen += ran
        for run in ran:
            counts = tally.setdefault(slot_label(run.gpu_slot), [0, 0])
            counts[0] += run.failed
            counts[1] += 1
    split = separation(tally)
    if split is None:
        return None
    text = (
        f"fails on GPU {_slots(split.failing)} ({split.failed} of {split.runs_failing} "
        f"{runs_noun(seen, split.runs_failing)}), never on {_slots(split.clean)} "
        f"(0 of {split.runs_clean} {runs_noun(seen, split.runs_clean)})"
    )
    if informative > 1:
        text += f", over {informative} cells"
    return text


def _failed(attempt: AttemptResult) -> bool:
    outcome = attempt.ran
    return outcome is not None and outcome.kind != "pass"


def _slots(labels: Sequence[str]) -> str:
    """`slot 0`, `slots 1-3`, `slots 0, 2`, `slots 0+1, 2+3`: numbers in order, runs joined."""
    return f"{noun(len(labels), 'slot')} {number_ranges(labels)}"


def number_ranges(labels: Sequence[str]) -> str:
    """`0`, `1-3`, `0, 2`, `0+1, 2+3`: numbers in order with runs joined, then the others."""
    numeric = sorted(int(s) for s in labels if s.isdigit())
    other = sorted(s for s in labels if not s.isdigit())
    parts: list[str] = []
    start = previous = None
    for number in numeric:
        if previous is not None and number == previous + 1:
            previous = number
            continue
        if start is not None:
            parts.append(_run(start, previous))
        start = previous = number
    if start is not None:
        parts.append(_run(start, previous))
    parts += other
    return ", ".join(parts)


def _run(start: int, end: int | None) -> str:
    if end is None or end == start:
        return str(start)
    if end == start + 1:
        return f"{start}, {end}"
    return f"{start}-{end}"
