"""A spec's interpreter asked a question in a child, and the one wording of one that
cannot start.

The package check (packages.py) and the environment capture (probe.py) ask it through
`run_python`; the local runner's check of `--python` (runners/local.py
`interpreter_version`) and the venv runner's base interpreter (venvs/build.py
`find_interpreter`) say a missing or non-executable interpreter by `unusable` too, so
every verb and runner words it alike: `interpreter not found: PATH`, `interpreter not
executable: PATH` (the local runner said `not an executable interpreter: PATH`, the venv
runner `interpreter PATH does not run: [Errno 2] ...`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core import capped
from reprospec.errors import InfraError

# Run by `python -c` to ask an interpreter its version (`3.11.7`): the local runner's check
# of `--python` and the venv runner's base interpreter (venvs/pythons.py `version_of`).
VERSION_CODE = "import sys; print('%d.%d.%d' % sys.version_info[:3])"


def unusable(path: str, *, found: bool) -> str:
    """An interpreter that cannot start: `interpreter not found: PATH`, or where `found`
    (a file is there), `interpreter not executable: PATH`."""
    return f"interpreter {'not executable' if found else 'not found'}: {path}"


def run_python(
    argv: Sequence[str],
    *,
    what: str,
    limit: int,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> capped.Completed:
    """`capped.run` of a spec's interpreter (`argv[0]`) asked a question of (`what`:
    `package check`, `environment capture`), its output kept within `limit`: one that
    cannot start (`unusable`) or runs past `timeout_s` is an InfraError."""
    python = argv[0]
    try:
        done = capped.run(argv, limit=limit, timeout_s=timeout_s, env=env, cwd=cwd)
    except FileNotFoundError as exc:
        raise InfraError(unusable(python, found=False)) from exc
    except PermissionError as exc:
        raise InfraError(unusable(python, found=True)) from exc
    if done.timed_out:
        raise InfraError(f"{what} with {python} timed out after {timeout_s:g}s")
    return done
