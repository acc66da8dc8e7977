"""The files in a cell's workdir that its job names: what someone rerunning it elsewhere needs.

A command names files by its words (`python train.py --config cfg.yaml`,
`--config=cfg.yaml`, `python -m pkg.tool`); a workload by its entry points
(`module:callable`) and its `imports`. A Python file found that way brings the
local modules it imports (read with `ast`, never run), transitively. Only
files inside the workdir count: anything else is the machine's, not the spec's.

    named_files(plan) -> ("cfg.yaml", "pkg/__init__.py", "pkg/tool.py", "train.py")

A bundle carries more (`carried_files`): a word that reaches out of the workdir by
a relative path (`python ../raises.py`, run in `run/`) names a file the rerun needs
at that same relative place, so it goes along too, with the modules it imports from
its own folder; a word that is an absolute path names this machine's file, which no
recipient has at that path: it is listed, for the bundle to say it is not carried.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from reprospec.core.inputs import AttemptPlan
from reprospec.core.sections import Command
from reprospec.plan.shellwords import (
    MAX_PARSE_BYTES,
    command_words,
    is_assignment,
    is_shell_script,
    shell_words,
    without_written,
)

# A workdir may be a checkout: stop following imports after this many files.
MAX_FILES = 200


def named_files(plan: AttemptPlan) -> tuple[str, ...]:
    """Files (relative to the workdir, sorted) that the plan's job names or imports locally."""
    workdir = plan.workdir.resolve()
    if not workdir.is_dir():
        return ()
    found: dict[Path, None] = {}
    if isinstance(plan.job, Command):
        for path in _command_files(plan.job, workdir):
            found[path] = None
    else:
        for module in workload_modules(plan.workload or {}):
            for path in module_files(module, workdir):
                found[path] = None
    for name in plan.files:
        listed = file_in(name, workdir)
        if listed is not None:
            found[listed] = None
    for path in script_files(list(found), workdir):
        found[path] = None
    for path in local_imports(list(found), workdir):
        found[path] = None
    return tuple(sorted(p.relative_to(workdir).as_posix() for p in found))


def script_files(start: Iterable[Path], workdir: Path) -> list[Path]:
    """The workdir's files that the shell scripts among `start` name, transitively.

    `command: sh run.sh` runs what run.sh says (`cat data.txt | python app.py`): a bundle
    that carried run.sh alone failed elsewhere on data.txt, and no Python process of the
    run opened it for capture to see. A script's words are read as a `-c` script's
    (written files left out), relative to the workdir it runs in.
    """
    seen: dict[Path, None] = dict.fromkeys(start)
    queue = [p for p in seen if is_shell_script(p)]
    while queue and len(seen) < MAX_FILES:
        script = queue.pop()
        try:
            text = script.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for word in without_written(shell_words(text)):
            found = file_in(word, workdir)
            if found is not None and found not in seen:
                seen[found] = None
                if is_shell_script(found):
                    queue.append(found)
    return [p for p in seen if p not in start]


@dataclass(frozen=True)
class CarriedFiles:
    """The files a cell names, as a bundle sees them.

    `inside`: the workdir's (`named_files`), relative to it. `outside`: files a relative
    word reaches out of the workdir (`../raises.py`), as absolute paths with the `..`
    taken by name from the workdir, the place the command opens (through a link, its
    contents are read from wherever it points), and the modules they import from their
    own folder. `absolute`: files named by an absolute path outside the workdir (the
    command's own program left out: `/usr/bin/python3` is the machine's, not a file the
    cell brings); a tree that a recipient unpacks cannot put anything at such a path.
    """

    inside: tuple[str, ...]
    outside: tuple[Path, ...] = ()
    absolute: tuple[Path, ...] = ()


def carried_files(plan: AttemptPlan) -> CarriedFiles:
    """What the plan names, inside the workdir and out of it (see CarriedFiles)."""
    inside = named_files(plan)
    workdir = plan.workdir.resolve()
    if not workdir.is_dir() or not isinstance(plan.job, Command):
        return CarriedFiles(inside)
    outside: dict[Path, None] = {}
    absolute: dict[Path, None] = {}
    words = command_words(plan.job)
    program = next((i for i, w in enumerate(words) if not is_assignment(w)), None)
    for index, word in enumerate([*words, *plan.files]):
        if 0 < index < len(words) and words[index - 1] == "-m":
            continue  # a module: found inside the workdir, or installed
        candidates = [word]
        if word.startswith("-") and "=" in word:
            candidates.append(word.partition("=")[2])
        for candidate in candidates:
            place = _place_outside(candidate, workdir)
            if place is None or in_environment(place.parent, workdir):
                # `.venv/bin/python`: a link into this machine's interpreter, in an
                # environment made in the workdir, is the machine's, not the spec's.
                continue
            if Path(candidate).expanduser().is_absolute():
                if index != program:
                    absolute[place] = None
            else:
                outside[place] = None
    for script in [p for p in outside if p.suffix == ".py"]:
        real = script.resolve()
        for found in local_imports([real], real.parent):
            if found != real and not _inside(found, workdir):
                outside.setdefault(found, None)
    return CarriedFiles(inside, tuple(sorted(outside)), tuple(sorted(absolute)))


def run_files(attempts: Iterable[AttemptPlan]) -> list[Path]:
    """The files the attempts name, inside their workdir and out of it (`carried_files`:
    what a bundle carries), absolute, sorted, each once: what `compare` tells changed
    between two runs. Attempts alike (one workdir, job and `files`) are read once."""
    found: dict[Path, None] = {}
    seen: set[tuple[object, ...]] = set()
    for attempt in attempts:
        workdir = attempt.workdir.resolve()
        job: object = (
            tuple(attempt.job.argv)
            if isinstance(attempt.job, Command)
            else tuple(workload_modules(attempt.workload or {}))
        )
        key = (workdir, job, attempt.files)
        if key in seen:
            continue
        seen.add(key)
        named = carried_files(attempt)
        for name in named.inside:
            found[workdir / name] = None
        for path in named.outside:
            found[path] = None
    return sorted(found)


def _place_outside(word: str, workdir: Path) -> Path | None:
    """Where `word` names a file outside the workdir: `..` taken by name; else None."""
    if not word or word.startswith("-") or "\0" in word or len(word) > 4096:
        return None
    try:
        place = Path(os.path.normpath(workdir / Path(word).expanduser()))
        if not place.is_file() or _inside(place, workdir):
            return None
    except (OSError, RuntimeError, ValueError):
        return None
    return place


def in_environment(folder: Path, workdir: Path) -> bool:
    """Whether `folder` lies in a Python environment made inside the workdir (a `venv/`
    with its pyvenv.cfg, a conda env with its conda-meta/): its files are the
    interpreter's, not the program's."""
    folder = Path(os.path.normpath(folder))
    while folder != workdir and folder.is_relative_to(workdir):
        if (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir():
            return True
        folder = folder.parent
    return False


def environments(workdir: Path) -> list[Path]:
    """The Python environments made in the workdir's own folder (`.venv/`, `env/`)."""
    try:
        entries = list(workdir.iterdir())
    except OSError:
        return []
    return sorted(
        e
        for e in entries
        if e.is_dir() and ((e / "pyvenv.cfg").is_file() or (e / "conda-meta").is_dir())
    )


def workload_modules(workload: object) -> list[str]:
    """The modules a workload names: `imports`, and the module part of every entry point."""
    modules: list[str] = []
    if not isinstance(workload, dict):
        return modules
    for name in workload.get("imports") or []:
        modules.append(str(name))
    for reference in entrypoints(workload):
        modules.append(reference.partition(":")[0])
    return list(dict.fromkeys(m for m in modules if m))


def entrypoints(workload: dict[str, object]) -> list[str]:
    """`module:callable` references of the dataset, the model and the loss."""
    data = workload.get("data")
    dataset = data.get("dataset") if isinstance(data, dict) else None
    model = workload.get("model")
    found = []
    for section in (dataset, model):
        if isinstance(section, dict) and section.get("entrypoint"):
            found.append(str(section["entrypoint"]))
    loss = model.get("loss") if isinstance(model, dict) else None
    if isinstance(loss, str) and ":" in loss:
        found.append(loss)
    return found


def module_files(module: str, workdir: Path) -> list[Path]:
    """`pkg.mod` -> the workdir's files importing it runs: `pkg/__init__.py`, `pkg/mod.py`."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return []
    files: list[Path] = []
    folder = workdir
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        package = folder / part / "__init__.py"
        if package.is_file():
            files.append(package)
        if last:
            single = folder / f"{part}.py"
            if single.is_file():
                files.append(single)
            elif (folder / part / "__main__.py").is_file():
                files.append(folder / part / "__main__.py")
        folder = folder / part
        if not folder.is_dir():
            break
    return [f.resolve() for f in files if _inside(f, workdir)]


def _command_files(command: Command, workdir: Path) -> Iterator[Path]:
    words = command_words(command)
    for index, word in enumerate(words):
        if index > 0 and words[index - 1] == "-m":
            yield from module_files(word, workdir)
            continue
        candidates = [word]
        if word.startswith("-") and "=" in word:
            candidates.append(word.partition("=")[2])
        for candidate in candidates:
            path = file_in(candidate, workdir)
            if path is not None:
                yield path


def file_in(word: str, workdir: Path) -> Path | None:
    """The workdir's file a word names (resolved, relative to `workdir` unless absolute),
    or None: not a file, outside the workdir, a flag, or no name at all."""
    if not word or word.startswith("-") or "\0" in word or len(word) > 4096:
        return None
    try:
        path = (workdir / Path(word).expanduser()).resolve()
        return path if path.is_file() and _inside(path, workdir) else None
    except (OSError, RuntimeError, ValueError):
        return None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def local_imports(start: Iterable[Path], workdir: Path) -> list[Path]:
    """`start` and the workdir's modules its Python files import, transitively."""
    seen: dict[Path, None] = dict.fromkeys(start)
    queue = [p for p in seen if p.suffix == ".py"]
    while queue and len(seen) < MAX_FILES:
        path = queue.pop()
        for module in imported_modules(path):
            for found in module_files(module, workdir) + _relative_to(path, module, workdir):
                if found not in seen:
                    seen[found] = None
                    queue.append(found)
    return list(seen)


def _relative_to(path: Path, module: str, workdir: Path) -> list[Path]:
    """A module imported next to `path` (a script's folder is first on its sys.path)."""
    folder = path.parent
    if folder == workdir:
        return []
    return [p for p in module_files(module, folder) if _inside(p, workdir)]


def imported_modules(path: Path) -> list[str]:
    """Absolute module names a Python file imports (relative imports resolved against it)."""
    try:
        if path.stat().st_size > MAX_PARSE_BYTES:
            return []
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.extend(_relative_names(path, node))
            elif node.module:
                names.append(node.module)
                names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return list(dict.fromkeys(names))


def _relative_names(path: Path, node: ast.ImportFrom) -> list[str]:
    # `from . import x` in pkg/mod.py: pkg.x; only the last parts matter to module_files,
    # so the package path is taken from the file's folders.
    folder = path.parent
    for _ in range(node.level - 1):
        folder = folder.parent
    parts: list[str] = []
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    base = ".".join([*parts, node.module] if node.module else parts)
    if not base:
        return []
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]
