"""Spec + RunOptions -> RunPlan: the cells a run expands to and the attempts it will run.

Each attempt is planned by plan.py. `reprospec plan` shows attempt 1 of each cell
(plan.first_attempts) and imports neither this module nor options.py: their dataclasses
would cost it about 2 ms of a start-up held to 2x `python -c "import yaml"` (issue 15).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from reprospec.core.inputs import AttemptPlan, Cell, Expectation, Spec
from reprospec.core.runoptions import RunOptions
from reprospec.plan.attempt import OBSERVE, expectation_for, plan_attempt, run_policy


@dataclass(frozen=True)
class RunPlan:
    """A spec expanded into cells and the attempts this invocation will run (nothing ran)."""

    spec: Spec
    cells: tuple[Cell, ...]
    expectations: Mapping[str, Expectation]
    attempts: tuple[AttemptPlan, ...]
    repeat: int
    max_repeat: int
    adaptive: bool
    stop_on: str
    parallel: int
    # The options the attempts were planned with (extra attempts get them too).
    options: RunOptions = field(default_factory=RunOptions)

    def extra_attempt(self, cell: Cell, number: int) -> AttemptPlan:
        """Attempt `number` of `cell`, beyond the planned ones (`repeat: auto` adds them)."""
        attempt = plan_attempt(self.spec, cell, number, expectation=self.expectations.get(cell.id))
        return _with_options(attempt, self.options)

    def first_attempts(self) -> tuple[AttemptPlan, ...]:
        """Attempt 1 of every cell: what `reprospec plan` shows (plan.first_attempts)."""
        return tuple(a for a in self.attempts if a.attempt == 1)


def plan_run(spec: Spec, options: RunOptions) -> RunPlan:
    """Expand the matrix, apply -m filters, and plan attempt 1..repeat of every cell.

    `options.repeat`, `timeout_s` and `stop_on` replace the spec's `run` values for
    this run; they are applied here, after validation, never written back as YAML.
    """
    from reprospec.spec.matrix import expand, select

    cells = tuple(select(expand(spec), list(options.matrix_filters)))
    policy = run_policy(spec)
    if options.repeat is not None:
        policy = replace(policy, repeat=options.repeat)
    adaptive, max_repeat = policy.adaptive, policy.most_attempts
    # Adaptive repeats start with a handful of attempts and add more while the
    # Wilson interval still straddles the expected rate (Scheduler._maybe_extend).
    repeat = policy.first_attempts
    # One copy of the environment for every cell's `env.X`: os.environ decodes each
    # item on every read, and each cell and attempt builds its own context from it.
    base_env = dict(os.environ)
    if options.observe:
        expectations = {cell.id: OBSERVE for cell in cells}
    else:
        expectations = {cell.id: expectation_for(spec, cell, base_env=base_env) for cell in cells}
    # Round-robin over cells so the repeats of a flaky cell interleave with the others.
    attempts = tuple(
        _with_options(
            plan_attempt(spec, cell, number, base_env=base_env, expectation=expectations[cell.id]),
            options,
        )
        for number in range(1, repeat + 1)
        for cell in cells
    )
    if options.shard is not None:
        k, n = options.shard.index, options.shard.count
        attempts = tuple(a for i, a in enumerate(attempts) if i % n == k - 1)
        # A shard reports only the cells it ran; `reprospec merge` puts them together.
        in_shard = {attempt.cell.id for attempt in attempts}
        cells = tuple(cell for cell in cells if cell.id in in_shard)
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


def _with_options(attempt: AttemptPlan, options: RunOptions) -> AttemptPlan:
    if options.timeout_s is not None:
        attempt = replace(attempt, timeout_s=options.timeout_s)
    if options.preload is not None:
        attempt = replace(attempt, preload=options.preload)
    return attempt
