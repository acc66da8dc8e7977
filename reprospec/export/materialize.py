"""A self-contained bundle of a spec: Dockerfiles, resolved cells and a plain `docker run` script.

Someone without reprospec rebuilds the image and reruns every cell with `./run.sh`;
the containers get what the docker runner gives them (its init, launch.py, copied into
the bundle; shm size, memory, network, env, the workdir at the same path, the child
protocol's variables, and `environment.perturb` as perturb/container.py applies it: a
perturbation run.sh cannot apply refuses the spec, never a plain run). run.sh judges each
cell against its expected outcome, signal and exit code, and exits 1 when one was not
reproduced. The init's record tells a death by signal N from an exit 128+N; what run.sh
still cannot tell as the engine does (an exit 128+N with no report of a death: a shell's
for its child's, or the program's own `sys.exit(139)`; any 128+N under docker's init, where
the image's python3 cannot run launch.py) it judges only where both readings agree.

    DIR/
      README.md            what this is, how to run it, what each cell should do
      run.sh               builds the image(s) if missing, runs the cells: ./run.sh [N...]
      launch.py            the containers' init, which records how each command ended
      spec.yaml            the spec as it was given, a secret it writes as ${{ env.NAME }}
                           (a relative `$schema=` of its editor's line named from DIR)
      cells/N/plan.json    the resolved cell: command or workload, env, expectation
      cells/N/cell.json    (workload cells) what the harness reads
      images/K/            a build context: Dockerfile, harness/, stackdump/, certs/, ...
      workdirs/K/          each distinct workdir's files that the cells name

A bundle is made to be shared, so no secret is written into it (redact.py says what
is one), and a workdir is carried by the rule `bundle` follows (carry.py): only the
files the cells name, never a hidden one (`.env`), a secret in them masked; the README
says what was left out for its reader to supply. A variable of a cell that holds a
secret is passed by name (`docker run -e NAME`): whoever runs the bundle exports their
own, and a cell refuses to start without it. A secret the spec reads from the engine
(`${{ env.HF_TOKEN }}`), in a variable or in the command, is read from the variable it
came from, `-e MY_TOK="$HF_TOKEN"`, `--token "$HF_TOKEN"` (Redactor.shell_text). A secret
of no known variable (in a command, in a workload's cell.json) is written as `***`, and
`materialize` warns that the cell must be completed by hand.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.inputs import AttemptPlan, Spec
from reprospec.core.jsontypes import JsonValue
from reprospec.core.logtext import printable
from reprospec.core.redact import MASK, Redactor, sets_secret, unset_env
from reprospec.core.sections import Environment, same_python
from reprospec.core.signals import (
    CRASH_SIGNALS,
    SHELL_FATAL_SIGNALS,
    describe_signal,
    description_key,
    signal_number,
)
from reprospec.core.units import format_duration
from reprospec.core.words import noun, plural
from reprospec.errors import UsageError
from reprospec.export.carry import (
    DockerContext,
    carried_bytes,
    dockerfile_context,
    hidden_entries,
    workdir_files,
)
from reprospec.export.runnerpackages import RunnerPackages, recorded_build, runner_packages
from reprospec.perturb.apply import PerturbRefused, variables
from reprospec.perturb.competitors import LOAD
from reprospec.perturb.container import for_container
from reprospec.plan.attempt import reads_attempt
from reprospec.plan.shellwords import SHELLS
from reprospec.process.childprotocol import (
    CACHE_DIR,
    CELL_VAR,
    TMP_DIR,
    ChildPaths,
    cell_json,
    child_env,
)
from reprospec.process.rlimits import LAUNCH
from reprospec.runners.docker import image as dockerimage
from reprospec.runners.docker.container import (
    IN_ATTEMPT,
    IN_EXIT,
    IN_LAUNCH,
    attempt_argv,
    container_workdir,
    run_options,
)
from reprospec.spec.comments import schema_moved
from reprospec.spec.yamlsource import locate

# Where the bundle's images carry the stack dumper and the harness (the Dockerfile
# templates' COPY lines, on the images' own PYTHONPATH).
_IMAGE_PATHS = ChildPaths(
    attempt_dir=IN_ATTEMPT,
    harness_dir=dockerimage.IMAGE_HARNESS,
    stackdump_dir=dockerimage.IMAGE_STACKDUMP,
)
# A bundle mounts each cell's cell.json read-only beside the attempt folder.
IN_CELL = "/reprospec/cell.json"
# Carrying more of a workdir than this is probably a mistake (a dataset, a checkout).
MAX_WORKDIR_BYTES = 200 << 20
# The competitors of `cpu_load`/`io_load` (perturb/load.py), copied into the bundle and run
# in a container of the cell's image beside the cell's.
LOAD_PY = "load.py"
# The container's init that the docker runner runs each command under (process/launch.py,
# `--init`), copied into every bundle: run.sh reads how a command ended from its record.
LAUNCH_PY = "launch.py"
IN_LOAD = "/reprospec/load"


@frozen
class Bundle:
    """What was written: the folder, its cells and its images."""

    root: Path
    cells: tuple[str, ...]
    images: tuple[str, ...]
    warnings: tuple[str, ...] = ()


def _json(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return str(value)


def _dump(path: Path, data: JsonValue) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=_json) + "\n", encoding="utf-8")


@frozen
class _Image:
    """One image of the bundle: its build, and what that build needs (for the README)."""

    build: dockerimage.BuildRecipe
    needs: str
    # The spec's Dockerfile's: the context files it carries (by carry.py's rule), or None.
    context: DockerContext | None = None


def _bundle_image(
    environment: Environment,
    spec_dir: Path,
    find_links: Path | None,
    runner: RunnerPackages,
) -> _Image:
    """Always a build (the image must carry the harness), never FROM an image of this machine.

    The runner's default image (and its base) are built locally by `reprospec docker setup`: the
    bundle rebuilds what they hold from a public Debian base instead, with of the runner's
    packages those the cell needs (`runner`). An `image` the spec
    names is used as the base, and the README says the reader must have it.
    """
    if environment.dockerfile:
        recipe = dockerimage.recipe_for(environment, spec_dir=spec_dir, find_links=find_links)
        assert recipe.build is not None  # a dockerfile is always built
        bases = ", ".join(f"`{b}`" for b in recipe.build.bases) or "the images its ARGs name"
        # Not its whole folder (the build context): a `.env` and every unrelated file there
        # went into a folder made to be sent, in clear. The files its COPY and ADD take.
        context = dockerfile_context(spec_dir, environment.dockerfile)
        build_name = recipe.build.dockerfile_name  # written by write_context, from its text
        taken = [p for p in context.files if p.name != build_name or p.parent != context.folder]
        build = dataclasses.replace(
            recipe.build,
            files=tuple((p.relative_to(context.folder).as_posix(), p) for p in taken),
        )
        needs = f"the spec's own Dockerfile; it builds FROM {bases}"
        # The README said no image of the writer's machine was needed, and the reader's
        # build then failed on `pull access denied` for an image no registry has.
        local = [f"`{b}`" for b in recipe.build.bases if b in dockerimage.LOCAL_IMAGES]
        if local:
            needs += (
                f"; {', '.join(local)} is in no registry: it was built on the machine that "
                "wrote this bundle by `reprospec docker setup`, which builds it here too, or "
                "edit the Dockerfile's FROM to a Debian bookworm image"
            )
        return _Image(build, needs, context)
    image = environment.image or dockerimage.DEFAULT_IMAGE
    if image in dockerimage.LOCAL_IMAGES:
        build = dockerimage.public_build(
            environment.packages, find_links, runner.packages, runner.index
        )
        installs = ", ".join(f"`{p}`" for p in runner.packages) or "none"
        return _Image(
            build,
            f"`{dockerimage.PUBLIC_BASE}` (public: `docker build` pulls it), or any Debian "
            "bookworm image given as `BASE=IMAGE ./run.sh`; of the runner image's "
            f"packages it installs {installs} ({runner.why})",
        )
    recipe = dockerimage.recipe_for(environment, spec_dir=spec_dir, find_links=find_links)
    needs = (
        f"`{image}`, the spec's `environment.image`: `docker pull {image}` (or build it) "
        "before `./run.sh`"
    )
    if recipe.build is not None:
        return _Image(recipe.build, needs)
    files = [("harness", dockerimage.HARNESS_DIR), ("stackdump", dockerimage.STACKDUMP_DIR)]
    return _Image(
        dockerimage.BuildRecipe(
            dockerfile=dockerimage.render_dockerfile(recipe.tag, packages=False, wheels=False),
            files=tuple(files),
            bases=(recipe.tag,),
            folders=("certs", "harness", "stackdump"),
        ),
        needs,
    )


def _without_certs(build: dockerimage.BuildRecipe) -> dockerimage.BuildRecipe:
    # This machine's proxy CAs are not the reader's: run.sh adds the reader's own.
    files = tuple((dest, src) for dest, src in build.files if not dest.startswith("certs/"))
    return dockerimage.BuildRecipe(
        dockerfile=build.dockerfile,
        files=files,
        texts=build.texts,
        bases=build.bases,
        folders=build.folders,
        dockerfile_name=build.dockerfile_name,
    )


@frozen
class _Workdir:
    """One workdir's copy in the bundle: the files carried, and what its reader supplies."""

    key: int
    source: Path
    files: tuple[str, ...]
    # Lines for the README (and the warnings): what was left out or masked, and why.
    left_out: tuple[str, ...]
    # Lines for the README only: the workdir's hidden entries, never carried.
    hidden: tuple[str, ...]
    size: int


def _copy_workdir(
    plan: AttemptPlan,
    key: int,
    target: Path,
    redactor: Redactor,
    others: Sequence[AttemptPlan] = (),
) -> _Workdir:
    """Copy into `target` what of the plan's workdir a bundle carries, named by it or by
    `others` (the other plans of that workdir): carry.py's rule, the one `bundle` follows
    (the named files, never a hidden one, secrets masked).

    The whole workdir was copied before: `.env`, `secrets/creds.json` and the project's
    other specs went into a folder made to be sent to strangers, a declared secret's
    value in clear in `.env` although run.sh passed it by name.
    """
    target.mkdir(parents=True, exist_ok=True)
    carried = workdir_files(plan, others)
    files: list[str] = []
    left_out: list[str] = []
    size = 0
    for path in carried.files:
        rel = path.relative_to(carried.workdir).as_posix()
        content = carried_bytes(path, redactor)
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(content.data)
        shutil.copymode(path, out)  # a script run as `./run.sh`
        size += len(content.data)
        files.append(rel)
        warning = content.warning(f"workdirs/{key}/{rel}")
        if warning is not None:
            left_out.append(warning)
    where = f"(workdir {carried.workdir})"
    if carried.hidden:
        left_out.append(
            f"not carried, hidden (a dot-file or a dot-folder's, where a project keeps its own "
            f"secrets: whoever reruns it supplies their own) {where}: {', '.join(carried.hidden)}"
        )
    if carried.missing:
        left_out.append(
            f"not carried, named by the spec's files but not there {where}: "
            + ", ".join(carried.missing)
        )
    if carried.outside or carried.absolute:
        names = [str(p) for p in (*carried.outside, *carried.absolute)]
        left_out.append(
            f"not carried, named outside the workdir (a container sees only its workdir) "
            f"{where}: {', '.join(names)}"
        )
    return _Workdir(
        key, carried.workdir, tuple(files), tuple(left_out), hidden_entries(carried.workdir), size
    )


def _mask_context(
    build: dockerimage.BuildRecipe, context: DockerContext, target: Path, redactor: Redactor
) -> list[str]:
    """The spec's Dockerfile's context files in `target` written again with their secrets
    masked (carry.py), as the workdirs' are; the warnings: what was masked, left out."""
    warnings: list[str] = []
    for rel, path in build.files:
        content = carried_bytes(path, redactor)
        out = target / rel
        out.unlink(missing_ok=True)  # a hard link to the file itself: never written through
        out.write_bytes(content.data)
        shutil.copymode(path, out)
        warning = content.warning(f"{target.parent.name}/{target.name}/{rel}")
        if warning is not None:
            warnings.append(warning)
    if context.hidden:
        warnings.append(
            "not carried, hidden (a dot-file or a dot-folder's, where a project keeps its own "
            "secrets: whoever reruns it supplies their own): " + ", ".join(context.hidden)
        )
    if context.missing:
        warnings.append(
            "not carried, taken by the spec's Dockerfile but not there: "
            + ", ".join(context.missing)
        )
    return warnings


def write_bundle(
    spec: Spec,
    plans: Sequence[AttemptPlan],
    out: Path,
    *,
    find_links: Path | None = None,
    torch_version: str | None = None,
    later: Sequence[AttemptPlan] = (),
) -> Bundle:
    """Write the bundle of `plans` (one per cell) into the new or empty folder `out`.

    `torch_version`: the torch the cells ran with (runnerpackages.installed_torch), whose
    build (`2.13.0+cpu`) the images install where it is the runner's release. `later`: the
    cells' second attempts, against which a cell that reads its attempt number is told."""
    several = [plan.cell.id for plan in plans if plan.copies > 1]
    if several:
        # One `docker run` per cell would stand in for N copies released together: refused.
        more = f" and {len(several) - 3} more" if len(several) > 3 else ""
        shown = ", ".join(several[:3]) + more
        others = [plan.cell.id for plan in plans if plan.copies <= 1]
        # Located, as every refusal of what the spec says.
        line, col = locate(spec.locations, ("run", "instances"))
        raise UsageError(
            f"{spec.path}:{line}:{col}: run.instances: a bundle runs one container per cell "
            f"and cannot start several copies of an attempt together (cells {shown}); run "
            "them with reprospec (--runner local)"
            # The refusal gave no way to the bundle of the cells it can carry.
            + (
                f"; a bundle of the others ({', '.join(others[:3])}"
                f"{f' and {len(others) - 3} more' if len(others) > 3 else ''}) is written "
                "where -m AXIS=VALUE selects them alone"
                if others
                else ""
            )
        )
    # Refused before anything is written: a bundle that cannot carry a perturbation is none.
    perturbs = [_perturbed(spec, plan, number) for number, plan in enumerate(plans, start=1)]
    if out.exists() and not out.is_dir():
        # (an empty file was said to be "not empty")
        raise UsageError(f"{out} is a file, not a folder: materialize into a new folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not empty: materialize into a new folder")
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _write_into(out, spec, plans, perturbs, find_links, torch_version, later)
    except BaseException:
        # Interrupted (Ctrl-C) or failed halfway, it left a bundle without run.sh that the
        # same command then refused as "exists and is not empty": what it wrote goes.
        if made:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for entry in list(out.iterdir()):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        raise


def _write_into(
    out: Path,
    spec: Spec,
    plans: Sequence[AttemptPlan],
    perturbs: Sequence[_Perturbed],
    find_links: Path | None,
    torch_version: str | None,
    later: Sequence[AttemptPlan],
) -> Bundle:
    """write_bundle's writing, into the empty folder `out`."""
    shutil.copyfile(LAUNCH, out / LAUNCH_PY)
    spec_dir = Path(spec.path).resolve().parent
    # As `run` warns of them: the bundle bakes what they read as here (`-e MODE=`), and
    # its reader's export cannot put the author's value back.
    warnings = [
        f"{warning}, and materialize again: the bundle holds the value it read here"
        for warning in unset_env(spec.document, Redactor.masked_names(spec.source_text))
    ]
    redactor = Redactor.for_spec(spec.document)
    passed: list[str] = []
    # The spec as `bundle` packs it: a secret it writes itself (`GITHUB_TOKEN_RO: ...`) was
    # copied as given, where run.sh passes the variable by name.
    # Its editor's schema line named from `out` (a relative path named nothing there).
    text = schema_moved(redactor.spec_text(spec.source_text), spec.base_dir, out)
    (out / "spec.yaml").write_text(text, encoding="utf-8")
    images: dict[str, int] = {}
    needs: dict[int, str] = {}
    workdirs: dict[Path, int] = {}
    copies: list[_Workdir] = []
    cells: list[str] = []
    script: list[str] = []
    # A workdir's copy carries what each of its cells names (`python ${{ matrix.prog }}.py`),
    # where its first cell's alone was read and the other cells' scripts were not there.
    of_workdir: dict[Path, list[AttemptPlan]] = {}
    for plan in plans:
        of_workdir.setdefault(plan.workdir, []).append(plan)
    second = {p.cell.id: p for p in later}  # each cell's attempt 2, where given
    other_python: dict[str, list[str]] = {}
    for number, plan in enumerate(plans, start=1):
        wanted = _other_python(plan.environment)
        if wanted:
            other_python.setdefault(wanted, []).append(f"{number} ({plan.cell.id})")
        runner = recorded_build(runner_packages(plan), torch_version)
        image_of = _bundle_image(plan.environment, spec_dir, find_links, runner)
        build = _without_certs(image_of.build)
        key = dockerimage.content_hash(build)
        if key not in images:
            images[key] = len(images) + 1
            needs[images[key]] = image_of.needs
            dockerimage.write_context(build, out / "images" / str(images[key]))
            if find_links is not None:
                warnings += _unmet_wheels(build, find_links, out, images[key])
            if image_of.context is not None:
                warnings += _mask_context(
                    build, image_of.context, out / "images" / str(images[key]), redactor
                )
        if plan.workdir not in workdirs:
            workdirs[plan.workdir] = len(workdirs) + 1
            target = out / "workdirs" / str(workdirs[plan.workdir])
            alike = of_workdir[plan.workdir]
            copied = _copy_workdir(alike[0], workdirs[plan.workdir], target, redactor, alike[1:])
            copies.append(copied)
            warnings.extend(copied.left_out)
            if copied.size > MAX_WORKDIR_BYTES:
                warnings.append(
                    f"workdir {plan.workdir}: the bundle copies {copied.size >> 20} MB of it"
                )
        cell_dir = out / "cells" / str(number)
        cell_dir.mkdir(parents=True)
        from reprospec.plan.attempt import describe

        _dump(cell_dir / "plan.json", redactor.value(describe(plan)))
        if plan.workload is not None:
            document = cell_json(plan)
            masked = redactor.text(document)
            (cell_dir / "cell.json").write_text(masked, "utf-8")
            if masked != document:
                warnings.append(
                    f"cell {number} ({plan.cell.id}): its workload holds a secret value, "
                    f"written as {MASK} in cells/{number}/cell.json: put it back before running"
                )
        cells.append(plan.cell.id)
        image = f"reprospec-bundle/{spec.name}:{images[key]}"
        perturbed = perturbs[number - 1]
        if (perturbed.cpu_load or perturbed.io_load) and not (out / LOAD_PY).exists():
            shutil.copyfile(LOAD, out / LOAD_PY)
        cell = _cell_function(
            number, plan, (image, key[:16]), images[key], workdirs[plan.workdir], redactor,
            perturbed,
        )  # fmt: skip
        script.append(cell.script)
        warnings.extend(cell.warnings)
        reads = reads_attempt(plan, second.get(plan.cell.id))
        if reads:
            warnings.append(
                f"cell {number} ({plan.cell.id}): it reads its attempt "
                f"number ({reads}), and the bundle runs attempt 1's: `./run.sh {number}` "
                "again does what it did, where reprospec's attempts 2, 3, ... do otherwise"
            )
        passed.extend(cell.passed)
    for wanted, numbers in other_python.items():
        warnings.append(
            f"{noun(len(numbers), 'cell')} {', '.join(numbers)}: the spec "
            f"names Python {wanted}, and the image runs Debian bookworm's python3 "
            f"({dockerimage.PUBLIC_PYTHON}): the bundle does not rerun it on the Python the "
            f"incident was seen on (an `environment.image` with Python {wanted} would)"
        )
    _write_run_sh(out / "run.sh", spec, plans, script)
    _write_readme(
        out / "README.md", spec, plans, needs, redactor, sorted(set(passed)), copies, perturbs
    )
    return Bundle(
        root=out,
        cells=tuple(cells),
        images=tuple(f"images/{k}" for k in images.values()),
        warnings=tuple(warnings),
    )


def _other_python(environment: Environment) -> str:
    """The spec's `python` where the bundle's image runs another ("" where not, or unknown).

    The runner's own image is rebuilt from Debian bookworm, whose python3 is 3.11: a spec
    that names 3.12 ran there without a word, where `reprospec run` warns of it."""
    wanted = environment.python
    if not wanted or environment.dockerfile:
        return ""
    if (environment.image or dockerimage.DEFAULT_IMAGE) not in dockerimage.LOCAL_IMAGES:
        return ""  # the spec's own image: its python is not known here
    have = dockerimage.PUBLIC_PYTHON
    return "" if same_python(have, wanted) or same_python(wanted, have) else wanted


def _unmet_wheels(
    build: dockerimage.BuildRecipe, find_links: Path, out: Path, number: int
) -> list[str]:
    """A warning where the wheelhouse lacks a requirement of image `number`'s build.

    Its build installs with `--no-index`: a bundle written over a wheelhouse without the
    torch build it pins (`torch==2.13.0+cpu`) was written without a word, and its reader's
    build failed on pip's "No matching distribution"."""
    from reprospec.runners.docker.wheelhouse import unmet

    text = dict(build.texts).get("requirements.txt", "")
    missing = unmet(find_links.resolve(), text.splitlines())
    if not missing:
        return []
    return [
        f"images/{number}: the --find-links folder {find_links} has no wheel of "
        f"{', '.join(missing)}, and the image's build installs from the bundle's wheels "
        f"alone (--no-index), so it fails there: add them to the folder (pip download -d "
        f"{shlex.quote(str(find_links))} -r "
        f"{shlex.quote(str(out / 'images' / str(number) / 'requirements.txt'))}) and "
        "materialize again (into a new folder)"
    ]


@frozen
class _Perturbed:
    """How run.sh applies a cell's `environment.perturb`, as the docker runner applies it
    (perturb/container.py); its variables are `variables`', added with the cell's.

    A bundle that dropped them ran the plain program under a spec that said it was
    perturbed: a user's use-after-free crashed 8/8 under `malloc: perturb` and its bundle
    printed exit 0, which reads as the perturbation not reproducing it.
    """

    options: tuple[str, ...] = ()  # `docker run` options: --cpuset-cpus, --memory, --memory-swap
    prefix: tuple[str, ...] = ()  # before the command: `nice -n N`
    cpu_load: int = 0  # competitors in a container beside the cell's
    io_load: int = 0
    cpuset: str | None = None  # the cell's CPUs, which the competitors share
    notes: tuple[str, ...] = ()  # each perturbation and how run.sh applies it


class PerturbNotCarried(UsageError):
    """A perturbation run.sh cannot apply: materialize refuses the spec (never a plain run)."""


def _perturbed(spec: Spec, plan: AttemptPlan, number: int) -> _Perturbed:
    """How run.sh applies `plan`'s perturbations; PerturbNotCarried for one it cannot."""
    perturb = plan.environment.perturb
    if not perturb.active:
        return _Perturbed()

    def refused(name: str, why: str) -> PerturbNotCarried:
        path = ("environment", "perturb", *name.split("."))
        line, col = locate(spec.locations, path)
        return PerturbNotCarried(
            f"{spec.path}:{line}:{col}: environment.perturb.{name}: cell {number} "
            f"({plan.cell.id or 'the only cell'}): run.sh cannot carry it ({why}); "
            "materialize writes no bundle that would run the program plain under a spec that "
            "says it is perturbed: run it with reprospec (--runner docker or local), or drop "
            "the field"
        )

    if perturb.nice is not None and perturb.nice < 0:
        raise refused(
            "nice",
            f"{perturb.nice}: a negative nice value needs CAP_SYS_NICE, which the container "
            "does not have",
        )
    try:
        # The CPUs are the reader's machine's, not this one's: chosen below, not here.
        applied = for_container(
            dataclasses.replace(perturb, cpus=None), memory=plan.environment.memory
        )
    except PerturbRefused as exc:
        raise refused(str(exc).split("=", 1)[0].removeprefix("perturb."), str(exc)) from None
    options: list[str] = []
    notes = list(applied.notes)
    cpuset: str | None = None
    if perturb.cpus is not None:
        # A count takes the first N CPUs, as the docker runner takes the first N its engine
        # may use; on a machine with fewer, docker refuses the cell (exit 125), never a
        # plain run.
        cpus = perturb.cpus
        if isinstance(cpus, tuple):
            cpuset = shown = ",".join(str(c) for c in cpus)
        else:
            cpuset, shown = ("0" if cpus == 1 else f"0-{cpus - 1}"), str(cpus)
        options += ["--cpuset-cpus", cpuset]
        notes.insert(0, f"cpus={shown} (docker --cpuset-cpus {cpuset})")
    if applied.memory is not None:
        options += ["--memory", str(applied.memory), "--memory-swap", str(applied.memory)]
    return _Perturbed(
        tuple(options),
        applied.prefix,
        perturb.cpu_load,
        perturb.io_load,
        cpuset,
        tuple(notes),
    )


def _container_name(number: int) -> str:
    """Cell `number`'s container as run.sh names it: its pid tells two run.sh apart."""
    return f"reprospec-bundle-{number}-$$"


def _docker_run_args(
    plan: AttemptPlan,
    number: int,
    workdir_key: int,
    redactor: Redactor,
    perturbed: _Perturbed,
    secret_reads: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    """`docker run` options for one cell, as the docker runner would create the container,
    and the variables passed by name (their values are secrets: never in the bundle).
    `secret_reads`: the variables the command's shell line reads a secret from, passed by name
    too (the line runs `"$HF_TOKEN"` in the container)."""
    inside = container_workdir(plan.workdir)
    # No --rm: run.sh reads the container's log before it removes it (keep_logs). The init
    # (launch.py's, or docker's) and the name are run_container's: these are pairs, a line each.
    args: list[str] = []
    for option, value in run_options(plan.environment).items():
        if option in ("memory", "memory_swap") and "--memory" in perturbed.options:
            continue  # perturb.memory_limit's, the smaller of the two (perturb/container.py)
        args += [f"--{option.replace('_', '-')}", str(value)]
    args += list(perturbed.options)
    args += ["-v", f'"$HERE/workdirs/{workdir_key}:{inside}"', "-w", shlex.quote(inside)]
    args += ["-v", f'"$OUT/{number}:{IN_ATTEMPT}"']
    # The image carries the harness and the stack dumper on its own PYTHONPATH, which a
    # cell without one of its own keeps. A cell's own goes before the image's, as the
    # docker runner puts it (engine.py, `pythonpath_after`), after the stack dumper (and a
    # workload's harness) at their place in the image: its sitecustomize must be the one
    # Python imports (it chains to the project's), or REPROSPEC_PERTURB and the stack
    # dumps are lost. `-e PYTHONPATH=src` replaced the image's and lost them.
    env = child_env(plan, _IMAGE_PATHS)
    pythonpath = env.pop("PYTHONPATH")
    if plan.workload is not None:
        args += ["-v", f'"$HERE/cells/{number}/cell.json:{IN_CELL}:ro"']
        env[CELL_VAR] = IN_CELL
    # environment.perturb's variables, as the docker runner adds them (engine.py): glibc's
    # malloc settings, REPROSPEC_PERTURB for the image's sitecustomize, ...
    env.update(variables(plan.environment.perturb, env))
    passed: list[str] = []
    if plan.env.get("PYTHONPATH"):
        if redactor.text(pythonpath) != pythonpath:
            env["PYTHONPATH"] = pythonpath  # passed by name, as any value holding a secret
        else:
            # "$pythonpath": the image's, read by the cell's function (image_pythonpath).
            args += [
                "-e",
                shlex.quote(f"PYTHONPATH={pythonpath}") + '"${pythonpath:+:$pythonpath}"',
            ]
    for name, value in env.items():
        if value and (sets_secret(name, value) or redactor.text(value) != value):
            read = redactor.reading_assignment(name, value)
            if read is not None:
                # `MY_TOK: ${{ env.HF_TOKEN }}` is HF_TOKEN's value: run.sh reads HF_TOKEN,
                # the variable the spec reads, where it asked for MY_TOK.
                args += ["-e", read[0]]
                passed.extend(read[1])
                continue
            # docker takes NAME's value from the environment of whoever runs run.sh.
            args += ["-e", shlex.quote(name)]
            passed.append(name)
        else:
            args += ["-e", shlex.quote(f"{name}={value}")]
    for name in secret_reads:
        if name not in env:
            args += ["-e", shlex.quote(name)]
        passed.append(name)
    return args, list(dict.fromkeys(passed))


@frozen
class _Cell:
    """One cell's function of run.sh, and what materialize warns about it."""

    script: str
    warnings: tuple[str, ...]
    passed: tuple[str, ...]  # variables passed by name from the environment of run.sh


def _cell_function(
    number: int,
    plan: AttemptPlan,
    tagged: tuple[str, str],  # the image's tag, and the content hash run.sh labels it with
    image_key: int,
    workdir_key: int,
    redactor: Redactor,
    perturbed: _Perturbed,
) -> _Cell:
    image, content = tagged
    argv = [*perturbed.prefix, *(attempt_argv(plan) or ["true"])]
    shown, inside, outside = _command_words(argv, redactor)
    warnings = []
    if any(redactor.text(word) != word for word in argv) and any(MASK in w for w in shown):
        warnings.append(
            f"cell {number} ({plan.cell.id}): its command holds a secret value, written as "
            f"{MASK} in run.sh: put it back before running"
        )
    if plan.stall_s is not None:
        # `timeout` sees no progress: a stalled cell runs to its whole limit, which the user
        # should know before waiting on it (the engine's watch reads the harness's events).
        warnings.append(
            f"cell {number} ({plan.cell.id}): run.stall ({format_duration(plan.stall_s)}) "
            f"is not applied by run.sh: a hang ends at the timeout "
            f"({format_duration(plan.timeout_s)})"
        )
    expect = redactor.text(json.dumps(plan.expectation.to_dict(), default=_json))
    args, passed = _docker_run_args(plan, number, workdir_key, redactor, perturbed, inside)
    passed = list(dict.fromkeys([*passed, *outside]))
    # What not_run says of this cell before a reason: its number, id and expectation.
    head = f"not_run {number} {shlex.quote(plan.cell.id)} {shlex.quote(expect)}"
    failed = shlex.quote(f"the image {image} did not build (its docker build error is above)")
    failed_before = shlex.quote(f"the image {image} did not build for an earlier cell")
    checks = [
        f'    [ -n "${{{name}+set}}" ] || {{ {head} "{name} is unset: export it first '
        f'(a secret: the bundle passes it from your environment)"; return 125; }}'
        for name in passed
    ]
    folders = [f'"$OUT/{number}"']
    container = _container_name(number)
    # The containers a Ctrl-C of run.sh removes (its trap), which ends the cell.
    running = [container]
    # The cell's own PYTHONPATH goes before the image's, read from the image as the docker
    # runner reads it (_docker_run_args writes "$pythonpath" after the cell's).
    pythonpath = (
        [f"    local pythonpath; pythonpath=$(image_pythonpath {shlex.quote(image)})"]
        if plan.env.get("PYTHONPATH")
        else []
    )
    # The Python processes' stack dump files (childprotocol), nobody asks for them here, and
    # the sitecustomize's begun and ended records (ended-PID.txt), which only the engine
    # reads: removed as process/stacks.py remove_stack_dumps removes them from an attempt's
    # folder. Its records of how each main thread ended (raised-PID.txt) go after `report`,
    # which reads the program's (run.sh.in program_raised).
    cleanup = [f'    rm -f "$OUT/{number}"/stack-*.txt "$OUT/{number}"/ended-*.txt']
    raised = f'rm -f "$OUT/{number}"/raised-*.txt'
    if not plan.environment.shared_tmp:
        # The container's TMPDIR and XDG_CACHE_HOME (childprotocol), removed after it
        # as the runners do: the next cell must not see this one's leftovers.
        private = [f'"$OUT/{number}/{TMP_DIR}"', f'"$OUT/{number}/{CACHE_DIR}"']
        folders += private
        cleanup.append(f"    rm -rf {' '.join(private)}")
    load_start: list[str] = []
    if perturbed.cpu_load or perturbed.io_load:
        # The competitors, as the docker runner starts them beside the container: here in
        # a container of the cell's image (it has Python), on the cell's CPUs, the writers
        # writing into results/N/load (the disk the cell writes to).
        loader = f"reprospec-bundle-load-{number}-$$"
        running.append(loader)
        folders.append(f'"$OUT/{number}/load"')
        cpuset = ["--cpuset-cpus", perturbed.cpuset] if perturbed.cpuset else []
        load_args = [
            "-d", "--rm", "--name", loader, "--network", "none", *cpuset,
            "-v", f'"$HERE/{LOAD_PY}:/reprospec/{LOAD_PY}:ro"',
            "-v", f'"$OUT/{number}/load:{IN_LOAD}"',
            "--entrypoint", "python3",
        ]  # fmt: skip
        load_start = [
            "    # environment.perturb's cpu_load/io_load: the competitors beside the cell.",
            "    docker run \\",
            *[f"        {' '.join(load_args[i : i + 2])} \\" for i in range(0, len(load_args), 2)],
            f"        {shlex.quote(image)} -S -E /reprospec/{LOAD_PY} \\",
            f"        --cpu {perturbed.cpu_load} --io {perturbed.io_load} --dir {IN_LOAD} "
            ">/dev/null \\",
            f'        || {{ {head} "its cpu_load/io_load competitors did not start"; '
            "return 125; }",
        ]
        cleanup += [
            f'    docker rm -f "{loader}" >/dev/null 2>&1',
            f'    rm -rf "$OUT/{number}/load"',
        ]
    perturbed_line = [f"# perturbed: {'; '.join(perturbed.notes)}"] if perturbed.notes else []
    signals = " ".join(plan.expectation.signals)
    code = "" if plan.expectation.exit_code is None else str(plan.expectation.exit_code)
    judged = " ".join(shlex.quote(word) for word in (plan.expectation.outcome, signals, code))
    lines = [
        f"# cell {number}: {plan.cell.id or '(the only cell)'}",
        f"# expected: {expect}",
        *perturbed_line,
        f"cell_{number}() {{",
        *checks,
        f'    RUNNING="{" ".join(running)}"',
        f'    build_image {shlex.quote(image)} "$HERE/images/{image_key}" {content}',
        "    case $? in",
        "        0) ;;",
        f"        1) {head} {failed}; return 125 ;;",
        f"        *) {head} {failed_before}; return 125 ;;",
        "    esac",
        f"    fresh_results {folders[0]}",
        *([f"    mkdir -p {' '.join(folders[1:])}"] if folders[1:] else []),
        *pythonpath,
        *load_start,
        # Under launch.py's init where the image can run it, which records how the command
        # ended (RECORD), else under docker's (run.sh.in).
        f'    run_container {number} "{container}" {plan.timeout_s:g} \\',
    ]
    lines += [f"        {' '.join(args[i : i + 2])} \\" for i in range(0, len(args), 2)]
    lines += [
        f"        -- {shlex.quote(image)} \\",
        f"        {' '.join(shown)}",
        "    local status=$? record=$RECORD",
        *cleanup,
        '    RUNNING=""',
        '    if [ "$INTERRUPTED" != 0 ]; then',
        f"        {raised}",
        f"        echo {shlex.quote(f'== cell {number} [{plan.cell.id}]: interrupted')}",
        "        return 0",
        "    fi",
        f'    report {number} "$status" {shlex.quote(plan.cell.id)} {shlex.quote(expect)} {judged} '
        '"$record"',
        "    local verdict=$?",
        f"    {raised}",
        '    return "$verdict"',
        "}",
    ]
    return _Cell("\n".join(lines), tuple(warnings), tuple(passed))


def _command_words(
    argv: Sequence[str], redactor: Redactor
) -> tuple[list[str], tuple[str, ...], tuple[str, ...]]:
    """The words of a cell's command as run.sh writes them, quoted for bash, and the
    variables they read a secret from: (words, read in the container, read by run.sh).

    A secret of a known variable (`${{ env.HF_TOKEN }}`) is that variable's expansion
    (Redactor.shell_text): in a shell's `-c` line, `"$HF_TOKEN"` for the container's shell
    (docker passes HF_TOKEN in), in any other word, run.sh's own. It was `***` in the
    line, which the container's shell expanded as a glob: `--token secret.py`.
    """
    words: list[str] = []
    inside: list[str] = []
    outside: list[str] = []
    for index, word in enumerate(argv):
        if redactor.text(word) == word:
            words.append(shlex.quote(word))
            continue
        script = index >= 2 and argv[index - 1] == "-c" and Path(argv[index - 2]).name in SHELLS
        if script:
            line, names = redactor.shell_text(word)
            words.append(shlex.quote(line))
            inside += names
        else:
            quoted, names = redactor.shell_text(shlex.quote(word))
            words.append(quoted)
            outside += names
    return words, tuple(dict.fromkeys(inside)), tuple(dict.fromkeys(outside))


# run.sh's functions, a bash file of its own (bash -n reads it in a test): the cells' own
# functions and the loop over them are written after it. `__NAME__` and the like are
# filled in by _write_run_sh.
RUN_SH_HEAD = Path(__file__).resolve().with_name("run.sh.in")


def _signal_cases() -> str:
    """run.sh's `case` arms from a description's key to its signal, and from its number
    (older torch's `is killed by signal: 11`): the fatal signals'."""
    return "\n".join(
        f"        {shlex.quote(description_key(describe_signal(name)))}*"
        f"|{signal_number(name)}) echo {name} ;;"
        for name in sorted(SHELL_FATAL_SIGNALS)
    )


def _ere(text: str) -> str:
    """`text` as a POSIX extended regular expression (grep -E) that matches it literally."""
    return re.sub(r"([\\.\[\](){}*+?|^$])", r"\\\1", text)


def _description_cases() -> str:
    """run.sh's `case` arms from a signal to its description as a pattern: every signal's,
    for a report that proves a 128+N status a death (classify's rule 4 takes any)."""
    return "\n".join(
        f"        {sig.name}) echo {shlex.quote(_ere(describe_signal(sig.name)))} ;;"
        for sig in sorted(signal.Signals, key=int)
    )


def _crash_words() -> tuple[str, str]:
    """The signals a child's death is a crash of (signals.CRASH_SIGNALS), as run.sh's
    patterns: their descriptions, longest first, and their names."""
    names = sorted(CRASH_SIGNALS, key=lambda name: len(describe_signal(name)), reverse=True)
    return "|".join(_ere(describe_signal(n)) for n in names), "|".join(sorted(CRASH_SIGNALS))


def _write_run_sh(path: Path, spec: Spec, plans: Sequence[AttemptPlan], cells: list[str]) -> None:
    crash_descriptions, crash_names = _crash_words()
    head = (
        RUN_SH_HEAD.read_text(encoding="utf-8")
        .replace("__NAME__", spec.name)
        .replace("__COUNT__", str(len(plans)))
        .replace("__SIGNALS__", _signal_cases())
        .replace("__DESCRIPTIONS__", _description_cases())
        .replace("__CRASH_DESCRIPTIONS__", crash_descriptions)
        .replace("__CRASH_NAMES__", crash_names)
        .replace("__SHELL_FATAL_NAMES__", "|".join(sorted(SHELL_FATAL_SIGNALS)))
        .replace("__IN_LAUNCH__", IN_LAUNCH)
        .replace("__IN_EXIT__", IN_EXIT)
    )
    numbers = " ".join(str(n) for n in range(1, len(plans) + 1))
    tail = (
        f'cells=("$@"); [ $# -gt 0 ] || cells=({numbers})\n'
        'for n in "${cells[@]}"; do\n'
        f'    case " {numbers} " in\n'
        f'        *" $n "*) "cell_$n" || NOT_RUN=1 ;;\n'
        '        *) echo "no cell $n" >&2; exit 2 ;;\n'
        "    esac\n"
        '    if [ "$INTERRUPTED" != 0 ]; then\n'
        '        echo "run.sh: interrupted during cell $n; the cells after it were not run" >&2\n'
        '        exit "$INTERRUPTED"\n'
        "    fi\n"
        "done\n"
        "# 0: every cell did what it was expected to; 1: some cell did not; 3: docker could\n"
        "# not run some cell (its image, a secret it needs, the engine), which wins over 1;\n"
        "# 4: some cell's exit status could be read two ways that judge apart (not judged\n"
        "# here), the others reproduced; 130: interrupted (Ctrl-C), the cell judged nothing.\n"
        '[ "$NOT_RUN" = 0 ] || exit 3\n'
        '[ "$MISSED" = 0 ] || exit 1\n'
        '[ "$NOT_JUDGED" = 0 ] || exit 4\n'
    )
    path.write_text(head + "\n" + "\n\n".join(cells) + "\n\n" + tail, encoding="utf-8")
    path.chmod(0o755)


def _write_readme(
    path: Path,
    spec: Spec,
    plans: Sequence[AttemptPlan],
    needs: Mapping[int, str],
    redactor: Redactor,
    passed: Sequence[str],
    copies: Sequence[_Workdir],
    perturbs: Sequence[_Perturbed],
) -> None:
    title = spec.title
    rows = []
    for number, plan in enumerate(plans, start=1):
        expect = ", ".join(f"{k}: {v}" for k, v in plan.expectation.to_dict().items())
        rows.append(f"| {number} | `{plan.cell.id or '-'}` | {redactor.text(expect)} |")
    secrets = (
        "No secret is written into this bundle. Export these variables before `./run.sh`\n"
        "(a cell that needs one refuses to start without it): "
        + ", ".join(f"`{name}`" for name in passed)
        + ".\n"
        if passed
        else ""
    )
    text = f"""# {title}

A self-contained bundle of the reprospec spec `{spec.name}` (`spec.yaml`): every
cell resolved, with the Docker image(s) to build and a script that runs each
cell with plain `docker run`. reprospec itself is not needed.

    ./run.sh          # build the image(s) if missing, run every cell
    ./run.sh 2        # only cell 2

Images are built from `images/K/` (`Dockerfile`, the reprospec harness, any
wheels). Nothing is pulled except the base images those Dockerfiles name; no image
of the machine that wrote this bundle is needed, unless its line below says so. What
each build starts from:

{chr(10).join(f"- `images/{k}/`: {text}" for k, text in needs.items())}

Without `--find-links` when the bundle was written, the builds install their
packages from the package index pip is configured with (on x86_64 PyPI's torch,
where one is, is the CUDA build), and a torch pinned as the build that ran
(`torch==2.13.0+cpu`, where the interpreter that wrote the bundle had it) from
the PyTorch index its requirements.txt names (`--extra-index-url`). A machine
without an index: rewrite the bundle with `reprospec materialize ...
--find-links WHEELHOUSE` (which then holds that torch build).
Results land in `results/N/` (`output.log`, `events.jsonl`, `env.json`), which
each run of cell N empties first: what it judges is that run's alone.
Each cell's container gets its own TMPDIR and XDG_CACHE_HOME in `results/N/tmp`
and `results/N/cache`, removed after it (unless the spec says
`environment.shared_tmp: true`).
A cell "reproduces" when its outcome matches the expectation below, which
`run.sh` prints beside what the cell did. A crash is a container killed by a
signal: each cell runs under `launch.py`, the init of reprospec's docker
runner, which records in `results/N/exit.json` whether the command died of a
signal (`killed by SIGUSR1`) or exited (both are 128 + 10 to docker). An image
whose python3 cannot run `launch.py` runs its cells under docker's own init
(`run.sh` says so on stderr), with no such record. An exit status of 128 + N,
which a shell also gives for its child's death, is a death by signal N where
`output.log` reports it (faulthandler's "Fatal Python error: Segmentation
fault", which the image arms in every Python process, or a shell's "4242
Segmentation fault"); without such a report it is either that death or the
program's own exit status (`sys.exit(139)`), which `run.sh` cannot tell apart
(`reprospec run` can, where it sees the processes): it judges it under both
readings, and where they judge apart it says `not judged here` and counts the
cell neither reproduced nor missed. A 137 with a shell's "Killed" is a death by
SIGKILL here even where a process sent it (`timeout -s KILL`): `run.sh` cannot
count the machine's OOM kills, by which `reprospec run` reads a SIGKILL a
process sent as no crash (`error` exit 137). Where the init recorded that exit and N is
a signal that reprospec reads as a death only from such a report (SIGUSR1,
SIGHUP, ...), it is the exit status (`exit 138`). A
DataLoader worker's death is a crash too: the worker dies of the
signal and the main process exits 1 with torch's "DataLoader worker (pid N) is
killed by signal" error, which `run.sh` says as `crash SIGSEGV (worker)` from
the harness's `worker_exit` event in `results/N/events.jsonl` (a command's:
the `child_exit` event the image writes as the main process reaps the dead
worker, or those words in `output.log`); a worker that exited with a code is
`error (worker)`. So is another child's (a subprocess, a pool's process, a test
binary), which the main process reports as an error of its own: `run.sh` reads
it from a `child_exit` event (the status a Python parent reaped), or from
`output.log` as `reprospec run` reads a container's output, `crash SIGSEGV
(child)` from subprocess's "died with <Signals.SIGSEGV: 11>", a shell's
"4242 Segmentation fault", the child's faulthandler report, or `crash (child)`
from a process pool's "terminated abruptly" (no crash where the cell's program left its
record of how it ended, `results/N/raised-PID.txt`, of its own pool's `BrokenProcessPool`,
and no `child_exit` event names a crash signal: the worker exited or was terminated).
`run.sh` judges the outcome, the
signal and the exit code, and exits 0 when every cell it ran did what it was
expected to, 1 when one did not (`NOT reproduced`), 3 when docker could not run
one, 4 when one was `not judged here` (the others reproduced), in that order of
precedence; the expectation's other fields (exception, message, phase, step,
where, rate) are yours to check in `results/N/`. Each cell runs once: a cell expected
to fail in only some of its runs (`rate`) may need `./run.sh N` again, unless it
reads its attempt number (a `${{{{ attempt }}}}` seed, a workload fault's `probability`):
the bundle runs attempt 1 of each cell, which does the same every time. Ctrl-C
stops the cell that runs (its containers are removed), judges nothing of it,
runs no other, and exits 130.
{_perturb_section(perturbs)}{secrets}
| cell | matrix | expected |
|---|---|---|
{chr(10).join(rows)}

{plural(len(needs), "image")}; the resolved configuration of cell N is `cells/N/plan.json`
(and `cells/N/cell.json` for the PyTorch harness).

## Files

{chr(10).join(_files_section(copy) for copy in copies)}
"""
    path.write_text(text, encoding="utf-8")


def _perturb_section(perturbs: Sequence[_Perturbed]) -> str:
    """The README's word on `environment.perturb`: what run.sh applies to which cell."""
    lines = [
        f"- cell {number}: {'; '.join(p.notes)}"
        for number, p in enumerate(perturbs, start=1)
        if p.notes
    ]
    if not lines:
        return ""
    return (
        "\nThe spec runs these cells perturbed (`environment.perturb`), and `run.sh`\n"
        "applies each perturbation as reprospec's docker runner does: the variables\n"
        "(`MALLOC_PERTURB_`, `GLIBC_TUNABLES`, `REPROSPEC_PERTURB` for the image's\n"
        "sitecustomize, ...) with `-e`, CPUs and memory with `docker run` options, nice\n"
        "with `nice -n N` before the command, `cpu_load`/`io_load` as competitors in a\n"
        "container of the cell's image beside it (`load.py`). Without them the program\n"
        "runs plain, which may not fail at all:\n\n" + "\n".join(lines) + "\n"
    )


def _files_section(copy: _Workdir) -> str:
    """What `workdirs/K/` holds and what its reader must supply (carry.py's rule)."""
    lines = [
        f"`workdirs/{copy.key}/` holds only the files the cells name (their command's words, "
        "the local modules those import, the spec's `files`), not the rest of the workdir, "
        "and never a hidden file:",
        "",
        # One line each: a name's newline written out (`new\x0aline.txt`), the list whole.
        *([f"- `{printable(name, one_line=True)}`" for name in copy.files] or ["- (none)"]),
    ]
    supply = list(copy.left_out)
    if copy.hidden:
        shown = ", ".join(f"`{name}`" for name in copy.hidden)
        supply.append(f"hidden, never carried (the workdir had {shown})")
    if supply:
        lines += ["", "Left out or masked, for you to supply if a cell needs it:", ""]
        lines += [f"- {line}" for line in supply]
    return "\n".join(lines) + "\n"
