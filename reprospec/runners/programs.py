"""Programs of other Python environments: never run in place of the cell's own.

A cell's interpreter is checked against its `packages` (environment/packages.py), but
a command such as `pytest` or `torchrun` is a console script: it runs whatever Python
its `#!` line names, with that environment's packages. Found on the caller's PATH (an
activated venv, as the README recommends) when the cell's environment lacks it, it
would run the caller's packages while the cell is judged as if it ran its own: a
verdict on the wrong version. So a runner that owns the cell's
environment (the venv runner; the local runner of a cell with `packages`) refuses such
a program as the attempt's infra-error, naming it:

- the command's own program, before anything starts (`foreign_program`);
- one the command starts later (`cd x && pytest`, `subprocess.run(["pytest"])`) through
  a guard: a `sh` script of the same name on PATH after the cell's environment and
  before the other environment's folder, which writes the reason into the attempt's
  folder (`FOREIGN_FILE`) and exits 127 (`write_guards`).

The user's own scripts count too: `~/.local/bin` (or `$PYTHONUSERBASE/bin`), where `pip
install --user` writes a console script whose `#!` line names the Python that installed
it, and pipx and `uv tool` link theirs. Such a script runs that Python with its user site
and its packages, not the cell's: refused as another environment's where its interpreter
is not the cell's (`pip install --user` by the cell's own Python runs).

A program that is not a Python script (`sh`, `cat`, `nvidia-smi`, a compiled tool in a
venv's bin), and a script of `#!/usr/bin/env python3` (which runs the cell's interpreter,
the first `python3` on the attempt's PATH) run as before.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.shellline import shebang_python
from reprospec.plan.workfiles import is_environment_folder

# Written by a guard into the attempt's folder ($REPROSPEC_STACK_DIR): the runner reads it
# when the attempt ends and makes the attempt an infra-error with its first line.
FOREIGN_FILE = "foreign-program.txt"
# The shell words of a command line that only set a variable for the program (`A=1 pytest`).
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


@frozen
class Foreign:
    """A program found on the attempt's PATH that runs another environment's Python."""

    name: str  # as the command names it
    path: str  # where it was found
    interpreter: str  # the Python its first line runs
    user: bool = False  # found in the user's scripts (~/.local/bin), not an environment's bin

    @property
    def reason(self) -> str:
        """The attempt's infra-error: what was refused, where it came from, what to do."""
        whose = (
            "the user's scripts (pip install --user, pipx): it runs "
            f"{self.interpreter} with its user site-packages"
            if self.user
            else f"another environment's: it runs {self.interpreter} with that environment's "
            "packages"
        )
        return (
            f"{self.name} is not installed in the cell's environment (found {self.path}, "
            f"{whose}): add it to environment.packages"
        )


def script_interpreter(path: str) -> str | None:
    """The Python a script runs by absolute path (its `#!` line, or uv's trampoline for a
    long one: core/shellline's `shebang_python`); None for anything else: a binary, a shell
    script, `#!/usr/bin/env python3` (which runs the first python3 on the attempt's PATH:
    the cell's), an unreadable file."""
    found = shebang_python(Path(path))
    return found if found is not None and found.startswith("/") else None


def _real_dir(path: str) -> str:
    """The folder of `path`, its symlinks resolved (a venv's python is a link: its folder
    is the venv's bin, the file's target is the base installation's)."""
    return os.path.realpath(os.path.dirname(os.path.abspath(path)))  # noqa: PTH100, PTH120


def own_folders(folders: Iterable[str]) -> frozenset[str]:
    """The folders of the cell's environment (its interpreter's bin, the python shims), real."""
    return frozenset(os.path.realpath(folder) for folder in folders if folder)


def foreign_program(name: str, search_path: str, own: frozenset[str]) -> Foreign | None:
    """`name` as the attempt's PATH finds it, where it is a Python script of another
    environment; None where it is the cell's own, not a Python script, or not found (the
    shell then says `not found`, which setupfail.py reads)."""
    found = shutil.which(name, path=search_path)
    if found is None or _real_dir(found) in own:
        return None
    # Only another environment's program: a system tool written in Python (/usr/bin) runs.
    folder = _real_dir(found)
    if folder not in environment_bins(search_path, own):
        return None
    interpreter = _interpreter_of(found, folder)
    if interpreter is None or (interpreter != PYENV_SELECTED and _real_dir(interpreter) in own):
        return None
    return Foreign(name, found, interpreter, user=folder in user_bins())


def command_program(argv: Sequence[str]) -> str | None:
    """The program a command's argv starts, by bare name (`pytest`): for `/bin/sh -c LINE`
    the first word of a line that runs one program, past its variable assignments; None
    for a path (the spec chose that file), a line of more shell work (a guard sees what
    it runs), or nothing."""
    words: Sequence[str] | None = argv
    if tuple(argv[:2]) == ("/bin/sh", "-c") and len(argv) == 3:
        # Imported here: process/preload.py is what parses a one-program shell line.
        from reprospec.process.preload import shell_words

        words = shell_words(argv[2])
    program = next((w for w in words or () if not _ASSIGNMENT.fullmatch(w)), None)
    if program is None or "/" in program:
        return None
    return program


def environment_bins(search_path: str, own: frozenset[str]) -> list[str]:
    """The folders on PATH that are another Python environment's bin (a venv's: pyvenv.cfg
    beside it; a conda environment's: conda-meta; pyenv's shims and versions; the user's
    scripts, `user_bins`), in PATH order. Not the machine's own folders (/usr/bin): a
    system tool written in Python (`add-apt-repository`) is no package of any spec's
    (review)."""
    found: list[str] = []
    users = user_bins()
    for entry in search_path.split(os.pathsep):
        if not entry or not entry.startswith("/"):
            continue
        real = os.path.realpath(entry)
        if real in own or real in found:
            continue
        if real in users or _pyenv_dir(real) or is_environment_folder(Path(real).parent):
            found.append(real)
    return found


def user_bins() -> frozenset[str]:
    """The user's script folders, real: `~/.local/bin` (of the engine's HOME, which the
    attempts inherit) and `$PYTHONUSERBASE/bin`, where `pip install --user` writes console
    scripts (and pipx and `uv tool` link theirs). A script there runs the Python its `#!`
    line names, with the user site of that Python: another environment's program unless
    that Python is the cell's."""
    folders = [os.path.expanduser("~/.local/bin")]  # noqa: PTH111 (a str, as PATH holds)
    base = os.environ.get("PYTHONUSERBASE")
    if base:
        folders.append(os.path.join(base, "bin"))  # noqa: PTH118
    return frozenset(os.path.realpath(f) for f in folders if f.startswith("/"))


def _pyenv_dir(real: str) -> bool:
    """pyenv's shims folder (`~/.pyenv/shims`: each a bash script running the selected
    version's program), or a version's bin (`~/.pyenv/versions/3.11.7/bin`)."""
    path = Path(real)
    if path.name == "shims":
        return (path.parent / "versions").is_dir()
    versions = path.parent.parent
    return (
        path.name == "bin" and versions.name == "versions" and (versions.parent / "shims").is_dir()
    )


# What a pyenv shim runs: no `#!` line names it (a shim is a bash script).
PYENV_SELECTED = "pyenv's selected Python"


def _interpreter_of(path: str, folder: str) -> str | None:
    """The Python the program at `path` (in the environment bin `folder`) runs."""
    if os.path.basename(folder) == "shims":  # noqa: PTH119
        return PYENV_SELECTED
    return script_interpreter(path)


def foreign_scripts(search_path: str, own: frozenset[str]) -> tuple[Foreign, ...]:
    """The Python scripts of other environments' bins on `search_path` that the cell's own
    folders do not have, one per name (the first on PATH): what `write_guards` stands in for.
    """
    found: dict[str, Foreign] = {}
    users = user_bins()
    for bin_dir in environment_bins(search_path, own):
        try:
            entries = list(os.scandir(bin_dir))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name in found or _has(own, name):
                continue
            try:
                info = entry.stat()
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o111:
                continue
            interpreter = _interpreter_of(entry.path, bin_dir)
            if interpreter is None:
                continue
            if interpreter == PYENV_SELECTED or _real_dir(interpreter) not in own:
                found[name] = Foreign(name, entry.path, interpreter, user=bin_dir in users)
    return tuple(found.values())


def write_guards(folder: Path, foreign: Iterable[Foreign]) -> None:
    """A guard in `folder` for each program: put on PATH after the cell's environment and
    before the other one's, a program the command starts by name finds it, not the caller's.
    """
    for program in foreign:
        _write_guard(folder / program.name, program)


def _has(own: frozenset[str], name: str) -> bool:
    return any(os.path.exists(os.path.join(folder, name)) for folder in own)  # noqa: PTH110, PTH118


def _write_guard(path: Path, foreign: Foreign) -> None:
    reason = shlex.quote(foreign.reason)
    path.write_text(
        "#!/bin/sh\n"
        f"# {foreign.name} of another Python environment ({foreign.path}): reprospec refuses it\n"
        f"reason={reason}\n"
        f'[ -n "$REPROSPEC_STACK_DIR" ] && printf "%s\\n" "$reason" >> '
        f'"$REPROSPEC_STACK_DIR/{FOREIGN_FILE}"\n'
        'printf "reprospec: %s\\n" "$reason" >&2\n'
        "exit 127\n"
    )
    path.chmod(0o755)


def refused_reason(log_dir: Path) -> str | None:
    """The first guard's reason an attempt left in its folder, else None."""
    try:
        text = (log_dir / FOREIGN_FILE).read_text("utf-8", "replace")
    except OSError:
        return None
    return text.splitlines()[0] if text.strip() else None


__all__ = [
    "FOREIGN_FILE",
    "Foreign",
    "command_program",
    "environment_bins",
    "foreign_program",
    "foreign_scripts",
    "own_folders",
    "refused_reason",
    "script_interpreter",
    "user_bins",
    "write_guards",
]
