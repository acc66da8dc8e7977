"""Which wheels of a `--find-links` wheelhouse go into a packages image's build."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from reprospec.core.sections import Environment
from reprospec.runners.docker import image
from reprospec.runners.docker.wheelhouse import needed_wheels


def _wheel(folder: Path, name: str, *requires: str, version: str = "1.0") -> Path:
    """A wheel whose METADATA requires `requires` (Requires-Dist lines, markers and all)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    lines = "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"{name}-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{lines}",
        )
    return path


def _recipe(section: dict[str, Any], wheels: Path) -> image.ImageRecipe:
    environment = Environment.from_section(section, Path.cwd())
    return image.recipe_for(environment, find_links=wheels)


def test_a_build_gets_its_packages_wheels_and_what_they_require_only(tmp_path: Path) -> None:
    """The whole wheelhouse went into a layer of every packages image (219 MB of torch's
    wheels under an image of mpmath alone), and any wheel added to it rebuilt them all."""
    wheels = tmp_path / "wh"
    _wheel(wheels, "app", "Dep_One>=1", 'extra_dep; extra == "x"')
    _wheel(wheels, "dep_one", "app")  # a cycle is read once
    _wheel(wheels, "extra_dep")
    _wheel(wheels, "big_unrelated")
    chosen = needed_wheels(wheels, ["app[x]==1.0"])
    assert [p.name.split("-")[0] for p in chosen or ()] == ["app", "dep_one", "extra_dep"]
    recipe = _recipe({"packages": ["app==1.0"]}, wheels)
    assert recipe.build is not None
    assert not any("big_unrelated" in dest for dest, _ in recipe.build.files)
    image.write_context(recipe.build, tmp_path / "ctx")
    assert sorted(p.name for p in (tmp_path / "ctx" / "wheels").iterdir()) == [
        "app-1.0-py3-none-any.whl",
        "dep_one-1.0-py3-none-any.whl",
        "extra_dep-1.0-py3-none-any.whl",
    ]
    # A wheel another spec needs leaves this image as it is; a new one of its own does not.
    _wheel(wheels, "another")
    assert _recipe({"packages": ["app==1.0"]}, wheels).tag == recipe.tag
    _wheel(wheels, "app", version="2.0")
    assert _recipe({"packages": ["app==1.0"]}, wheels).tag != recipe.tag


def test_a_folder_with_more_than_wheels_goes_whole(tmp_path: Path) -> None:
    """An sdist's requirements are read only by building it; a URL names no distribution."""
    wheels = tmp_path / "wh"
    _wheel(wheels, "app")
    assert needed_wheels(wheels, ["https://example.invalid/app.whl"]) is None
    (wheels / "dep-1.0.tar.gz").write_bytes(b"")
    assert needed_wheels(wheels, ["app"]) is None
    recipe = _recipe({"packages": ["app"]}, wheels)
    assert recipe.build is not None
    assert ("wheels", wheels.resolve()) in recipe.build.files
