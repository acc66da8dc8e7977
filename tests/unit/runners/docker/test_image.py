"""Image resolution: rendered Dockerfiles, build contexts and the content-hash tag, without an
engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")


from reprospec.core.sections import Environment
from reprospec.errors import InfraError
from reprospec.runners.docker import image
from tests.support.docker import CLIENT, make_wheel, needs_engine, require_image
from tests.support.paths import ROOT


def recipe_for(
    section: dict[str, Any], *, spec_dir: Path | None = None, find_links: Path | None = None
) -> image.ImageRecipe:
    """The recipe of a resolved `environment` section, typed as the plan stage types it."""
    environment = Environment.from_section(section, Path.cwd())
    return image.recipe_for(environment, spec_dir=spec_dir, find_links=find_links)


# -- recipes (no engine) ---------------------------------------------------------------


def test_image_alone_is_used_as_is() -> None:
    recipe = recipe_for({"image": "python:3.11-slim"})
    assert recipe.tag == "python:3.11-slim"
    assert recipe.build is None
    assert recipe_for({}).tag == image.DEFAULT_IMAGE


def test_packages_render_a_build_tagged_by_content(tmp_path: Path) -> None:
    one = recipe_for({"packages": ["six==1.16.0"]})
    again = recipe_for({"packages": ["six==1.16.0"]})
    other = recipe_for({"packages": ["six==1.17.0"]})
    assert one.build is not None
    assert one.tag.startswith("reprospec-env:")
    assert one.tag == again.tag != other.tag
    assert f"FROM {image.DEFAULT_IMAGE}" in one.build.dockerfile
    assert "--no-index" not in one.build.dockerfile
    offline = recipe_for({"packages": ["six"]}, find_links=tmp_path)
    assert offline.build is not None
    assert "--no-index --find-links" in offline.build.dockerfile
    assert offline.tag != recipe_for({"packages": ["six"]}).tag
    # The tag derives from it: a caller must say it (None: the index), as doctor must.
    with pytest.raises(TypeError, match="find_links"):
        image.recipe_for(Environment.from_section({}, Path.cwd()))  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "entry",
    [
        "./mypkg",
        "/src/mypkg",
        "wheels/mypkg-0.3-py3-none-any.whl",
        "file:///src/mypkg",
        "mypkg @ file:///src/mypkg",
        "mypkg[extra] @ file:///src/mypkg ; python_version > '3'",
        "mypkg @ ./mypkg",
        "mypkg @ /src/mypkg",
        "./mypkg[dev]",
    ],
)
def test_a_path_of_this_machine_is_refused_before_the_build(entry: str) -> None:
    # pip in the build sees only its context: it said `Invalid requirement: './mypkg'` or
    # `No such file or directory`, after a build, as if the package were broken.
    with pytest.raises(InfraError, match="a path on this machine") as err:
        recipe_for({"packages": ["six", entry]})
    assert repr(entry) in str(err.value)
    assert "--find-links DIR" in str(err.value)
    # materialize's bundle build too, which failed so on the reader's machine.
    with pytest.raises(InfraError, match="a path on this machine"):
        image.public_build(["six", entry], None)


@pytest.mark.parametrize(
    "entry",
    [
        "six==1.16.0",
        "requests[socks]>=2; python_version > '3.8'",
        "mypkg @ https://example.invalid/mypkg-0.3.tar.gz",
        "git+https://example.invalid/mypkg.git",
    ],
)
def test_requirements_and_network_urls_are_built(entry: str) -> None:
    assert recipe_for({"packages": [entry]}).build is not None


def test_a_new_wheel_changes_the_hash(tmp_path: Path) -> None:
    # A new wheel of a package the cell installs (one of another is left out: test_wheelhouse).
    make_wheel(tmp_path / "wh", version="0.1")
    before = recipe_for({"packages": ["reprospec_probe"]}, find_links=tmp_path / "wh").tag
    make_wheel(tmp_path / "wh", version="0.2")
    assert recipe_for({"packages": ["reprospec_probe"]}, find_links=tmp_path / "wh").tag != before


def test_image_reference_cannot_inject_instructions() -> None:
    with pytest.raises(InfraError, match="not a valid image reference"):
        recipe_for({"image": "base\nRUN rm -rf /", "packages": ["x"]})


def test_from_images_skips_stages_and_args() -> None:
    text = "ARG B=x\nFROM a:1 AS build\nFROM build\nFROM ${B}\nFROM --platform=linux/amd64 c\n"
    assert image.from_images(text) == ("a:1", "c")


def test_user_dockerfile_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile.gpu").write_text("FROM reprospec-base:bookworm\n")
    recipe = recipe_for({"dockerfile": "Dockerfile.gpu"}, spec_dir=tmp_path)
    assert recipe.source == "dockerfile"
    assert recipe.build is not None
    assert recipe.build.bases == ("reprospec-base:bookworm",)
    assert recipe.build.dockerfile_name == "Dockerfile.gpu"
    with pytest.raises(InfraError, match="not found"):
        recipe_for({"dockerfile": "nope"}, spec_dir=tmp_path)


def test_context_has_certs_harness_and_wheels(tmp_path: Path) -> None:
    make_wheel(tmp_path / "wh")
    recipe = recipe_for({"packages": ["reprospec_probe"]}, find_links=tmp_path / "wh")
    assert recipe.build is not None
    image.write_context(recipe.build, tmp_path / "ctx")
    ctx = tmp_path / "ctx"
    assert (ctx / "Dockerfile").read_text() == recipe.build.dockerfile
    assert (ctx / "requirements.txt").read_text() == "reprospec_probe\n"
    assert (ctx / "wheels" / "reprospec_probe-0.1-py3-none-any.whl").is_file()
    assert (ctx / "harness" / "reprospec_harness" / "__init__.py").is_file()
    assert (ctx / "stackdump" / "sitecustomize.py").is_file()
    assert (ctx / "certs").is_dir()
    assert sorted(p.name for p in (ctx / "certs").iterdir()) == sorted(
        p.name for p in image.ca_certificates()
    )


def test_the_top_level_dockerfile_is_the_one_the_package_ships() -> None:
    """`docker build -f Dockerfile` at the repository's top builds the default runner image
    that `reprospec docker setup` builds from the installed package: one file, two paths."""
    shipped = Path(image.__file__).parent / "Dockerfile"
    top = ROOT / "Dockerfile"
    assert top.is_symlink()
    assert top.resolve() == shipped.resolve()
    assert "reprospec_harness" in top.read_text(encoding="utf-8")


# -- a failed build, as its cells' infra-error -------------------------------------------------

# The tail `_build_failure` kept of pyyaml 5.4.1's sdist under Cython 3, pip's colours
# and all: what a cell that needed the image is told, in one line.
PIP_BUILD_TAIL = (
    "docker build of reprospec-env:be8966baa8299d30 failed; build log tail:\n"
    '          File "<string>", line 201, in get_source_files\n'
    "        AttributeError: 'build_ext' object has no attribute 'cython_sources'\n"
    "        [end of output]\n"
    "    note: This error originates from a subprocess, and is likely not a problem with pip.\n"
    "  \x1b[0m\n"
    "  \x1b[91merror: subprocess-exited-with-error\n"
    "  × Getting requirements to build wheel did not run successfully.\n"
    "  Removing intermediate container 6a56bab935bd\n"
    "  The command '/bin/sh -c python3 -m pip install -r /tmp/reprospec/requirements.txt' "
    "returned a non-zero code: 1"
)


def test_a_failed_build_is_one_line_naming_why() -> None:
    assert image.build_failure_reason(PIP_BUILD_TAIL) == (
        'docker build of reprospec-env:be8966baa8299d30 failed (the build said: File "<string>", '
        "line 201, in get_source_files / AttributeError: 'build_ext' object has no attribute "
        "'cython_sources')"
    )


def test_a_failed_build_without_the_packages_words_names_the_error_lines() -> None:
    message = (
        "docker build of x:1 failed; build log tail:\n"
        "  \x1b[91mERROR: Could not find a version that satisfies the requirement pyyaml==9.9\n"
        "  ERROR: No matching distribution found for pyyaml==9.9\n"
        "  \x1b[0m\n"
        "  The command '/bin/sh -c pip install pyyaml==9.9' returned a non-zero code: 1"
    )
    assert image.build_failure_reason(message) == (
        "docker build of x:1 failed (ERROR: Could not find a version that satisfies the "
        "requirement pyyaml==9.9 / ERROR: No matching distribution found for pyyaml==9.9)"
    )


def test_a_failed_build_that_says_no_error_keeps_its_last_line() -> None:
    message = "docker build of x:1 failed; build log tail:\n  Step 2/3 : RUN false\n  exit 1"
    assert image.build_failure_reason(message) == "docker build of x:1 failed (exit 1)"


def test_a_missing_image_reads_as_it_is() -> None:
    message = (
        "docker image nope:1 is missing (reprospec never pulls implicitly): docker pull nope:1"
    )
    assert image.build_failure_reason(message) == message
    assert image.without_colour("\x1b[91merror\x1b[0m") == "error"


@needs_engine
def test_a_missing_image_named_like_one_here_says_which(tmp_path: Path) -> None:
    """`image: reprospec-runer:latest` (or a Dockerfile's `FROM reprospec-runer`) was told
    only to `docker pull` a name no registry has, the image meant being here all along."""
    require_image(CLIENT, image.DEFAULT_IMAGE)
    typo = recipe_for({"image": "reprospec-runer:latest"})
    said = image.unavailable(CLIENT, typo)
    assert said is not None
    assert said.endswith(f"; this engine has {image.DEFAULT_IMAGE} (a typo?)")
    (tmp_path / "Dockerfile").write_text("FROM reprospec-runer\n")
    built = recipe_for({"dockerfile": "Dockerfile"}, spec_dir=tmp_path)
    assert (image.unavailable(CLIENT, built) or "").endswith(f"has {image.DEFAULT_IMAGE} (a typo?)")
    # Nothing like it here: the pull alone, as before.
    far = image.unavailable(CLIENT, recipe_for({"image": "zz-nothing-like-it/qq:9"}))
    assert far is not None
    assert "this engine has" not in far
