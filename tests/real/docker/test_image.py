"""Images built by a real Docker engine: the content-hash cache, no pulls."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Real-engine tests: `pytest -m "not docker and not slurm"` runs the unit suite alone.
pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec.core.sections import Environment  # noqa: E402
from reprospec.errors import InfraError  # noqa: E402
from reprospec.runners.docker import image  # noqa: E402
from reprospec.runners.docker.runner import DockerRunner  # noqa: E402
from tests.support.cli import Cli  # noqa: E402
from tests.support.docker import CLIENT, make_plan, make_wheel, needs_engine, py, require_image  # noqa: E402


def recipe_for(
    section: dict[str, Any], *, spec_dir: Path | None = None, find_links: Path | None = None
) -> image.ImageRecipe:
    """The recipe of a resolved `environment` section, typed as the plan stage types it."""
    environment = Environment.from_section(section, Path.cwd())
    return image.recipe_for(environment, spec_dir=spec_dir, find_links=find_links)


@pytest.fixture(scope="module")
def default_image() -> str:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    return image.DEFAULT_IMAGE


def _forget(tag: str) -> None:
    if image.image_present(CLIENT, tag):
        CLIENT.images.remove(tag, force=True)


def _dangling_with(token: str) -> list[str]:
    """Ids of the untagged images whose history names `token` (this test's own build
    steps). The engine's list, then each one's history, an image another test or session
    removed meanwhile skipped: `images.list()` inspects every image it lists, and one gone
    between the two (the engine holds others' untagged layers) failed the test with a 404."""
    import docker.errors

    found = []
    for listed in CLIENT.api.images(filters={"dangling": True}):
        with contextlib.suppress(docker.errors.NotFound):
            history = CLIENT.api.history(listed["Id"])
            if any(token in (step.get("CreatedBy") or "") for step in history):
                found.append(str(listed["Id"]))
    return found


# -- real builds -----------------------------------------------------------------------


@needs_engine
@pytest.mark.usefixtures("default_image")
def test_packages_build_once_then_cached(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    environment = {"packages": ["reprospec_probe==0.1"]}
    recipe = recipe_for(environment, find_links=wheels)
    _forget(recipe.tag)
    try:
        # The build is slow: the user hears it start, each step, and its end.
        heard: list[str] = []
        assert image.ensure_image(CLIENT, recipe, say=heard.append) == recipe.tag
        assert heard[0] == f"image {recipe.tag}: building from packages (once; later runs reuse it)"
        assert any(line.startswith("    Step 1/") for line in heard), heard
        assert heard[-1].startswith(f"image {recipe.tag}: built in "), heard
        # The second time the image is found, not built: nothing to say.
        again: list[str] = []
        runner = DockerRunner(client=CLIENT, find_links=wheels, say=again.append)
        plan = make_plan(
            py("import reprospec_probe, torch; print(reprospec_probe.VALUE)"),
            tmp_path,
            environment=environment,
        )
        runner.prepare([plan])
        assert again == []
        execution = runner.run(plan, tmp_path / "a")
        assert execution.returncode == 0, execution.stderr_path.read_text()
        assert execution.stdout_path.read_text() == "0.1\n"
    finally:
        _forget(recipe.tag)


@needs_engine
@pytest.mark.usefixtures("default_image")
def test_build_failure_is_an_infra_error_with_the_log_tail(tmp_path: Path) -> None:
    make_wheel(tmp_path / "wheels")
    recipe = recipe_for(
        {"packages": ["no-such-package-reprospec==9.9"]}, find_links=tmp_path / "wheels"
    )
    with pytest.raises(InfraError) as err:
        image.ensure_image(CLIENT, recipe)
    message = str(err.value)
    assert message.startswith(f"docker build of {recipe.tag} failed; build log tail:")
    assert "no-such-package-reprospec" in message
    assert not image.image_present(CLIENT, recipe.tag)


class _Recorded:
    """The engine client, the chunks of its builds recorded: a failed build's whole log."""

    def __init__(self, client: Any, chunks: list[dict[str, Any]]) -> None:  # noqa: ANN401
        self._client = client
        self.api = _RecordedApi(client.api, chunks)

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 (the client's any attribute)
        return getattr(self._client, name)


class _RecordedApi:
    def __init__(self, api: Any, chunks: list[dict[str, Any]]) -> None:  # noqa: ANN401
        self._api, self._chunks = api, chunks

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 (the API's any attribute)
        return getattr(self._api, name)

    def build(self, **options: Any) -> Iterator[dict[str, Any]]:  # noqa: ANN401
        for chunk in self._api.build(**options):
            self._chunks.append(chunk)
            yield chunk


@needs_engine
def test_a_failed_build_leaves_no_untagged_images(tmp_path: Path) -> None:
    """the steps a failed build had made stayed as `<none>` images that nothing
    listed or pruned (two per release a bisect could not build). The base stays."""
    import docker.errors

    require_image(CLIENT, image.BASE_IMAGE)
    (tmp_path / "a.txt").write_text(f"{tmp_path}\n")  # a step no cache holds: a new image
    (tmp_path / "Dockerfile.fails").write_text(
        f"FROM {image.BASE_IMAGE}\nCOPY a.txt /a.txt\nRUN cat /a.txt\nRUN exit 3\n"
    )
    recipe = recipe_for({"dockerfile": "Dockerfile.fails"}, spec_dir=tmp_path)
    assert recipe.build is not None
    chunks: list[dict[str, Any]] = []
    with pytest.raises(InfraError):
        image.build_image(_Recorded(CLIENT, chunks), recipe.build, recipe.tag)
    log = [line for c in chunks if "stream" in c for line in str(c["stream"]).splitlines()]
    made = image.layers(log)
    assert len(made) >= 3, log  # the base, the COPY's, the first RUN's
    base = CLIENT.images.get(image.BASE_IMAGE).id
    left = []
    for layer in made:
        try:
            found = CLIENT.images.get(layer)
        except docker.errors.ImageNotFound:
            continue
        if found.id != base:
            left.append(layer)
    assert not left, left
    assert image.image_present(CLIENT, image.BASE_IMAGE)


@needs_engine
def test_user_dockerfile_is_built_and_run(tmp_path: Path) -> None:
    require_image(CLIENT, image.BASE_IMAGE)
    (tmp_path / "hello.txt").write_text("from the context\n")
    (tmp_path / "Dockerfile.mine").write_text(
        f"FROM {image.BASE_IMAGE}\nCOPY hello.txt /hello.txt\n"
    )
    runner = DockerRunner(client=CLIENT, spec_dir=tmp_path)
    environment = {"dockerfile": "Dockerfile.mine"}
    tag = recipe_for(environment, spec_dir=tmp_path).tag
    try:
        execution = runner.run(
            make_plan(["cat", "/hello.txt"], tmp_path, environment=environment), tmp_path / "a"
        )
        assert execution.returncode == 0, execution.infra_error
        assert execution.stdout_path.read_text() == "from the context\n"
    finally:
        _forget(tag)


@needs_engine
def test_missing_base_is_never_pulled(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM reprospec-absent-base:1\nRUN true\n")
    recipe = recipe_for({"dockerfile": "Dockerfile"}, spec_dir=tmp_path)
    with pytest.raises(InfraError) as err:
        image.ensure_image(CLIENT, recipe)
    assert "reprospec-absent-base:1" in str(err.value)
    assert "docker pull reprospec-absent-base:1" in str(err.value)


@needs_engine
def test_an_image_is_built_again_when_its_base_was(tmp_path: Path) -> None:
    """docker-setup.sh rebuilds an outdated base (one without gdb): what was built on the
    old base is outdated too, though its own content hash did not change."""
    require_image(CLIENT, image.BASE_IMAGE)
    # This process's own (tmp_path's name is the same in every suite on a shared engine):
    # the recipe's tag hashes the Dockerfile that names it, so that is this process's too.
    base = f"reprospec-test/dockernative-base:{os.getpid()}-{tmp_path.name.lower()}"

    def build_base(mark: str) -> None:
        folder = tmp_path / f"base-{mark}"
        folder.mkdir()
        (folder / "Dockerfile").write_text(f"FROM {image.BASE_IMAGE}\nRUN echo {mark} > /mark\n")
        CLIENT.images.build(path=str(folder), tag=base, rm=True, forcerm=True)

    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nRUN cat /mark\n")
    recipe = recipe_for({"dockerfile": "Dockerfile"}, spec_dir=tmp_path)
    try:
        build_base("one")
        heard: list[str] = []
        image.ensure_image(CLIENT, recipe, say=heard.append)
        assert heard[0].endswith("building from dockerfile (once; later runs reuse it)")
        heard.clear()
        image.ensure_image(CLIENT, recipe, say=heard.append)
        assert heard == []  # built on the base as it is: found, not built
        build_base("two")
        image.ensure_image(CLIENT, recipe, say=heard.append)
        assert heard[0] == (
            f"image {recipe.tag}: its base image changed since it was built; building again"
        )
        marked = CLIENT.containers.run(recipe.tag, ["cat", "/mark"], remove=True)
        assert marked == b"two\n"
    finally:
        _forget(recipe.tag)
        _forget(base)


@needs_engine
@pytest.mark.usefixtures("default_image")
def test_docker_setup_ships_in_the_package_and_finds_its_work_done(cli: Cli) -> None:
    # The images were built by scripts/docker-setup.sh (test.sh runs it), which runs the
    # script the package ships: `reprospec docker setup` finds each step done, images
    # labelled as it would label them (the same Dockerfile, the same base packages).
    result = cli("docker", "setup", timeout=120)
    assert result.code == 0, result.stdout + result.stderr
    for step in ("packages", "engine", image.BASE_IMAGE, image.DEFAULT_IMAGE):
        assert re.search(rf"^docker-setup: {re.escape(step)} +ok ", result.stdout, re.M), (
            result.stdout
        )


@needs_engine
def test_a_layer_a_container_holds_is_told_apart_for_a_wait(tmp_path: Path) -> None:
    """A cancelled build waits for a layer its step's container still holds (the container
    may be going away: a CI run left one layer so), and for no other refusal: a layer under
    a child image stays at once (a Ctrl-C never waits on it)."""
    import uuid

    import docker.errors

    require_image(CLIENT, image.BASE_IMAGE)
    token = f"reprospec-test-{uuid.uuid4().hex[:12]}"
    (tmp_path / "Dockerfile").write_text(
        f"FROM {image.BASE_IMAGE}\nRUN echo {token} > /one\nRUN echo {token} > /two\n"
    )
    chunks = list(CLIENT.api.build(path=str(tmp_path), rm=True, decode=True))
    log = [line for c in chunks if "stream" in c for line in str(c["stream"]).splitlines()]
    two, one = image.layers(log)[:2]
    container = CLIENT.containers.create(two, ["true"])
    try:
        assert image._remove_layers(CLIENT, [f" ---> {two}"]) is True  # a container holds it
        assert image._remove_layers(CLIENT, [f" ---> {one}"]) is False  # a child image does
        assert CLIENT.images.get(one)
        assert CLIENT.images.get(two)
        container.remove(force=True)
        assert image._remove_layers(CLIENT, [f" ---> {two}", f" ---> {one}"]) is False
        for layer in (one, two):
            with pytest.raises(docker.errors.ImageNotFound):
                CLIENT.images.get(layer)
    finally:
        with contextlib.suppress(docker.errors.APIError):
            container.remove(force=True)
        for layer in (two, one):
            with contextlib.suppress(docker.errors.APIError):
                CLIENT.images.remove(layer, force=True)


@needs_engine
@pytest.mark.parametrize("thread", ["main", "another"])
def test_a_ctrl_c_mid_build_ends_the_build_and_leaves_no_images(
    thread: str, tmp_path: Path
) -> None:
    """A Ctrl-C while a cell's image builds: the run says nothing was stored, the build's
    running step is ended (the engine built on until the engine's connection closed), and
    the steps it had finished leave no untagged image (one per finished step was left).
    The SIGINT given to another thread of the engine's: its main thread read the build's
    log with a blocking read, which that does not wake, so the stop waited for the step's
    next line (its `sleep 60`'s end)."""
    import sys
    import uuid

    import docker.errors

    from tests.support.cli import interrupt_when
    from tests.support.engine import wait_until

    require_image(CLIENT, image.BASE_IMAGE)
    token = f"reprospec-test-{uuid.uuid4().hex[:12]}"
    (tmp_path / "Dockerfile").write_text(
        f"FROM {image.BASE_IMAGE}\nRUN echo {token} > /one\nRUN TOKEN={token} sleep 60\n"
    )
    spec = tmp_path / "build.yaml"
    spec.write_text(
        "reprospec: 1\nname: build\nenvironment: {dockerfile: Dockerfile}\n"
        'command: "true"\nexpect: {outcome: pass}\n'
    )
    tag = recipe_for({"dockerfile": "Dockerfile"}, spec_dir=tmp_path).tag

    def ours(all_: bool = True, step: str = token) -> list[str]:
        """This build's containers' ids: its step's command names the token. The engine's
        list alone, no inspect of each: a container (another test's, or this build's being
        removed) gone between the list and its inspect failed the test with a 404."""
        listed = CLIENT.api.containers(all=all_)
        return [c["Id"] for c in listed if step in (c.get("Command") or "")]

    def layers() -> list[str]:
        """Untagged images a step of this build made (the token is in their history)."""
        return _dangling_with(token)

    argv = [sys.executable, "-m", "reprospec", "run", str(spec), "--runner", "docker"]
    argv += ["--out", str(tmp_path / "out")]
    try:
        # Stopped as its second step (the `sleep`) runs: its first made an image.
        sign = tmp_path / "press" if thread == "another" else None
        began = time.monotonic()
        done = interrupt_when(
            argv, lambda: bool(ours(False, f"TOKEN={token}")), another_thread=sign
        )
        assert done.code == 130, done.stderr
        assert time.monotonic() - began < 55, "the stop waited for the step's end"
        assert "no run was stored (nothing to resume)" in done.stderr, done.stderr
        assert not (tmp_path / "out" / "runs").exists()
        # Where the stop came before the step's `Running in` line was read, the engine
        # removes the step's container itself once it sees the build's connection close (at
        # the CLI's exit): gone a moment later, not left (the race a 404 showed).
        assert wait_until(lambda: ours() == [], 30), ours()
        assert layers() == [], done.stderr
        assert not image.image_present(CLIENT, tag)
    finally:
        for container in ours():
            with contextlib.suppress(docker.errors.NotFound):
                CLIENT.api.remove_container(container, force=True)
        for layer in layers():
            with contextlib.suppress(docker.errors.NotFound):
                CLIENT.images.remove(layer, force=True)
        _forget(tag)
