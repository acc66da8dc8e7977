"""The "standalone repro" of a run: one cell reproduced without reprospec or the spec.

The cell is the first that failed (else the first that ran). A command cell is
its command line, with its variables and a `cd` into its workdir, and the files
of the workdir the command names (workfiles.py); a workload cell is a generated
repro.py (reproscript.py). Runner settings a plain command line does not apply
(`shm_size`, `memory`, an image, packages) are named in its notes, so nobody
mistakes a run without them for the same experiment.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.inputs import AttemptPlan
from reprospec.core.redact import MASK
from reprospec.core.results import CellResult, Standalone
from reprospec.core.sections import Command
from reprospec.core.units import format_size
from reprospec.core.words import attempts_phrase
from reprospec.plan.reproscript import Unsupported, generate, secret_name, shell_assignment
from reprospec.plan.run import RunPlan
from reprospec.plan.workfiles import named_files

REPRO_PY = "repro.py"


def choose_cell(cells: Sequence[CellResult]) -> CellResult | None:
    """The cell a standalone repro is for: the first that failed, else the first that ran."""
    ran = [c for c in cells if any(a.ran is not None for a in c.attempts)]
    failed = [c for c in ran if any(a.failed for a in c.attempts)]
    chosen = failed or ran
    return chosen[0] if chosen else None


def standalone_for(plan: RunPlan, cells: Sequence[CellResult]) -> Standalone | None:
    """The standalone repro of the run's chosen cell (None when no cell ran)."""
    cell = choose_cell(cells)
    if cell is None:
        return None
    attempt = next((a for a in plan.attempts if a.cell.id == cell.cell.id), None)
    if attempt is None:
        return None
    return standalone_of(attempt, plan.spec.base_dir, expected=attempts_phrase(cell.attempts),
                         spec_name=plan.spec.name)


def standalone_of(
    plan: AttemptPlan, spec_dir: Path, *, expected: str = "", spec_name: str = ""
) -> Standalone:
    """How to run `plan` without reprospec: its command line, or a generated repro.py."""
    workdir = _relative(plan.workdir, spec_dir)
    if isinstance(plan.job, Command):
        files = named_files(plan)
        words = [shell_assignment(k, v) for k, v in plan.env.items()]
        line = " ".join([*words, plan.job.text])
        if workdir != ".":
            line = f"cd {shlex.quote(workdir)} && {line}"
        return Standalone(
            cell=plan.cell.id,
            kind="command",
            run=line,
            env=_masked(plan.env),
            workdir=workdir,
            files=files,
            notes=tuple(_unapplied(plan)),
        )
    try:
        script = generate(plan, expected=expected, spec_name=spec_name)
    except Unsupported as exc:
        return Standalone(cell=plan.cell.id, kind="workload", unavailable=str(exc))
    prefix = " ".join(shell_assignment(k, v) for k, v in script.start_env.items())
    return Standalone(
        cell=plan.cell.id,
        kind="workload",
        run=f"{prefix + ' ' if prefix else ''}python {REPRO_PY}",
        env=_masked(plan.env),
        workdir=workdir,
        files=script.needs,
        script=script.text,
        notes=(*script.notes, *_unapplied(plan)),
    )


def _masked(env: Mapping[str, str]) -> dict[str, str]:
    return {k: MASK if secret_name(k) else v for k, v in env.items()}


def _relative(path: Path, base: Path) -> str:
    """`path` relative to the spec's folder (up to two levels up), else absolute."""
    try:
        relative = os.path.relpath(path.resolve(), base.resolve())
    except ValueError:
        return str(path.resolve())
    # `../app` reads as the spec wrote it; a path far outside is clearer absolute.
    ups = Path(relative).parts.count("..")
    return str(path.resolve()) if ups > 2 else relative


def _unapplied(plan: AttemptPlan) -> list[str]:
    """The runner settings of the cell that a plain command line does not apply."""
    environment = plan.environment
    notes = []
    if plan.copies > 1:
        notes.append(
            f"the run started {plan.copies} copies of this at the same moment "
            "(run.instances): start as many together, one alone may not fail"
        )
    settings = []
    if environment.image or environment.dockerfile:
        settings.append(f"the image {environment.image or environment.dockerfile}")
    if environment.shm_size:
        settings.append(f"/dev/shm of {format_size(environment.shm_size)}")
    if environment.memory:
        settings.append(f"a memory limit of {format_size(environment.memory)}")
    if environment.packages:
        settings.append(f"packages {', '.join(environment.packages)}")
    if environment.python:
        settings.append(f"Python {environment.python}")
    if settings:
        notes.append(f"the run gave the cell {', '.join(settings)}; a plain command line does not")
    return notes
