"""A program the shell or Python could not start, in their own words on stderr: `sh: 1:
trainer: not found` (exit 127), `./run.sh: Permission denied` (126), `python: can't open
file` (2), `python: No module named pytest` (1: `python -m` found no such module, its
last line). Read by
the classifier (outcome/setupfail.py, where an attempt made no progress) and by the docker
runner, which said `the container could not run '/bin/sh'` of a shell that ran and said
which program it could not find (runners come before outcome, so the words are here, below
both).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from reprospec.core.lazyre import Lazy
from reprospec.core.pythonargs import is_python, python_program
from reprospec.core.requirements import normalize
from reprospec.core.words import PASS_YOUR_PYTHON

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
# `python -m pytest` where the interpreter has no pytest: runpy's own line, exit 1, the last
# one on stderr, said by an interpreter (`/venv/bin/python3.12: ...`, pythonargs.is_python's
# rule: `pypy3`, `python3.13t` too). Only a top-level
# module that is not there at all: `No module named json.absent` (its package is there) is
# a module the installed version lacks, the program's failure as an import of it would be
# (what a version bisect looks for), and is left to the classifier. The same line anywhere
# else (a child `python -m` the program ran, before its own traceback) or said by anything
# else (`ImportError: No module named yaml`, `warning: ...`) is the program's.
_NO_MODULE = Lazy(
    r"(?P<exe>\S+): (?:No module named (?P<mod>[^\s.'\"]+)"
    r"|Error while finding module specification for '(?P<dotted>[^'\n]+)' "
    r"\(ModuleNotFoundError: No module named '(?P<root>[^'.\n]+)'\))\s*"
)


def not_started(
    code: int,
    stderr: str,
    *,
    argv: Sequence[str] | None = None,
    declared: Collection[str] = (),
    unchosen: str | None = None,
) -> str | None:
    """What the shell or Python said of a program it could not start (exit 127, 126, 2, or 1
    of `python -m`, with its own words on `stderr`), as the reason of an infra-error; else
    None. The docker runner words a container's `sh: 1: python: not found` by it too, which
    it named as `/bin/sh` that could not run.

    `argv`, where known, is the command's: `python -m`'s words count only where it runs
    `-m` of that module. `declared`: the normalized names `environment.packages` requires,
    whose module missing is one their installed version lacks (`python -m attrs.x` before
    attrs 21.3): the program's failure, what a version bisect looks for (None). Another
    module missing still says to install it or add its package, first, and then names the
    declared packages, none of which provides it there, and the import that judges a
    version of theirs that lacks it under another name (`tlz` of an old toolz). `unchosen`:
    that the command's `python` ran reprospec's own interpreter, in the words of
    `Execution.unchosen_python`, in which that import is the `--python` rule's infra-error
    too: said, it leads with `pass --python PATH`, the fix an import of the module is given
    there (outcome/setupfail.py), not with installing into reprospec's interpreter, nor with
    adding its package to `environment.packages`, which the local runner only checks: with
    `--runner venv`, which installs them."""
    if code == 127 and (found := _NOT_FOUND.search(stderr)) is not None:
        return f"command not found: {found['cmd'].strip()} (exit 127)"
    if code == 126 and (found := _NOT_EXECUTABLE.search(stderr)) is not None:
        return f"not executable: {found['cmd'].strip()}: {found['why'].strip()} (exit 126)"
    if code == 2 and (found := _CANT_OPEN.search(stderr)) is not None:
        return f"{found['exe']} can't open file {found['file']}: {found['why'].strip()} (exit 2)"
    if code != 1:
        return None
    last = stderr.rstrip().rsplit("\n", 1)[-1].strip()
    if (found := _NO_MODULE.fullmatch(last)) is None or not is_python(found["exe"]):
        return None
    module = found["mod"] or found["dotted"]
    missing = found["mod"] or found["root"]
    if found["dotted"] is not None and not found["dotted"].startswith(f"{missing}."):
        return None
    if argv is not None and not _runs_module(argv, module):
        return None
    if normalize(missing) in declared:
        return None
    said = f"{found['exe']} -m {module}: no module named {missing} in that interpreter (exit 1)"
    # Under reprospec's own interpreter "install it there" meant into reprospec's, and the
    # local runner installs no environment.packages (it checks them: "X is not installed"
    # next): the fix is the one setupfail's unchosen rule gives an import of the module,
    # --python PATH, or the venv runner, which installs them; said with why.
    if unchosen:
        said = (
            f"{said}; {unchosen}: {PASS_YOUR_PYTHON} it), or --runner venv with its package "
            "in environment.packages"
        )
    elif declared:
        said = (
            f"{said}; install it there, or add the package that provides it to environment.packages"
        )
    else:
        return f"{said}; install it there, or add it to environment.packages"
    if not declared:
        return said
    # Declared packages were checked installed, at their versions, before the start; one may
    # be the module's under another name (`tlz` of toolz, `sklearn` of scikit-learn) in a
    # version that has it, but no metadata of the installed version names a module it lacks,
    # so whose it is cannot be told: "add it to environment.packages" of a package that is
    # there misled, and a module a declared version lacks is the program's failure when the
    # program imports it (its traceback, outcome/setupfail.py), not when runpy cannot start it.
    # Under reprospec's own interpreter that import is infra-error as well (setupfail's
    # unchosen rule: no metadata ties `tlz` to toolz either): the lead says --python.
    return (
        f"{said} (none of those it names, {', '.join(sorted(declared))}, provides it there: "
        f"where a version of theirs lacks {missing}, `python -c 'import {missing}'` judges "
        "that version)"
    )


def _runs_module(argv: Sequence[str], module: str) -> bool:
    """Whether a command (an argument vector, or a `/bin/sh -c` line read as words) runs a
    Python interpreter with `-m module`."""
    words: Sequence[str] = argv
    if len(argv) == 3 and tuple(argv[:2]) == ("/bin/sh", "-c"):
        import shlex

        try:
            words = shlex.split(argv[2])
        except ValueError:
            words = argv[2].split()
    for at, word in enumerate(words):
        if is_python(word):
            program = python_program(words[at + 1 :])
            if program.kind == "module" and program.target == module:
                return True
    return False


__all__ = ["not_started"]
