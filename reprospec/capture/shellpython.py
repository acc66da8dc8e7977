"""The `python` a bare name in a captured command runs in the user's shell, and what capture
does with it.

The local runner makes a bare `python` (or `python3`) in a command the run's interpreter,
`--python`'s, else reprospec's own: a rerun of the spec runs what the spec pins, whatever
shell it is typed in. But a capture is typed in the shell whose failure it is: with a venv
activated there (`source .venv/bin/activate`, packaging 23.2), `capture -- python app.py`
ran reprospec's own interpreter (packaging 26.4) and pinned its packages, silently, a
failure of another environment than the one the user had. So capture takes the PATH's
`python` where it is an environment's interpreter (a venv's, its `pyvenv.cfg` beside its
`bin`; the active conda environment's): the run then has it as if `--python` named it,
and says so every time (the spec's header says to rerun it with that `--python`, as for
one given). A PATH `python` that is no environment's (the system's `/usr/bin/python3`,
pyenv's shim script) is not taken: it is the machine's default rather than a choice, and
the interpreter reprospec runs on may be the one the project's packages were installed
into (`pip install` beside reprospec); capture says which ran and how to run the other,
every time they differ, and pins the packages of the one that ran.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.logtext import shell_line
from reprospec.core.pythonargs import is_python
from reprospec.plan.wrappers import ENV_PROGRAM, program_start


@frozen
class ShellPython:
    """The interpreter the user's shell runs for the command's bare `python`, where it is
    not reprospec's own."""

    name: str  # as the command names it: `python`, `python3`, `python3.11`
    path: str  # absolute, its links kept (a venv's `python` stays in its venv)
    taken: bool  # an environment's: the run's interpreter, as `--python` would make it

    def line(self, workdir: Path) -> str:
        """What capture says of it: which ran, which the shell has, how to choose."""
        shown = shell_line([relative_python(self.path, workdir)])
        if self.taken:
            return (
                f"`{self.name}` in the command ran {shown}, your shell's (an environment's, "
                f"first on PATH), as --python {shown} does, whose packages the spec pins: "
                "rerun it with the same --python (or --runner venv); --python PATH runs another"
            )
        return (
            f"`{self.name}` in the command ran reprospec's own interpreter "
            f"{shell_line([sys.executable])}, not {shown}, which your shell runs: "
            f"pass --python {shown} to run that one"
        )


def shell_python(argv: Sequence[str], python: str | None) -> ShellPython | None:
    """The PATH's interpreter for the command's program where it is a bare Python name
    (past its variables and wrappers) and not reprospec's own; None where `--python` was
    given, where `env` sets the program's PATH, or where no such program or interpreter
    is found."""
    if python is not None:
        return None
    words = list(argv)
    at = program_start(words)
    if at is None or at >= len(words) or _path_changed(words[:at]):
        return None
    program = words[at]
    if "/" in program or not is_python(program):
        return None
    found = shutil.which(program)
    if found is None:
        return None
    path = os.path.abspath(found)  # noqa: PTH100 (links kept: a venv's python is a link)
    if _ours(path):
        return None
    return ShellPython(program, path, _environments(path))


def relative_python(python: str, workdir: Path) -> str:
    """`python` relative to the workdir where it lies inside it (`.venv/bin/python`): the
    spec's header held `/home/alice/proj/.venv/bin/python`, a home path that a bundle
    then carried to whoever it was sent to."""
    for folder in (Path(os.path.abspath(workdir)), workdir.resolve()):  # noqa: PTH100
        # As typed or through its links: PATH's entry and the cwd may name it either way.
        if Path(python).is_relative_to(folder):
            return Path(python).relative_to(folder).as_posix()
    return python


def _ours(path: str) -> bool:
    """Whether `path` is the engine's own interpreter: in its folder and the same binary
    (a venv's `python` and `python3` are one; `/usr/bin/python3.9` beside an engine of
    `/usr/bin/python3.11` is another)."""
    here = Path(sys.executable)
    return Path(path).parent == here.absolute().parent and Path(path).resolve() == here.resolve()


def _path_changed(before: Sequence[str]) -> bool:
    """Whether the words before the program change how its name is found: `PATH=...`, or
    `env` told to clear or split its environment (`-i`, `-S`, `-P`). An `env FOO=1` or
    `env -u FOO` does not: it was taken for one that did, and the PATH's venv python was not run."""
    if any(word.startswith("PATH=") for word in before):
        return True
    at = next((i for i, word in enumerate(before) if ENV_PROGRAM.match(word)), None)
    if at is None:
        return False
    return any(
        word in ("-", "--ignore-environment", "--split-string")
        or (word.startswith("-") and not word.startswith("--") and set(word[1:]) & set("iSP"))
        for word in before[at + 1 :]
    )


def _environments(path: str) -> bool:
    """Whether `path` is an environment's interpreter: a venv's (`pyvenv.cfg` in the folder
    above its `bin`), or the active conda environment's."""
    folder = Path(path).parent
    if (folder.parent / "pyvenv.cfg").is_file():
        return True
    conda = os.environ.get("CONDA_PREFIX")
    if not conda:
        return False
    return folder == Path(conda).absolute() / "bin"
