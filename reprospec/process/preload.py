"""Which attempts may be forked from a preload server (`run.preload`), and from which one.

An attempt is forked only when a fork cannot change what it does (see forkserver.py for
the server and docs/spec-format.md#preload-forked-attempts for the rules): its command
must be one Python program of the run's interpreter (`python script.py`, `python -m mod`,
`python -c code`; a workload is `python -m reprospec_harness`), its expectation must not
be at import, and nothing it needs before the imports (limits, workload imports and debug
switches) may be asked. `fresh_reason` says why not; `server_key` names the server.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.gpudebug import PATH_VARS
from reprospec.core.inputs import AttemptPlan
from reprospec.process.childprotocol import CELL_VAR, STACK_DIR_VAR, TOKEN_VAR

# Variables the engine sets per attempt: never in a server's environment or key; each
# forked attempt gets its own before its entry point runs.
PER_ATTEMPT_VARS = frozenset(
    {
        "REPROSPEC_EVENTS",
        "REPROSPEC_ENV_JSON",
        STACK_DIR_VAR,
        CELL_VAR,
        TOKEN_VAR,
        "TMPDIR",
        "XDG_CACHE_HOME",
        # The GPU diagnostics' files, named into the attempt folder.
        *PATH_VARS,
    }
)

EntryKind = Literal["script", "module", "code"]

_PYTHON_NAMES = ("python", "python3")
# Python options that change nothing a forked attempt would not get as well.
_HARMLESS_OPTIONS = ("-u", "-B")
# Outside quotes these make /bin/sh do more than run one program with these words.
_SHELL_SPECIAL = set("$`\\;&|<>()*?[]{}~#!\n")


@frozen
class EntryPoint:
    """What `python ...` runs: a script, a module (`-m`) or code (`-c`), and its arguments."""

    kind: EntryKind
    target: str
    args: tuple[str, ...] = ()
    argv0: str = "python"
    options: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "target": self.target,
            "args": list(self.args),
            "argv0": self.argv0,
            "options": list(self.options),
        }


def shell_words(text: str) -> list[str] | None:
    """The words of a `/bin/sh -c` line that runs one program and nothing else; else None.

    Conservative: a `$`, a glob, a redirection, a pipe, a `;` or a backslash outside
    single quotes, or a `$`, backtick or backslash inside double quotes, is shell work
    a fork cannot stand in for.
    """
    quote = ""
    for char in text:
        if quote == "'":
            quote = "" if char == "'" else quote
        elif quote == '"':
            if char in "$`\\":
                return None
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in _SHELL_SPECIAL:
            return None
    if quote:
        return None
    try:
        return shlex.split(text)
    except ValueError:
        return None


def entry_point(plan: AttemptPlan, python: str) -> EntryPoint | str:
    """The Python entry point the attempt runs, or why it is none (then it runs fresh)."""
    if plan.workload is not None:
        return EntryPoint("module", "reprospec_harness", argv0=python)
    argv = plan.argv
    if not argv:
        return "nothing to run"
    words: list[str] | None = list(argv)
    if argv[:2] == ("/bin/sh", "-c") and len(argv) == 3:
        words = shell_words(argv[2])
        if words is None:
            return "the command is a shell line, not one Python program"
    assert words is not None
    if not words:
        return "the command is empty"
    program = words[0]
    # abspath, not Path.resolve: `python` keeps its symlinks (runners/local.py), so must this.
    if program not in _PYTHON_NAMES and os.path.abspath(program) != python:  # noqa: PTH100
        return f"the command runs {program}, not the run's Python interpreter"
    # A bare `python` runs the runner's shim, which execs the interpreter by its path: a
    # fresh attempt's sys.orig_argv[0] (and /proc/PID/cmdline) is that path, which a
    # program that re-executes itself (`os.execv(sys.orig_argv[0], sys.orig_argv)`) needs.
    argv0 = python if program in _PYTHON_NAMES else program
    options: list[str] = []
    rest = words[1:]
    while rest:
        word = rest[0]
        if word in _HARMLESS_OPTIONS:
            options.append(rest.pop(0))
            continue
        flags: tuple[tuple[str, EntryKind], ...] = (("-m", "module"), ("-c", "code"))
        for flag, kind in flags:
            if word == flag and len(rest) > 1:
                return EntryPoint(kind, rest[1], tuple(rest[2:]), argv0, tuple(options))
            if word.startswith(flag) and len(word) > 2:
                return EntryPoint(kind, word[2:], tuple(rest[1:]), argv0, tuple(options))
        if word.startswith("-"):
            return f"python option {word} takes effect when the interpreter starts"
        return EntryPoint("script", word, tuple(rest[1:]), argv0, tuple(options))
    return "python without a script reads its program from stdin"


def _path0(entry: EntryPoint, cwd: Path) -> Path:
    """What a fresh interpreter puts first on sys.path for this entry point."""
    if entry.kind == "script":
        return Path(os.path.realpath(cwd / entry.target)).parent
    return cwd


def module_sources(module: str, folder: Path) -> tuple[Path, Path]:
    """The Python files of `folder` that `import module` finds first, `folder` on sys.path:
    its top-level module's file or its package's `__init__.py`."""
    top = module.split(".", 1)[0]
    return folder / f"{top}.py", folder / top / "__init__.py"


def _shadowed(module: str, folder: Path, imported: str | None) -> bool:
    """Whether `folder`, first on a fresh interpreter's sys.path, holds another `module`
    than the file the server imported."""
    top = module.split(".", 1)[0]
    found = list(module_sources(module, folder))
    with contextlib.suppress(OSError):
        found += [
            path
            for path in folder.iterdir()
            if path.name.startswith(f"{top}.") and path.name.endswith(".so")
        ]
    same = os.path.realpath(imported) if imported else None
    return any(path.is_file() and os.path.realpath(path) != same for path in found)


def shadowing(plan: AttemptPlan, entry: EntryPoint, files: Mapping[str, str | None]) -> str | None:
    """Why a fresh interpreter would import another copy of a preloaded module; else None."""
    folder = _path0(entry, plan.workdir)
    for module in plan.preload:
        if _shadowed(module, folder, files.get(module)):
            top = module.split(".", 1)[0]
            return f"{folder} has its own {top}, which a fresh interpreter would import instead"
    return None


def fresh_reason(plan: AttemptPlan, entry: EntryPoint | str) -> str | None:
    """Why this attempt must run in a fresh interpreter although preload was asked; else None."""
    expectation = plan.expectation
    if expectation.phase == "import" or expectation.module is not None:
        return (
            "the expectation is at import: an import-time failure cannot happen in a "
            "process that imported already"
        )
    if isinstance(entry, str):
        return entry
    if plan.instances is not None:
        return "run.instances start each instance through the start barrier of launch.py"
    environment = plan.environment
    if environment.debug.compute_sanitizer is not None:
        return "environment.debug.compute_sanitizer: the attempt starts under compute-sanitizer"
    for key, value in (("memory", environment.memory), ("shm_size", environment.shm_size)):
        if value is not None:
            return f"environment.{key} must be in place before the imports"
    workload = plan.workload
    if workload is not None:
        imports = [str(name) for name in workload.get("imports") or []]  # type: ignore[union-attr]
        if imports and list(plan.preload[: len(imports)]) != imports:
            first = ", ".join(imports)
            return (
                f"workload.imports ({first}) come before torch in a fresh attempt: "
                f"list them first in run.preload to fork"
            )
        debug = workload.get("debug")
        if isinstance(debug, dict) and any(debug.values()):
            return "workload.debug sets variables torch must see before it is imported"
    return None


def server_key(python: str, env: Mapping[str, str], cwd: Path, preload: Sequence[str]) -> str:
    """The key of the server an attempt can be forked from (see the module docstring)."""
    kept = sorted((k, v) for k, v in env.items() if k not in PER_ATTEMPT_VARS)
    text = json.dumps([python, str(cwd), list(preload), kept])
    return hashlib.sha256(text.encode()).hexdigest()[:16]
