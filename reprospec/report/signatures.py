"""What happened, grouped: cells by outcome signature, and the toggle values that go with each.

For each signature (`crash:SIGSEGV:worker:validation`, `pass`, ...) the cells
where it happened are compared with the other cells that ran, both ways:
values present in every cell with the outcome and in no other one (single
values first, else pairs present together), and values present in no cell with
the outcome and in every other cell (what prevents it); where none do, at most
two patterns that hold exactly its cells (cellsets.py). Observe mode
(`run --observe`) reports this instead of verdicts; it is a pure function of
the `RunResult`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from itertools import combinations

from reprospec import native
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import AttemptResult, CellResult, Outcome, RunResult
from reprospec.core.words import child_named, outcome_phrase, plural
from reprospec.report.cellsets import patterns_line, separating_patterns
from reprospec.report.markup import show_value

Value = tuple[str, str]  # (axis, the value as JSON): hashable for any YAML value
# What attempts count together as one outcome: the signature, and the crashed child the
# outcome names (words.child_named) and the code a hang sat in, which it leaves out.
GroupKey = tuple[str, str]
MAX_PAIRS = 6


@frozen
class Explanation:
    """One or two toggle values, and which way they separate the outcome from the rest."""

    values: tuple[tuple[str, JsonValue], ...]
    present: bool  # True: in every cell with the outcome; False: in every other cell

    def text(self, code: bool = True) -> str:
        """Worded for one outcome signature against the other cells that ran.

        A value that prevents the outcome leads with where it is not: "in every other
        cell, in none with this outcome" read as the value being in every other cell of
        the outcome's.
        """
        if self.present:
            return self.worded("every cell with this outcome", "no other", code)
        return self.worded("no cell with this outcome", "every cell without it", code)

    def worded(self, first: str, then: str, code: bool = True) -> str:
        """`x=1: in FIRST, in THEN`; a pair says `together` on both sides."""
        names = [f"{axis}={show_value(value)}" for axis, value in self.values]
        shown = " and ".join(f"`{n}`" if code else n for n in names)
        if len(names) > 1:
            return f"{shown} together: in {first}, together in {then}"
        return f"{shown}: in {first}, in {then}"


@frozen
class OutcomeGroup:
    """The cells where one outcome signature happened, and what explains it."""

    signature: str
    phrase: str  # the outcome in words, as its first attempt reads
    cells: tuple[str, ...]
    attempts: int
    of_cells: int  # cells that ran at all
    explanations: tuple[Explanation, ...]
    # Where no value nor pair explains it: at most two patterns of values that hold exactly
    # its cells (cellsets.separating_patterns), as the judged report's fallback has them.
    patterns: tuple[str, ...] = ()
    # The run's cells, those that did not run too (an infra-error's): "in every cell" of a
    # run where one could not run read as the run's every cell. 0: as of_cells.
    all_cells: int = 0
    # The attempts that ran in a run of one cell (0 in a larger run): there each outcome
    # is a share of its attempts, and "in every cell" of each of two outcomes of the one
    # cell read as if every cell had had both.
    of_attempts: int = 0
    # That cell's attempts, those that did not run too (a NotRun's): "in every attempt
    # (5 attempts)" of a cell with a sixth that could not run read as all six. 0: as
    # of_attempts.
    all_attempts: int = 0

    @property
    def failure(self) -> bool:
        return self.signature != "pass"

    def headline(self, code: bool = True) -> str:
        phrase = f"`{self.phrase}`" if code else self.phrase
        if self.of_attempts and self.of_cells == 1 and self.all_cells <= 1:
            if self.all_attempts > self.of_attempts:
                if self.attempts == self.of_attempts == 1:
                    return f"{phrase} in the one attempt that ran, of {self.all_attempts}"
                if self.attempts == self.of_attempts:
                    return (
                        f"{phrase} in every attempt that ran, "
                        f"{self.of_attempts} of {self.all_attempts}"
                    )
                return (
                    f"{phrase} in {self.attempts} of the {self.of_attempts} attempts that ran, "
                    f"of {self.all_attempts}"
                )
            if self.of_attempts == 1:
                return f"{phrase} in its one attempt"  # "in every attempt (1 attempt)"
            if self.attempts == self.of_attempts:
                return f"{phrase} in every attempt ({plural(self.attempts, 'attempt')})"
            return f"{phrase} in {self.attempts} of {plural(self.of_attempts, 'attempt')}"
        if self.all_cells <= self.of_cells:
            where = (
                "in every cell"
                if len(self.cells) == self.of_cells
                else f"in {len(self.cells)} of {plural(self.of_cells, 'cell')}"
            )
        elif len(self.cells) == self.of_cells:
            where = f"in every cell that ran, {self.of_cells} of {self.all_cells}"
        else:
            where = (
                f"in {len(self.cells)} of the {self.of_cells} cells that ran, of {self.all_cells}"
            )
        return f"{phrase} {where} ({plural(self.attempts, 'attempt')})"

    def lines(self, code: bool = True) -> list[str]:
        """What explains it, one statement a line: its values, else its patterns."""
        if self.patterns:
            return [
                patterns_line(self.patterns, "every cell with this outcome", "no other cell", code)
            ]
        return [e.text(code) for e in self.explanations]


def outcome_groups(run: RunResult) -> list[OutcomeGroup]:
    """The run's outcome signatures, failures first (most cells first), `pass` last."""
    ran = [c for c in run.cells if _outcomes(c)]
    signature_of = signatures_of(ran)
    found: dict[GroupKey, tuple[list[Outcome], list[CellResult], int]] = {}
    for cell in ran:
        for attempt in cell.attempts:
            outcome = attempt.ran
            if outcome is None:
                continue
            key = group_key(signature_of(attempt), outcome)
            first: tuple[list[Outcome], list[CellResult], int] = ([], [], 0)
            outcomes, cells, count = found.get(key, first)
            outcomes.append(outcome)
            if cell not in cells:
                cells.append(cell)
            found[key] = (outcomes, cells, count + 1)
    told = told_apart({key: shared_phrase(outcomes) for key, (outcomes, _, _) in found.items()})
    groups = [
        _group(key[0], told[key], cells, count, ran, len(run.cells))
        for key, (_, cells, count) in found.items()
    ]
    return sorted(groups, key=lambda g: (not g.failure, -len(g.cells)))


def group_key(signature: str, outcome: Outcome) -> GroupKey:
    """What an attempt counts under: its signature and the crashed child it names.

    Two cells whose attempts crashed in different children (`python3 a_child.py`,
    `python3 b_child.py`) have one signature, `crash:SIGSEGV:child:...`; keyed on it
    alone they were one group, worded by its first attempt's phrase, which named the first
    child for both. The child is named as the phrase names it (without a pid, its command
    line shortened), so a group is exactly the attempts it names.

    Hangs alike: `hang` in `work` of hangkid.py and `hang` in `<module>` of hang.py were one
    group, worded by the first's place. Keyed on the function and file, not the line, so a
    busy loop caught at two of its lines stays one hang. Not on a C program's native place
    (`hung_native`), one live sample's innermost frame: busy.c caught in alpha() and in
    beta() was two failures (`Expected as well: hang in alpha@busy`) where the judge,
    compare, amplify and minimize count one (`hang`)."""
    hung = outcome.hung_in if outcome.kind == "hang" else None
    place = f" in {hung.function} ({hung.path})" if hung is not None else ""
    return (signature, child_named(outcome) + place)


def shared_phrase(outcomes: Sequence[Outcome]) -> str:
    """The words of a group's outcomes (the first's), its step left out where they differ.

    A signature leaves the step out (`error:ValueError:train`), so a cell that raised at
    train:3 and one at train:2 are one group; worded by its first attempt, the headline
    read `error exit 1 ValueError @ train:3 in 2 of 3 cells`, a step one of them never
    reached. The phase, which the signature keeps, stays: `... @ train in 2 of 3 cells`.
    """
    first = outcome_phrase(outcomes[0], pid=False)
    if all(outcome_phrase(o, pid=False) == first for o in outcomes[1:]):
        return first
    stepless = {outcome_phrase(replace(o, step=None, stage=None), pid=False) for o in outcomes}
    if len(stepless) == 1:
        return stepless.pop()
    # C hangs caught in different frames are one group (`group_key`): not the first's words.
    bare = {
        outcome_phrase(replace(o, step=None, stage=None, hung_native=None), pid=False)
        for o in outcomes
    }
    return bare.pop() if len(bare) == 1 else first


def told_apart(phrases: dict[GroupKey, str]) -> dict[GroupKey, str]:
    """Each group's phrase, those two signatures share made apart by what differs: the
    native frame the crash was in (`crash SIGSEGV at strlen@libc`), else the signature
    itself. A headline read `crash SIGSEGV in 1, crash SIGSEGV in 1` where the two cells'
    crashes were in different frames, which nothing on the page named."""
    shared = Counter(phrases.values())
    out = {}
    for key, phrase in phrases.items():
        if shared[phrase] < 2:
            out[key] = phrase
            continue
        # crash:SIGSEGV:main:strlen@libc: the fourth field is the frame a native stack gave.
        signature = key[0]
        parts = signature.split(":", 3)
        frame = parts[3] if len(parts) == 4 and parts[0] == "crash" else ""
        out[key] = f"{phrase} at {frame}" if frame else f"{phrase} [{signature}]"
    return out


def _group(
    signature: str,
    phrase: str,
    cells: list[CellResult],
    count: int,
    ran: list[CellResult],
    all_cells: int = 0,
) -> OutcomeGroup:
    """One outcome's group: its values, else the patterns that hold its cells and no other.

    `--observe` gave no explanation of a crash of `a=1 and (b=1 or c=1)`, which the judged
    report explained by two patterns.
    """
    others = [c for c in ran if c not in cells]
    explanations = tuple(explain(cells, others))
    return OutcomeGroup(
        signature=signature,
        phrase=phrase,
        cells=tuple(c.cell.id for c in cells),
        attempts=count,
        of_cells=len(ran),
        explanations=explanations,
        patterns=() if explanations else tuple(separating_patterns(cells, others, ran)),
        all_cells=all_cells,
        of_attempts=sum(1 for a in ran[0].attempts if a.ran is not None) if len(ran) == 1 else 0,
        all_attempts=len(ran[0].attempts) if len(ran) == 1 else 0,
    )


def signatures_of(cells: Sequence[CellResult]) -> Callable[[AttemptResult], str]:
    """Each attempt's signature as the run's report counts it (an attempt that did not run: "").

    A crash whose native stacks were not read (its core replaced by a parallel crash in
    the same folder), or whose native frame has a part with no name (`??@python3.11`: a
    Python without symbols; `strlen@libc<-??@libfoo`: a stripped library), counts under
    the one signature named elsewhere in the run that it agrees with (an unread one, where
    none is named, under the one unnamed signature it agrees with), so one failure is not
    reported as two; an ambiguous one keeps its own.
    """
    named = _named_signatures(cells)

    def signature_of(attempt: AttemptResult) -> str:
        if attempt.ran is None:
            return ""
        ours = attempt.ran.signature
        return named.get(ours, ours) if _unknown(attempt) else ours

    return signature_of


def _named_signatures(cells: Sequence[CellResult]) -> dict[str, str]:
    """The signatures of crashes without native stacks or with an unnamed native frame,
    each to the one named signature it agrees with, else to the one unnamed signature it
    agrees with (none when ambiguous).

    An unnamed frame's signature is a candidate too: a docker run of an image's Python
    without symbols gives `crash:SIGSEGV:main:??@python3.11` where a core was read and
    `crash:SIGSEGV:main` where a parallel crash replaced it, one failure.
    """
    read: set[str] = set()
    unknown: set[str] = set()
    for cell in cells:
        for attempt in cell.attempts:
            if attempt.ran is not None:
                signature = attempt.ran.signature
                if not native.read_none(attempt.native):
                    read.add(signature)
                if _unknown(attempt):
                    unknown.add(signature)
    named: dict[str, str] = {}
    for ours in unknown:
        agreeing = [
            s for s in read if native.agrees(ours, s, native_unknown=True, across_builds=True)
        ]
        known = [s for s in agreeing if not native.unnamed_frame(s)]
        # Not an unnamed one to another (`??@python3.11` and `??@libpython3.11` would each
        # take the other's). An unread one agrees with every site of its signal and process:
        # an unnamed candidate is the named one it agrees with where that is one alone, else
        # another crash site (`??@libcudnn` beside `foo@libtorch_cpu`: which was it is
        # unknown); nor any to itself.
        candidates = known if native.unnamed_frame(ours) else [_site(s, known) for s in agreeing]
        choice = sorted(set(candidates))
        if len(choice) == 1 and choice[0] != ours:
            named[ours] = choice[0]
    return named


def _site(signature: str, known: Sequence[str]) -> str:
    """An agreeing signature as a crash site: an unnamed frame's, the one named signature
    it agrees with where there is one alone; any other, itself."""
    if not native.unnamed_frame(signature):
        return signature
    named = [k for k in known if native.unnamed_agrees(signature, k, across_builds=True)]
    return named[0] if len(named) == 1 else signature


def _unknown(attempt: AttemptResult) -> bool:
    """Whether an attempt's native frame is unknown: its stacks not read, or unnamed."""
    ran = attempt.ran
    return native.read_none(attempt.native) or (
        ran is not None and native.unnamed_frame(ran.signature)
    )


def _outcomes(cell: CellResult) -> list[Outcome]:
    return [a.ran for a in cell.attempts if a.ran is not None]


def _values(cell: CellResult) -> set[Value]:
    return {(axis, _key(value)) for axis, value in cell.cell.matrix.items()}


def _key(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def explain(inside: Sequence[CellResult], outside: Sequence[CellResult]) -> list[Explanation]:
    """What separates `inside` from `outside`, both ways: single values, else pairs."""
    if not inside or not outside:
        return []  # everywhere or nowhere: nothing separates it
    values = {
        (axis, _key(value)): value
        for c in (*inside, *outside)
        for axis, value in c.cell.matrix.items()
    }
    # A pair reads in the matrix's axis order (`workers=2 and pin=true`), as the spec has it.
    order = {
        axis: i for i, axis in enumerate(dict.fromkeys(a for c in inside for a in c.cell.matrix))
    }
    out = [
        Explanation(
            tuple(
                (axis, values[(axis, key)])
                for axis, key in sorted(group, key=lambda v: order.get(v[0], len(order)))
            ),
            present,
        )
        for present, groups in (
            (True, _separating([_values(c) for c in inside], [_values(c) for c in outside])),
            (False, _separating([_values(c) for c in outside], [_values(c) for c in inside])),
        )
        for group in groups
    ]
    return out


def _separating(
    these: Sequence[set[Value]], those: Sequence[set[Value]]
) -> list[tuple[Value, ...]]:
    """Values in every one of `these` and in none of `those`; else pairs that are together."""
    common = sorted(set.intersection(*these)) if these else []
    singles: list[tuple[Value, ...]] = [(v,) for v in common if not any(v in t for t in those)]
    if singles:
        return singles
    pairs: list[tuple[Value, ...]] = [
        (a, b)
        for a, b in combinations(common, 2)
        if a[0] != b[0] and not any(a in t and b in t for t in those)
    ]
    return pairs[:MAX_PAIRS]


def outcome_lines(groups: Iterable[OutcomeGroup], code: bool = False) -> list[str]:
    """The groups as indented text lines, for the console."""
    lines: list[str] = []
    for group in groups:
        lines.append(group.headline(code))
        lines += [f"  {line}" for line in group.lines(code)]
    return lines


__all__ = [
    "Explanation",
    "GroupKey",
    "OutcomeGroup",
    "explain",
    "group_key",
    "outcome_groups",
    "outcome_lines",
]
