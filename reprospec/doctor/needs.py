"""What a spec needs of the machine, and the checks of it: devices, /dev/shm, memory, packages.

`needs_of` takes the most demanding of the spec's resolved cells (planned by the
engine itself, nothing run); the interpreter and packages are held against the spec by
the run's own rule (environment/captured.py `environment_mismatches`; on the local runner
the packages are asked of the interpreter itself, as its check asks them: in each cell's
`environment.env` and workdir, extras included).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.core.runoptions import parse_gpu_list, slots_said
from reprospec.core.sections import Environment
from reprospec.core.units import format_size
from reprospec.doctor.check import (
    NO_GPU,
    Check,
    Status,
    seen_devices,
    unseen_ids,
    unseen_said,
)
from reprospec.environment.captured import (
    Captured,
    environment_mismatches,
    section,
    whole,
)

MIB = 2**20
# Measured: under about 650 MB of address space `import torch` itself fails (RLIMIT_AS).
TORCH_IMPORT_FLOOR = 650 * MIB
ITEM_BYTES = {
    "float64": 8,
    "int64": 8,
    "long": 8,
    "float32": 4,
    "float": 4,
    "int32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
}


@frozen
class CellPackages:
    """One `environment.packages` list of a spec and the cells that name it: a matrix over
    `six==${{ matrix.six }}` has one per version, each checked on its own."""

    packages: tuple[str, ...]
    cells: tuple[str, ...] = ()
    # What the cells' check sees beside the list, as the local runner's check is asked it:
    # their `environment.env` variables that change which distributions the interpreter
    # sees (packages.site_variables: PYTHONPATH, PYTHONUSERBASE, ...), and their workdir
    # ("": doctor's own folder).
    env: tuple[tuple[str, str], ...] = ()
    workdir: str = ""
    # Whether their image is built from an environment.dockerfile (the docker runner
    # installs nothing into it, and checks the list against it).
    dockerfile: bool = False


@frozen
class Needs:
    """What a spec asks of the machine (the most demanding of its cells)."""

    device: str = "cpu"
    gpus: int = 0  # environment.gpus: the GPUs a cell needs visible, or it is an infra-error
    num_workers: int = 0
    prefetch_factor: int = 2
    batch_bytes: int | None = None
    shm_size: int | None = None
    memory: int | None = None
    python: str | None = None
    # Each distinct `environment.python` of the cells (None: a cell that names none) and the
    # cells of it: a matrix over it has several, of which `python` is only the last cell's,
    # and doctor judged that one alone (none given: `python` is every cell's).
    pythons: tuple[tuple[str | None, tuple[str, ...]], ...] = ()
    packages: tuple[str, ...] = ()  # every cell's, once each (what the capture looks for)
    # Each distinct list and its cells; none given: `packages` is every cell's list.
    package_sets: tuple[CellPackages, ...] = ()
    shm_refused: str | None = None  # why a private /dev/shm cannot be mounted here, if it cannot
    # Whether any cell imports torch: a workload (the harness runs on torch), or torch among
    # its packages. A spec of commands only needs none: its torch checks are not failures.
    torch: bool = True
    # Whether any cell may use torch's numpy bridge: a command, or a workload with an
    # entrypoint (the user's code). The harness's builtin models and datasets never do.
    numpy: bool = True
    # Whether every cell is a workload, whose `data.loader` says its DataLoader workers
    # (`num_workers`); a command's are unknown, as where no spec is given.
    workers_known: bool = False
    # Whether any cell is a workload: it runs reprospec's harness in the interpreter, which
    # an interpreter the capture (the harness too) cannot run in cannot run either.
    workload: bool = False
    # The workload cells that name no packages (their ids; "" where none were given): the
    # venv runner's cell venv holds only its packages, so the harness finds no torch there,
    # though the interpreter it is built on has one.
    torchless: tuple[str, ...] = ()
    # The workload cells whose packages name no torch: one of them may require it
    # (torchvision, lightning, a folder's or a URL's distribution), which is not resolved here.
    torch_unnamed: tuple[str, ...] = ()
    # How many cells the spec has (0: a Needs made by hand): what a check's cells are counted
    # against, never `pythons`, which doctor clears for the venv runner's checked python.
    cells: int = 0
    # The runner it will run on (`doctor --runner`): `local` runs the checked interpreter as
    # it is; `venv` and `docker` install the spec's packages themselves.
    runner: str = "local"
    # Whether the image checked is built from an environment.dockerfile (`doctor SPEC
    # --runner docker`, per image), into which the docker runner installs nothing.
    dockerfile: bool = False

    @property
    def cell_packages(self) -> tuple[CellPackages, ...]:
        """Each cell's packages list: `package_sets`, or where none was given (a Needs made
        by hand, not by `needs_of`), `packages` as every cell's one list."""
        return self.package_sets or (CellPackages(self.packages),)


# The /dev/shm a container gets where no --shm-size is given (docker's default).
DOCKER_DEFAULT_SHM = 64 * MIB


def check_shm(env: Captured, needs: Needs) -> Check:
    shm = section(env, "shm")
    captured = shm.get("size")
    if needs.runner == "docker" and needs.shm_size is None:
        # The container's, not this machine's: doctor said the host's 23.5 GiB where the
        # attempts got docker's 64 MiB.
        captured, shm = DOCKER_DEFAULT_SHM, {}
    size = (
        needs.shm_size
        if needs.shm_size is not None and needs.shm_refused is None
        else whole(captured, 0)
        if captured is not None
        else None
    )
    if not shm.get("present", True) and needs.shm_size is None:
        return Check(
            "shm",
            "fail",
            "/dev/shm is missing: DataLoader workers cannot share tensors",
            "mount a tmpfs on /dev/shm (docker: --shm-size=2g or --ipc=host)",
        )
    if size is None:
        return Check("shm", "skipped", "/dev/shm size unknown")
    human = format_size(size)
    raise_shm = (
        "the spec's environment.shm_size: 2g, which the docker runner gives the container"
        if needs.runner == "docker"
        else "docker: --shm-size=2g or --ipc=host"
    )
    where = (
        "the spec's shm_size"
        if needs.shm_size is not None and needs.shm_refused is None
        else "the container's /dev/shm (docker's default; the spec sets no shm_size)"
        if needs.runner == "docker"
        else "/dev/shm"
    )
    if needs.num_workers == 0:
        # Said of a machine or of commands, whose workers are unknown; a spec of workloads
        # that start none passes nothing through /dev/shm (it warned of an entrypoint
        # dataset's batches with num_workers: 0).
        if not needs.workers_known and size < 1024 * MIB:
            return Check(
                "shm",
                "warn",
                f"{where} is {human}: DataLoader workers passing big batches "
                "will run out of shared memory",
                raise_shm,
            )
        return Check(
            "shm",
            "pass",
            f"{where} is {human}"
            + ("; the spec uses no DataLoader workers" if needs.workers_known else ""),
        )
    in_flight = needs.num_workers * needs.prefetch_factor
    if needs.batch_bytes is None:
        status: Status = "warn" if size < 1024 * MIB else "pass"
        return Check(
            "shm",
            status,
            f"{where} is {human} for {needs.num_workers} DataLoader workers",
            "" if status == "pass" else f"give it >= 1g ({raise_shm})",
        )
    need = in_flight * needs.batch_bytes
    detail = (
        f"{where} is {human}; {needs.num_workers} workers x prefetch {needs.prefetch_factor} "
        f"batches of {format_size(needs.batch_bytes)} need about {format_size(need)}"
    )
    if size < need:
        return Check(
            "shm",
            "fail",
            detail + ": expect 'unable to allocate shared memory(shm)' "
            "(or SIGBUS in workers on older torch)",
            f"give /dev/shm >= {format_size(2 * need)}, or fewer workers",
        )
    if size < 2 * need:
        return Check(
            "shm", "warn", detail + ": little headroom", f"give /dev/shm >= {format_size(2 * need)}"
        )
    return Check("shm", "pass", detail)


def check_device(env: Captured, needs: Needs, visible_devices: str | None = None) -> Check:
    """The spec's device and GPUs against this machine. `visible_devices`: a set
    CUDA_VISIBLE_DEVICES, whose ids `run` hands out as the GPU slots whatever the machine
    has (pipeline/gpus.py): a cell of `gpus: 1` runs under `CUDA_VISIBLE_DEVICES=0,1` on
    a machine without a GPU, where doctor said it would end infra-error."""
    from reprospec.core.words import plural, plural_verb  # not read to import this module

    visible = seen_devices(env)
    if visible_devices is not None and needs.gpus:
        ids = parse_gpu_list(visible_devices)
        shown = slots_said(visible_devices)
        if needs.gpus > len(ids):
            return Check(
                "device",
                "fail",
                f"the spec needs {plural(needs.gpus, 'GPU')} (environment.gpus) but run has "
                f"{plural(len(ids), 'GPU slot')} ({shown}): its cells will end as infra-error",
                "give CUDA_VISIBLE_DEVICES enough ids, or lower environment.gpus",
            )
        # run hands out these ids whatever this machine has: its cells run, never the
        # machine's count below (which failed CVD=0,1,2,3 on 2 GPUs for gpus: 3 as
        # "will end as infra-error" beside a passing gpu-slots check).
        if not visible:
            return Check(
                "device",
                "warn",
                f"the spec needs {plural(needs.gpus, 'GPU')}: run hands "
                f"its cells the ids of {shown}, but {NO_GPU} is seen here: they run, and a "
                "program that uses CUDA finds no GPU",
                "run it where these ids name GPUs",
            )
        unseen = unseen_ids(env, ids)
        if unseen:
            return Check(
                "device",
                "warn",
                f"the spec needs {plural(needs.gpus, 'GPU')}: run hands its cells the ids "
                f"of {shown}, but {unseen_said(unseen)}: a cell handed one runs, and its "
                "program finds no GPU behind it",
                "give CUDA_VISIBLE_DEVICES the ids of this machine's GPUs (nvidia-smi -L)",
            )
        if visible < needs.gpus:
            return Check(
                "device",
                "warn",
                f"the spec needs {plural(needs.gpus, 'GPU')}: run hands its cells the ids "
                f"of {shown}, but {plural_verb(visible, 'CUDA device', 'is', 'are')} seen here: "
                "they run, and a program finds fewer GPUs than its ids",
                "run it where these ids name GPUs",
            )
        return Check(
            "device",
            "pass",
            f"the spec needs {plural(needs.gpus, 'GPU')}: run hands its cells the ids of {shown}",
        )
    if needs.gpus > visible:
        # The run refuses such a cell (`needs 1 GPU, none visible`): doctor passed it.
        have = f"{visible} visible" if visible else NO_GPU
        return Check(
            "device",
            "fail",
            f"the spec needs {plural(needs.gpus, 'GPU')} "
            f"(environment.gpus) but this machine has {have}: its cells will end as infra-error",
            "run it on a machine with enough GPUs, or lower environment.gpus",
        )
    if not needs.device.startswith("cuda"):
        return Check("device", "pass", f"the spec runs on {needs.device}")
    if not visible:
        return Check(
            "device",
            "fail",
            f"the spec asks for {needs.device} but this machine has {NO_GPU}: "
            "its cells will end as infra-error",
            "run it on a GPU machine, or with device: auto",
        )
    return Check("device", "pass", f"the spec asks for {needs.device}; a CUDA device is visible")


def check_memory(env: Captured, needs: Needs) -> Check:
    """The spec's `environment.memory` as the runner applies it. The ~650 MB floor is
    torch's and RLIMIT_AS's: a spec of commands only (`needs.torch` false) runs under less,
    and the docker runner's limit is the container's (a cgroup counting what is used, not
    address space), so neither fails on it (`doctor` failed a 100m spec that ran and
    passed)."""
    if needs.memory is None:
        return Check("memory", "skipped", "the spec sets no memory limit")
    total = whole(section(env, "memory").get("total"), 0)
    docker = needs.runner == "docker"
    if needs.memory < TORCH_IMPORT_FLOOR and needs.torch and not docker:
        return Check(
            "memory",
            "fail",
            f"memory {format_size(needs.memory)} is below ~650 MB of address space: "
            "`import torch` itself fails under RLIMIT_AS",
            "give it >= 1g",
        )
    if total and needs.memory > total:
        return Check(
            "memory",
            "warn",
            f"memory {format_size(needs.memory)} exceeds this machine's {format_size(total)}",
            "lower it, or expect the kernel's OOM killer rather than a clean allocation failure",
        )
    applied = (
        "the container's memory limit: past it the kernel's OOM killer ends the attempt"
        if docker
        else "RLIMIT_AS, per process"
    )
    return Check("memory", "pass", f"memory limit {format_size(needs.memory)} ({applied})")


def check_limits(needs: Needs) -> Check:
    if needs.shm_size is None:
        return Check("limits", "skipped", "the spec sets no shm_size")
    if needs.shm_refused:
        return Check(
            "limits",
            "warn",
            f"shm_size cannot be applied here: {needs.shm_refused}",
            "run as root (private mount namespace) or with --runner docker",
        )
    return Check(
        "limits",
        "pass",
        f"a private {format_size(needs.shm_size)} /dev/shm can be mounted for each attempt",
    )


def check_spec_environment(env: Captured, needs: Needs) -> Check:
    """The spec's `python` and `packages` against the checked interpreter.

    On the local runner a package the interpreter lacks (or has at another version) makes
    every cell that names it infra-error, never run: that is a failure of what the spec
    needs. The venv and docker runners install the packages, so there it is only said.
    Another python version is a warning: a run notes it and runs.
    """
    if needs.runner == "venv" and (needs.torchless or needs.torch_unnamed):
        return _torchless(env, needs, _spec_environment(env, needs))
    return _spec_environment(env, needs)


def _spec_environment(env: Captured, needs: Needs) -> Check:
    """`check_spec_environment` but for the venv runner's cells without torch."""
    from reprospec.core.words import cells_not_run, names_them  # (not read to import this module)

    if needs.python is None and not needs.packages:
        return _NAMES_NONE
    python = _python_problems(env, needs)
    packages, refused = _package_problems(env, needs)
    if refused:  # what the runner refuses whatever the interpreter has
        return _refused_check(needs, refused, also=packages + python)
    shadowed = _shadowed(captured=env, needs=needs) if needs.runner == "venv" else []
    if shadowed:
        return Check(
            "spec-environment",
            "fail",
            "; ".join(shadowed)
            + ": the venv runner's attempts inherit PYTHONPATH, so "
            + cells_not_run(that=names_them(shadowed)),
            "unset PYTHONPATH for the run, or leave that folder out of it",
        )
    if packages and needs.runner == "local":
        return Check(
            "spec-environment",
            "fail",
            "; ".join(packages)
            + f": on the local runner {cells_not_run(that=names_them(packages))}"
            + (f" (and {'; '.join(python)})" if python else ""),
            "install them into this interpreter, run with --python PATH of one that has them, "
            "or with --runner venv (it installs them; `doctor --runner venv` checks for that)",
        )
    installed = f" (the {needs.runner} runner installs the spec's packages)" if packages else ""
    if python:
        return Check(
            "spec-environment",
            "warn",
            "; ".join(python) + installed,
            _PYTHON_TODO.get(
                needs.runner,
                "run with --python PATH of a matching interpreter, or with --runner venv, "
                "which builds each cell's venv on the spec's python where one is here",
            ),
        )
    if packages:
        return Check(
            "spec-environment",
            "pass",
            f"the {needs.runner} runner installs the spec's packages (this interpreter: "
            f"{'; '.join(packages)})",
        )
    from reprospec.environment.packages import requirement_name

    unnamed = [entry for entry in needs.packages if requirement_name(entry) is None]
    if unnamed and needs.runner != "local":
        # A folder or a URL names no distribution to compare: it said "python and packages
        # match" of an interpreter that was never asked for `./mypkg` (the venv installs it).
        return Check(
            "spec-environment",
            "pass",
            f"the {needs.runner} runner installs the spec's packages ({', '.join(unnamed)}: "
            "no distribution named, not compared with this interpreter)",
        )
    return Check("spec-environment", "pass", "python and packages match the spec's environment")


# What to do of another python version, by runner (the local runner's: the default). The
# docker runner refuses --python (its cells run the image's python3): it was advised all
# the same.
_PYTHON_TODO = {
    "venv": "run with --python PATH of a matching interpreter",
    "docker": "name an image of the spec's python (environment.image or "
    "environment.dockerfile), or run with --runner venv, which builds each cell's venv on "
    "the spec's python where one is here",
}


def check_refused_packages(needs: Needs, why: str) -> Check:
    """`spec-environment` where no interpreter of the runner's is here to check (`doctor
    SPEC --runner docker`, the image not built yet): what the runner refuses of any
    interpreter (`_refused`: a path of this machine in `packages`) fails as
    `check_spec_environment` says it; the rest is skipped, saying `why`. It described this
    machine's interpreter, which the docker runner never uses (`the interpreter is python
    3.11.7; the spec names 3.10`)."""
    if needs.python is None and not needs.packages:
        return _NAMES_NONE
    refused = _refusals(needs)
    return _refused_check(needs, refused) if refused else Check("spec-environment", "skipped", why)


_NAMES_NONE = Check("spec-environment", "skipped", "the spec names no python version or packages")


def _refused_check(needs: Needs, refused: Sequence[str], also: Sequence[str] = ()) -> Check:
    """`spec-environment` failed by what the runner refuses of any interpreter (`refused`),
    with what else the checked interpreter lacks (`also`): the one wording of
    `check_spec_environment` and `check_refused_packages`."""
    from reprospec.core.words import cells_not_run, names_them

    return Check(
        "spec-environment",
        "fail",
        "; ".join(refused)
        + f": on the {needs.runner} runner {cells_not_run(that=names_them(refused))}"
        + (f" (and {'; '.join(also)})" if also else ""),
        _REFUSED_TODO.get(needs.runner, ""),
    )


def _shadowed(captured: Captured, needs: Needs) -> list[str]:
    """What `PYTHONPATH` brings of each cell's packages at a version the cell does not allow,
    in the run's own words (`packaging 26.4 is installed (the cell needs packaging==21.3),
    from /src/.venv/lib/python3.11/site-packages on PYTHONPATH, which comes first`). The
    venv runner builds the packages into each cell's venv, but its attempts inherit this
    shell's PYTHONPATH (or take the cell's `environment.env` one), whose folders Python puts
    first: the run's check then refuses every such cell, where doctor had said the runner
    installs them. Asked of the run's own probe without `site` (`probe_installed`), in the
    cells' env and workdir: the first folder holding a name wins, its metadata read. It runs
    the checked interpreter (`captured`'s, the one the venv runner builds on: `--python`, else the
    spec's python found here), whose markers a requirement's (`; python_version < "3.11"`)
    are judged by, as in the cell's venv; nothing where the capture names none
    (`_checked_python`)."""
    from dataclasses import replace

    from reprospec.environment.packages import (
        mismatches,
        probe_installed,
        requirement_name,
        requirement_names,
    )
    from reprospec.errors import InfraError

    python = _checked_python(captured)
    if python is None:
        return []
    sets = needs.cell_packages
    found: dict[str, list[str]] = {}
    for env, cwd, these in _by_env_and_workdir(sets):
        if not env.get("PYTHONPATH"):
            continue
        wanted = list(dict.fromkeys(r for each in these for r in each.packages))
        if not requirement_names(wanted):
            continue  # no distribution named (a spec of `python:` alone): nothing to ask
        try:
            seen = probe_installed(python, wanted, env=env, cwd=cwd, site=False)
        except InfraError:
            continue  # the interpreter, stdlib only: nothing said of the spec
        # Versions only: what an extra requires is the venv's to hold.
        seen = replace(seen, requires={})
        for each in these:
            named = [r for r in each.packages if requirement_name(r) in seen.pythonpath]
            for problem in mismatches(named, seen):
                found.setdefault(problem, []).extend(each.cells)
    return _named(found, sum(len(each.cells) for each in sets))


# What to do of entries the runner refuses (`_refused`), by runner.
_REFUSED_TODO = {
    "local": "name what each installs (mypkg @ file:///path/to/mypkg), which the "
    "interpreter can be checked for, or run with --runner venv (it installs it from there)",
    "docker": "in a Dockerfile's image, name the distribution it installs (mypkg==1.0) or "
    "leave it out; or run with --runner venv (it installs it from there)",
}


def _package_problems(env: Captured, needs: Needs) -> tuple[list[str], list[str]]:
    """What the interpreter lacks of each cell's packages, the cells named where not all
    cells need it: `six is not installed (the cell needs six==1.11.0) in cells six=1.11.0`
    beside the same of 1.16.0, where the last cell's list alone named only 1.16.0; and
    what the runner refuses of them whatever it has (`_refused`), named so too."""
    sets = needs.cell_packages
    every = sum(len(each.cells) for each in sets)
    cells_of: dict[str, list[str]] = {}
    asked = _asked_problems(env, sets) if needs.runner == "local" else None
    for each in sets:
        found = (
            asked[each]
            if asked is not None
            else environment_mismatches(env, {"packages": [*each.packages]}, ran=False)
        )
        for problem in dict.fromkeys(found):
            cells_of.setdefault(problem, []).extend(each.cells)
    return _named(cells_of, every), _refusals(needs)


def _refusals(needs: Needs) -> list[str]:
    """What the runner refuses of each cell's packages whatever the interpreter has
    (`_refused`), the cells named where not all cells have it."""
    sets = needs.cell_packages
    refused_of: dict[str, list[str]] = {}
    for each in sets:
        refused = _refused(each, needs.runner)
        if refused is not None:
            refused_of.setdefault(refused, []).extend(each.cells)
    return _named(refused_of, sum(len(each.cells) for each in sets))


def _torchless(env: Captured, needs: Needs, rest: Check) -> Check:
    """A workload cell of the venv runner whose packages bring no torch: the harness runs on
    torch, and the cell's venv holds only its packages, so each is `infra-error: torch is not
    installed in <venv>/bin/python`. doctor passed it, the interpreter the venv is built on
    having torch. Failed where a cell names no packages; where its packages name no torch,
    only a warning, since one of them may require it (torchvision does): a spec that runs was
    refused. `rest`, what the check says of the rest, is said too (a failure first)."""
    from dataclasses import replace

    from reprospec.core.words import cells_not_run, noun

    every = needs.cells or sum(len(cells) for _, cells in needs.pythons)

    def of(ids: Sequence[str]) -> str:
        named = [cell for cell in ids if cell]
        return f" ({named_cells(named)})" if named and len(named) < every else ""

    version = section(env, "torch").get("version")
    pin = f"torch=={str(version).split('+')[0]}" if isinstance(version, str) else "torch"
    unnamed_head = f"the packages of a workload cell name no torch{of(needs.torch_unnamed)}"
    unnamed = (
        f"{unnamed_head}, which the harness runs on: unless one of them requires it "
        "(torchvision does), on the venv runner "
        + cells_not_run("such", of="", why="torch is not installed in the cell's venv")
    )
    also = f" (and {rest.why})" if rest.status in ("fail", "warn") else ""
    if needs.torchless:
        names = noun(len(needs.torchless), "the cell names", "the cells name")
        return Check(
            "spec-environment",
            "fail",
            "a workload runs reprospec's harness on torch, and the venv runner's cell venv holds "
            f"only the cell's packages, and {names} none{of(needs.torchless)}: "
            + cells_not_run("such", of="", why="torch is not installed in the cell's venv")
            # (the same said once: those whose packages may require it, torchvision's)
            + (f"; {unnamed_head}: the same unless one requires it" if needs.torch_unnamed else "")
            + also,
            f"add torch to their environment.packages (`{pin}`), or run on the local runner",
        )
    if rest.status == "fail":
        return replace(rest, why=f"{rest.why} (and {unnamed})")
    return Check(
        "spec-environment",
        "warn",
        unnamed + (f"; {rest.why}" if rest.status != "skipped" else ""),
        f"add torch to their environment.packages (`{pin}`) where none of them requires it",
    )


def _python_problems(env: Captured, needs: Needs) -> list[str]:
    """The interpreter's version against each python the cells name, the cells named where
    not all name it: a matrix over `python: [3.10, 3.11]` was judged by its last cell's alone
    (`python and packages match` on 3.11, of the 3.10 cells the run warns of). Nothing ran:
    the interpreter is only the one found (`ran=False`)."""
    if not needs.pythons:  # a Needs made by hand: `python` is every cell's
        return environment_mismatches(env, {"python": needs.python}, ran=False)
    found: dict[str, list[str]] = {}
    for wanted, cells in needs.pythons:
        for problem in environment_mismatches(env, {"python": wanted}, ran=False):
            found.setdefault(problem, []).extend(cells)
    return _named(found, sum(len(cells) for _, cells in needs.pythons))


def _named(found: Mapping[str, list[str]], every: int) -> list[str]:
    """Each problem, with the cells that have it named where not all `every` cells do (each
    cell once)."""
    out = []
    for problem, cells in found.items():
        ids = list(dict.fromkeys(cells))
        out.append(problem if not ids or len(ids) == every else f"{problem} in {named_cells(ids)}")
    return out


def _refused(each: CellPackages, runner: str) -> str | None:
    """Why the runner refuses the cells of `each` whatever the interpreter has (None: it
    does not), in the runner's words: the local runner's check and a Dockerfile image's
    refuse an entry no name says what to check for (`./mypkg`), a built image a path of
    this machine. Doctor passed both ("packages match", "the docker runner installs the
    spec's packages") where the capture named no interpreter or the runner was docker."""
    from reprospec.environment.packages import local_path, unchecked

    if runner == "local" or (runner == "docker" and each.dockerfile):
        return unchecked(each.packages)
    if runner == "docker":
        paths = [p for p in each.packages if local_path(p) is not None]
        if paths:
            from reprospec.core.words import paths_refused

            return paths_refused(paths)
    return None


def _asked_problems(
    env: Captured, sets: Sequence[CellPackages]
) -> Mapping[CellPackages, tuple[str, ...]] | None:
    """What the interpreter lacks of each set's packages, asked of it as the local runner's
    check asks it: with the cells' `environment.env` and in their workdir (a spec whose env
    sets PYTHONPATH passed doctor and was infra-error in run, or the reverse), and with what
    the extras they name (`torch[opt-einsum]`) require, which a capture does not hold. One
    probe per distinct env and workdir; None where the capture names no interpreter
    (`_checked_python`)."""
    from reprospec.environment.packages import lists_mismatches

    python = _checked_python(env)
    if python is None:
        return None
    out: dict[CellPackages, tuple[str, ...]] = {}
    for variables, cwd, alike in _by_env_and_workdir(sets):
        found = lists_mismatches(python, [each.packages for each in alike], env=variables, cwd=cwd)
        out.update({each: found.get(each.packages, ()) for each in alike})
    return out


def _checked_python(captured: Captured) -> str | None:
    """The interpreter the capture was taken of (`--python`, else the spec's python found
    here, else reprospec's own), which doctor's package probes ask as the run would; None
    where the capture names none: nothing is asked, so nothing judged (reprospec's own
    interpreter is no stand-in for one the capture does not name)."""
    python = section(captured, "python").get("executable")
    return python if isinstance(python, str) and python else None


def _by_env_and_workdir(
    sets: Sequence[CellPackages],
) -> list[tuple[dict[str, str], Path | None, list[CellPackages]]]:
    """The sets grouped by their `environment.env` and workdir, each group with what a
    probe of it runs with: this shell's environment under the cells' variables, and the
    cells' workdir (None: doctor's own folder). One probe per group."""
    import os

    alike: dict[tuple[tuple[tuple[str, str], ...], str], list[CellPackages]] = {}
    for each in sets:
        alike.setdefault((each.env, each.workdir), []).append(each)
    return [
        ({**os.environ, **dict(variables)}, Path(workdir) if workdir else None, these)
        for (variables, workdir), these in alike.items()
    ]


def named_cells(ids: Sequence[str], shown: int = 3) -> str:
    """`cell a`, `cells a, b, c and 2 more`: how a check names the cells a problem is of."""
    from reprospec.core.words import noun  # words is not read to import this module

    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"{noun(len(ids), 'cell')} " + ", ".join(ids[:shown]) + more


def needs_of(
    cells: Iterable[tuple[Mapping[str, JsonValue], Environment]], ids: Sequence[str] = ()
) -> Needs:
    """The most demanding of the resolved cells, each `(workload, environment)`; `ids`, the
    cells' ids in the same order, name the cells of each package list (`package_sets`)."""
    from reprospec.environment.packages import requirements_naming, site_variables

    device, workers, prefetch, batch, shm, memory = "cpu", 0, 2, None, None, None
    gpu_count = 0
    python: str | None = None
    lists: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...], str, bool], list[str]] = {}
    torch = False
    numpy = False
    workloads, some_workload = True, False
    of_python: dict[str | None, list[str]] = {}
    torchless: list[str] = []
    torch_unnamed: list[str] = []
    count = 0
    for position, (workload, environment) in enumerate(cells):
        count += 1
        workloads = workloads and bool(workload)
        some_workload = some_workload or bool(workload)
        numpy = numpy or not workload or _has_entrypoint(workload)
        if environment.packages:
            seen = (
                tuple(environment.packages),
                site_variables(environment.env),
                str(environment.workdir),
                environment.dockerfile is not None,
            )
            named = lists.setdefault(seen, [])
            named.extend(ids[position : position + 1])
        names_torch = bool(requirements_naming(environment.packages, "torch"))
        torch = torch or bool(workload) or names_torch
        if workload and not names_torch:
            # With packages, one of them may require torch: not resolved here.
            without = torch_unnamed if environment.packages else torchless
            without.append(ids[position] if position < len(ids) else "")
        wanted = str(workload.get("device") or environment.device or "cpu")
        if wanted.startswith("cuda"):
            device = wanted
        gpu_count = max(gpu_count, environment.gpus)
        data = section(workload, "data")
        loader = section(data, "loader")
        if whole(loader.get("num_workers"), 0) >= workers:
            workers = whole(loader.get("num_workers"), 0)
            prefetch = whole(loader.get("prefetch_factor"), 2)
        size = batchformat_size(data)
        if size is not None:
            batch = max(batch or 0, size)
        if environment.shm_size is not None:
            shm = environment.shm_size
        if environment.memory is not None:
            memory = environment.memory
        python = environment.python or python
        of_python.setdefault(environment.python, []).extend(ids[position : position + 1])
    packages = tuple(dict.fromkeys(p for each, _, _, _ in lists for p in each))
    return Needs(
        device=device,
        gpus=gpu_count,
        num_workers=workers,
        prefetch_factor=prefetch,
        batch_bytes=batch,
        shm_size=shm,
        memory=memory,
        python=python,
        pythons=tuple((wanted, tuple(named)) for wanted, named in of_python.items()),
        packages=packages,
        package_sets=tuple(
            CellPackages(each, tuple(named), env, workdir, dockerfile)
            for (each, env, workdir, dockerfile), named in lists.items()
        ),
        torch=torch,
        numpy=numpy,
        workers_known=workloads and torch,  # (torch: some cell, a workload, was seen)
        workload=some_workload,
        torchless=tuple(torchless),
        torch_unnamed=tuple(torch_unnamed),
        cells=count,
    )


def _has_entrypoint(workload: Mapping[str, JsonValue]) -> bool:
    """Whether a workload runs the user's code: its `imports`, or an entry point of its
    dataset, model or loss (`loss: "losses:finite_cross_entropy"`), as the bundle reads them."""
    from reprospec.plan.workfiles import entrypoints

    return bool(workload.get("imports")) or bool(entrypoints(dict(workload)))


def batchformat_size(data: Mapping[str, JsonValue]) -> int | None:
    """Bytes of one batch of the synthetic dataset (None for entry-point datasets)."""
    dataset = section(data, "dataset")
    shape = dataset.get("shape")
    if dataset.get("entrypoint") or not isinstance(shape, list):
        return None
    item = math.prod(whole(n, 0) for n in shape) * ITEM_BYTES.get(
        str(dataset.get("dtype", "float32")), 4
    )
    return item * whole(section(data, "loader").get("batch_size"), 1)
