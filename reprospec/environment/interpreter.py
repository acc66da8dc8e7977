"""A spec's interpreter asked a question in a child, and the one wording of one that
cannot start.

The package check (packages.py) and the environment capture (probe.py) ask it through
`run_python`; the local runner's check of `--python` (runners/local.py `checked_python`,
by `python3_version`) and the venv runner's base interpreter (venvs/build.py
`find_interpreter`) say a missing or non-executable interpreter by `unusable` too, so
every verb and runner words it alike: `interpreter not found: PATH`, `interpreter not
executable: PATH` (the local runner said `not an executable interpreter: PATH`, the venv
runner `interpreter PATH does not run: [Errno 2] ...`). Both ask its version by
`version_of`, and word one that starts but gives no Python 3 version by `not_python`
(`not a Python 3 interpreter: PATH (does not run: exit 127, pyenv: ...)`): each had its
own probe, the local runner's saying its last line of stderr and refusing a Python 2, the
venv runner's saying uv's reading of it and taking one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from reprospec.core import capped
from reprospec.core.lazyre import Lazy
from reprospec.errors import InfraError

# Run by `python -c` to ask an interpreter its version (`3.11.7`): the local runner's check
# of `--python` and the venv runner's base interpreter (`version_of`).
VERSION_CODE = "import sys; print('%d.%d.%d' % sys.version_info[:3])"
# What VERSION_CODE printed last (a .pth file or a wrapper may print before it).
_SAID = Lazy(r"(\d+\.\d+\.\d+)\s*$")


def version_of(path: str, *, timeout_s: float = 30) -> tuple[str | None, str | None]:
    """The Python 3 version `path` says it is (`3.10.13`), or why it said none: `does not
    run: ...` (a shim that exits 127: its first line), `no version printed`, or `is Python
    2.7.18`. The one probe of an interpreter's version, its output bounded (the
    interpreter may print on its own: a .pth file, a wrapper): the local runner's check
    of `--python` (runners/local.py `checked_python`), the venv runner's base
    interpreter (venvs/build.py `find_interpreter`) and the places venvs/pythons.py
    looks in; `not_python` words it alike for each."""
    try:
        done = capped.run([path, "-c", VERSION_CODE], limit=64 << 10, timeout_s=timeout_s)
    except OSError as exc:
        return None, f"does not run: {exc}"
    if done.timed_out:
        return None, f"does not run: no answer within {timeout_s:g}s"
    if done.returncode != 0:
        # Read leniently: a latin-1 message was an internal UnicodeDecodeError.
        lines = done.stderr.decode("utf-8", "replace").splitlines()
        first = next((line.strip() for line in lines if line.strip()), "")
        return None, f"does not run: exit {done.returncode}" + (f", {first}" if first else "")
    said = _SAID.search(done.stdout.decode("utf-8", "replace"))
    if said is None:
        return None, "no version printed"
    version = said.group(1)
    return (version, None) if version.startswith("3.") else (None, f"is Python {version}")


def not_python(path: str, why: str) -> str:
    """An interpreter that is there but gave no Python 3 version (`version_of`'s `why`),
    worded alike on every runner."""
    return f"not a Python 3 interpreter: {path} ({why})"


def unusable(path: str, *, found: bool) -> str:
    """An interpreter that cannot start: `interpreter not found: PATH`, or where `found`
    (a file is there), `interpreter not executable: PATH`."""
    return f"interpreter {'not executable' if found else 'not found'}: {path}"


def python3_version(
    path: str, *, error: Callable[[str], Exception] = InfraError, timeout_s: float = 60
) -> str:
    """The Python 3 version of the interpreter `path`, or `error` raised in the words every
    verb uses for one that cannot start (`unusable`) or is no Python 3 (`not_python`): the
    local runner's `--python` (raising InfraError) and the venv runner's base interpreter
    (EnvBuildError) alike. os.path's exists/isfile say False where Path's raise (EACCES):
    an error in those words, not a traceback."""
    if path == sys.executable:
        # The engine's own interpreter runs (this is it): no child to ask. The venv
        # runner's default base and the local runner's default `--python` alike.
        return ".".join(str(part) for part in sys.version_info[:3])
    if not os.path.exists(path):  # noqa: PTH110
        raise error(unusable(path, found=False))
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):  # noqa: PTH113
        raise error(unusable(path, found=True))
    version, why = version_of(path, timeout_s=timeout_s)
    if version is None:
        raise error(not_python(path, why or ""))
    return version


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
