"""Docker images for attempts: which image an environment needs, and building it once.

Three sources, in this order (docs/spec-format.md, `environment`):
  - `dockerfile`: the user's own Dockerfile, built with its folder as the context;
  - `packages`: a Dockerfile rendered from `templates/Dockerfile.j2` (beside this module)
    (`image` or the default runner image as base, the packages through pip,
    the harness);
  - otherwise `image` (or the default runner image) as it is.
Built images are tagged by a hash of everything that went into the build, so a
second run finds its image and builds nothing; their labels say what they hold, which
`reprospec envs` lists (runners/docker/cache.py). Nothing is ever pulled: a
missing image is an InfraError saying how to get it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core import safepoint
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.logtext import without_escapes
from reprospec.core.sections import DEFAULT_IMAGE as DEFAULT_IMAGE  # the runner's, named here too
from reprospec.core.sections import IMAGE_REF, Environment
from reprospec.environment.packages import local_path, requirement_name, requirement_names
from reprospec.errors import InfraError
from reprospec.runners.docker.removal import remove_container

if TYPE_CHECKING:
    from reprospec.runners.docker.sdk import DockerClient

PACKAGE_DIR = Path(__file__).resolve().parent.parent.parent
HARNESS_DIR = PACKAGE_DIR / "harness"
STACKDUMP_DIR = PACKAGE_DIR / "stackdump"
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
CA_DIR = Path("/usr/local/share/ca-certificates")
# Where the images the templates render carry the harness and the stack dumper: their own
# PYTHONPATH (the templates' ENV), which materialize's run.sh puts a cell's PYTHONPATH before.
IMAGE_HARNESS = "/opt/reprospec/harness"
IMAGE_STACKDUMP = "/opt/reprospec/stackdump"

BASE_IMAGE = "reprospec-base:bookworm"
# Both are built on this machine (`reprospec docker setup`); a bundle for another machine
# rebuilds their content from this public base and these packages instead.
LOCAL_IMAGES = (DEFAULT_IMAGE, BASE_IMAGE)
PUBLIC_BASE = "debian:bookworm-slim"
# The python3 of every Debian bookworm image (PUBLIC_BASE's, and a `BASE=` one's).
PUBLIC_PYTHON = "3.11"
# What `reprospec docker setup` installs into the runner image (REPROSPEC_PACKAGES' default).
RUNNER_PACKAGES = ("torch==2.13.0", "numpy")
BUILT_REPOSITORY = "reprospec-env"
HASH_LABEL = "org.reprospec.content-hash"
# The ids of the FROM images a build ran on: a base built again (`reprospec docker setup` rebuilds
# an outdated one) makes the images built on it outdated too, whatever their content hash.
BASES_LABEL = "org.reprospec.base-ids"
# What a built image holds, for `reprospec envs`: set on every build (empty when it does not
# apply), so that an image built FROM another of ours does not show its base's as its own.
SOURCE_LABEL = "org.reprospec.source"
PACKAGES_LABEL = "org.reprospec.packages"  # the requirements, one a line
FROM_LABEL = "org.reprospec.from"  # the FROM images by name, comma-separated
DOCKERFILE_LABEL = "org.reprospec.dockerfile"  # the user's Dockerfile
HOLDS_LABELS = (SOURCE_LABEL, PACKAGES_LABEL, FROM_LABEL, DOCKERFILE_LABEL)
BUILD_LOG_TAIL = 25
# Wheels are named by version: a name and a size identify one without reading 200 MB.
_BIG_FILE = 1 << 20
_CONTEXT_SKIP = {".git", ".reprospec", "__pycache__", ".mypy_cache", ".pytest_cache"}


@frozen
class BuildRecipe:
    """Everything a build needs: the Dockerfile text and the files of its context."""

    dockerfile: str
    # (path inside the context, file or folder on this machine)
    files: tuple[tuple[str, Path], ...] = ()
    # (path inside the context, text content)
    texts: tuple[tuple[str, str], ...] = ()
    # FROM images that must be present before building (never pulled).
    bases: tuple[str, ...] = ()
    # Folders the Dockerfile COPYs, created even when empty.
    folders: tuple[str, ...] = ()
    # The Dockerfile's name inside the context (a user's may be `Dockerfile.gpu`).
    dockerfile_name: str = "Dockerfile"
    # HOLDS_LABELS' values: what the image holds, said by its labels (not hashed: they
    # follow from what is).
    labels: tuple[tuple[str, str], ...] = ()


@frozen
class ImageRecipe:
    """The image an environment's attempts run in; `build` is None when it is used as is."""

    tag: str
    source: str  # "image" | "dockerfile" | "packages"
    build: BuildRecipe | None = None
    hint: str = field(default="", compare=False)


def _check_ref(ref: str, what: str) -> str:
    # The reference lands in a FROM line: a newline would smuggle in instructions.
    if not IMAGE_REF.match(ref):
        raise InfraError(f"{what} {ref!r} is not a valid image reference")
    return ref


def _how_to_get(image: str) -> str:
    if image in (DEFAULT_IMAGE, BASE_IMAGE):
        return "build it with `reprospec docker setup` (no registry needed)"
    return f"run `docker pull {image}` or build it"


def recipe_for(
    environment: Environment,
    *,
    spec_dir: Path | None = None,
    find_links: Path | None,
) -> ImageRecipe:
    """The image recipe for one resolved `environment` section. `find_links`, the wheel
    folder its packages install from (None: the index), is keyword-only with no default:
    the tag derives from it, so a caller that left it out keyed another image (review)."""
    dockerfile = environment.dockerfile
    if dockerfile:
        path = Path(dockerfile).expanduser()
        if not path.is_absolute():
            path = (spec_dir or Path.cwd()) / path
        return _user_dockerfile(path.resolve())
    image = _check_ref(environment.image or DEFAULT_IMAGE, "environment.image")
    packages = list(environment.packages)
    if not packages:
        return ImageRecipe(tag=image, source="image", hint=_how_to_get(image))
    _refuse_paths(packages)
    return _rendered(image, packages, find_links)


def _refuse_paths(packages: Sequence[str]) -> None:
    """InfraError where an entry is a path of this machine: pip in the build sees only its
    context, and said `Invalid requirement: './mypkg'` or `No such file or directory` after
    a build (a materialized bundle's, on the reader's machine), as if the package were
    broken."""
    paths = [p for p in packages if local_path(p) is not None]
    if paths:
        from reprospec.core.words import paths_refused  # (not read to import this module)

        raise InfraError(paths_refused(paths))


def _user_dockerfile(path: Path) -> ImageRecipe:
    if not path.is_file():
        raise InfraError(f"environment.dockerfile not found: {path}")
    text = path.read_text(encoding="utf-8")
    bases = from_images(text)
    build = BuildRecipe(
        dockerfile=text,
        files=((".", path.parent),),
        bases=bases,
        dockerfile_name=path.name,
        labels=(
            (SOURCE_LABEL, "dockerfile"),
            (FROM_LABEL, ",".join(bases)),
            (DOCKERFILE_LABEL, str(path)),
        ),
    )
    return ImageRecipe(tag=_tag(build), source="dockerfile", build=build)


def from_images(dockerfile: str) -> tuple[str, ...]:
    """The images a Dockerfile's FROM lines name (earlier stages and `scratch` left out)."""
    stages: set[str] = set()
    images: list[str] = []
    for line in dockerfile.splitlines():
        words = line.split()
        if len(words) < 2 or words[0].upper() != "FROM":
            continue
        refs = [w for w in words[1:] if not w.startswith("--")]
        if not refs:
            continue
        ref = refs[0]
        if len(refs) >= 3 and refs[1].upper() == "AS":
            stages.add(refs[2].lower())
        # ARG-substituted bases cannot be checked before the build.
        if ref.lower() in stages or ref == "scratch" or "$" in ref:
            continue
        if ref not in images:
            images.append(ref)
    return tuple(images)


def render_dockerfile(base: str, *, packages: bool, wheels: bool) -> str:
    """The Dockerfile for a `packages` environment (the packages go in requirements.txt)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=False,  # a Dockerfile, not HTML; every value is checked before rendering
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("Dockerfile.j2").render(
        base=base,
        packages=packages,
        wheels=wheels,
        harness_dir=IMAGE_HARNESS,
        stackdump_dir=IMAGE_STACKDUMP,
    )


def public_build(
    packages: Sequence[str],
    find_links: Path | None,
    runner: Sequence[str] = RUNNER_PACKAGES,
    torch_index: str | None = None,
) -> BuildRecipe:
    """What the runner image holds (Python, gdb, the harness, of RUNNER_PACKAGES those in
    `runner`: materialize's cell may need none) and `packages`, built from PUBLIC_BASE: no
    image of this machine is needed. A package of `packages` replaces the runner's own pin
    of it (`torch==2.3.0` wins over torch==2.13.0). `torch_index`: the PyTorch index the
    runner's torch pin is a build of (`torch==2.13.0+cpu`), an `--extra-index-url` line of
    requirements.txt while that pin is kept."""
    import jinja2

    _refuse_paths(packages)
    # Named as the package check names them: a wheel file of torch replaces the runner's
    # torch too, where the first word of its path named none and pip got both.
    named = set(requirement_names(packages))
    kept = [p for p in runner if requirement_name(p) not in named]
    index = [f"--extra-index-url {torch_index}"] if torch_index and "torch" not in named else []
    wanted = index + kept + list(packages)
    files: list[tuple[str, Path]] = [("harness", HARNESS_DIR), ("stackdump", STACKDUMP_DIR)]
    if find_links is not None:
        if not find_links.is_dir():
            raise InfraError(f"--find-links folder not found: {find_links}")
        files += _wheel_files(find_links, kept + list(packages))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=False,  # a Dockerfile; the base is a constant, packages go to a file
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    dockerfile = env.get_template("Dockerfile.public.j2").render(
        base=PUBLIC_BASE,
        wheels=find_links is not None,
        harness_dir=IMAGE_HARNESS,
        stackdump_dir=IMAGE_STACKDUMP,
    )
    return BuildRecipe(
        dockerfile=dockerfile,
        files=tuple(files),
        texts=(("requirements.txt", "".join(f"{p}\n" for p in wanted)),),
        bases=(PUBLIC_BASE,),
        folders=("certs", "harness", "stackdump", *(("wheels",) if find_links else ())),
    )


def _wheel_files(find_links: Path, requirements: Sequence[str]) -> list[tuple[str, Path]]:
    """The build context's `wheels/` entries: the wheels `requirements` need, not the folder.

    The COPY's layer keeps every wheel it takes, and a bundle carries its context: with the
    whole folder, materialize's image of a standard-library program carried torch's 200 MB
    of wheels it never installs (and each of its images its own copy of them)."""
    from reprospec.runners.docker.wheelhouse import needed_wheels

    wheels = needed_wheels(find_links.resolve(), requirements)
    if wheels is None:
        return [("wheels", find_links.resolve())]
    return [(f"wheels/{wheel.name}", wheel) for wheel in wheels]


def _rendered(base: str, packages: Sequence[str], find_links: Path | None) -> ImageRecipe:
    files: list[tuple[str, Path]] = [("harness", HARNESS_DIR), ("stackdump", STACKDUMP_DIR)]
    for cert in ca_certificates():
        files.append((f"certs/{cert.name}", cert))
    if find_links is not None:
        if not find_links.is_dir():
            raise InfraError(f"--find-links folder not found: {find_links}")
        files += _wheel_files(find_links, packages)
    build = BuildRecipe(
        dockerfile=render_dockerfile(base, packages=True, wheels=find_links is not None),
        files=tuple(files),
        texts=(("requirements.txt", "".join(f"{p}\n" for p in packages)),),
        bases=(base,),
        folders=("certs", "harness", "stackdump", *(("wheels",) if find_links else ())),
        labels=(
            (SOURCE_LABEL, "packages"),
            (PACKAGES_LABEL, "\n".join(packages)),
            (FROM_LABEL, base),
        ),
    )
    return ImageRecipe(tag=_tag(build), source="packages", build=build)


def ca_certificates() -> list[Path]:
    """The CA certificates added locally on this machine (what update-ca-certificates installs)."""
    if not CA_DIR.is_dir():
        return []
    return sorted(p for p in CA_DIR.rglob("*.crt") if p.is_file())


# -- content hash ---------------------------------------------------------------------


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    if root.is_file():
        yield "", root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _CONTEXT_SKIP)
        for name in sorted(names):
            path = Path(folder) / name
            yield path.relative_to(root).as_posix(), path


def content_hash(build: BuildRecipe) -> str:
    """sha256 over the Dockerfile, the texts and every context file."""
    digest = hashlib.sha256()
    digest.update(build.dockerfile.encode())
    for name, text in build.texts:
        digest.update(f"\0text {name}\0".encode() + text.encode())
    for dest, source in build.files:
        for rel, path in _walk(source):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            digest.update(f"\0file {dest}/{rel} {size}\0".encode())
            if size <= _BIG_FILE:
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _tag(build: BuildRecipe) -> str:
    return f"{BUILT_REPOSITORY}:{content_hash(build)[:16]}"


# -- context and build ----------------------------------------------------------------


def write_context(build: BuildRecipe, dest: Path) -> None:
    """Write the build context (Dockerfile included) into the folder `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, source in build.files:
        target = dest / rel
        if source.is_dir():
            _copy_tree(source, target)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(source, target)
    for rel, text in build.texts:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text, encoding="utf-8")
    for folder in build.folders:
        (dest / folder).mkdir(parents=True, exist_ok=True)
    (dest / build.dockerfile_name).write_text(build.dockerfile, encoding="utf-8")


def _copy_tree(source: Path, target: Path) -> None:
    for rel, path in _walk(source):
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(path, out)
    target.mkdir(parents=True, exist_ok=True)


def _link_or_copy(source: Path, target: Path) -> None:
    # Hard links keep a wheelhouse of hundreds of MB from being copied for every build.
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def image_present(client: DockerClient, ref: str) -> bool:
    """Whether the engine has `ref` locally (never pulls)."""
    import docker.errors

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(
    client: DockerClient, recipe: ImageRecipe, say: Callable[[str], None] | None = None
) -> str:
    """The tag to run, built first when needed; InfraError when missing or the build fails.

    `say` hears what is slow (a build takes minutes): the build starting, its steps,
    the time it took.
    """
    rebuild = False
    if image_present(client, recipe.tag):
        if recipe.build is None:
            return recipe.tag
        if _built_on_its_bases(client, recipe.tag, recipe.build.bases):
            _mark_used(client, recipe.tag)
            return recipe.tag
        rebuild = True
    # (a rebuild's bases are all here: `_built_on_its_bases` read them)
    reason = None if rebuild else unavailable(client, recipe)
    if reason is not None:
        raise InfraError(reason)
    assert recipe.build is not None  # (one without a build is here, or unavailable)
    if say is not None:
        if rebuild:
            say(f"image {recipe.tag}: its base image changed since it was built; building again")
        else:
            say(f"image {recipe.tag}: building from {recipe.source} (once; later runs reuse it)")
    started = time.monotonic()
    build_image(client, recipe.build, recipe.tag, say=say)
    if say is not None:
        say(f"image {recipe.tag}: built in {time.monotonic() - started:.0f}s")
    return recipe.tag


def environment_key(environment: Environment) -> str:
    """One text per distinct `environment` section: the runner finds or builds one image per
    key, and `doctor --runner docker` checks one per key."""
    return json.dumps(environment.to_json(), sort_keys=True)


def unavailable(client: DockerClient, recipe: ImageRecipe) -> str | None:
    """Why `recipe`'s image can be neither used nor built here, as `ensure_image` refuses it
    (reprospec never pulls): missing, or its build's FROM image missing; None where it is
    here or its build can start. `doctor --runner docker` says the same before a run."""
    if image_present(client, recipe.tag):
        return None
    if recipe.build is None:
        return (
            f"docker image {recipe.tag} is missing (reprospec never pulls implicitly): "
            f"{recipe.hint or _how_to_get(recipe.tag)}{_near(client, recipe.tag)}"
        )
    for base in recipe.build.bases:
        if not image_present(client, base):
            return (
                f"docker image {base} (the base of the {recipe.source} build) is missing "
                f"(reprospec never pulls implicitly): {_how_to_get(base)}{_near(client, base)}"
            )
    return None


def _near(client: DockerClient, ref: str) -> str:
    """`; this engine has NAME (a typo?)` for a missing image named like one of the engine's
    (`reprospec-runer:latest`), else "": the pull the message offers fails for a name that
    no registry has, and the image meant was here all along."""
    import difflib

    import docker.errors

    try:
        listed = client.api.images()
    except docker.errors.APIError:
        return ""
    tags = [
        tag
        for entry in listed
        if isinstance(repo_tags := entry.get("RepoTags"), list)
        for tag in repo_tags
        if isinstance(tag, str) and tag != "<none>:<none>"
    ]
    # `name` is `name:latest` to docker: compared both ways, so a bare name finds its tag.
    names = {tag: tag for tag in tags} | {tag.removesuffix(":latest"): tag for tag in tags}
    close = difflib.get_close_matches(ref, list(names), n=1, cutoff=0.85)
    return f"; this engine has {names[close[0]]} (a typo?)" if close else ""


def _mark_used(client: DockerClient, tag: str) -> None:
    """Tag a built image again under its own tag: the engine records no use of an image, but
    this sets its last tag time, which `envs prune --older-than` reads as its last use."""
    import docker.errors

    repository, _, name = tag.rpartition(":")
    # A failed mark costs a prune's estimate, never the run.
    with contextlib.suppress(docker.errors.APIError):
        client.api.tag(tag, repository, name)


def _base_ids(client: DockerClient, bases: Sequence[str]) -> str | None:
    """The FROM images' ids, comma-separated; None when one is missing."""
    import docker.errors

    try:
        return ",".join(client.images.get(base).id for base in bases)
    except docker.errors.ImageNotFound:
        return None


def _built_on_its_bases(client: DockerClient, tag: str, bases: Sequence[str]) -> bool:
    """Whether `tag` was built on the base images as they are now (or they cannot be told)."""
    now = _base_ids(client, bases)
    if now is None:
        return True  # a base is gone: the image is all there is
    return client.images.get(tag).labels.get(BASES_LABEL) == now


def build_image(
    client: DockerClient, build: BuildRecipe, tag: str, say: Callable[[str], None] | None = None
) -> list[str]:
    """Build `build` as `tag` with the engine's builder; returns the build log lines.

    `say` gets each step line (`Step 2/5 : RUN pip install ...`) as the builder starts it.
    """
    import docker.errors

    log: list[str] = []
    with tempfile.TemporaryDirectory(prefix="reprospec-build-") as tmp:
        context = Path(tmp)
        write_context(build, context)
        try:
            stream = client.api.build(
                path=str(context),
                dockerfile=build.dockerfile_name,
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                labels={
                    **dict.fromkeys(HOLDS_LABELS, ""),
                    **dict(build.labels),
                    HASH_LABEL: tag.rsplit(":", 1)[-1],
                    BASES_LABEL: _base_ids(client, build.bases) or "",
                },
            )
            for chunk in safepoint.each(stream):  # a stop heard while a step runs silent
                if "stream" in chunk:
                    lines = str(chunk["stream"]).rstrip("\n").splitlines()
                    log.extend(lines)
                    if say is not None:
                        for line in lines:
                            # The labels reprospec adds are its own steps, nothing of the user's.
                            if line.startswith("Step ") and " : LABEL org.reprospec." not in line:
                                say(f"    {line}")
                if "error" in chunk:
                    log.extend(str(chunk["error"]).rstrip("\n").splitlines())
                    _remove_layers(client, log)
                    raise InfraError(_build_failure(tag, log))
        except docker.errors.APIError as exc:
            log.append(str(exc.explanation or exc))
            _remove_layers(client, log)
            raise InfraError(_build_failure(tag, log)) from exc
        except KeyboardInterrupt:
            # A Ctrl-C mid-build (the run is not stored yet: pipeline/stages.py): the engine
            # builds on until it sees the connection close, at this process's exit, and the
            # steps done were left as untagged images that nothing lists (one per finished
            # step). The step running is the builder's container: removing it ends the build.
            _cancel_build(client, log)
            raise
    return log


# The classic builder's line as a step's container starts: ` ---> Running in 3f2a6b1c9d0e`.
_RUNNING = re.compile(r"^ ---> Running in ([0-9a-f]{12,64})$")


def _cancel_build(client: DockerClient, log: Sequence[str]) -> None:
    """End a build that is being given up: its running step's container removed (the build
    fails there), then the images its finished steps made, as after a failed build.

    The step's container is the one its `Running in` line names, or, where the stop came
    before that line was read, the one made from the last finished step's image (a build
    step's; nothing else runs an untagged layer). A step that ended as the stop came, its
    image made but not yet in `log`, leaves that image: nothing tells it from another
    build's."""
    import docker.errors

    running = []
    for line in reversed(log):  # the last step's lines: its `Running in`, then its output
        if found := _RUNNING.match(line):
            running.append(found.group(1))
        if found or line.startswith("Step "):
            break
    made = layers(log)
    if not running and made:
        with contextlib.suppress(docker.errors.APIError):
            if client.images.get(made[0]).attrs.get("RepoTags"):
                made = []  # the FROM's image, a tagged one: others' containers run it
        with contextlib.suppress(docker.errors.APIError):
            running = [
                str(c["Id"])
                for c in (client.api.containers(all=True) if made else ())
                if str(c.get("ImageID", "")).removeprefix("sha256:").startswith(made[0])
            ]
    # The builder removes its failed step's container too (forcerm): where its removal was
    # under way, ours was refused and the container outlived the call, holding its image,
    # which was then refused (a CI run left one layer so). Both are waited for, bounded.
    deadline = time.monotonic() + _CANCEL_WAIT
    for container in running:
        remove_container(client, container, max(0.0, deadline - time.monotonic()), volumes=False)
    while _remove_layers(client, log) and time.monotonic() < deadline:
        time.sleep(0.2)


# How long a cancelled build's step container and images are waited for (seconds): the
# Ctrl-C waits this long at most.
_CANCEL_WAIT = 10.0


# The classic builder's line after each step: ` ---> 3f2a6b1c9d0e`, the image it made.
_LAYER = re.compile(r"^ ---> ([0-9a-f]{12,64})$")


def layers(log: Sequence[str]) -> list[str]:
    """The images a build's steps made, as its log names them, the last one first."""
    return [found.group(1) for line in reversed(log) if (found := _LAYER.match(line))]


def _remove_layers(client: DockerClient, log: Sequence[str]) -> bool:
    """After a failed build, the untagged images its steps left: nothing names or lists
    them (`envs` lists tagged images), and a bisect whose releases fail to build left two
    per release. One with a tag (the base) or a child (another build's cached
    step) stays: the engine refuses to remove it without force, which is not asked.

    Returns whether one was refused as used by a container (one going away may hold it);
    a child image holding it stays, and is not waited for."""
    import docker.errors

    refused = False
    for layer in layers(log):
        try:
            if client.images.get(layer).attrs.get("RepoTags"):
                continue
            client.images.remove(image=layer, force=False, noprune=False)
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            refused = refused or "being used by" in str(exc.explanation or "")
    return refused


def _build_failure(tag: str, log: Sequence[str]) -> str:
    tail = "\n".join(f"  {line}" for line in log[-BUILD_LOG_TAIL:] if line.strip())
    return f"docker build of {tag} failed; build log tail:\n{tail}"


# The lines of a build log that say why it failed: pip's `ERROR: No matching distribution
# ...`, a build backend's `AttributeError: ...`, the engine's closing `The command ...
# returned a non-zero code: 1` says only that a step failed (the fallback, when none does).
_BUILD_ERROR_LINE = re.compile(r"^(?:ERROR:|error:|[A-Za-z_][\w.]*(?:Error|Exception)\b)")


def without_colour(text: str) -> str:
    """`text` without the terminal colour codes a build's pip wrote (`\\x1b[91m`)."""
    return without_escapes(text)


def build_failure_reason(message: str) -> str:
    """One line of a failed build's `_build_failure` message for the infra-error of each
    cell that needed the image: its first line, then what the package's build said (the
    end of pip's `[N lines of output]` block, as the venv runner quotes uv's: `docker build
    of TAG failed (the build said: ... / AttributeError: ...)`), else the last two lines
    that name an error.

    The whole tail is a table cell's worth of pip's output per cell; the runner says it
    once on stderr instead. A message of one line (a missing image) is returned as it is.
    """
    head, _, tail = message.partition("\n")
    lines = [without_colour(line).strip() for line in tail.splitlines()]
    lines = [line for line in lines if line]
    head = head.removesuffix("; build log tail:")
    said = _build_said(lines)
    if said:
        return f"{head} (the build said: {' / '.join(said)})"
    named = [line for line in lines if _BUILD_ERROR_LINE.match(line)] or lines[-1:]
    return f"{head} ({' / '.join(named[-2:])})" if named else head


def _build_said(lines: Sequence[str]) -> list[str]:
    """The last two lines of the last `[N lines of output]` ... `[end of output]` block pip
    prints of a failed build step (the block's start may be past the tail's)."""
    ends = [i for i, line in enumerate(lines) if line == "[end of output]"]
    if not ends:
        return []
    end = ends[-1]
    starts = [i + 1 for i, line in enumerate(lines[:end]) if line.endswith("lines of output]")]
    return list(lines[max(starts, default=0) : end][-2:])


def describe(recipe: ImageRecipe) -> JsonObject:
    """A JSON-friendly summary of a recipe (for plans and bundles)."""
    return {"tag": recipe.tag, "source": recipe.source, "built": recipe.build is not None}
