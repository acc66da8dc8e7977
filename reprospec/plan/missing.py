"""The script a cell's command runs, where its workdir lacks it.

`python nothere.py` validated clean and every attempt of the run ended `infra-error`
(`can't open file 'nothere.py'`): `validate` says so first, as a note, since a script
the spec's own setup writes (a `sh -c 'make && ./build/app'`) may come later. Only the
program's own file is looked for (the script `python`, a shell or the command itself
runs), not every word that might be a file: a word such as `--out result.json` names a
file the program may write.
"""

from __future__ import annotations

from pathlib import Path

from reprospec.core.inputs import AttemptPlan, Spec
from reprospec.core.pythonargs import is_python, python_program
from reprospec.core.sections import Command
from reprospec.plan.shellwords import command_words, script_operand
from reprospec.plan.wrappers import program_words

# The largest matrix whose scripts `validate` looks up (planning 32,000 cells took 1.2 s).
MAX_CELLS = 4096


def missing_script(plan: AttemptPlan) -> str | None:
    """The script `plan`'s command runs (`train.py` of `python -u train.py`, `run.sh` of
    `bash run.sh`, `./run.sh`) where no such file is in its workdir; None when it is there,
    or the command runs no script file (`python -c`, `python -m pkg`, a program on PATH)."""
    if not isinstance(plan.job, Command):
        return None
    # The program past `VAR=value`, `env` and wrappers (`timeout 60 python3 nothere.py`).
    words = program_words(command_words(plan.job))
    if not words:
        return None
    script = _script_of(words)
    if script is None or any(mark in script for mark in "$*~?["):
        return None  # the shell expands it: nothing to look up here
    if Path(script).is_absolute() or plan.environment.image or plan.environment.dockerfile:
        return None  # not the workdir's: this machine's, or the image's
    return None if (plan.workdir / script).exists() else script


def _script_of(words: list[str]) -> str | None:
    program = words[0]
    if is_python(program):
        found = python_program(words[1:])
        return found.target if found.kind == "script" else None
    shell = script_operand(words)
    if shell is not None:
        return shell
    # `./run.sh`, `tools/run.sh`: the command itself is a file of the workdir.
    return program if "/" in program and not Path(program).is_absolute() else None


def missing_script_notes(file: str, spec: Spec) -> list[str]:
    """`validate`'s note on each script a cell's command runs that its workdir lacks, read
    from the jobs the cells can run (plan/variants.py): every attempt of such a cell would
    end infra-error."""
    from reprospec.core.expr import ExprError, names_used
    from reprospec.core.runoptions import RunOptions
    from reprospec.errors import FatalError
    from reprospec.plan.run import plan_run
    from reprospec.spec.matrix import MatrixError, count_cells
    from reprospec.spec.yamlsource import locate

    try:
        read = names_used([spec.document.get("command"), spec.document.get("environment")])
    except ExprError:
        return []  # validation said so
    if any(name.split(".")[0] in ("env", "secrets") for name in read):
        # What the run's environment gives (`python ${{ env.SCRIPT_DIR }}/train.py`) is
        # not validate's to know: unset here, it read `/train.py`.
        return []
    matrix = spec.document.get("matrix")
    try:
        cells = count_cells(matrix if isinstance(matrix, dict) else None)
    except MatrixError:
        return []  # validation said so
    if cells >= MAX_CELLS:
        return []  # planned whole, a large matrix doubled validate's time (review)
    try:
        jobs = plan_run(spec, RunOptions()).attempts.variants().attempts
    except FatalError:
        return []  # validation said what is wrong, or the plan needs what a run gives
    missing = dict.fromkeys(
        (script, str(attempt.workdir))
        for attempt in jobs
        if (script := missing_script(attempt)) is not None
    )
    line, column = locate(spec.locations, ("command",))
    return [
        f"{file}:{line}:{column}: the command runs {script}, which is not in its workdir "
        f"({workdir}): its attempts would end infra-error unless something writes it first"
        for script, workdir in missing
    ]
