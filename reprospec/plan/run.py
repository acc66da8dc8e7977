"""Spec + RunOptions -> RunPlan: the cells a run expands to and the attempts it will run.

Each attempt is planned by plan.py, when it is asked for: `RunPlan.attempts` is a
`PlannedAttempts`, a sequence that plans attempt i from its index (round-robin over the
cells, then the shard's stride) and keeps none. Built all at once, the plans held about
1.5 KiB per cell before the first attempt started (docs/performance.md). The cells are made
as read too (spec.matrix.MatrixCells), and `RunPlan.expectations` holds each cell's
expectation as a 4-byte index into the few distinct ones (`CellExpectations`).

`reprospec plan` shows attempt 1 of each cell (plan.first_attempts) and imports neither
this module nor options.py: their dataclasses would cost it about 2 ms of a start-up held
to 2x `python -c "import yaml"` (issue 15).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Mapping, Sequence, ValuesView
from dataclasses import field, replace
from typing import TYPE_CHECKING

from reprospec.core.bounds import MAX_ATTEMPTS
from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan, Cell, Expectation, Spec
from reprospec.core.lazysequence import LazySequence
from reprospec.core.runoptions import RunOptions
from reprospec.core.words import plural
from reprospec.errors import UsageError
from reprospec.plan.attempt import OBSERVE, expectation_for, plan_attempt, run_policy

if TYPE_CHECKING:
    from reprospec.plan.variants import JobVariants

# Cells whose plan PlannedAttempts keeps for their next attempt (a spec without expressions).
KEPT_CELLS = 64


def _has_expression(value: object) -> bool:
    """Whether a `${{ }}` is anywhere in `value` (a document: its keys and its strings)."""
    if isinstance(value, str):
        return "${{" in value
    if isinstance(value, Mapping):
        return any(_has_expression(k) or _has_expression(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_expression(item) for item in value)
    return False


class CellExpectations(Mapping[str, Expectation]):
    """Each cell's `Expectation` by cell id, holding an index into the distinct ones per cell.

    A dict by id held every cell's id (about 120 bytes a cell with its slot, at 65,536
    cells); the engine asks by cell (`of`), through the cell's matrix index. Asked by id
    (the Python API's mapping), it makes that dict once, on the first such question.
    """

    def __init__(self, cells: Sequence[Cell], expected: Iterator[Expectation]) -> None:
        self._cells = cells
        # Equal expectations are one object: most cells of a large matrix expect the same.
        self._kinds: dict[Expectation, int] = {}
        # By matrix index: the cells are in matrix order, so the last has the largest.
        self._which = array("I", [_ABSENT]) * (cells[-1].index + 1 if cells else 0)
        for cell, expectation in zip(cells, expected, strict=True):
            self._which[cell.index] = self._kinds.setdefault(expectation, len(self._kinds))
        self._distinct = tuple(self._kinds)
        self._by_id: dict[str, Expectation] | None = None

    def of(self, cell: Cell) -> Expectation:
        """`cell`'s expectation (one of this plan's cells); KeyError for another cell."""
        which = self._which[cell.index] if cell.index < len(self._which) else _ABSENT
        if which == _ABSENT:
            raise KeyError(cell.id)
        return self._distinct[which]

    def __getitem__(self, key: str) -> Expectation:
        if self._by_id is None:
            self._by_id = {cell.id: self.of(cell) for cell in self._cells}
        return self._by_id[key]

    def __iter__(self) -> Iterator[str]:
        return (cell.id for cell in self._cells)

    def __len__(self) -> int:
        return len(self._cells)

    def values(self) -> ValuesView[Expectation]:
        return _Values(self)

    @property
    def distinct(self) -> tuple[Expectation, ...]:
        """Each different expectation once, in order of first use."""
        return self._distinct


# No expectation: a matrix index the plan's cells skip (`-m` left it out).
_ABSENT = 0xFFFFFFFF


class _Values(ValuesView[Expectation]):
    """The expectations in cell order, read by cell rather than by id."""

    _mapping: CellExpectations

    def __iter__(self) -> Iterator[Expectation]:
        expectations = self._mapping
        return (expectations.of(cell) for cell in expectations._cells)


class PlannedAttempts(LazySequence[AttemptPlan]):
    """The attempts of a run in the order they start, each planned when it is read.

    Global attempt g (from 0) is attempt g // cells + F of cell g % cells, F being
    `options.first_attempt` (1 but in a search's probe): attempt F of every cell, then
    attempt F + 1, ... (round-robin, so a flaky cell's repeats interleave with
    the others). Shard K of N holds the globals K-1, K-1+N, ...; index i of this sequence
    is the shard's i-th. Reading an attempt twice plans it twice, to equal plans.

    A spec without a `${{ }}` plans every attempt of a cell alike but for its number: the
    last cells' plans are kept (at most `KEPT_CELLS`) and each later attempt is a copy
    with its number. Planning evaluates and builds every section again (about a fifth of
    the engine's own CPU per attempt of `true`, docs/performance.md); the copy does not.
    """

    def __init__(
        self,
        spec: Spec,
        cells: Sequence[Cell],
        expectations: CellExpectations,
        repeat: int,
        options: RunOptions,
        base_env: Mapping[str, str],
    ) -> None:
        self._spec = spec
        self._cells = cells  # every cell of the matrix, the shard's and the others
        self._expectations = expectations
        self._options = options
        self._base_env = base_env
        self._total = repeat * len(cells)
        # A search's probe numbers its attempts after those the search already ran (1 else).
        self._number_of_first = options.first_attempt
        shard = options.shard
        self._first, self._stride = (shard.index - 1, shard.count) if shard else (0, 1)
        self._len = len(range(self._first, self._total, self._stride))
        # Only a constant document plans alike: an expression may read the attempt number.
        self._alike = not _has_expression(spec.document)
        self._kept: dict[str, AttemptPlan] = {}

    def __len__(self) -> int:
        return self._len

    def _item(self, index: int) -> AttemptPlan:
        return self._plan(self._first + index * self._stride)

    def __iter__(self) -> Iterator[AttemptPlan]:
        for g in range(self._first, self._total, self._stride):
            yield self._plan(g)

    def with_last(self) -> Iterator[tuple[AttemptPlan, bool]]:
        """Each attempt in order, and whether it is the last this sequence holds of its cell.

        The scheduler judges a cell once its last attempt is in, and so holds no cell's
        attempts longer (pipeline/scheduler.py): it asks this as it takes each attempt.
        """
        cells = len(self._cells)
        for g in range(self._first, self._total, self._stride):
            later = range(g + cells, self._total, cells)  # the cell's later attempts
            yield self._plan(g), not any((n - self._first) % self._stride == 0 for n in later)

    def __repr__(self) -> str:
        return f"PlannedAttempts({self._len} attempts)"

    def _plan(self, g: int) -> AttemptPlan:
        cell = self._cells[g % len(self._cells)]
        number = g // len(self._cells) + self._number_of_first
        if self._alike:
            kept = self._kept.get(cell.id)
            if kept is not None:
                return kept if kept.attempt == number else replace(kept, attempt=number)
        attempt = _with_options(
            plan_attempt(
                self._spec,
                cell,
                number,
                base_env=self._base_env,
                expectation=self._expectations.of(cell),
            ),
            self._options,
        )
        if self._alike:
            if len(self._kept) >= KEPT_CELLS:
                self._kept.clear()  # many cells, few repeats each: planning is the cost anyway
            self._kept[cell.id] = attempt
        return attempt

    @property
    def cells(self) -> Sequence[Cell]:
        """Every cell the attempts are planned over, in order: a shard's and the others."""
        return self._cells

    def numbers_of(self, position: int) -> Iterator[int]:
        """The attempt numbers this sequence holds of `cells[position]`, in order."""
        first = self._number_of_first
        for number in range(first, first + self._total // max(1, len(self._cells))):
            g = (number - first) * len(self._cells) + position
            if g % self._stride == self._first:
                yield number

    def firsts(self) -> tuple[AttemptPlan, ...]:
        """The first attempt of every cell this sequence holds, in order, planning no other:
        the globals below one round of the cells are the attempts numbered first (1 but in
        a search's probe)."""
        return tuple(self._plan(g) for g in range(self._first, len(self._cells), self._stride))

    def variants(self) -> JobVariants:
        """Attempt 1 of a cell per different job the cells can run, the few that name
        every file a cell's job names (plan/variants.py): what the program's files are
        read from, without planning every cell."""
        from reprospec.plan.variants import JobVariants, job_variants

        if not self._cells:
            return JobVariants((), 0)
        # Cell 0's as the run plans it: kept for its first attempt where the spec is alike.
        first = self.planned(0, self._number_of_first)

        def plan(cell: Cell) -> AttemptPlan:
            # Any cell of the matrix, or one of its values' combinations: what it would run.
            return plan_attempt(
                self._spec, cell, 1, base_env=self._base_env, expectation=first.expectation
            )

        return job_variants(self._spec, self._cells, plan, self._base_env, first=first)

    def planned(self, position: int, number: int) -> AttemptPlan:
        """Attempt `number` of `cells[position]`, planned (one of `numbers_of(position)`)."""
        return self._plan((number - self._number_of_first) * len(self._cells) + position)


@frozen
class RunPlan:
    """A spec expanded into cells and the attempts this invocation will run (nothing ran)."""

    spec: Spec
    # Made as read (spec.matrix.MatrixCells; a CellView of them for `-m` or a shard).
    cells: Sequence[Cell]
    expectations: CellExpectations
    # Planned as read: what a run holds is the plans in flight, not every attempt's.
    attempts: PlannedAttempts
    repeat: int
    max_repeat: int
    adaptive: bool
    stop_on: str
    parallel: int
    # The options the attempts were planned with (extra attempts get them too).
    options: RunOptions = field(default_factory=RunOptions)

    def extra_attempt(self, cell: Cell, number: int) -> AttemptPlan:
        """Attempt `number` of `cell`, beyond the planned ones (`repeat: auto` adds them)."""
        attempt = plan_attempt(self.spec, cell, number, expectation=self.expectation(cell))
        return _with_options(attempt, self.options)

    def expectation(self, cell: Cell) -> Expectation:
        """What `cell` (one of `cells`) is expected to do."""
        return self.expectations.of(cell)

    def first_attempts(self) -> tuple[AttemptPlan, ...]:
        """The first attempt of every cell (attempt 1 but in a search's probe): what
        `reprospec plan` shows (plan.first_attempts)."""
        return self.attempts.firsts()


def plan_run(spec: Spec, options: RunOptions) -> RunPlan:
    """Expand the matrix, apply -m filters, and plan attempt 1..repeat of every cell
    (`options.first_attempt`..: a search's probe numbers its attempts after the last's).

    `options.repeat`, `timeout_s` and `stop_on` replace the spec's `run` values for
    this run; they are applied here, after validation, never written back as YAML.
    """
    from reprospec.spec.matrix import CellView, expand, select

    cells = select(expand(spec), list(options.matrix_filters))
    policy = run_policy(spec)
    if options.repeat is not None:
        policy = replace(policy, repeat=options.repeat)
        # Validation bounded the spec's own repeat; `--repeat` replaces it after that, so
        # the run's size (docs/limits.md: attempts per run) is checked again here.
        if len(cells) * options.repeat > MAX_ATTEMPTS:
            raise UsageError(
                f"--repeat {options.repeat}: the run asks for {len(cells) * options.repeat} "
                f"attempts ({plural(len(cells), 'cell')} x {options.repeat}); at most "
                f"{MAX_ATTEMPTS} are allowed (docs/limits.md)"
            )
    adaptive, max_repeat = policy.adaptive, policy.most_attempts
    # Adaptive repeats start with a handful of attempts and add more while the
    # Wilson interval still straddles the expected rate (Scheduler._maybe_extend).
    repeat = policy.first_attempts
    # One copy of the environment for every cell's `env.X`: os.environ decodes each
    # item on every read, and each cell and attempt builds its own context from it.
    base_env = dict(os.environ)
    expectations = CellExpectations(
        cells,
        (
            OBSERVE if options.observe else expectation_for(spec, cell, base_env=base_env)
            for cell in cells
        ),
    )
    if options.shard is not None:
        refuse_adaptive_shards(f"--shard {options.shard}", adaptive, expectations)
    attempts = PlannedAttempts(spec, cells, expectations, repeat, options, base_env)
    if options.shard is not None:
        # A shard reports only the cells it ran; `reprospec merge` puts them together.
        cells = CellView(cells, (i for i in range(len(cells)) if next(attempts.numbers_of(i), 0)))
    parallel = options.jobs or policy.parallel
    return RunPlan(
        spec=spec,
        cells=cells,
        expectations=expectations,
        attempts=attempts,
        repeat=repeat,
        max_repeat=max_repeat,
        adaptive=adaptive,
        stop_on=options.stop_on or policy.stop_on,
        parallel=max(1, parallel),
        options=options,
    )


def refuse_adaptive_shards(what: str, adaptive: bool, expectations: CellExpectations) -> None:
    """A UsageError, `what` first, for shards of a `repeat: auto` run where a cell has an
    `expect.rate`: each shard would add attempts to the cells it judged undecided on its
    share of their attempts alone, numbered after its own: two shards' attempt 6 of a cell,
    which `merge` refuses, and up to `max_repeat` attempts per shard. `run --shard` and
    `slurm --shards` (whose every array task would be refused) say it by this one check."""
    if adaptive and any(e.rate for e in expectations.distinct):
        raise UsageError(
            f"{what}: `repeat: auto` adds attempts to a cell while its rate "
            "is undecided on all of its attempts, and a shard holds only some of them; "
            "shard a fixed number of attempts (--repeat N) or run without --shard"
        )


def _with_options(attempt: AttemptPlan, options: RunOptions) -> AttemptPlan:
    if options.timeout_s is not None:
        attempt = replace(attempt, timeout_s=options.timeout_s)
    if options.preload is not None:
        attempt = replace(attempt, preload=options.preload)
    return attempt
