"""A run's cells judged as each ends, and held as a few bytes a cell once spooled.

The scheduler hands each cell over the moment its last attempt ends (`JudgedCells.add`);
it is judged there, so a finished cell's attempts are not also held by the scheduler until
the run is over. With a spool (store/cellspool.py), the cell's results.json entry is
written there whole, and the run keeps of it only an index, 4 bytes, into the distinct
light results (`_Body`: what the report and the console read of a cell besides the cell
itself), which alike cells share; `JudgedRun` makes each `CellResult`, with its `Cell`,
when it is read, as `spec.matrix.MatrixCells` makes the cells (docs/performance.md,
"Memory and the run folder as the matrix grows": at 65,536 cells of `true` a held
`CellResult` with its `Cell` was about 550 bytes a cell, most of the engine's growth).
"""

from __future__ import annotations

import contextlib
import operator
import threading
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from typing import cast

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonValue
from reprospec.core.redact import Redactor, looks_secret
from reprospec.core.results import (
    AlikeCells,
    AttemptResult,
    CellResult,
    Outcome,
    Rate,
    VerdictKind,
)
from reprospec.outcome.judge import CellJudge
from reprospec.plan.run import RunPlan
from reprospec.spec.matrix import position_of

# Where a finished cell goes once judged: its position among the plan's cells and the
# cell whole, redacted; True when it was kept there (results.json takes it back).
Spool = Callable[[int, CellResult], bool]

# A judged cell but its `Cell`: expected, verdict, reason, rate, attempts, command and
# environment, each already one object among alike cells (CellJudge, JudgedCells._light).
_Body = tuple[
    Expectation,
    VerdictKind,
    str,
    Rate,
    tuple[AttemptResult, ...],
    str,
    Mapping[str, JsonValue],
]

# `JudgedCells._which` of a cell held whole (or not judged yet): no body.
_WHOLE = 0

# Matrix values the redactor passes as they are when it has no secret value to mask.
_SCALARS = frozenset({str, int, float, bool, type(None)})


# Every field of an attempt that passed and of its outcome but those `JudgedCells._light`
# sets: what its light attempt is made of.
_KEPT_OF_ATTEMPT = operator.attrgetter(
    *(
        f.name
        for f in fields(AttemptResult)
        if f.name not in ("started", "finished", "logs", "duration_s", "outcome")
    )
)
_KEPT_OF_OUTCOME = operator.attrgetter(
    *(f.name for f in fields(Outcome) if f.name not in ("duration_s", "pid"))
)


class JudgedCells:
    """A run's cells, each judged as its last attempt ends (`add`: the scheduler's `on_cell`
    in pipeline/stages.py), then the rest at the end (`all`).

    The scheduler gives a complete cell's attempts away and forgets them, so a finished
    cell's attempts are held once, and the end judges only what is left (an interrupted
    run's cells, a resumed run's already complete ones).

    With a `spool`, a finished cell is written there whole (its results.json entry) and
    held as an index into the distinct light results (`for_report`'s, without the cell),
    4 bytes a cell: its attempts' timestamps, log folders and durations, then its
    `CellResult` and `Cell`, were most of the engine's memory at 65,536 cells of `true`.
    A cell the spool could not take (a full disk) is held whole. Every cell is masked by
    `redactor` before it is spooled or held: the run's end walks `RunResult` for secrets,
    and that walk passes a `JudgedRun` through as it is.
    """

    def __init__(
        self, plan: RunPlan, spool: Spool | None = None, redactor: Redactor | None = None
    ) -> None:
        self.plan = plan
        self.judge = CellJudge(plan)
        self.spool = spool
        self.redactor = redactor if redactor is not None else Redactor()
        # Cells held whole, by position (not spooled, or judged at the end), masked.
        self.cells: dict[int, CellResult] = {}
        self.left: dict[str, list[AttemptResult]] = {}
        # By position: 1 + the index of its body in `_bodies`, or _WHOLE.
        self._which = array("I", [_WHOLE]) * len(plan.cells)
        self._bodies: list[_Body] = []
        # The bodies by the ids of their parts, unmasked; `_sources` keeps those parts
        # alive, so that no id is reused while the run goes.
        self._body_of: dict[tuple[int, ...], int] = {}
        self._sources: list[_Body] = []
        self._attempts: dict[AttemptResult, AttemptResult] = {}
        # The light attempts by what they are made of (`_light`).
        self._light_by_key: dict[tuple[object, ...], AttemptResult] = {}
        self._tuples: dict[tuple[AttemptResult, ...], tuple[AttemptResult, ...]] = {}
        # The scheduler's threads judge cells side by side.
        self._lock = threading.Lock()

    def add(self, cell: Cell, attempts: tuple[AttemptResult, ...]) -> None:
        try:
            judged = self.judge.judge(cell, attempts)
            position = position_of(self.plan.cells, cell)
            if position is None:  # (not one of the plan's cells: nothing shows it)
                return
            masked = self.redactor.value(judged)
            if self.spool is not None and self.spool(position, masked):
                self._which[position] = self._body(self.for_report(judged))
            else:
                self.cells[position] = masked
        except Exception:
            # A bug in the judge: the end judges the cell again in the calling thread, where
            # it is raised as before, not lost with a worker thread.
            self.left[cell.id] = list(attempts)

    def _body(self, light: CellResult) -> int:
        """1 + the index of `light`'s body (without its cell), masked once per body."""
        source: _Body = (
            light.expected,
            light.verdict,
            light.reason,
            light.rate,
            light.attempts,
            light.command,
            light.environment,
        )
        key = tuple(map(id, source))
        with self._lock:
            found = self._body_of.get(key)
            if found is None:
                found = self._body_of[key] = len(self._bodies) + 1
                self._sources.append(source)
                self._bodies.append(self._masked(source))
        return found

    def _masked(self, body: _Body) -> _Body:
        """`body` masked, each part that has nothing to mask kept as it is: a mapping the
        walk rebuilds equal would no longer be the one object alike cells share."""
        parts = []
        for part in body:
            masked = self.redactor.value(part)
            parts.append(part if masked == part else masked)
        return cast("_Body", tuple(parts))

    def for_report(self, cell: CellResult) -> CellResult:
        """`cell` as the report and the console read it, alike attempts of alike cells one
        object: an attempt that passed without its timestamps, its log folder (a passing
        attempt's logs are never linked), its outcome's duration and a pid no phrase shows,
        and its duration to the hundredth the report shows (tables.durations). Any other
        attempt is kept whole (the failure and stack sections read it)."""
        attempts = tuple(self._light(a) for a in cell.attempts)
        with contextlib.suppress(TypeError):  # an unhashable part (none today): as it is
            attempts = self._tuples.setdefault(attempts, attempts)
        return replace(cell, attempts=attempts)

    def _light(self, attempt: AttemptResult) -> AttemptResult:
        outcome = attempt.outcome
        if not isinstance(outcome, Outcome) or outcome.kind != "pass" or attempt.instances:
            return attempt
        # What the light attempt is made of, read in C: an alike pass's light attempt is
        # found by it without the two `replace` calls that make one (about 8 us a pass, at
        # the end of each cell). The fields `replace` sets are left out of the reads.
        pid = outcome.pid if outcome.where == "child" else None
        try:
            key = (
                _KEPT_OF_ATTEMPT(attempt),
                round(attempt.duration_s, 2),
                _KEPT_OF_OUTCOME(outcome),
                pid,
            )
            found = self._light_by_key.get(key)
        except TypeError:  # an unhashable part (none today): made as below
            key, found = None, None
        if found is not None:
            return found
        light = replace(
            attempt,
            started="",
            finished="",
            logs="",
            duration_s=round(attempt.duration_s, 2),
            outcome=replace(outcome, duration_s=0.0, pid=pid),
        )
        try:
            light = self._attempts.setdefault(light, light)
        except TypeError:
            return light
        if key is not None:
            self._light_by_key[key] = light
        return light

    def all(
        self, unfinished: Mapping[str, Sequence[AttemptResult]], *, interrupted: bool
    ) -> JudgedRun:
        """Every cell of the plan, in its order: judged as it ended, or now from `unfinished`
        (masked, and held whole)."""
        unfinished = {**unfinished, **self.left}
        which, held = self._which, self.cells
        for position, cell in enumerate(self.plan.cells):
            if which[position] == _WHOLE and position not in held:
                judged = self.judge.judge(
                    cell, unfinished.get(cell.id, ()), interrupted=interrupted
                )
                held[position] = self.redactor.value(judged)
        return JudgedRun(self.plan.cells, which, tuple(self._bodies), held, self.redactor)


class JudgedRun(AlikeCells):
    """A run's judged cells, in plan order: cell i made when it is read, from the plan's
    cell i (masked) and its shared body, or the cell held whole.

    `RunResult.cells` of a run executed with `whole=False` (pipeline/stages.py). Reading
    it twice makes each cell twice, to equal cells (about 10 us a cell); `alike` reads
    the cells that share a body once per body, for the report's passes that count what
    alike cells share.
    """

    def __init__(
        self,
        cells: Sequence[Cell],
        which: array[int],
        bodies: tuple[_Body, ...],
        held: Mapping[int, CellResult],
        redactor: Redactor,
    ) -> None:
        self._cells = cells
        self._which = which
        self._bodies = bodies
        self._held = held
        self._redactor = redactor
        # Per body: (the first position that has it, how many cells have it); made on the
        # first `alike`.
        self._shared: dict[int, list[int]] | None = None
        # Whether any of these matrix keys looks secret (`_masked`).
        self._secret_keys: dict[tuple[str, ...], bool] = {}

    def alike(self) -> Iterator[tuple[CellResult, int]]:
        if self._shared is None:
            shared: dict[int, list[int]] = {}
            for position, which in enumerate(self._which):
                if which != _WHOLE:
                    if which in shared:
                        shared[which][1] += 1
                    else:
                        shared[which] = [position, 1]
            self._shared = shared
        for which, (first, count) in self._shared.items():
            yield self._made(self._cells[first], self._bodies[which - 1]), count
        for cell in self._held.values():
            yield cell, 1

    def __len__(self) -> int:
        return len(self._cells)

    def _item(self, index: int) -> CellResult:
        which = self._which[index]
        if which == _WHOLE:
            return self._held[index]
        return self._made(self._cells[index], self._bodies[which - 1])

    def _made(self, cell: Cell, body: _Body) -> CellResult:
        return CellResult(self._masked(cell), *body)

    def _masked(self, cell: Cell) -> Cell:
        """`cell` as `Redactor.value` masks it, without its walk where nothing in it can be
        masked (no secret values, no secret-looking key, no value that holds keys): most
        runs, read pass after pass."""
        if self._redactor.values:
            return self._redactor.value(cell)
        keys = tuple(cell.matrix)
        secret = self._secret_keys.get(keys)
        if secret is None:
            secret = self._secret_keys[keys] = any(looks_secret(key) for key in keys)
        if secret or any(type(value) not in _SCALARS for value in cell.matrix.values()):
            return self._redactor.value(cell)
        return cell

    def __iter__(self) -> Iterator[CellResult]:
        # The plan's cells in order (made one after another, cheaper than one by one).
        which, bodies, held = self._which, self._bodies, self._held
        for index, cell in enumerate(self._cells):
            kind = which[index]
            yield held[index] if kind == _WHOLE else self._made(cell, bodies[kind - 1])

    def __repr__(self) -> str:
        return f"JudgedRun({len(self)} cells, {len(self._bodies)} alike results)"


__all__ = ["JudgedCells", "JudgedRun", "Spool"]
