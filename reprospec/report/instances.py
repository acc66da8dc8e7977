"""How the instances of `run.instances` fared: per-instance crash rates, how together they began.

Pure functions over judged cells, for the report (slots.py is the GPU slot's
version, and these sentences are worded the same way):

    instance_separation(cells) -> "crashes on instances 1-3 (3 of 3 runs), never on
                                   instance 0 (0 of 1 run)" | None
    instance_rows(cells)       -> one row per instance number: runs, failed, outcomes, slots
    start_spread(cells)        -> "at most 1.8 ms apart (5 attempts, median 0.9 ms)" | None
    first_failure(instances)   -> "instance 2 of 4 crashed first; instances 1-3 crashed,
                                   instance 0 passed"

An instance fails when its outcome is not `pass`; instances that could not run
say nothing. Only cells with two or more instances per attempt that failed at
least once are looked at: a cell that never fails, or runs one copy, cannot tell
one instance from another.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from reprospec.core.frozen import frozen
from reprospec.core.results import CellResult, InstanceResult
from reprospec.core.words import noun, outcome_phrase, plural, seconds
from reprospec.report.slots import number_ranges, separation, slot_label

_VERBS = {"crash": "crashes", "hang": "hangs", "error": "fails with an error"}
_PAST = {"crash": "crashed", "hang": "hung", "error": "failed with an error", "pass": "passed"}


@frozen
class InstanceRow:
    """One instance number over every attempt of the run that had it."""

    instance: int
    runs: int
    failed: int
    outcomes: str  # `3× crash SIGSEGV, 1× pass`
    gpu_slots: str  # `1, 5`: the slots it ran on


def _instances(cells: Iterable[CellResult]) -> list[tuple[CellResult, Sequence[InstanceResult]]]:
    return [(cell, attempt.instances) for cell in cells for attempt in cell.attempts]


def _verb(failed: Iterable[InstanceResult], verbs: dict[str, str], otherwise: str) -> str:
    """The verb of the failures' one kind (`crashes`), else `otherwise`."""
    kinds = {i.ran.kind for i in failed if i.ran is not None}
    return verbs[kinds.pop()] if len(kinds) == 1 else otherwise


def _numbers(numbers: Iterable[int]) -> str:
    """`instance 0`, `instances 1-3`, `instances 0, 2`."""
    labels = [str(n) for n in sorted(set(numbers))]
    return f"{noun(len(labels), 'instance')} {number_ranges(labels)}"


def instance_separation(cells: Iterable[CellResult]) -> str | None:
    """A sentence when some instance numbers fail and others never do; None otherwise."""
    # Attempts that ran two or more instances, by cell; a cell says something only if
    # one of its instances failed.
    runs: dict[str, list[list[InstanceResult]]] = {}
    for cell, instances in _instances(cells):
        ran = [i for i in instances if i.ran is not None]
        if len(ran) >= 2:
            runs.setdefault(cell.cell.id, []).append(ran)
    informative = {
        cell_id: attempts
        for cell_id, attempts in runs.items()
        if any(i.failed for ran in attempts for i in ran)
    }
    tally: dict[int, list[int]] = {}  # instance -> [failed, runs]
    failures: list[InstanceResult] = []
    for attempts in informative.values():
        for ran in attempts:
            for instance in ran:
                counts = tally.setdefault(instance.instance, [0, 0])
                counts[0] += instance.failed
                counts[1] += 1
                if instance.failed:
                    failures.append(instance)
    split = separation(tally)
    if split is None:
        return None
    text = (
        f"{_verb(failures, _VERBS, 'fails')} on {_numbers(split.failing)} "
        f"({split.failed} of {plural(split.runs_failing, 'run')}), "
        f"never on {_numbers(split.clean)} (0 of {plural(split.runs_clean, 'run')})"
    )
    if len(informative) > 1:
        text += f", over {len(informative)} cells"
    return text


def instance_rows(cells: Iterable[CellResult]) -> list[InstanceRow]:
    """Per instance number (attempts of 2+ instances): runs, failures, outcomes, GPU slots."""
    by_number: dict[int, list[InstanceResult]] = {}
    for _, instances in _instances(cells):
        if len(instances) < 2:
            continue  # one copy alone tells no instance from another
        for instance in instances:
            by_number.setdefault(instance.instance, []).append(instance)
    rows = []
    for number in sorted(by_number):
        group = by_number[number]
        counts = Counter(outcome_phrase(i.outcome, where=False, pid=False) for i in group)
        outcomes = ", ".join(f"{n}× {text}" for text, n in counts.most_common())
        slots = [slot_label(i.gpu_slot) for i in group if i.gpu_slot]
        rows.append(
            InstanceRow(
                instance=number,
                runs=sum(i.ran is not None for i in group),
                failed=sum(i.failed for i in group),
                outcomes=outcomes,
                gpu_slots=number_ranges(list(dict.fromkeys(slots))) if slots else "",
            )
        )
    return rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def start_spread(cells: Iterable[CellResult]) -> str | None:
    """How far apart the instances of each attempt were released, over the run's attempts."""
    spreads = [
        attempt.start_spread_s
        for cell in cells
        for attempt in cell.attempts
        if len(attempt.instances) > 1 and attempt.start_spread_s is not None
    ]
    if not spreads:
        return None
    over = plural(len(spreads), "attempt")
    if len(spreads) > 2:
        import statistics  # here: with fractions and decimal, 2 ms of every run's start-up

        over += f", median {_ms(statistics.median(spreads))}"
    return f"at most {_ms(max(spreads))} apart ({over})"


def first_failure(instances: Sequence[InstanceResult], first: int) -> str:
    """`instance 2 of 4 crashed first; instances 1-3 crashed, instance 0 passed`."""
    chosen = next(i for i in instances if i.instance == first)
    count = len(instances)
    outcome = chosen.ran
    did = _PAST.get(outcome.kind, "failed") if outcome is not None else "did not run"
    failed = [i for i in instances if i.failed]
    # Instances that all hung were each killed at their own deadline: which was killed
    # first says nothing of the program (`instance 2 of 3 hung first` read as if
    # instance 0 had run on after it), so none is said to be first.
    hung = all(i.ran is not None and i.ran.kind == "hang" for i in failed)
    text = f"instance {first} of {count} {did}" + ("" if failed and hung else " first")
    passed = [i.instance for i in instances if i.ran is not None and not i.failed]
    parts = []
    if len(failed) > 1:
        # Each kind by its own verb (`instance 1 crashed, instance 0 hung`), where failures
        # of two kinds read `instances 0, 1 failed`: which hung and which crashed, unsaid.
        by_kind: dict[str, list[int]] = {}
        for each in sorted(failed, key=lambda i: i.instance):
            if each.ran is not None:
                by_kind.setdefault(each.ran.kind, []).append(each.instance)
        parts += [
            f"{_numbers(alike)} {_PAST.get(kind, 'failed')}" for kind, alike in by_kind.items()
        ]
    # An instance that passed before the first failure ended may be its cause (a rank
    # that exits 0 under its peers, which then hang or fail on the lost connection): when
    # each ended is said, where a bare `instance 1 passed` read as an instance that ran
    # along with the others to their end.
    end = chosen.end_s
    early = [
        i
        for i in instances
        if i.ran is not None and not i.failed and i.end_s is not None
        if end is not None and i.end_s < end
    ]
    late = [n for n in passed if n not in {i.instance for i in early}]
    if late:
        parts.append(f"{_numbers(late)} passed")
    if early and end is not None:
        ended = ", ".join(_ended(i) for i in early)
        parts.append(
            f"{_numbers(i.instance for i in early)} passed but ended before instance {first} "
            f"({ended}; "
            f"instance {first} at {seconds(end)}, from the start barrier's release)"
        )
    return f"{text}; {', '.join(parts)}" if parts else text


def _ended(instance: InstanceResult) -> str:
    """`instance 1 exited with code 0 at 0.11s`: how and when a passed instance ended."""
    code = instance.ran.exit_code if instance.ran is not None else None
    how = f"exited with code {code}" if code is not None else "ended"
    return f"instance {instance.instance} {how} at {seconds(instance.end_s or 0.0)}"
