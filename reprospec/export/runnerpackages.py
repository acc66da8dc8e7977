"""Which of the runner image's packages (torch, numpy) a materialized cell's image installs.

The docker runner's image holds torch and numpy for every cell (`reprospec docker
setup`), and `materialize` rebuilt that image from a public base for every bundle: a
pure-Python deadlock's bundle downloaded torch (the CUDA build on x86_64 PyPI, gigabytes)
to run a program that never imports it. A bundle's command cell runs its command alone
(no harness: `container.attempt_argv`); a workload cell runs the harness, which trains
with torch. Leaving one out is safe only where the cell provably cannot need it, since a
bundle that lacked torch would fail elsewhere on an import (or pip would pick whatever
torch another package asks for, not the one the cell ran with), not on the bug. So the
image keeps both unless the cell's program is, as far as the files the bundle carries
show (`carry.workdir_files`, the one rule; read with `ast`, never run), the standard
library and its own carried modules, with torch and numpy (whose needs are known) only
where it imports them. It keeps both where:

- the cell's own `environment.packages` name anything: what they import is not known
  offline (torchvision needs a torch, and pip would pick its newest);
- the program imports any other module, or one by a run-time name (`__import__`,
  `importlib.import_module`);
- a file of it could not be read as Python (over the parse limit, a syntax the host's
  Python lacks): what it imports is not known, never taken as nothing;
- none of its Python is in sight (a binary, a `pytest` naming no test file);
- a shell script it carries starts Python it cannot follow (`scriptpython`: from standard
  input, by a name made at run time, a file not carried as Python). The Python a script
  starts is read as the command's own: `-c` code with the one reader of imports, `-m` by
  its module, a file as the carried Python it is; words torch or numpy in its text, which
  decided before, say nothing. The cell's command is read by that same reader (its
  program past its wrappers, `timeout 60 torchrun app.py` as `torchrun app.py`), and what
  it cannot follow there keeps both too.

A console script other than torch's own (`torchrun`) comes from `environment.packages`:
the runner image has no other, so such a cell keeps both by the first rule.

The torch a bundle installs is the build that ran (`recorded_build`): where the cells'
interpreter (`materialize --python`, else reprospec's own: the local runner's) has the
runner's torch as a PyTorch index's build, `2.13.0+cpu`, the image pins
`torch==2.13.0+cpu` from that index. `torch==2.13.0` from PyPI is the CUDA build on
x86_64: a CPU run's bundle pulled gigabytes of CUDA libraries to rerun it, and failed on a
full disk.
"""

from __future__ import annotations

import dataclasses
import sys
from importlib import metadata
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan
from reprospec.core.lazyre import Lazy
from reprospec.core.sections import Command
from reprospec.environment.packages import requirement_name, requirement_names
from reprospec.export.carry import workdir_files
from reprospec.export.scriptpython import command_python, script_python
from reprospec.plan.pyimports import Imports, read_imports
from reprospec.plan.shellwords import MAX_PARSE_BYTES, is_shell_script
from reprospec.runners.docker.image import RUNNER_PACKAGES

# The runner's packages by the top-level module a program imports them by. torch brings
# numpy: without it torch warns at every import (the runner image's reason, its Dockerfile).
_MODULES = {"torch": ("torch", "numpy"), "numpy": ("numpy",)}
# The host's standard library's top-level modules (`__future__`, `threading`, `os`...).
_STDLIB = frozenset(sys.stdlib_module_names)
# PyTorch's own indexes, one per build, named as the build's local version names it:
# `2.13.0+cpu` is in .../whl/cpu, `+cu121` in .../whl/cu121, `+rocm6.2` in .../whl/rocm6.2.
TORCH_INDEX = "https://download.pytorch.org/whl/"
_TORCH_BUILD = Lazy(r"cpu|cu\d+|rocm\d+(\.\d+)*")


@frozen
class RunnerPackages:
    """The runner's requirements a cell's image installs, and why (for the README);
    `index`, the PyTorch index its torch pin comes from (`recorded_build`), else None."""

    packages: tuple[str, ...]
    why: str
    index: str | None = None


def installed_torch(python: str | None = None) -> str | None:
    """The version of torch the interpreter the cells ran with has (`2.13.0+cpu`); None
    where it has none. reprospec's own (the local runner's default) is read from its
    metadata in this process; another (`materialize --python`) from its own, in a quick
    child that never imports torch (environment/probe.py), since its site-packages are not
    this process's."""
    if python is None or python == sys.executable:
        try:
            return metadata.version("torch")
        except metadata.PackageNotFoundError:
            return None
    from reprospec.environment.probe import probe_environment

    packages = probe_environment(python, with_torch=False).get("packages")
    version = packages.get("torch") if isinstance(packages, dict) else None
    return version if isinstance(version, str) else None


def recorded_build(runner: RunnerPackages, version: str | None) -> RunnerPackages:
    """`runner` with its torch pin made the build `version` is, where that is the pinned
    release as a PyTorch index's build: `torch==2.13.0` and `2.13.0+cpu` give
    `torch==2.13.0+cpu` from TORCH_INDEX + `cpu`. Any other `version` (none, another
    release, a build of no PyTorch index) leaves `runner` as it is."""
    from packaging.version import InvalidVersion, Version

    try:
        seen = Version(version) if version is not None else None
    except InvalidVersion:
        return runner
    if seen is None or seen.local is None or not _TORCH_BUILD.fullmatch(seen.local):
        return runner
    pins = [p for p in runner.packages if requirement_name(p) == "torch"]
    if pins != [f"torch=={seen.public}"]:
        return runner
    build = f"torch=={seen}"
    packages = tuple(build if p == pins[0] else p for p in runner.packages)
    return dataclasses.replace(
        runner,
        packages=packages,
        why=f"{runner.why}; torch as the {seen.local} build that ran, from PyTorch's index",
        index=TORCH_INDEX + seen.local,
    )


def runner_packages(plan: AttemptPlan) -> RunnerPackages:
    """Of RUNNER_PACKAGES, those `plan`'s cell needs (see the module docstring)."""
    if plan.workload is not None or not isinstance(plan.job, Command):
        return RunnerPackages(RUNNER_PACKAGES, "the harness runs the workload on torch")
    if plan.environment.packages:
        # (Not named here: a requirement may be a URL with a token in it.)
        return RunnerPackages(
            RUNNER_PACKAGES,
            "the cell's own `environment.packages` may need them, which is not known "
            "offline: the image keeps the torch the cell ran with",
        )
    carried = workdir_files(plan)
    files = (*carried.files, *carried.outside)
    # The command's own Python (`-c` code, `-m` module, `torchrun`), read as a script's line
    # is: its program past its wrappers (`timeout 60 torchrun app.py` runs torch), not by
    # its first word, nor by any word after a `-c`/`-m` (`numactl -m 0` is no module).
    command = command_python(plan.job.argv, carried.workdir, files)
    if command.unsure is not None:
        return RunnerPackages(
            RUNNER_PACKAGES, f"its command {command.unsure}, so what it imports is not known"
        )
    reads: list[tuple[str, Imports | None]] = [
        (f"its command's {at}", read) for at, read in command.reads
    ]  # (where, what it imports; None: not read)
    imported: set[str] = set(command.modules)  # top-level modules, other than a source's
    own: set[str] = set()  # the names its carried modules are imported by
    for path in files:
        if path.suffix == ".py":
            reads.append((_shown(path, carried.workdir), read_imports(path)))
            own.update(_module_names(path, carried.workdir))
        elif path.suffix in (".sh", ".bash") or is_shell_script(path):
            where = _shown(path, carried.workdir)
            script = script_python(path, carried.workdir, files)
            if script.unsure is not None:
                return RunnerPackages(
                    RUNNER_PACKAGES, f"{where} {script.unsure}, so what it imports is not known"
                )
            reads.extend((f"{where}'s {at}", read) for at, read in script.reads)
            imported.update(script.modules)
    if not reads:
        return RunnerPackages(
            RUNNER_PACKAGES,
            "none of the program's Python is among the files it names, so what it imports "
            "is not known",
        )
    for where, read in reads:
        if read is None:
            return RunnerPackages(
                RUNNER_PACKAGES,
                f"{where} could not be read as Python (over {MAX_PARSE_BYTES >> 20} MiB, or "
                "a syntax this Python lacks), so what it imports is not known",
            )
        if read.dynamic:
            return RunnerPackages(
                RUNNER_PACKAGES,
                f"{where} imports a module by a name given at run time (`__import__`, "
                "`importlib.import_module`), so what it imports is not known",
            )
        imported.update(read.top)
    other = sorted(m for m in imported - own if m not in _MODULES and m not in _STDLIB)
    if other:
        return RunnerPackages(
            RUNNER_PACKAGES,
            f"its program imports {', '.join(other)}, neither the standard library nor its "
            "own files, whose needs are not known offline",
        )
    wanted = {name for module in imported for name in _MODULES.get(module, ())}
    packages = tuple(p for p in RUNNER_PACKAGES if requirement_name(p) in wanted)
    left = requirement_names([p for p in RUNNER_PACKAGES if p not in packages])
    if not left:
        return RunnerPackages(packages, "its program uses torch")
    uses = (
        "the standard library, its own files and numpy"
        if packages
        else ("the standard library and its own files")
    )
    return RunnerPackages(packages, f"its program imports only {uses}, not {' or '.join(left)}")


def _shown(path: Path, workdir: Path) -> str:
    """`path` as the README names it: relative to the workdir where it is inside."""
    try:
        return str(path.relative_to(workdir))
    except ValueError:
        return str(path)


def _module_names(path: Path, workdir: Path) -> set[str]:
    """The top-level names a carried Python file may be imported by: its own (a script's
    folder is first on sys.path) and each folder's between it and the workdir (a package)."""
    names = {path.stem}
    folder = path.parent
    while folder != workdir and folder != folder.parent and workdir in folder.parents:
        names.add(folder.name)
        folder = folder.parent
    return names
