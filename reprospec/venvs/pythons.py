"""The interpreters of a Python version where a user expects to find them, past a shim.

`environment.python: "3.10"` asks uv (`uv python find 3.10`), which stops at the first
interpreter of PATH it cannot run: pyenv's shim of a version pyenv has but does not
have active exits 127 (`pyenv: python3.10: command not found`), and every cell was an
infra-error though `~/.pyenv/versions/3.10.13` was there. So, where uv found nothing,
these places are read in turn, each interpreter run to read its version (a shim that
does not run is passed over), the first of the version asked for taken:

- PATH's `python3.10` (`python3` for a request of `3`), in PATH order;
- pyenv's versions folder (`$PYENV_ROOT/versions`, else `~/.pyenv/versions`), newest first;
- uv's own managed interpreters (`$UV_PYTHON_INSTALL_DIR`, else
  `$XDG_DATA_HOME/uv/python`, else `~/.local/share/uv/python`), newest first.

Only a plain version (`3`, `3.10`, `3.10.13`) is looked for so: anything else uv takes
(`pypy3.10`, `>=3.10`) is left to uv's answer. A request of a program's name
(`python3.10`, `--python python3.10`) that PATH finds as a shim that does not run, or that
neither PATH nor uv finds, is looked for so too, as its version.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.environment.interpreter import version_of

_VERSION = re.compile(r"\d+(?:\.\d+){0,2}")
_FULL = r"\d+\.\d+\.\d+"  # a version as an interpreter says it: `3.10.13`
# A folder of uv's managed interpreters: `cpython-3.10.13-linux-x86_64-gnu`.
_UV_MANAGED = re.compile(rf"cpython-(?P<version>{_FULL})(?:[+-].*)?")


@frozen
class Found:
    """An interpreter that ran and said its version; or, where none did, what was tried."""

    path: str | None
    version: str | None
    # Each place read, and why it was passed over; None where none was read (a request
    # that is no plain version: uv's answer is the only one).
    tried: tuple[str, ...] | None


def matches(request: str, version: str) -> bool:
    """Whether `version` (`3.10.13`) is one `request` (`3`, `3.10`, `3.10.13`) asks for."""
    return version.split(".")[: len(request.split("."))] == request.split(".")


def plain(request: str) -> bool:
    """Whether `request` is a plain version (`3`, `3.10`, `3.10.13`), which `find` reads."""
    return _VERSION.fullmatch(request) is not None


def find(request: str, *, passed_over: Mapping[str, str] | None = None) -> Found:
    """The first interpreter of `request` in the places above that runs, or what was
    tried; a request that is no plain version finds nothing and reads no place: its
    `Found.tried` is None, and `passed_over` is not said (callers ask `plain` first).
    `passed_over`: interpreters the caller ran already, each with why it passed it over
    (PATH's shim that does not run, venvs/build.py `_past_a_shim`): said first in
    `Found.tried`, not started again (a pyenv shim's start is a bash `pyenv exec`)."""
    if not plain(request):
        return Found(None, None, None)
    passed = [f"{path} ({why})" for path, why in (passed_over or {}).items()]
    seen = {os.path.realpath(path) for path in passed_over or {}}
    for path in _candidates(request):
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        version, why = version_of(path)
        if version is not None and matches(request, version):
            return Found(path, version, tuple(passed))
        passed.append(f"{path} ({why or f'Python {version}'})")
    return Found(None, None, tuple(passed))


def _candidates(request: str) -> Iterator[str]:
    parts = request.split(".")
    name = f"python{'.'.join(parts[:2])}"
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry.startswith("/") and os.access(os.path.join(entry, name), os.X_OK):  # noqa: PTH118
            yield os.path.join(entry, name)  # noqa: PTH118
    for root in (_pyenv_versions(), _uv_managed()):
        yield from _newest_first(root, request, name)


def _pyenv_versions() -> Path:
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")  # noqa: PTH111
    return Path(root) / "versions"


def _uv_managed() -> Path:
    given = os.environ.get("UV_PYTHON_INSTALL_DIR")
    if given:
        return Path(given)
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")  # noqa: PTH111
    return Path(data) / "uv" / "python"


def _newest_first(root: Path, request: str, name: str) -> Iterator[str]:
    """The interpreters of `request` in a folder of versions (pyenv's `3.10.13`, uv's
    `cpython-3.10.13-...`), newest first: `bin/python3.10`, else `bin/python3`."""
    try:
        folders = list(root.iterdir())
    except OSError:
        return
    versions: list[tuple[tuple[int, ...], Path]] = []
    for folder in folders:
        managed = _UV_MANAGED.fullmatch(folder.name)
        version = managed["version"] if managed else folder.name
        if re.fullmatch(_FULL, version) and matches(request, version):
            versions.append((tuple(int(p) for p in version.split(".")), folder))
    for _, folder in sorted(versions, reverse=True):
        major = name.removeprefix("python").split(".")[0]
        for program in (name, f"python{major}"):
            path = folder / "bin" / program
            if os.access(path, os.X_OK):
                yield str(path)
                break


__all__ = ["Found", "find", "matches", "plain"]
