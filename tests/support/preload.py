"""A module whose every import is written down: how a test counts the preload servers (and
fresh interpreters) that imported it."""

from __future__ import annotations

from pathlib import Path

NAME = "stamp"


def stamp_module(folder: Path) -> Path:
    """`folder/lib/stamp.py`, which appends its importer's pid to `lib/imports.log`; returns
    `lib`, for PYTHONPATH (a preload server imports from there, not from the workdir)."""
    lib = folder / "lib"
    lib.mkdir()
    (lib / f"{NAME}.py").write_text(
        "import os, pathlib\n"
        "with open(pathlib.Path(__file__).with_name('imports.log'), 'a') as log:\n"
        "    log.write(f'{os.getpid()}\\n')\n"
    )
    return lib


def imports(lib: Path) -> int:
    """How many interpreters imported `lib`'s stamp so far."""
    log = lib / "imports.log"
    return len(log.read_text().split()) if log.is_file() else 0
