"""Setup failures of a command: the program never started, so its exit says nothing about the bug.

A command spec that cannot start what it names must not read as a
non-reproduction ("expected crash, got error exit 127"): the cell is
`infra-error` with the reason, as a workload's missing torch already is. Each
rule needs the shell's or Python's own words on stderr, and an attempt that
reported no progress yet (no event with a phase or step):

    127  `sh: 1: trainer: not found`, `bash: line 1: trainer: command not found`
    126  `sh: 1: ./run.sh: Permission denied`, `cannot execute binary file`
    2    `python: can't open file '/w/train.py': [Errno 2] No such file or directory`
    1    `python: No module named pytest`, stderr's last line, of a command that runs
         `python -m pytest` (core/notstarted.py)
    any  `ModuleNotFoundError` when `python` in the command ran an interpreter
         the person did not choose (`Execution.unchosen_python`: reprospec's own,
         as pipx or `uv tool` installs it): `--python` names theirs
    4    pytest's `ERROR: not found: t.py::test_typo`, `file or directory not found`,
         an option it does not know; 5, no test collected or selected; 0, every test
         it selected skipped, whatever its `-v` lines named (a command that is pytest:
         pytestreport.ran_no_test). It ran no test, so no `expect` is met

A `ModuleNotFoundError` of a package `environment.packages` declares is no setup
failure (by its name, or the distribution that installs its top-level module: `bs4.nope` of
`beautifulsoup4`), nor is `python -m` of one (`No module named 'attrs'` of `python -m attrs.x`, the
caller's `declared`): every runner checked those packages where the attempt runs before it
started (environment/packages.py), so the module is one the installed version
lacks (`packaging.__about__` gone in 23.0, `import attrs` before attrs 21.3), which
is the very failure a version bisect looks for. Read as "not installed", such a
cell was infra-error and bisect refused its bad end.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Collection, Mapping, Sequence

from reprospec.core.lazyre import Lazy
from reprospec.core.notstarted import not_started
from reprospec.core.requirements import normalize
from reprospec.core.results import Execution, NotRun, bare_type
from reprospec.core.words import PASS_YOUR_PYTHON
from reprospec.outcome.evidence import Evidence


def setup_failure(
    execution: Execution,
    evidence: Evidence,
    *,
    pytest: bool = False,
    argv: Sequence[str] | None = None,
    declared: Collection[str] = (),
) -> NotRun | None:
    """Why the command never got to run, when stderr says so before any progress; else None.
    `pytest`: the command runs pytest, which says so of a test id it did not find. `argv`:
    the command's, where it is one (`python -m`'s words count only of its own `-m`).
    `declared`: the normalized names `environment.packages` requires (a module of theirs
    missing is the program's failure, below)."""
    if execution.timed_out or execution.returncode is None:
        return None
    if execution.returncode == 0:
        if not pytest:
            return None
        # Each test it selected was skipped: its `-v` lines name them, no progress of theirs.
        from reprospec.outcome.pytestreport import ran_no_test

        said = ran_no_test(0, evidence.stderr, evidence.stdout)
        return NotRun(said) if said is not None else None
    events = evidence.events
    if events.phase is not None or events.step is not None:
        return None  # it made progress: whatever ended it is the program's doing
    stderr = evidence.stderr
    said = not_started(
        execution.returncode,
        stderr,
        argv=argv,
        declared=declared,
        unchosen=execution.unchosen_python,
    )
    if said is not None:
        return NotRun(said)
    if pytest:
        from reprospec.outcome.pytestreport import ran_no_test

        said = ran_no_test(execution.returncode, stderr, evidence.stdout)
        if said is not None:
            return NotRun(said)
    # An attempt that failed to start: the program's own record of what it died of (under
    # `sys.tracebacklimit = 0` one with no traceback, `recorded_chain`), else stderr's.
    from reprospec.outcome.tracebacks import parse_exception, recorded_chain

    recorded = recorded_chain(evidence.raised) if evidence.raised else ()
    exception = recorded[-1] if recorded else parse_exception(stderr)
    if (
        exception is not None
        and bare_type(exception.type) == "ModuleNotFoundError"
        and execution.unchosen_python is not None
        and not _of_declared(exception.message or "", declared)
    ):
        # A package the spec declares was checked installed here: said, so that a version of
        # it lacking a module under another name (631add7d) is not read as "not installed".
        named = f"; none of environment.packages, {', '.join(sorted(declared))}, provides it here"
        return NotRun(
            f"ModuleNotFoundError: {exception.message} before any progress: "
            f"{execution.unchosen_python}; {PASS_YOUR_PYTHON} "
            f"what the command imports{named if declared else ''})"
        )
    return None


_MISSING = Lazy(r"No module named '(?P<name>[^'\s]+)'")


def _of_declared(message: str, declared: Collection[str]) -> bool:
    """Whether the module a `ModuleNotFoundError` names (`No module named 'bs4.nope'`) is of
    a distribution `environment.packages` declares: by its top-level name (`packaging`), or
    by the distribution that installs that name (`bs4` of `beautifulsoup4`), read in the
    interpreter that ran, which the unchosen rule is asked of only where it is the engine's
    own (`Execution.unchosen_python`). That distribution was checked there before the
    attempt started, so the import is the program's failure (a submodule the installed
    version lacks), an ordinary `error`; it read `pass --python PATH`."""
    found = _MISSING.search(message)
    if found is None or not declared:
        return False
    top = found["name"].partition(".")[0]
    if normalize(top) in declared:
        return True
    return any(normalize(name) in declared for name in _owners().get(top, []))


def _owners() -> Mapping[str, list[str]]:
    """Top-level module -> the distributions that install it, in the engine's interpreter
    (the only one `_of_declared` is asked of), read again only when an import folder
    changes: `packages_distributions` reads every distribution's metadata (0.1 s in a
    small venv, more beside torch), and a `--repeat 200` cell of one `ModuleNotFoundError`
    paid it per attempt. Not kept for the life of the process: a notebook's
    `reprospec.run()` or the pytest plugin's session that installs `beautifulsoup4` after a
    first judgement read `bs4.x` as undeclared (`pass --python PATH`) from the stale map.
    Not the harness's `reprospec_harness.pins._owners`: that one runs in the program's
    interpreter, a child that reads it once, and keeps a fallback for Pythons before 3.10
    the engine never is."""
    return _owners_at(_import_folders())


def _import_folders() -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """Each folder on sys.path with its distributions' metadata entries (`.dist-info`,
    `.egg-info`) and their mtimes: installing, upgrading or removing a distribution adds,
    renames or takes away its entry. A `.egg-info` folder is keyed by its `top_level.txt`
    too: an in-place `egg_info` run (`pip install -e .` or `setup.py develop` of a setup.py
    project) opens that file again to write it, and leaves the folder's mtime as it was, so
    a top-level package it added read as undeclared from the stale map. Not the
    folder's own mtime: sys.path's `''` is the working folder of a notebook or the pytest
    plugin, which changes with every file an attempt writes there, and one that holds a
    `pip install -e .` project's in-place `.egg-info` read `packages_distributions` again
    after each such write (86 ms in reprospec's own venv, per attempt). An entry that cannot
    be stat'ed (a dangling `x.dist-info` link, one not readable) is keyed by its name, with
    -1: stat'ed under the folder's own `try`, it dropped the whole folder from the key, and
    no install there was seen again."""
    folders: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                held = tuple(
                    sorted(
                        key
                        for item in listing
                        if item.name.endswith(_METADATA)
                        for key in _keys(item)
                    )
                )
        except OSError:  # gone, not a folder (a zip), not readable
            continue
        if held:
            folders.append((entry, held))
    return tuple(folders)


def _keys(item: os.DirEntry[str]) -> list[tuple[str, int]]:
    """A metadata entry's name and mtime, and an `.egg-info`'s `top_level.txt`'s (the file
    an in-place `egg_info` run rewrites, not the folder: one stat more per egg-info)."""
    keys = [(item.name, _mtime(item))]
    if item.name.endswith(".egg-info"):
        top_level = os.path.join(item.path, "top_level.txt")  # noqa: PTH118
        keys.append((f"{item.name}/top_level.txt", _mtime(top_level)))
    return keys


def _mtime(path: os.DirEntry[str] | str) -> int:
    """A metadata entry's (or file's) mtime, -1 where it cannot be stat'ed."""
    try:
        return os.stat(path).st_mtime_ns  # noqa: PTH116
    except OSError:
        return -1


# The entries of a distribution's metadata in an import folder.
_METADATA = (".dist-info", ".egg-info")


@functools.lru_cache(maxsize=1)
def _owners_at(
    folders: tuple[tuple[str, tuple[tuple[str, int], ...]], ...],
) -> Mapping[str, list[str]]:
    from importlib import metadata

    del folders  # the cache's key: the map read where they are as said
    return metadata.packages_distributions()


__all__ = ["setup_failure"]
