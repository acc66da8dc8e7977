"""Setup failures of a command: the program never started, so its exit says nothing about the bug.

A command spec that cannot start what it names must not read as a
non-reproduction ("expected crash, got error exit 127"): the cell is
`infra-error` with the reason, as a workload's missing torch already is. Each
rule needs the shell's or Python's own words on stderr, and an attempt that
reported no progress yet (no event with a phase or step):

    127  `sh: 1: trainer: not found`, `bash: line 1: trainer: command not found`
    126  `sh: 1: ./run.sh: Permission denied`, `cannot execute binary file`
    2    `python: can't open file '/w/train.py': [Errno 2] No such file or directory`
    any  `ModuleNotFoundError` when `python` in the command ran an interpreter
         the person did not choose (`Execution.unchosen_python`: reprospec's own,
         as pipx or `uv tool` installs it): `--python` names theirs

A `ModuleNotFoundError` of a package `environment.packages` declares is no setup
failure: every runner checked those packages where the attempt runs before it
started (environment/packages.py), so the module is one the installed version
lacks (`packaging.__about__` gone in 23.0, `import attrs` before attrs 21.3), which
is the very failure a version bisect looks for. Read as "not installed", such a
cell was infra-error and bisect refused its bad end.
"""

from __future__ import annotations

import re

from reprospec.core.lazyre import Lazy
from reprospec.core.results import Execution, NotRun
from reprospec.outcome.evidence import Evidence

_NOT_FOUND = Lazy(r"^(?:[^\n]*?: )?(?P<cmd>[^\s:][^:\n]*): (?:command )?not found\s*$", re.M)
_NOT_EXECUTABLE = Lazy(
    r"^(?:[^\n]*?: )?(?P<cmd>[^\s:][^:\n]*): (?P<why>Permission denied|cannot execute[^\n]*)\s*$",
    re.M,
)
# Python quotes the name as repr() does: in double quotes where it holds a single quote.
_CANT_OPEN = Lazy(
    r"^(?P<exe>\S+): can't open file (?P<file>'[^'\n]*'|\"[^\"\n]*\"|\S+): "
    r"\[Errno \d+\] (?P<why>[^\n]+)$",
    re.M,
)


def setup_failure(execution: Execution, evidence: Evidence) -> NotRun | None:
    """Why the command never got to run, when stderr says so before any progress; else None."""
    if execution.timed_out or execution.returncode in (None, 0):
        return None
    events = evidence.events
    if events.phase is not None or events.step is not None:
        return None  # it made progress: whatever ended it is the program's doing
    stderr = evidence.stderr
    code = execution.returncode
    if code == 127 and (found := _NOT_FOUND.search(stderr)) is not None:
        return NotRun(f"command not found: {found['cmd'].strip()} (exit 127)")
    if code == 126 and (found := _NOT_EXECUTABLE.search(stderr)) is not None:
        return NotRun(f"not executable: {found['cmd'].strip()}: {found['why'].strip()} (exit 126)")
    if code == 2 and (found := _CANT_OPEN.search(stderr)) is not None:
        return NotRun(
            f"{found['exe']} can't open file {found['file']}: {found['why'].strip()} (exit 2)"
        )
    from reprospec.outcome.tracebacks import parse_exception  # an attempt that failed to start

    exception = parse_exception(evidence.raised or "") or parse_exception(stderr)
    if (
        exception is not None
        and exception.type.rpartition(".")[2] == "ModuleNotFoundError"
        and execution.unchosen_python is not None
    ):
        return NotRun(
            f"ModuleNotFoundError: {exception.message} before any progress: "
            f"{execution.unchosen_python}; pass --python PATH (the interpreter that has "
            "what the command imports)"
        )
    return None


__all__ = ["setup_failure"]
