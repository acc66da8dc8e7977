"""A program the shell or Python could not start, in their own words on stderr: `sh: 1:
trainer: not found` (exit 127), `./run.sh: Permission denied` (126), `python: can't open
file` (2), `python: No module named pytest` (1: `python -m` found no such module). Read by
the classifier (outcome/setupfail.py, where an attempt made no progress) and by the docker
runner, which said `the container could not run '/bin/sh'` of a shell that ran and said
which program it could not find (runners come before outcome, so the words are here, below
both).
"""

from __future__ import annotations

import re

from reprospec.core.lazyre import Lazy

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
# `python -m pytest` where the interpreter has no pytest: runpy's own line, exit 1. Only a
# top-level module that is not there at all: `No module named json.absent` (its package is
# there) is a module the installed version lacks, the program's failure as an import of it
# would be (what a version bisect looks for), and is left to the classifier.
_NO_MODULE = Lazy(
    r"^(?P<exe>\S+): (?:No module named (?P<mod>[^\s.'\"]+)"
    r"|Error while finding module specification for '(?P<dotted>[^'\n]+)' "
    r"\(ModuleNotFoundError: No module named '(?P<root>[^'.\n]+)'\))\s*$",
    re.M,
)


def not_started(code: int, stderr: str) -> str | None:
    """What the shell or Python said of a program it could not start (exit 127, 126, 2, or 1
    of `python -m`, with its own words on `stderr`), as the reason of an infra-error; else
    None. The docker runner words a container's `sh: 1: python: not found` by it too, which
    it named as `/bin/sh` that could not run."""
    if code == 127 and (found := _NOT_FOUND.search(stderr)) is not None:
        return f"command not found: {found['cmd'].strip()} (exit 127)"
    if code == 126 and (found := _NOT_EXECUTABLE.search(stderr)) is not None:
        return f"not executable: {found['cmd'].strip()}: {found['why'].strip()} (exit 126)"
    if code == 2 and (found := _CANT_OPEN.search(stderr)) is not None:
        return f"{found['exe']} can't open file {found['file']}: {found['why'].strip()} (exit 2)"
    if code == 1 and (found := _NO_MODULE.search(stderr)) is not None:
        module = found["mod"] or found["dotted"]
        missing = found["mod"] or found["root"]
        if found["dotted"] is not None and not found["dotted"].startswith(f"{missing}."):
            return None
        return (
            f"{found['exe']} -m {module}: no module named {missing} in that interpreter "
            "(exit 1); install it there, or add it to environment.packages"
        )
    return None


__all__ = ["not_started"]
