"""The docker runner refuses a cell whose image does not hold its `packages` (checked inside)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.runners.docker import image as dockerimage
from tests.support.cli import Cli
from tests.support.docker import CLIENT, needs_engine, require_image


@needs_engine
def test_a_dockerfile_without_the_cells_packages_is_an_infra_error(
    cli: Cli, tmp_path: Path
) -> None:
    require_image(CLIENT, dockerimage.BASE_IMAGE)
    # A user Dockerfile is used as it is: the spec's `packages` are not installed by it.
    (tmp_path / "Dockerfile").write_text(f"FROM {dockerimage.BASE_IMAGE}\n")
    spec = tmp_path / "dockerfile.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: docker-packages
        environment:
          dockerfile: Dockerfile
          packages: ["reprospec-not-installed-anywhere==1.0"]
        command: python3 -c "print('ran')"
        expect:
          outcome: pass
        """)
    )
    done = cli("run", str(spec), "--runner", "docker", "--repeat", "2", timeout=600)
    assert done.code == 3, done.stderr
    (cell,) = done.results()["cells"]
    assert cell["verdict"] == "infra-error"
    for attempt in cell["attempts"]:
        assert (
            "reprospec-not-installed-anywhere is not installed (the cell needs "
            "reprospec-not-installed-anywhere==1.0)" in attempt["infra_error"]
        )
        logs = done.latest_run() / attempt["logs"]
        assert (logs / "stdout.log").read_text() == ""


@needs_engine
def test_an_extras_requirement_the_image_lacks_is_an_infra_error(cli: Cli, tmp_path: Path) -> None:
    """`wheel[test]` in an image with wheel and no pytest passed the image's package check
    (only wheel was looked for) and ran; the probe in the container says what the extra
    requires now. The Dockerfile is the test above's: its image is built once."""
    require_image(CLIENT, dockerimage.BASE_IMAGE)
    (tmp_path / "Dockerfile").write_text(f"FROM {dockerimage.BASE_IMAGE}\n")
    spec = tmp_path / "extras.yaml"
    spec.write_text(
        "reprospec: 1\nname: docker-extras\nenvironment:\n  dockerfile: Dockerfile\n"
        '  packages: ["wheel[test]"]\ncommand: python3 -c "print(1)"\nexpect: {outcome: pass}\n'
    )
    done = cli("run", str(spec), "--runner", "docker", timeout=600)
    assert done.code == 3, done.stderr
    (cell,) = done.results()["cells"]
    assert (
        "pytest is not installed (wheel[test] requires pytest>=3.0.0)"
        in (cell["attempts"][0]["infra_error"])
    )


@needs_engine
def test_each_cells_image_is_reported_next_to_the_cell(cli: Cli, tmp_path: Path) -> None:
    """Two images in the matrix: the report names each cell's, the run-wide table neither."""
    for image in (dockerimage.BASE_IMAGE, dockerimage.DEFAULT_IMAGE):
        require_image(CLIENT, image)
    spec = tmp_path / "images.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: docker-images
        matrix:
          image: ["{dockerimage.BASE_IMAGE}", "{dockerimage.DEFAULT_IMAGE}"]
        environment:
          image: "${{{{ matrix.image }}}}"
        command: python3 -c "print('ran')"
        expect:
          outcome: pass
        """)
    )
    done = cli("run", str(spec), "--runner", "docker", timeout=600)
    assert done.code == 0, done.stderr
    cells = done.results()["cells"]
    assert [c["environment"]["image"] for c in cells] == [
        dockerimage.BASE_IMAGE,
        dockerimage.DEFAULT_IMAGE,
    ]
    report = (done.latest_run() / "report.md").read_text()
    environment = report.split("## Environment")[1]
    assert (
        "Not every cell ran with the same environment: `image` differs from cell to cell"
        in environment
    )
    for image in (dockerimage.BASE_IMAGE, dockerimage.DEFAULT_IMAGE):
        assert f"`image: {image}`" in report.split("## Results")[1]


@needs_engine
def test_a_package_version_per_cell_is_not_named_as_the_runs(cli: Cli, tmp_path: Path) -> None:
    """Each cell's image holds its own sqlparse: the run-wide tables and the Versions block
    name no one cell's version or image tag as the run's; the Packages row names the spec's
    packages in the image (the probe is asked for them), and the results name each cell's."""
    require_image(CLIENT, dockerimage.DEFAULT_IMAGE)
    spec = tmp_path / "versions.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: docker-package-versions
        matrix:
          sqlparse: ["0.4.4", "0.5.0"]
        environment:
          packages: ["sqlparse==${{ matrix.sqlparse }}"]
        command: python3 -c "import sqlparse; print(sqlparse.__version__)"
        expect:
          outcome: pass
        """)
    )
    done = cli("run", str(spec), "--runner", "docker", timeout=600)
    assert done.code == 0, done.stderr
    results = done.results()
    # The capture ran in the first cell's image, and knows the spec's package by name.
    assert results["environment"]["captured_in"] == "sqlparse=0.4.4"
    assert results["environment"]["packages"]["sqlparse"] == "0.4.4"
    report = (done.latest_run() / "report.md").read_text()
    environment = report.split("## Environment")[1]
    assert (
        "Not every cell ran with the same environment: `sqlparse` differs from cell to cell"
        in environment
    )
    assert "[pip3] sqlparse: differs from cell to cell" in environment
    # The Versions block names the cell it was captured in (what else it lists, what
    # sqlparse pulls in, is that cell's), and no version of it as the run's.
    heading = "captured in the environment of cell sqlparse=0.4.4; the cells' packages differ"
    assert heading in environment
    assert "0.4.4" not in environment.replace(heading, "")
    assert "reprospec-env:" not in environment  # the first cell's image tag
    for version in ("0.4.4", "0.5.0"):
        assert f"`sqlparse=={version}`" in report.split("## Results")[1]


@needs_engine
def test_the_repro_names_what_a_range_resolved_to_in_the_image(cli: Cli, tmp_path: Path) -> None:
    """`sqlparse<0.5` built into the image as 0.4.4: the standalone repro's note names
    `sqlparse==0.4.4` and how to install it, as the venv runner's does, where it named only
    the range, which today's index may resolve otherwise (the docker runner had no pins)."""
    require_image(CLIENT, dockerimage.DEFAULT_IMAGE)
    spec = tmp_path / "range.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: docker-range
        environment:
          packages: ["sqlparse<0.5"]
        command: python3 -c "import sqlparse; print(sqlparse.__version__)"
        expect:
          outcome: pass
        """)
    )
    done = cli("run", str(spec), "--runner", "docker", timeout=600)
    assert done.code == 0, done.stderr
    (cell,) = done.results()["cells"]
    logs = done.latest_run() / cell["attempts"][0]["logs"]
    version = (logs / "stdout.log").read_text().strip()
    assert version.startswith("0.4."), version
    pinned = f"sqlparse=={version}"
    notes = done.results()["standalone"]["notes"]
    assert any(
        f"packages sqlparse<0.5 (installed as {pinned}: `pip install {pinned}`)" in note
        for note in notes
    ), notes
