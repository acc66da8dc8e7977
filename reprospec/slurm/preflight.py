"""What the shards' runner makes of the spec's packages, found on the login node before submitting.

A shard on the local runner refuses every cell whose `environment.packages` its
interpreter does not satisfy (infra-error, never run); a shard on the venv runner
builds each cell's environment first. Either way the answer is known here, on the
login node, before N tasks queue for it: a spec none of whose cells could run is
refused (nothing submitted), a spec some of whose cells could not is said, cell by
cell, and submitted.

The venv runner's environments are built here, once, into one folder every node
sees (`SHARED/envs`, or `$REPROSPEC_ENVS`), whose path the array script exports:
a shard then finds each environment by its content hash (one `stat`) and builds
only one its node asks for differently (another interpreter path), under the same
per-environment lock. Compute nodes that cannot reach the package index never need to.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.runoptions import RunOptions
from reprospec.core.words import noun


@frozen
class Refused:
    """Cells that would be infra-error on the shards' runner, for one reason."""

    cells: tuple[str, ...]
    reason: str


@frozen
class Preflight:
    """What the runner makes of the planned cells' packages."""

    cells: int  # cells planned
    refused: tuple[Refused, ...] = ()

    @property
    def none_can_run(self) -> bool:
        return self.cells > 0 and sum(len(r.cells) for r in self.refused) >= self.cells


def _grouped(refusals: dict[str, str]) -> tuple[Refused, ...]:
    by_reason: dict[str, list[str]] = {}
    for cell, reason in refusals.items():
        by_reason.setdefault(reason, []).append(cell)
    return tuple(Refused(tuple(cells), reason) for reason, cells in by_reason.items())


def check_local(firsts: Sequence[AttemptPlan], options: RunOptions) -> Preflight:
    """The local runner's own package check (environment/packages.PackageCheck, what a shard
    asks before each cell's first attempt), run here with the shards' interpreter, on what
    the cell sees (os.environ + its `environment.env`, its workdir). `firsts`: attempt 1 of
    every cell (packages are the cell's, not the attempt's)."""
    from reprospec.environment.packages import PackageCheck
    from reprospec.runners.local import resolve_python

    python = resolve_python(options.python)
    check = PackageCheck()
    refusals: dict[str, str] = {}
    for plan in firsts:
        if not plan.environment.packages:
            continue
        env = {**os.environ, **plan.env}
        reason = check.reason(python, plan.environment.packages, env=env, cwd=plan.workdir)
        if reason:
            refusals[plan.cell.id or "the cell"] = reason
    return Preflight(len(firsts), _grouped(refusals))


def build_venvs(
    firsts: Sequence[AttemptPlan], options: RunOptions, envs: Path, spec_dir: Path
) -> Preflight:
    """Build (or find) every cell's environment into `envs`, as a shard's venv runner would;
    the cells whose environment cannot be built, with uv's reason, and where a build failed
    with output, the file under `envs` that keeps it whole (the console shows uv's lines
    only up to its `error:` line, and no attempt folder is there to keep the rest). InfraError
    only when uv itself is missing."""
    from reprospec.core.words import build_log_phrase
    from reprospec.runners.venv import VenvRunner

    # Its build lines go where the run's go (`options.say`: the Python API's), not to stderr.
    runner = VenvRunner(
        python=options.python,
        envs_dir=envs,
        find_links=options.find_links,
        spec_dir=spec_dir,
        say=options.say,
    )
    try:
        runner.prepare(firsts)
        refusals: dict[str, str] = {}
        for plan in firsts:
            reason = runner.build_error(plan)
            if not reason:
                continue
            log = runner.keep_build_log(plan)
            refusals[plan.cell.id or "the cell"] = (
                build_log_phrase(reason, log) if log is not None else reason
            )
    finally:
        runner.close()
    return Preflight(len(firsts), _grouped(refusals))


def describe(refused: Refused, shown: int = 3) -> str:
    """`cells a=1, a=2 and 3 more: REASON`, without a full stop of its own: the reasons are
    joined by `; ` and the refusal's hint follows `. ` (uv's own ends in one, and the
    refusal read "unsatisfiable.. Fix the packages")."""
    cells = list(refused.cells)
    more = f" and {len(cells) - shown} more" if len(cells) > shown else ""
    named = f"{noun(len(cells), 'cell')} " + ", ".join(cells[:shown]) + more
    return f"{named}: {refused.reason.rstrip().rstrip('.')}"
