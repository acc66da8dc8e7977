"""Which of the runner image's packages (torch, numpy) a materialized cell's image installs.

The docker runner's image holds torch and numpy for every cell (`reprospec docker
setup`), and `materialize` rebuilt that image from a public base for every bundle: a
pure-Python deadlock's bundle downloaded torch (the CUDA build on x86_64 PyPI, gigabytes)
to run a program that never imports it. A bundle's command cell runs its command alone
(no harness: `container.attempt_argv`), so it needs of them what its program imports; a
workload cell runs the harness, which trains with torch. Read from the files the bundle
carries (`carry.workdir_files`, the one rule), with `ast`, never run. Where the program's
Python is out of sight (no source among those files: a binary, a `pytest` that names no
test file, an interpreter's `-c` inside a script), the image keeps the runner's packages:
a bundle that lacked one would fail elsewhere on an import, not on the bug.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from reprospec.core.inputs import AttemptPlan
from reprospec.core.sections import Command
from reprospec.export.carry import workdir_files
from reprospec.plan.shellwords import MAX_PARSE_BYTES, command_words, is_shell_script
from reprospec.plan.workfiles import imported_modules
from reprospec.runners.docker.image import RUNNER_PACKAGES, requirement_name

# The runner's packages by the top-level module a program imports them by. torch brings
# numpy: without it torch warns at every import (the runner image's reason, its Dockerfile).
_MODULES = {"torch": ("torch", "numpy"), "numpy": ("numpy",)}
# A shell script's words that run torch or numpy (`python -c "import torch"`, `torchrun`).
_SCRIPT_WORD = re.compile(r"\b(torch|numpy)(?:run)?\b")


@dataclass(frozen=True)
class RunnerPackages:
    """The runner's requirements a cell's image installs, and why (for the README)."""

    packages: tuple[str, ...]
    why: str


def runner_packages(plan: AttemptPlan) -> RunnerPackages:
    """Of RUNNER_PACKAGES, those `plan`'s cell needs (see the module docstring)."""
    if plan.workload is not None or not isinstance(plan.job, Command):
        return RunnerPackages(RUNNER_PACKAGES, "the harness runs the workload on torch")
    words = command_words(plan.job)
    imported: set[str] = set()
    seen = False  # whether any of the program's Python was read
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        if before == "-c":
            imported.update(_code_imports(word))
            seen = True
        elif before == "-m":
            # `-m torch.distributed.run`; a module's own files are read below, if carried
            # (`-m pytest` with no test file named reads none: unseen).
            imported.add(word.split(".", 1)[0])
        elif index == 0 and Path(word).name == "torchrun":
            imported.add("torch")
    carried = workdir_files(plan)
    for path in (*carried.files, *carried.outside):
        if path.suffix == ".py":
            imported.update(name.split(".", 1)[0] for name in imported_modules(path))
            seen = True
        elif is_shell_script(path):
            imported.update(_script_words(path))
    if not seen:
        return RunnerPackages(
            RUNNER_PACKAGES,
            "none of the program's Python is among the files it names, so what it imports "
            "is not known",
        )
    wanted = {name for module in imported for name in _MODULES.get(module, ())}
    packages = tuple(p for p in RUNNER_PACKAGES if requirement_name(p) in wanted)
    left = [requirement_name(p) for p in RUNNER_PACKAGES if p not in packages]
    why = f"its program does not import {' or '.join(left)}" if left else "its program uses torch"
    return RunnerPackages(packages, why)


def _code_imports(code: str) -> set[str]:
    """The top-level modules a `python -c` program imports."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set(_MODULES)  # unreadable: taken as needing them all
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".", 1)[0])
    return names


def _script_words(path: Path) -> set[str]:
    """torch or numpy, where a shell script's text names them (`python -c "import torch"`,
    `torchrun`): what its Python imports is not read, so a mention is taken as a need."""
    try:
        if path.stat().st_size > MAX_PARSE_BYTES:
            return set(_MODULES)
        return set(_SCRIPT_WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return set()
