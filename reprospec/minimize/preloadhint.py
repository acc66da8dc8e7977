"""Whether `minimize` should say that `--preload torch` would make its search cheaper.

A minimization is hundreds of small runs, and a small torch program spends most of each
attempt in `import torch`: a user's 28-line DataLoader script took 9 min 35 s for 200
attempts, where `run.preload` made the same spec's attempts about 3x cheaper. minimize
does not turn preload on by itself: a forked attempt differs from a fresh one in ways the
spec cannot show (docs/spec-format.md#preload-forked-attempts: one hash seed for every
fork, no interpreter teardown, import-time state shared), and a candidate that failed
only forked would be accepted as the bug. So it says so, with the option, where a fork
would serve the search: the spec has no `run.preload`, the runner forks (local, venv),
the program imports torch (a workload's harness does), and its failing cell's attempts
would be forked rather than run fresh (`process/preload.fresh_reason`).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from reprospec.core.inputs import AttemptPlan
from reprospec.core.runoptions import RunOptions
from reprospec.minimize.program import Program
from reprospec.plan.pyimports import parse_imports

HEAVY = "torch"  # the module preload was made for (docs/preload.md)
_FORKING_RUNNERS = ("local", "venv")


def preload_hint(
    attempt: AttemptPlan, program: Program, options: RunOptions, command_line: str, spec: str
) -> str | None:
    """The line minimize prints to suggest `--preload torch` (see above), or None."""
    if not _would_import(attempt, program, options) or _fork_refused(attempt, options):
        return None
    command = command_line or f"reprospec minimize {shlex.quote(spec)}"
    return (
        f"each attempt imports {HEAVY} afresh (the spec has no run.preload): "
        f"`{command} --preload {HEAVY}` forks them from one server that imported it once "
        "for the whole search, a few times cheaper for a small program; opt-in, since a forked "
        "attempt differs from a fresh one in what the spec cannot show "
        "(docs/spec-format.md#preload-forked-attempts)"
    )


def preload_note(attempt: AttemptPlan, program: Program, options: RunOptions, *, told: bool) -> str:
    """What the pace line (probes.py: the first attempts' seconds, what the budget takes)
    ends with: that the hint said before step 1 would make them cheaper (`told`), or why
    `--preload` cannot, where the program imports torch afresh in each attempt. A user's
    pytest command paid 8 s an attempt for 10 minutes and heard neither: `pytest` is not
    the run's Python interpreter, whose program a fork runs (`process/preload.entry_point`)."""
    if not _would_import(attempt, program, options):
        return ""
    if told:
        return (
            f"; `--preload {HEAVY}` (said above) forks them from one server that imported it once"
        )
    refused = _fork_refused(attempt, options)
    return f"; `--preload {HEAVY}` cannot fork them: {refused}" if refused else ""


def _would_import(attempt: AttemptPlan, program: Program, options: RunOptions) -> bool:
    """Whether each attempt imports torch afresh, in a runner that could fork it."""
    if attempt.preload or options.preload is not None or options.runner not in _FORKING_RUNNERS:
        return False
    return program.workload or any(_imports(text, HEAVY) for _, text in program.files)


def _fork_refused(attempt: AttemptPlan, options: RunOptions) -> str | None:
    """Why a forked attempt of this cell would run fresh after all, or None."""
    from reprospec.process.preload import entry_point, fresh_reason
    from reprospec.runners.local import resolve_python

    forked = replace(attempt, preload=(HEAVY,))
    return fresh_reason(forked, entry_point(forked, resolve_python(options.python)))


def _imports(text: str, module: str) -> bool:
    """Whether a Python source imports `module` or one of its submodules, anywhere in it
    (one not read as Python gets no hint: a fork's saving is not known to apply)."""
    read = parse_imports(text)
    return read is not None and module in read.top
