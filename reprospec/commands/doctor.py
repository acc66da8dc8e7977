"""`reprospec doctor [SPEC]`: compatibility checks for this machine (and what SPEC needs)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.errors import InfraError

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan
    from reprospec.core.sections import Environment
    from reprospec.doctor import Check, Needs


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `doctor` verb's arguments."""
    p = sub.add_parser("doctor", help="compatibility checks for this machine and a spec")
    opt.spec(p, optional=True, help="also check what this spec's cells need")
    opt.python(
        p,
        help="the interpreter to check (default: this one; with --runner venv, the one it "
        "builds on for the spec's python)",
    )
    opt.runner(
        p,
        help="the runner SPEC will run on: on local (the default) a package the spec names "
        "and the interpreter lacks is a failure; venv and docker install them",
    )
    opt.find_links(
        p,
        help="with --runner venv: a wheelhouse the spec's packages resolve from besides the "
        "configured index, as `run --runner venv --find-links DIR` installs from it; with "
        "--runner docker: the wheelhouse the images build from, whose wheels are part of "
        "each image's tag, as `run --runner docker --find-links DIR` builds them",
    )
    opt.text_or_json(p, help="text (default) or json (the checks as JSON)")


MARKS = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "skipped": "SKIP"}


def run(args: argparse.Namespace) -> int:
    from reprospec.commands.interrupt import install_stop_handlers
    from reprospec.venvs.build import remembered_failures

    # SIGTERM (`timeout`, a CI cancel) and SIGHUP (a closed terminal) stop doctor as Ctrl-C
    # does: the uv of its venv checks runs in a session of its own with the package builds
    # it starts, which only that stop ends (venvs/build.run_uv); they killed doctor outright
    # and left uv and a build running.
    install_stop_handlers(threading.Event())
    with remembered_failures():  # kept for this doctor's checks (venv-python, venv-packages)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from reprospec import doctor
    from reprospec.environment.probe import probe_environment

    needs, environments, plans = (
        _needs(args.spec, args.runner) if getattr(args, "spec", None) else (None, (), ())
    )
    given = getattr(args, "python", None)
    if given is not None and args.runner == "docker":
        # As `run` refuses it (core/runoptions.py): doctor checked this interpreter and said
        # nothing of the images the cells run in, as if the docker run would use it.
        from reprospec.core.runoptions import docker_python_refused

        raise docker_python_refused("--python", given, "check with --runner local or venv")
    links = getattr(args, "find_links", None)
    if links is not None and (args.runner == "local" or needs is None):
        # It would be dropped without a word: doctor resolves a spec's packages from it for
        # the venv runner, and names the image the docker runner builds with its wheels.
        from reprospec.errors import UsageError

        raise UsageError(
            f"--find-links {links}: for --runner venv or docker with a SPEC only (the "
            "wheelhouse the venv runner installs the spec's packages from, and the docker "
            "runner builds their images from)"
        )
    checked = None if given is None else _given_python(given, args.runner)
    interpreters, base = _interpreter(checked, needs)
    # The docker runner's attempts import the image's torch and packages, not this
    # interpreter's: importing the host's torch (2 s of CPU) and starting CUDA on it told
    # none of the checks kept for it (shm, wsl, device, memory, limits: the machine part
    # and nvidia-smi's rows).
    docker = args.runner == "docker"
    # An interpreter a command runs on but the capture (the harness) does not: a Python 3.9
    # (`--python`, or the venv runner's base for `environment.python: "3.9"`), on which `run`
    # runs a command spec, warning that the capture failed. doctor exited 3. Of a matrix
    # over `python`, the first that can be captured is checked, the others said (`capture`):
    # those after it too, each by a bare capture (no torch, no CUDA), where `['3.11', '3.9']`
    # passed with every 3.9 workload cell an infra error (review).
    failed: list[tuple[_Interpreter, str]] = []
    env: Mapping[str, JsonValue] | None = None
    chosen = interpreters[0]
    for each in interpreters:
        packages = () if docker or each.needs is None else each.needs.packages
        try:
            if env is None:
                env = probe_environment(each.path, packages, cuda=not docker, with_torch=not docker)
                chosen = each
            elif each.path != chosen.path:
                probe_environment(each.path, (), cuda=False, with_torch=False)
        except InfraError as exc:
            if each.path == sys.executable:
                raise
            failed.append((each, str(exc)))
    # (the spec's, every python of it: `chosen.needs` is of the interpreter checked alone)
    every_python = needs
    python, whose, needs = chosen.path, chosen.whose, chosen.needs
    uncaptured = None
    if env is None:
        # None could be: the machine's part is the engine's own capture; the interpreter's
        # checks say why.
        uncaptured = "; ".join(
            f"{each.label}: {why}" if each.label else why for each, why in failed
        )
        env = probe_environment(sys.executable, cuda=not docker, with_torch=False)
    made = doctor.run_checks(env, needs, os.environ.get("CUDA_VISIBLE_DEVICES"))
    checks = [
        *(
            _uncaptured(made, uncaptured, needs, [each.label for each, _ in failed])
            if uncaptured is not None
            else [*_captured_not(failed, needs), *made]
        ),
        *([base] if base is not None else []),
        *_resolved(every_python, checked, links, args),
        *_tool_checks(python, env, args.runner, captured=uncaptured is None),
        *(_docker_checks(environments, args.spec, find_links=links) if environments else ()),
        # (the docker runner's, with a SPEC, are `_docker_checks`'; the venv runner's uv is
        # needed alike with one, where it was not checked and its absence said nothing)
        *(_runner_checks(args.runner) if needs is None or args.runner == "venv" else ()),
    ]
    if docker:
        # The attempts run in the cells' images: each check of an interpreter or a tool
        # made there, or skipped saying why (commands/doctorimage.py).
        from reprospec.commands import doctorimage

        spec = args.spec if needs is not None else None
        images, missing, unmade = (
            doctorimage.present_images(plans, spec, find_links=links) if spec else ([], [], [])
        )
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        checks = doctorimage.image_checks(
            checks, needs, images, spec, visible, missing, unmade, find_links=links
        )
        header = f"{args.spec or 'docker'}{doctorimage.header(images, missing, unmade, spec)}"
    else:
        header = f"{python}" + (f" for {args.spec}" if needs else "") + whose
    if args.format == "json":
        json.dump([check.to_dict() for check in checks], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(f"reprospec doctor: {header}\n")
        width = max(len(check.name) for check in checks)
        for check in checks:
            sys.stdout.write(f"  {MARKS[check.status]}  {check.name:<{width}}  {check.why}\n")
            if check.todo and check.status != "pass":
                sys.stdout.write(f"  {'':4}  {'':<{width}}  -> {check.todo}\n")
        counts = {status: sum(c.status == status for c in checks) for status in MARKS}
        sys.stdout.write(", ".join(f"{n} {s}" for s, n in counts.items() if n) + "\n")
    return 1 if any(check.status == "fail" for check in checks) else 0


def _resolved(
    needs: Needs | None,
    checked: str | None,
    links: Path | None,
    args: argparse.Namespace,
) -> list[Check]:
    """`venv-packages` (commands/doctorvenv.py) where the venv runner builds the cells' venvs."""
    if needs is None or needs.runner != "venv":
        return []
    from reprospec.commands.doctorvenv import resolve_check

    found = resolve_check(needs, checked, links, Path(args.spec).resolve().parent)
    return [] if found is None else [found]


_CAPTURE_TODO = (
    "a command runs on it all the same (`run` warns that the capture failed); a workload, "
    "and the checks of the interpreter, need one the harness runs on"
)


def _uncaptured(
    checks: Sequence[Check], reason: str, needs: Needs | None, labels: Sequence[str]
) -> list[Check]:
    """`checks` made on the engine's own capture where the interpreter's failed (`reason`,
    said once, by a `capture` check first): each check of the interpreter skipped, and the
    spec's environment failed where a cell is a workload (the local runner refuses it: a
    workload runs the harness), else skipped (its packages could not be read there).
    `labels`: the pythons of a matrix tried (`python 3.9 (cell py=3.9)`), whose workload
    cells are named, not every one ("" where one interpreter is checked)."""
    from reprospec.core.words import cells_not_run
    from reprospec.doctor import INTERPRETER_CHECKS, Check

    named = [label for label in labels if label]
    whose = cells_not_run("workload", of=" and ".join(named) or "it")
    out = [Check("capture", "warn", reason, _CAPTURE_TODO)]
    for check in checks:
        if check.name in INTERPRETER_CHECKS:
            out.append(Check(check.name, "skipped", _NOT_MADE))
        elif check.name != "spec-environment":
            out.append(check)
        elif needs is not None and needs.workload:
            out.append(
                Check(
                    "spec-environment",
                    "fail",
                    "a workload runs reprospec's harness in the interpreter, which the capture "
                    f"could not run in (capture): {whose}",
                    "give an interpreter the harness runs on (--python PATH, or "
                    "environment.python with --runner venv)",
                )
            )
        else:
            out.append(Check("spec-environment", "skipped", _NOT_MADE))
    return out


_NOT_MADE = "not made: the interpreter's environment could not be captured (capture)"


def _captured_not(failed: Sequence[tuple[_Interpreter, str]], needs: Needs | None) -> list[Check]:
    """The pythons of a matrix that could not be captured where another was (`failed`: each
    with why): a `capture` check naming them and their cells, failed where a cell is a
    workload (each of theirs is an infra error), else a warning. `python: ["3.9", "3.11"]`
    failed every cell on 3.9's capture, the 3.11 cells never checked."""
    from reprospec.core.words import cells_not_run
    from reprospec.doctor import Check

    if not failed:
        return []
    workload = needs is not None and needs.workload
    return [
        Check(
            "capture",
            "fail" if workload else "warn",
            "; ".join(f"{each.label}: {why}" for each, why in failed)
            + (
                ": a workload runs reprospec's harness in the interpreter, so "
                + cells_not_run("workload")
                if workload
                else ""
            ),
            _CAPTURE_TODO,
        )
    ]


def _given_python(given: str, runner: str) -> str:
    """`--python`'s interpreter, checked as every verb checks it; on the venv runner, a name
    (`python3.10`, `3.10`) found as that runner finds the one it builds on
    (`find_interpreter`: past a pyenv shim that does not run), where doctor took PATH's
    shim and exited 3 of an interpreter `run --runner venv` builds on."""
    if runner == "venv":
        from reprospec.runners.venv import base_python

        return base_python(given)
    from reprospec.runners.local import checked_python

    return checked_python(given)


@frozen
class _Interpreter:
    """An interpreter to check: its path, whose it is (said after the header's path), the
    `needs` its spec-environment compares it with, and the python and cells it is of where
    the venv runner's cells name several (`python 3.9 (cell py=3.9)`; else "")."""

    path: str
    whose: str = ""
    needs: Needs | None = None
    label: str = ""


def _interpreter(given: str | None, needs: Needs | None) -> tuple[list[_Interpreter], Check | None]:
    """The interpreters to check, the first that can be captured checked, and a failing
    `venv-python` check where the runner would find none for some cells.

    The venv runner builds each cell's venv on the spec's `python` (found by uv here) unless
    `--python` is given, so that is the interpreter its cells run: checking this one warned
    `the interpreter is python 3.11.7; the spec names 3.12` of a mismatch the runner does not
    have, and said nothing where no 3.12 was here, which made every cell infra-error. Each
    python the cells name is looked for (a matrix over it: the last cell's alone was, and
    the cells of a python not here passed), each found returned in the cells' order.
    (`find_interpreter` keeps each answer for this doctor, `run`'s `remembered_failures`, a
    python not here and a uv timeout too: venv-packages asks it again without a second
    search.)"""
    from reprospec.core.words import cells_not_run
    from reprospec.doctor import Check
    from reprospec.doctor.needs import named_cells
    from reprospec.venvs.build import EnvBuildError, find_interpreter, own_interpreter_path

    if given is not None or needs is None or needs.runner != "venv" or needs.python is None:
        # On the venv runner, said: the header named a path alone, read as what the cells
        # run, where each runs in a venv of its own packages built on it.
        venv = needs is not None and needs.runner == "venv"
        whose = " (the venv runner builds each cell's venv on it)" if venv else ""
        return [_Interpreter(given or sys.executable, whose, needs)], None
    wanted = [(p, cells) for p, cells in needs.pythons if p is not None] or [(needs.python, ())]
    # Each interpreter found, with the pythons and cells of it: two pythons that name one
    # interpreter (`3.11` and `3.11.7`, a path and its version) were each probed, and one that
    # could not be captured was said twice, as two (`python 3.11 (cell py=3.11): ...; python
    # 3.11.7 (cell py=3.11.7): ...`, the same failure).
    of_path: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    not_here: list[tuple[str, tuple[str, ...]]] = []  # (why, cells) of each not found
    versions: list[str] = []  # of those not found
    for request, cells in wanted:
        try:
            interpreter = find_interpreter(request)
        except EnvBuildError as exc:
            not_here.append((str(exc), cells))
            versions.append(request)
            continue
        of_path.setdefault(interpreter.path, []).append((request, cells))
    # Counted once grouped: two pythons of one interpreter (`3.11`, `3.11.7`) are one, whose
    # label named every cell of the matrix (`python 3.11 and 3.11.7 (cells py=3.11,
    # py=3.11.7)`), the noise a single interpreter's check is spared. Cells that name no
    # python count as one more (built on reprospec's own, `find_interpreter(None)`):
    # beside them the one found is not every cell's, and its label "" made `_uncaptured`
    # say "every workload cell". Not where reprospec's own is that one: it was labelled
    # `python 3.11 (cell py=3.11)`, and its failed capture left out the py=none cell, which
    # fails alike; its cells are named with that interpreter's.
    none_cells = tuple(c for p, cells in needs.pythons if p is None for c in cells)
    own = own_interpreter_path()
    unnamed = any(p is None for p, _ in needs.pythons) and own not in of_path
    several = len(of_path) + len(not_here) + unnamed > 1
    # (no cell ids given: nothing to name, where it said "(cells )")
    missing = [
        f"{why} ({named_cells(cells)})" if cells and several else why for why, cells in not_here
    ]
    found: list[_Interpreter] = []
    for path, group in of_path.items():
        requests = [request for request, _ in group]
        ids = [cell for _, these in group for cell in these]
        if path == own:
            ids.extend(none_cells)
        of = f" ({named_cells(ids)})" if ids and several else ""
        said = " and ".join(requests)
        whose = f" (the venv runner's interpreter for the spec's python {said})"
        # Each python of it held against it, its cells named (one: `python` is every cell's).
        checked = replace(needs, python=requests[0], pythons=tuple(group) if len(group) > 1 else ())
        found.append(_Interpreter(path, whose, checked, f"python {said}{of}" if several else ""))
    # Cells that name no python are built on reprospec's own: not every cell is of those
    # missing, even where none is found.
    some = bool(found) or unnamed
    base = (
        Check(
            "venv-python",
            "fail",
            f"{'; '.join(missing)}: the venv runner builds each cell's venv on it, so "
            + (cells_not_run("such", of="") if some else cells_not_run()),
            f"install one (`uv python install {' '.join(versions)}`), or run with --python PATH",
        )
        if missing
        else None
    )
    if not found:
        # No interpreter of it to compare: said by `base`. The header said a bare path, read
        # as what the cells run, where it is only the base of the cells that name no python,
        # and where there are none of those (not `some`), of no cell at all.
        whose = (
            " (reprospec's own, none of the spec's pythons being here: the venv runner builds "
            "on it only the cells that name no python)"
            if some
            else " (reprospec's own, none of the spec's pythons being here: no cell is built "
            "on it; checked for the machine alone)"
        )
        return [_Interpreter(sys.executable, whose, replace(needs, python=None, pythons=()))], base
    return found, base


def _tool_checks(
    python: str, env: Mapping[str, JsonValue], runner: str, captured: bool = True
) -> list[Check]:
    """This machine's attempt starter, native-stack tools and CUDA libraries. With the docker
    runner, none of them is asked: each is made in the image or skipped, saying why, by
    doctorimage.image_checks, which rewrites these placeholders, where the host's were asked
    and thrown away (a CUDA op in a child on a GPU machine, up to 120 s). Where `python`
    could not be captured (not `captured`), its CUDA smoke test is skipped, as `_uncaptured`
    skips the interpreter's checks."""
    from reprospec import doctor, native
    from reprospec.process import starter

    if runner == "docker":
        from reprospec.commands.doctorimage import HOST_TOOLS

        return [doctor.Check(name, "skipped", "") for name in HOST_TOOLS]
    found = starter.find()
    return [
        doctor.check_starter(found.ready, found.how),
        doctor.check_native_stacks(
            native.gdb_path(),
            native.core_pattern(),
            resource.getrlimit(resource.RLIMIT_CORE)[1],
            native.eustack_path(),
            native.pyspy_path(),
        ),
        *_cuda_checks(python, env, captured),
    ]


def _cuda_checks(python: str, env: Mapping[str, JsonValue], captured: bool = True) -> list[Check]:
    """The loader's CUDA libraries, compute-sanitizer, and (with a GPU) a CUDA op in a child.
    The smoke test is of `python`'s torch: skipped where it could not be captured (not
    `captured`), where `env` is reprospec's own capture, whose GPUs made it run `python3.9 -c
    "import torch..."` (`No module named 'torch'`) and fail a command spec. compute-sanitizer
    is looked for all the same: PATH, the toolkit and `python`'s sys.path need no capture."""
    from reprospec.core import capped
    from reprospec.doctor import Check, cuda
    from reprospec.process import sanitizer

    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    libraries: tuple[cuda.Library, ...] | None = None
    problem = ""
    try:
        done = capped.run([ldconfig, "-p"], limit=4 << 20, timeout_s=30)
    except OSError as exc:
        problem = str(exc)
    else:
        if done.returncode == 0:
            libraries = cuda.cuda_libraries(done.stdout.decode("utf-8", "replace"))
        else:
            problem = f"exit {done.returncode}"
    from reprospec.doctor.check import gpus
    from reprospec.environment.captured import section

    if not captured:
        return [
            cuda.check_cuda_libraries(libraries, problem),
            cuda.check_compute_sanitizer(sanitizer.find(python)),
            Check("cuda-smoke", "skipped", _NOT_MADE),
        ]
    has_gpu = bool(gpus(env) or section(env, "torch").get("device_count"))
    returncode: int | None = None
    output = ""
    if has_gpu:
        # In a child, never here: the engine does not import torch (nor initialise CUDA).
        try:
            smoke = capped.run(
                [python, "-c", cuda.SMOKE_CODE], limit=64 << 10, timeout_s=120, merge_stderr=True
            )
        except OSError as exc:
            output = str(exc)
        else:
            returncode = None if smoke.timed_out else smoke.returncode
            output = smoke.stdout.decode("utf-8", "replace")
    return [
        cuda.check_cuda_libraries(libraries, problem),
        cuda.check_compute_sanitizer(sanitizer.find(python)),
        cuda.check_cuda_smoke(has_gpu, returncode, output),
    ]


def _needs(
    path: str, runner: str
) -> tuple[Needs, tuple[Environment, ...], tuple[AttemptPlan, ...]]:
    """What the spec's cells need, resolved through the engine's own planning (nothing runs),
    and, for the docker runner, each distinct environment its cells run in and the first
    attempt of each cell (whose image doctor checks inside)."""
    from reprospec import doctor
    from reprospec.core.runoptions import RunOptions
    from reprospec.plan.run import plan_run
    from reprospec.process import rlimits
    from reprospec.spec.load import load_spec

    planned = plan_run(load_spec(path), RunOptions())
    firsts = [plan for plan in planned.attempts if plan.attempt == 1]
    cells = [(plan.workload or {}, plan.environment) for plan in firsts]
    needs = replace(doctor.needs_of(cells, [plan.cell.id for plan in firsts]), runner=runner)
    if needs.shm_size is not None and runner != "docker":
        # (docker mounts the container's /dev/shm of that size itself)
        needs = replace(needs, shm_refused=rlimits.namespaces_permitted())
    if runner != "docker":
        return needs, (), ()
    from reprospec.runners.docker.image import environment_key

    # One per image, keyed as the docker runner keys them.
    distinct = {environment_key(plan.environment): plan.environment for plan in firsts}
    return needs, tuple(distinct.values()), tuple(firsts)


def _runner_checks(runner: str) -> list[Check]:
    """What `--runner` itself needs here (`doctor --runner venv` checked the local runner's
    machine alone, the runner ignored): venv, uv to build each cell's venv with, asked with
    or without a SPEC (a spec's venvs need it alike); docker, an engine that answers, asked
    here without a SPEC only. The images a spec's cells need, and whether their venvs'
    packages resolve (`venv-packages`), are that spec's own checks."""
    from reprospec.doctor import Check

    if runner == "docker":
        return _docker_checks((), "", find_links=None)
    if runner != "venv":
        return []
    from reprospec.core.words import cells_not_run
    from reprospec.venvs.build import EnvBuildError, uv_binary

    try:
        found = uv_binary()
    except EnvBuildError as exc:
        return [
            Check(
                "uv",
                "fail",
                f"{exc}: the venv runner builds each cell's venv with it, so "
                + cells_not_run(of=""),
                "pip install uv",
            )
        ]
    return [Check("uv", "pass", f"uv at {found} builds each cell's venv")]


def _docker_checks(
    environments: Sequence[Environment], spec: str, *, find_links: Path | None
) -> list[Check]:
    """The docker runner's needs: an engine that answers, and each cell's image there or
    buildable (its FROM images there: reprospec never pulls). `doctor --runner docker`
    checked none of it, and passed a spec whose every cell was `infra-error: docker image
    ... is missing`. Each image is keyed as the run keys it, `find_links`' wheels included
    (part of a packages image's tag): without them doctor named an image the run of
    `--find-links DIR` never builds, and checked that one."""

    from reprospec.core.words import cells_not_run
    from reprospec.doctor import Check
    from reprospec.errors import InfraError
    from reprospec.runners.docker import image
    from reprospec.runners.docker.engine import connect

    try:
        client = connect(timeout_s=30)
    except InfraError as exc:
        return [Check("docker", "fail", str(exc), "start dockerd, or set DOCKER_HOST")]
    checks = [Check("docker", "pass", "a Docker engine answered")]
    if not environments:  # `--runner docker` with no spec: no folder of one to resolve
        return checks
    # One line per image: the cells of a matrix over anything but the image (an `env`
    # variable) share theirs, and its line came once per cell.
    seen: set[str] = set()
    spec_dir = Path(spec).resolve().parent
    for environment in environments:
        try:
            recipe = image.recipe_for(environment, spec_dir=spec_dir, find_links=find_links)
        except InfraError as exc:
            if str(exc) not in seen:
                seen.add(str(exc))
                checks.append(Check("docker-image", "fail", str(exc)))
            continue
        if recipe.tag in seen:
            continue
        seen.add(recipe.tag)
        reason = image.unavailable(client, recipe)
        if reason is not None:
            # The run's own words for it, as each of its cells' infra-error would say them.
            why = f"{reason}; {cells_not_run()}"
            checks.append(Check("docker-image", "fail", why))
        elif image.image_present(client, recipe.tag):
            checks.append(Check("docker-image", "pass", f"image {recipe.tag} is here"))
        else:
            checks.append(
                Check(
                    "docker-image",
                    "pass",
                    f"image {recipe.tag} is built from the spec's {recipe.source} at the first "
                    "run (its base is here)",
                )
            )
    return checks
