"""`reprospec envs` and the docker runner's images, on a real engine: an image built through
the runner's own path is listed with what it holds, its reuse marks its last use, a dry run
removes nothing, a prune removes only the runner's tag of an image no container uses.

The engine may be shared (other suites, the user's own images): every image here is named
uniquely, the CLI's prune runs dry only, and the real removals are asked for by tag.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec.core.sections import Environment  # noqa: E402
from reprospec.runners.docker import cache, image  # noqa: E402
from tests.support.cli import Cli  # noqa: E402
from tests.support.docker import CLIENT, make_wheel, needs_engine, require_image  # noqa: E402


@pytest.fixture
def built(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A packages image built as a run builds it (a wheel of a unique name, so that its tag
    is this test's alone), and (tag, requirement); every tag made here removed after."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    name = f"cachetest_{uuid.uuid4().hex[:10]}"
    make_wheel(tmp_path / "wheels", name=name)
    requirement = f"{name}==0.1"
    environment = Environment.from_section({"packages": [requirement]}, tmp_path)
    recipe = image.recipe_for(environment, find_links=tmp_path / "wheels")
    image.ensure_image(CLIENT, recipe)
    try:
        yield recipe.tag, requirement
    finally:
        for container in CLIENT.api.containers(all=True):
            if container.get("Image") == recipe.tag:
                CLIENT.api.remove_container(container["Id"], force=True)
        for tag in (recipe.tag, f"reprospec-env:hand-{name}", f"cachetest-other:{name}"):
            if image.image_present(CLIENT, tag):
                CLIENT.images.remove(image=tag, force=True, noprune=False)


def _listed(cli: Cli, out: Path) -> list[dict[str, object]]:
    done = cli("envs", "--format", "json", "--out", str(out))
    assert done.code == 0, done.stderr
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


@needs_engine
def test_envs_lists_and_prunes_the_runner_images(
    cli: Cli, tmp_path: Path, built: tuple[str, str]
) -> None:
    tag, requirement = built
    key = tag.split(":", 1)[1]
    other = f"cachetest-other:{requirement.split('==')[0]}"
    by_hand = f"reprospec-env:hand-{requirement.split('==')[0]}"
    (ours,) = [row for row in _listed(cli, tmp_path / "out") if row.get("tag") == tag]
    assert ours["kind"] == "docker-image"
    assert (ours["key"], ours["source"], ours["packages"]) == (key, "packages", [requirement])
    assert ours["base"] == image.DEFAULT_IMAGE
    assert isinstance(ours["own_bytes"], int)
    assert ours["own_bytes"] < 50 * 2**20

    # A run that reuses the image marks its use: its last use moves on, its creation stays.
    time.sleep(1.1)
    environment = Environment.from_section({"packages": [requirement]}, tmp_path)
    again = image.recipe_for(environment, find_links=tmp_path / "wheels")
    assert image.ensure_image(CLIENT, again) == tag
    (info,) = [i for i in cache.list_images(CLIENT) if i.tag == tag]
    assert info.last_used >= info.created + 1

    text = cli("envs", "--out", str(tmp_path / "out"))
    assert text.code == 0, text.stderr
    assert tag in text.stdout, text.stdout
    assert requirement in text.stdout, text.stdout

    # The same image under a name of the user's, and tagged into the repository by hand:
    # neither is the runner's.
    image_id = CLIENT.images.get(tag).id
    other_repo, other_name = other.split(":")
    CLIENT.api.tag(tag, other_repo, other_name)
    CLIENT.api.tag(tag, "reprospec-env", by_hand.split(":")[1])
    listed = {row.get("tag") for row in _listed(cli, tmp_path / "out")}
    assert tag in listed
    assert other not in listed
    assert by_hand not in listed

    dry = cli("envs", "prune", "--all", "--dry-run", "--out", str(tmp_path / "out"))
    assert dry.code == 0, dry.stderr
    assert f"would remove image {tag}  {requirement}" in dry.stdout.splitlines()
    assert other not in dry.stdout
    assert by_hand not in dry.stdout
    assert image.image_present(CLIENT, tag)

    # A container made from it (never started) keeps it.
    container = CLIENT.api.create_container(tag, command=["true"], name=f"cachetest-{key}")
    try:
        pruned = cache.prune_images(CLIENT, tags=[tag])
        assert pruned.removed == ()
        ((kept, why),) = pruned.kept
        assert kept.tag == tag
        assert why == f"in use by container cachetest-{key}"
        assert image.image_present(CLIENT, tag)
    finally:
        CLIENT.api.remove_container(container["Id"], force=True)

    # Unused for a day? Not yet: kept.
    assert cache.prune_images(CLIENT, older_than_s=86400, tags=[tag]).removed == ()
    pruned = cache.prune_images(CLIENT, tags=[tag])
    assert [i.tag for i in pruned.removed] == [tag]
    assert pruned.kept == ()
    assert not image.image_present(CLIENT, tag)
    # Only the runner's tag went: the image stays under the other names.
    assert CLIENT.images.get(other).id == image_id
    assert CLIENT.images.get(by_hand).id == image_id
    assert tag not in {row.get("tag") for row in _listed(cli, tmp_path / "out")}


def test_envs_without_an_engine_says_so_in_one_line(cli: Cli, tmp_path: Path) -> None:
    gone = f"unix://{tmp_path}/no-engine.sock"
    done = cli("envs", "--out", str(tmp_path / "out"), env={"DOCKER_HOST": gone})
    assert done.code == 0
    assert done.stderr.splitlines() == [
        f"no environments in {(tmp_path / 'out' / 'envs').resolve()}",
        f"docker images: not listed (no Docker engine answered at {gone})",
    ]
    assert done.stdout == ""
    listed = cli(
        "envs", "--format", "json", "--out", str(tmp_path / "out"), env={"DOCKER_HOST": gone}
    )
    assert (listed.code, json.loads(listed.stdout)) == (0, [])


@needs_engine
def test_a_prune_leaves_an_image_a_run_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: tuple[str, str]
) -> None:
    """A run holds each of its images from the start (cache.hold_image, as DockerRunner
    does before it finds or builds one): `envs prune` removed the image of a matrix's later
    cell, built at the start, while an earlier cell ran, and the run stopped on a 404."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tag, _ = built
    held = cache.hold_image(tag)
    assert held is not None
    try:
        pruned = cache.prune_images(CLIENT, tags=[tag])
        assert [(i.tag, why) for i, why in pruned.kept] == [(tag, "in use by a run now")]
        assert image.image_present(CLIENT, tag)
    finally:
        held.close()
    assert cache.hold_image(image.DEFAULT_IMAGE) is None  # not the runner's: never pruned
    assert [i.tag for i in cache.prune_images(CLIENT, tags=[tag]).removed] == [tag]
    # Its hold file went with the hold, and the prune's with the prune: none piles up.
    assert list(cache.holds_folder().iterdir()) == []
