"""`doctor --runner docker`: the checks of what the attempts run on, made where they run.

The docker runner runs each cell in a container of its image: the image's python3, torch,
nvcc and gdb, never the host's. doctor checked the host's all the same and passed them
(`nvcc 13.0 at /usr/local/bin/nvcc`, `native-stacks: eu-stack at /usr/bin/eu-stack`,
`starter`), which told a user deciding whether the docker run would work nothing of it.
So, of each check that describes an interpreter or a tool:

- made inside the image, where it is here: the environment captured in a throwaway
  container of it (what a run captures, `envinfo`), the interpreter's checks made from
  that (`torch`, `cuda`, `nvcc`, `spec-environment`, ...), each saying the image; gdb
  asked in a container of it (what the runner reads cores and hangs with), with the host
  kernel's `core_pattern`, which the containers share;
- skipped, saying why, where it does not apply (the host's attempt starter: a container
  starts under its own init) or is not cheap to ask in a container (the loader's CUDA
  libraries, compute-sanitizer, a CUDA op on a GPU the run passes through);
- skipped where the image is not here yet (built at the first run), saying so, and of a
  spec's `spec-environment` only what the runner refuses of any image (a path of this
  machine in `packages`) said; the host's `wsl` (the containers share its kernel) is kept.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.doctor import INTERPRETER_CHECKS

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan
    from reprospec.doctor import Check, Needs
    from reprospec.runners.docker.runner import DockerRunner

# Made on the image's environment where it is here: its interpreter's, and whether it
# holds the spec's python and packages.
_INSIDE = INTERPRETER_CHECKS | {"spec-environment"}
# Skipped where no image is checked: an interpreter's checks and gdb's, the host's.
_NOT_MADE = INTERPRETER_CHECKS | {"native-stacks"}
# The host's, which no container of the image uses or which a container does not cheaply say.
# (doctor asks none of them for the docker runner: `HOST_TOOLS`.)
_HOST_ONLY = {
    "starter": "the docker runner starts each attempt in a container of its image, under the "
    "container's own init, not through this machine's attempt starter",
    "cuda-libraries": "the host's loader cache (ldconfig -p); the attempts load the image's "
    "libraries, not checked here",
    "sanitizer": "the host's compute-sanitizer; the attempts run the image's, not checked here",
    "cuda-smoke": "a CUDA op in the host's interpreter; the attempts run the image's, not "
    "checked here",
}

# doctor's checks of this machine's tools, in its order, which the docker runner's attempts
# never use: doctor leaves them unasked (a placeholder of each), and `image_checks` makes
# `native-stacks` in each image or skips it, and skips the others saying why.
HOST_TOOLS = ("starter", "native-stacks", "cuda-libraries", "sanitizer", "cuda-smoke")


def present_images(
    plans: Sequence[AttemptPlan], spec: str, *, find_links: Path | None
) -> tuple[list[tuple[str, AttemptPlan]], list[str], list[str]]:
    """(tag, one plan of it) of each distinct image the plans run in that is here, in order,
    the tags of those not here yet, and the cells whose image cannot be made, by why
    (`cells b, c (no such Dockerfile)`: they were dropped, neither checked nor said); none
    where no engine answers (the `docker` check says so). Each tag as the run of
    `--find-links find_links` builds it (its wheels are part of the tag)."""
    from reprospec.errors import InfraError
    from reprospec.runners.docker import image
    from reprospec.runners.docker.engine import connect

    try:
        client = connect(timeout_s=30)
    except InfraError:
        return [], [], []
    found: dict[str, AttemptPlan | None] = {}
    unmade: dict[str, list[str]] = {}  # why -> every cell it stopped, in order
    spec_dir = Path(spec).resolve().parent
    for plan in plans:
        try:
            recipe = image.recipe_for(plan.environment, spec_dir=spec_dir, find_links=find_links)
        except InfraError as exc:
            unmade.setdefault(str(exc), []).append(plan.cell.id)
            continue
        if recipe.tag not in found:
            found[recipe.tag] = plan if image.image_present(client, recipe.tag) else None
    here = [(tag, plan) for tag, plan in found.items() if plan is not None]
    missing = [tag for tag, plan in found.items() if plan is None]
    return here, missing, [_cells(cells, why) for why, cells in unmade.items()]


def header(
    images: Sequence[tuple[str, AttemptPlan]],
    missing: Sequence[str],
    unmade: Sequence[str],
    spec: str | None,
) -> str:
    """What doctor's header says after the spec of the images it checked in (`present_images`):
    ` (the docker runner's attempts run in image T: checked in a container of it; image U
    not here: not checked)`, or, none here, ` (... run in the cells' images, none here
    yet)`; the cells whose image cannot be made in `image_checks`' words."""
    cannot = _cannot_be_made(unmade)
    if images:
        tags = ", ".join(tag for tag, _ in images)
        said = [f"the docker runner's attempts run in image {tags}: checked in a container of it"]
        said += [f"image {', '.join(missing)} not here: not checked"] if missing else []
        said += [f"{cannot}: not checked"] if cannot else []
    else:
        none_yet = ", none here yet" if spec is not None and _none_yet(missing, unmade) else ""
        said = [f"the docker runner's attempts run in the cells' images{none_yet}"]
        said += [cannot] if cannot else []
    return f" ({'; '.join(said)})"


def _none_yet(missing: Sequence[str], unmade: Sequence[str]) -> bool:
    """Whether, no image being here, one is to be built at the first run: one is missing,
    or no cell's image is known not to be makeable (no engine answered: none read)."""
    return bool(missing) or not unmade


def _cannot_be_made(unmade: Sequence[str]) -> str:
    """`the image of cell b (why) cannot be made`, of `present_images`' `unmade`; "" of none."""
    return f"the image of {', '.join(unmade)} cannot be made" if unmade else ""


def _cells(cells: list[str], why: str) -> str:
    """`cell b (why)`, or `cells b, c (why)`: the cells one reason stopped."""
    named = ", ".join(dict.fromkeys(cells))
    return f"{'cells' if len(set(cells)) > 1 else 'cell'} {named} ({why})"


def image_checks(
    host: Sequence[Check],
    needs: Needs | None,
    images: Sequence[tuple[str, AttemptPlan]],
    spec: str | None,
    visible_devices: str | None,
    missing: Sequence[str] = (),
    unmade: Sequence[str] = (),
    *,
    find_links: Path | None,
) -> list[Check]:
    """The host's checks (`host`, in doctor's order) made for the docker runner: each of
    an interpreter or a tool made in each image that is here, and skipped for each image
    not here yet (`missing`, its tag) and each cell whose image cannot be made (`unmade`),
    or skipped saying why (`spec` None: `doctor --runner docker` without one, which names
    no image). `find_links`: the run's `--find-links`, which an image's capture is built
    with as the run builds it."""
    from reprospec.doctor import Check
    from reprospec.doctor.needs import check_refused_packages

    inside: dict[str, list[Check]] = {}
    if images and spec is not None and needs is not None:
        inside = _made_inside(needs, images, spec, visible_devices, find_links=find_links)
        # Each check made in the images here, skipped for those not here: the header named
        # the ones here alone, and nothing said the other cells were not checked.
        for tag in missing:
            for name, made in inside.items():
                # (its docker-image line says whether the first run builds it or it is missing)
                made.append(
                    Check(name, "skipped", f"image {tag} is not here: checked in it once it is")
                )
        for cell in unmade:
            for name, made in inside.items():
                made.append(Check(name, "skipped", _cannot_be_made([cell])))
    elif spec is not None:
        # No image here: where none can be made either, "built at the first run" was untrue
        # (a one-cell spec whose Dockerfile is missing) (review).
        not_yet = "the image is not here yet (built at the first run): checked inside it once it is"
        why = "; ".join(
            filter(None, [not_yet if _none_yet(missing, unmade) else "", _cannot_be_made(unmade)])
        )
    else:
        why = (
            "the host's; the docker runner's attempts run in the cells' images, which "
            "`doctor SPEC --runner docker` checks inside"
        )
    checks: list[Check] = []
    for check in host:
        if check.name in inside:
            checks += inside.pop(check.name)
        elif check.name in _HOST_ONLY:
            checks.append(Check(check.name, "skipped", _HOST_ONLY[check.name]))
        elif (not inside and check.name in _NOT_MADE) or (spec is None and check.name == "shm"):
            # (without a spec, `shm` measured the host's /dev/shm, where a container has
            # docker's 64 MiB)
            checks.append(Check(check.name, "skipped", why))
        elif not inside and check.name == "spec-environment" and needs is not None:
            # What the runner refuses of any image, else skipped: it described the host's
            # interpreter (`the interpreter is python 3.11.7; the spec names 3.10`).
            checks.append(check_refused_packages(needs, why))
        else:
            checks.append(check)
    return checks


def _made_inside(
    needs: Needs,
    images: Sequence[tuple[str, AttemptPlan]],
    spec: str,
    visible_devices: str | None,
    *,
    find_links: Path | None,
) -> dict[str, list[Check]]:
    """Each check of `_INSIDE` and `native-stacks`, by name, made in each image: from the
    environment a throwaway container of it captures, as a run does (its runner given the
    run's `find_links`: without them the capture keyed, and built, another image, whose
    build failed where the index has none of the wheelhouse's packages)."""
    from reprospec import doctor
    from reprospec.doctor import Check
    from reprospec.runners.docker.runner import DockerRunner

    inside: dict[str, list[Check]] = {}
    runner = DockerRunner(
        find_links=find_links, spec_dir=Path(spec).resolve().parent, say=lambda _line: None
    )
    try:
        for tag, plan in images:
            with tempfile.TemporaryDirectory(prefix="reprospec-doctor-") as folder:
                env = runner.capture_environment(plan, Path(folder))
            error = env.get("error")
            # (a Dockerfile's image gets none of the spec's packages installed)
            built = replace(needs, dockerfile=plan.environment.dockerfile is not None)
            made = (
                [Check(n, "skipped", f"could not be captured: {error}") for n in sorted(_INSIDE)]
                if isinstance(error, str)
                else doctor.run_checks(dict(env), built, visible_devices)
            )
            for check in made:
                if check.name not in _INSIDE:
                    continue  # the spec's own (device, memory, limits): the same anywhere
                inside.setdefault(check.name, []).append(
                    Check(check.name, check.status, f"in image {tag}: {check.why}", check.todo)
                )
            inside.setdefault("native-stacks", []).append(_gdb_in(runner, tag))
    finally:
        runner.close()
    return inside


def _gdb_in(runner: DockerRunner, tag: str) -> Check:
    """gdb in the image (what the runner reads cores and hangs with), and where the host's
    kernel writes the containers' cores."""
    from reprospec import native
    from reprospec.doctor import Check
    from reprospec.runners.docker.native import ContainerNative

    missing = (runner.native or ContainerNative()).gdb_missing(runner.client, tag)
    if missing is not None:
        return Check(
            "native-stacks",
            "warn",
            f"in image {tag}: {missing}: crashes and hangs in it get Python stacks only",
            "install gdb in the image (apt-get install gdb)",
        )
    pattern = native.core_pattern()
    if pattern.piped:
        return Check(
            "native-stacks",
            "warn",
            f"gdb runs in image {tag}, but the host's kernel.core_pattern pipes cores to "
            f"{pattern.handler}: its crashes get no native stacks (hangs do)",
            "sysctl kernel.core_pattern=core (as root) writes them where reprospec reads them",
        )
    return Check(
        "native-stacks",
        "pass",
        f"gdb runs in image {tag}; its cores go to the host's kernel.core_pattern={pattern.raw!r}",
    )


__all__ = ["HOST_TOOLS", "header", "image_checks", "present_images"]
