"""The files in a cell's workdir that its job names: what someone rerunning it elsewhere needs.

A command names files by its words (`python train.py --config cfg.yaml`,
`--config=cfg.yaml`, `python -m pkg.tool`); a workload by its entry points
(`module:callable`) and its `imports`. A Python file found that way brings the
local modules it imports (read with `ast`, never run), transitively. Only
files inside the workdir count: anything else is the machine's, not the spec's.
A word after a `cd` is read in the folder it moves to (shellwords' `located_words`):
`cd sub && python x.py` names sub/x.py, as the shell runs it. (A shell script's own
words are read in the workdir still.)

    named_files(plan) -> ("cfg.yaml", "pkg/__init__.py", "pkg/tool.py", "train.py")

A bundle carries more (`carried_files`): a word that reaches out of the workdir by
a relative path (`python ../raises.py`, run in `run/`) names a file the rerun needs
at that same relative place, so it goes along too, with the modules it imports from
its own folder; a word that is an absolute path names this machine's file, which no
recipient has at that path: it is listed, for the bundle to say it is not carried.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.sections import Command
from reprospec.core.shellline import shebang
from reprospec.plan.shellwords import (
    command_words,
    is_assignment,
    is_shell_script,
    located_words,
    shell_words,
    without_written,
)
from reprospec.plan.wrappers import program_file, wrapped

# A workdir may be a checkout: stop following imports after this many files.
MAX_FILES = 200


def named_files(plan: AttemptPlan) -> tuple[str, ...]:
    """Files (relative to the workdir, sorted) that the plan's job names or imports locally."""
    workdir = plan.workdir.resolve()
    if not workdir.is_dir():
        return ()
    found = _Found()
    found.gather(plan, workdir, outside=False)
    return tuple(sorted(p.relative_to(workdir).as_posix() for p in found.closed_inside(workdir)))


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


@frozen
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


def carried_files(plan: AttemptPlan, others: Sequence[AttemptPlan] = ()) -> CarriedFiles:
    """What the plan names, inside the workdir and out of it (see CarriedFiles), with what
    `others` (attempts of the same workdir) name: each cell's command may name its own
    files (`python ${{ matrix.prog }}.py`)."""
    workdir = plan.workdir.resolve()
    if not workdir.is_dir():
        return CarriedFiles(())
    found = _Found()
    for each in (plan, *others):
        found.gather(each, workdir)
    return found.carried(workdir)


# ProgramFiles, JobVariants (variants.py) and _WordFiles are NamedTuples, like expr's nodes
# and yamlsource's records: immutable and typed, and built at every run's start, where a
# frozen dataclass's class costs five times as much (0.7 ms against 0.14: the program's
# files are read before every run, whose goal is 250 ms in all).
class ProgramFiles(NamedTuple):
    """The program's files, by what a run does with them: absolute paths, sorted, each in
    one field.

    `sources`: its code, which no run writes: the Python files the cells name and the
    workdir's modules they import, the files with a `#!` line and `.sh` scripts, the
    files a command runs (`./tool`). `inputs`: the spec's `files` that are not code,
    declared as what the job reads (capture lists there the data the command read, never
    what it wrote). Those two are the program. `named`: the other files the commands'
    words (and their shell scripts) name, `--config cfg.yaml` as `--log run.log`: read or
    written, nothing before a run can tell which, so not the program's (a log the command
    writes changed at every run: `compare` said so, and a search's id changed with it).
    """

    sources: tuple[Path, ...] = ()
    inputs: tuple[Path, ...] = ()
    named: tuple[Path, ...] = ()


def program_files(attempts: Iterable[AttemptPlan]) -> ProgramFiles:
    """The files the attempts name (`carried_files`: what a bundle carries), as the
    program's sources, inputs and other named files (see ProgramFiles): the one rule of
    what the program is, for a search's id (export/tree.py's `program_digest`) and for
    `compare` (pipeline/programfiles.py).

    Each workdir's words are looked up once across the attempts (a 300-value `--seed`
    axis renders 300 commands whose other words are the same), and its imports and
    scripts followed once, from all of them together.
    """
    by_workdir: dict[Path, _Found] = {}
    resolved: dict[Path, Path] = {}  # each workdir as written, resolved once
    for attempt in attempts:
        workdir = resolved.get(attempt.workdir)
        if workdir is None:
            workdir = resolved[attempt.workdir] = attempt.workdir.resolve()
        if workdir not in by_workdir:
            if not workdir.is_dir():
                continue
            by_workdir[workdir] = _Found()
        by_workdir[workdir].gather(attempt, workdir)
    sources: dict[Path, None] = {}
    inputs: dict[Path, None] = {}
    named: dict[Path, None] = {}
    for workdir, found in by_workdir.items():
        carried = found.carried(workdir)
        for path in [*(workdir / name for name in carried.inside), *carried.outside]:
            if path in found.programs or is_code(path):
                sources[path] = None
            elif path in found.listed:
                inputs[path] = None
            else:
                named[path] = None
    return ProgramFiles(
        tuple(sorted(sources)),
        tuple(sorted(p for p in inputs if p not in sources)),
        tuple(sorted(p for p in named if p not in sources and p not in inputs)),
    )


def is_code(path: Path) -> bool:
    """A Python file, a shell script, or a script of another interpreter (its `#!`): one of
    the program's sources, compared as such whatever names it."""
    return path.suffix in (".py", ".sh", ".bash") or bool(shebang(path, 256))


# How a word is read (`_WordFiles`' key): a plain word, the command's program, a module.
_PLAIN, _PROGRAM, _MODULE = 0, 1, 2


class _WordFiles(NamedTuple):
    """The files one word names in its workdir: `inside` it, `outside` it by a relative
    path, or by an `absolute` path (see CarriedFiles)."""

    inside: tuple[Path, ...] = ()
    outside: tuple[Path, ...] = ()
    absolute: tuple[Path, ...] = ()


_NO_FILES = _WordFiles()


def _may_exist(word: str, workdir: Path) -> bool:
    """False where `word` names nothing in `workdir` (one `lstat`: most words of a command
    are no file, `--seed`, `17`); True where it may, or where its `..` or `~` need the
    lookups of `file_in` and `_place_outside` to say."""
    if not word or word.startswith("-") or "\0" in word or len(word) > 4096:
        return False
    if ".." in word or word.startswith("~"):
        return True
    try:
        os.lstat(os.path.join(workdir, word))  # noqa: PTH118 (a Path per word costs more)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        return True
    return True


def _word_files(word: str, how: int, workdir: Path, outside: bool, folder: str) -> _WordFiles:
    """What `word` names, read in `folder` (`Located.folder`: where the command's `cd`s
    took it, "" for the workdir) as the word `folder/word` is in the workdir: a file a
    `cd` into the workdir's sub/ names is the workdir's sub/x.py; one a `cd ..` names is
    outside it, carried as `python ../x.py`'s is; one under an absolute folder outside it
    is this machine's, listed, never carried (the same rule as an absolute word's)."""
    if how == _MODULE:
        # A module (`-m pkg.tool`): found inside the workdir (in the folder a `cd` took the
        # command to, which is first on its sys.path), or installed.
        if not folder:
            return _WordFiles(tuple(module_files(word, workdir)))
        root = (workdir / folder).resolve()
        found = _inside(root, workdir) and root.is_dir()
        return _WordFiles(tuple(module_files(word, root))) if found else _NO_FILES
    candidates = [word]
    if word.startswith("-") and "=" in word:
        candidates.append(word.partition("=")[2])
    if folder:
        candidates = [
            os.path.join(folder, os.path.expanduser(c))  # noqa: PTH111, PTH118 (words)
            for c in candidates
            if c and not c.startswith("-")
        ]
    candidates = [c for c in candidates if _may_exist(c, workdir)]
    if not candidates:
        return _NO_FILES
    inside: list[Path] = []
    out: list[Path] = []
    absolute: list[Path] = []
    for candidate in candidates:
        path = file_in(candidate, workdir)
        if path is not None:
            inside.append(path)
        if not outside:
            continue
        place = _place_outside(candidate, workdir)
        if place is None or in_environment(place.parent, workdir):
            # `.venv/bin/python`: a link into this machine's interpreter, in an
            # environment made in the workdir, is the machine's, not the spec's.
            continue
        # `~user` with no home is left as typed, relative: Path.expanduser raised there.
        if os.path.isabs(os.path.expanduser(candidate)):  # noqa: PTH111, PTH117
            if how != _PROGRAM:
                absolute.append(place)
        else:
            out.append(place)
    return _WordFiles(tuple(inside), tuple(out), tuple(absolute))


def _programs_at(words: Sequence[str]) -> frozenset[int]:
    """Where a command's programs are among its words: each wrapper's name and the program
    past them and its `NAME=value` words (`A=1 timeout 60 ./tool`: 1 and 3); the first
    other word where the wrappers' words are not sure (plan/wrappers.py); none where
    every word is an assignment."""
    start = next((i for i, word in enumerate(words) if not is_assignment(word)), len(words))
    found = wrapped(words[start:])
    if found is None:
        return frozenset({start}) if start < len(words) else frozenset()
    at = {start + begin for begin, _ in found.spans}
    if start + found.program < len(words):
        at.add(start + found.program)
    return frozenset(at)


class _Found:
    """What a workdir's attempts name by their words and `files`, gathered before the
    imports and scripts are followed (the closure of all of them is the union of each
    one's: gathered first, followed once). Each word is looked up once."""

    def __init__(self) -> None:
        self.inside: dict[Path, None] = {}
        self.outside: dict[Path, None] = {}
        self.absolute: dict[Path, None] = {}
        self.listed: dict[Path, None] = {}  # what the spec's `files` name
        self.programs: dict[Path, None] = {}  # the files a command runs
        self.followed = False  # whether a command's words count outside the workdir
        self._jobs: set[object] = set()
        self._words: dict[tuple[str, int, str], _WordFiles] = {}

    def gather(self, plan: AttemptPlan, workdir: Path, *, outside: bool = True) -> None:
        """Add what `plan` names in `workdir` (its resolved workdir); `outside=False`: the
        workdir's files alone."""
        if isinstance(plan.job, Command):
            job: object = plan.job.argv
        else:
            job = tuple(workload_modules(plan.workload or {}))
        if (job, plan.files) in self._jobs:
            return
        self._jobs.add((job, plan.files))
        if isinstance(plan.job, Command):
            self.followed = self.followed or outside
            # The command's program: its first word but for `NAME=value` ones, `cd`s and
            # wrappers (`timeout 60 ./tool`, whose `timeout` is this machine's program too).
            program = True
            for folder, words in located_words(command_words(plan.job)):
                programs = _programs_at(words) if program else frozenset[int]()
                for index, word in enumerate(words):
                    how = (
                        _MODULE
                        if index > 0 and words[index - 1] == "-m"
                        else _PROGRAM
                        if index in programs
                        else _PLAIN
                    )
                    got = self._word(word, how, workdir, outside, folder)
                    if how == _PROGRAM:
                        program = False
                        self.programs.update(dict.fromkeys([*got.inside, *got.outside]))
        else:
            for module in job if isinstance(job, tuple) else ():
                self.inside.update(dict.fromkeys(module_files(str(module), workdir)))
        for name in plan.files:
            # A workload's `files` count in its workdir only, as a bundle carries them.
            got = self._word(name, _PLAIN, workdir, outside and isinstance(plan.job, Command), "")
            self.listed.update(dict.fromkeys([*got.inside, *got.outside]))

    def _word(self, word: str, how: int, workdir: Path, outside: bool, folder: str) -> _WordFiles:
        key = (word, how if outside else -1 - how, folder)
        got = self._words.get(key)
        if got is None:
            got = self._words[key] = _word_files(word, how, workdir, outside, folder)
            self.inside.update(dict.fromkeys(got.inside))
            self.outside.update(dict.fromkeys(got.outside))
            self.absolute.update(dict.fromkeys(got.absolute))
        return got

    def closed_inside(self, workdir: Path) -> list[Path]:
        """The workdir's files named, with what their shell scripts name and the modules
        their Python files import, transitively."""
        found = dict(self.inside)
        for path in script_files(list(found), workdir):
            found[path] = None
        return local_imports(list(found), workdir)

    def carried(self, workdir: Path) -> CarriedFiles:
        """What a bundle carries of what was gathered (see CarriedFiles)."""
        inside = tuple(
            sorted(p.relative_to(workdir).as_posix() for p in self.closed_inside(workdir))
        )
        if not self.followed:
            return CarriedFiles(inside)
        outside = dict(self.outside)
        for script in [p for p in outside if p.suffix == ".py"]:
            real = script.resolve()
            for found in local_imports([real], real.parent):
                if found != real and not _inside(found, workdir):
                    outside.setdefault(found, None)
        return CarriedFiles(inside, tuple(sorted(outside)), tuple(sorted(self.absolute)))


def _place_outside(word: str, workdir: Path) -> Path | None:
    """Where `word` names a file outside the workdir: `..` taken by name; else None."""
    if not word or word.startswith("-") or "\0" in word or len(word) > 4096:
        return None
    try:
        place = Path(os.path.normpath(program_file(word, workdir)))
        if not place.is_file() or _inside(place, workdir):
            return None
    except (OSError, RuntimeError, ValueError):
        return None
    return place


# Where, under a Python environment's or install's folder (its prefix), its installed
# distributions lie: a venv's or a prefix's `lib/python3.X/site-packages`, Windows'
# `Lib/site-packages`, and Debian's and Ubuntu's system Python's `lib/python3/dist-packages`
# (apt's) and `local/lib/python3.X/dist-packages` (pip's as root). The one list: capture's
# console scripts by path and a ticket's environments' `bin` read it (`declared_script`).
SITE_PACKAGES = (
    "lib/python3*/site-packages",
    "Lib/site-packages",
    "lib/python3*/dist-packages",
    "local/lib/python3*/dist-packages",
)


def is_environment_folder(folder: Path) -> bool:
    """Whether `folder` is a Python environment's own, the one its `bin` is in: a virtual
    environment's (its pyvenv.cfg file) or a conda environment's or install's (its
    conda-meta folder). The one rule: the workdir's environments, the runners' other
    environments on PATH and a ticket's console scripts ask it."""
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def declared_script(program: Path) -> bool:
    """Whether `program`, in the `bin` (Windows' `Scripts`) of a Python environment here, is
    one of its console scripts: a distribution installed there (its `site-packages`,
    Debian's `dist-packages`: SITE_PACKAGES, read, not run) declares a console or GUI script
    by its name (`torchrun.exe` by `torchrun`), or installed it (its RECORD lists it: a
    wheel's own scripts, ruff's and uv's binaries, declare no entry point).

    The one rule of an environment's console script, which a live capture's command by
    path and a ticket's both ask: such a program is written by its name, which the run's
    environment provides, where a script written into a `bin` by hand (`~/.venv/bin/train`)
    keeps its path, since an environment built of the spec's packages would lack it. A
    ticket's reader judged by the folder alone and wrote that `train` by its name, where a
    live capture of the same command kept its path."""
    from importlib import metadata

    environment = program.parent.parent
    name = program.name[:-4] if program.name.lower().endswith(".exe") else program.name
    try:
        sites = [str(site) for pattern in SITE_PACKAGES for site in environment.glob(pattern)]
        real = os.path.realpath(program)
        for dist in metadata.distributions(path=sites):
            if any(
                entry.name == name and entry.group in ("console_scripts", "gui_scripts")
                for entry in dist.entry_points
            ) or any(
                file.name == program.name and os.path.realpath(str(dist.locate_file(file))) == real
                for file in dist.files or ()
            ):
                return True
    except (OSError, ValueError):
        pass
    return False


def in_environment(folder: Path, workdir: Path) -> bool:
    """Whether `folder` lies in a Python environment made inside the workdir (a `venv/`
    with its pyvenv.cfg, a conda env with its conda-meta/): its files are the
    interpreter's, not the program's."""
    folder = Path(os.path.normpath(folder))
    while folder != workdir and folder.is_relative_to(workdir):
        if is_environment_folder(folder):
            return True
        folder = folder.parent
    return False


def environments(workdir: Path) -> list[Path]:
    """The Python environments made in the workdir's own folder (`.venv/`, `env/`)."""
    try:
        entries = list(workdir.iterdir())
    except OSError:
        return []
    return sorted(e for e in entries if e.is_dir() and is_environment_folder(e))


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


def file_in(word: str, workdir: Path) -> Path | None:
    """The workdir's file a word names (resolved, relative to `workdir` unless absolute),
    or None: not a file, outside the workdir, a flag, or no name at all."""
    if not word or word.startswith("-") or "\0" in word or len(word) > 4096:
        return None
    try:
        path = program_file(word, workdir).resolve()
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
    """Absolute module names a Python file imports (relative imports resolved against it);
    none where it could not be read (`pyimports.read_imports`): no local module to follow."""
    # Imported at the first Python file: a run of a command that names none never reads
    # one (issue 30, item 4).
    from reprospec.plan.pyimports import read_imports

    read = read_imports(path)
    return list(read.modules) if read is not None else []
