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
    assert "Not every cell ran with the same environment: `image` differ" in environment
    for image in (dockerimage.BASE_IMAGE, dockerimage.DEFAULT_IMAGE):
        assert f"`image: {image}`" in report.split("## Results")[1]
