"""Which images `reprospec envs` takes for the docker runner's, and what it reads of them, from
`docker image inspect` as the engine gives it (no engine: tests/real/docker/test_cache.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec.core.sections import Environment
from reprospec.runners.docker import cache, image

KEY = "9ff5dfa39e88f17a"


def inspect(
    *,
    tags: list[str] | None = None,
    labels: dict[str, str] | None = None,
    last_tag: str = "2026-11-30T21:50:00.123456789Z",
) -> dict[str, Any]:
    """An image's `docker image inspect`, as an engine of the runner's built it."""
    return {
        "Id": "sha256:6cdbf5decaae",
        "RepoTags": [f"reprospec-env:{KEY}"] if tags is None else tags,
        "Created": "2026-11-30T21:46:10.736798710Z",
        "Size": 1_457_814_677,
        "Config": {
            "Labels": {
                image.HASH_LABEL: KEY,
                image.SOURCE_LABEL: "packages",
                image.PACKAGES_LABEL: "packaging==21.3\nsix==1.16.0",
                image.FROM_LABEL: "reprospec-runner:latest",
                image.DOCKERFILE_LABEL: "",
                # Inherited from the runner image: not what this one holds.
                "org.reprospec.base-packages": "python3,gdb",
            }
            if labels is None
            else labels
        },
        "Metadata": {"LastTagTime": last_tag},
    }


def test_a_built_image_is_read_with_what_it_holds() -> None:
    info = cache.image_info(inspect(), used_by=["reprospec-0a1b"], shared_bytes=1_456_497_602)
    assert info is not None
    assert (info.tag, info.key, info.source) == (f"reprospec-env:{KEY}", KEY, "packages")
    assert info.packages == ("packaging==21.3", "six==1.16.0")
    assert info.holds() == "packaging==21.3 six==1.16.0"
    assert info.base == "reprospec-runner:latest"
    # What removing it frees: its own layers, not the runner image's 1.4 GB it shares.
    assert (info.size_bytes, info.own_bytes) == (1_457_814_677, 1_317_075)
    assert info.used_by == ("reprospec-0a1b",)
    assert info.created == pytest.approx(1796075170.7367988)
    # Its last use is its last tag time (the runner tags an image again when it reuses it).
    assert info.last_used == pytest.approx(1796075400.1234567)
    data = info.to_dict()
    assert data["kind"] == "docker-image"
    assert (data["created"], data["last_used"]) == (
        "2026-11-30T21:46:10+00:00",
        "2026-11-30T21:50:00+00:00",
    )


def test_images_the_runner_did_not_build_are_not_its() -> None:
    # Another repository carrying the label (an image built FROM one of ours, say).
    assert cache.image_info(inspect(tags=["mine:latest"])) is None
    # Tagged into the repository by hand: its name is not the hash its label gives.
    assert cache.image_info(inspect(tags=["reprospec-env:keep"])) is None
    # The repository's name without the runner's label.
    assert cache.image_info(inspect(labels={})) is None
    # Untagged (a dangling build): nothing of the runner's name to remove.
    assert cache.image_info(inspect(tags=[])) is None
    # One of ours the user also tagged under a name of their own: only our tag is ours.
    info = cache.image_info(inspect(tags=["mine:latest", f"reprospec-env:{KEY}"]))
    assert info is not None
    assert info.tag == f"reprospec-env:{KEY}"


def test_an_image_from_before_the_labels_is_listed_as_not_recorded() -> None:
    info = cache.image_info(inspect(labels={image.HASH_LABEL: KEY}))
    assert info is not None
    assert (info.packages, info.source, info.base, info.holds()) == ((), "", "", "(not recorded)")
    assert info.own_bytes is None  # no shared size given: unknown, not 0
    assert cache.own_total([info]) == info.size_bytes


def test_an_engine_without_a_last_tag_time_ages_an_image_from_its_creation() -> None:
    for never in ("0001-01-01T00:00:00Z", "", "not a time"):
        info = cache.image_info(inspect(last_tag=never))
        assert info is not None
        assert info.last_used == info.created


def test_engine_times_with_nanoseconds_and_offsets() -> None:
    assert cache.engine_time("1970-01-01T00:00:01.5Z") == 1.5
    assert cache.engine_time("1970-01-01T02:00:00.000000001+02:00") == pytest.approx(0.0, abs=1e-6)
    assert cache.engine_time("1970-01-01T00:00:00-01:30") == 5400.0
    assert cache.engine_time("0001-01-01T00:00:00Z") is None
    assert cache.engine_time(None) is None


def test_the_build_labels_say_what_the_image_holds(tmp_path: Path) -> None:
    recipe = image.recipe_for(
        Environment.from_section({"packages": ["six==1.16.0", "numpy<2"]}, Path.cwd()),
        find_links=None,
    )
    assert recipe.build is not None
    assert dict(recipe.build.labels) == {
        image.SOURCE_LABEL: "packages",
        image.PACKAGES_LABEL: "six==1.16.0\nnumpy<2",
        image.FROM_LABEL: image.DEFAULT_IMAGE,
    }
    dockerfile = tmp_path / "Dockerfile.gpu"
    dockerfile.write_text("FROM python:3.11-slim AS build\nFROM build\nRUN true\n")
    recipe = image.recipe_for(
        Environment.from_section({"dockerfile": str(dockerfile)}, tmp_path), find_links=None
    )
    assert recipe.build is not None
    assert dict(recipe.build.labels) == {
        image.SOURCE_LABEL: "dockerfile",
        image.FROM_LABEL: "python:3.11-slim",
        image.DOCKERFILE_LABEL: str(dockerfile),
    }
