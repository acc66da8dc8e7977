"""`reprospec capture` of a program whose package is the user's own project, installed
editable (`uv pip install -e .`, PEP 660, or `setup.py develop`), as people develop one.

The project (tests/data/capture/editable/) builds with a backend of its own, so the real
installer makes a real editable install with nothing to download: a `.pth` naming its
`src/`, or a finder of its own that puts no folder on sys.path (setuptools' way for a flat
layout). The installer writes PEP 610's direct_url.json, which is how capture knows it.
`setup.py develop` (setuptools before 80, which ensurepip bundles) writes none: an
`.egg-link` and easy-install.pth name the project's `src/`, where its `.egg-info` is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.capture.footprint import HIDE_INSTALLS_VAR
from reprospec.process.childprotocol import STACKDUMP_DIR
from reprospec.spec.load import load_spec
from tests.support.cli import ROOT, Cli, CliResult
from tests.support.envs import offline_venv

PROJECT = ROOT / "tests" / "data" / "capture" / "editable"


def installed(tmp_path: Path, mode: str, project: Path | None = None) -> tuple[Path, Path]:
    """A copy of the project and a venv holding it editable (`mode`: path or finder)."""
    if project is None:
        project = tmp_path / "project"
        shutil.copytree(PROJECT, project)
    return project, offline_venv(tmp_path / "venv", "-C", f"mode={mode}", "-e", str(project))


def developed(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the project and a venv holding it by `setup.py develop`: an `.egg-link`
    and easy-install.pth, no direct_url.json. setuptools 80 and later run `pip install -e`
    for it (PEP 660, a direct_url.json): the one ensurepip bundles (up to Python 3.11) is
    older, and installs offline."""
    import ensurepip

    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("setuptools-*.whl"))
    wheels = [w for w in bundled if int(w.name.split("-")[1].split(".")[0]) < 80]
    if not wheels:
        pytest.skip("skipped: no setuptools before 80 at hand (ensurepip bundles one to 3.11)")
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("pyproject.toml"))
    (project / "setup.py").write_text(
        "from setuptools import setup\n\n"
        "setup(name='capmod', version='0.3.0', packages=['capmod'], package_dir={'': 'src'})\n"
    )
    venv = tmp_path / "venv"
    python = offline_venv(venv, str(wheels[-1]), python=sys.executable)
    subprocess.run(
        [str(python), "setup.py", "-q", "develop"], cwd=project, check=True, capture_output=True
    )
    site = next(venv.glob("lib/python*/site-packages"))
    assert (site / "capmod.egg-link").read_text().split()[0] == str(project / "src")
    assert not list(site.glob("capmod*.dist-info"))  # no PEP 610 record of it anywhere
    return project, python


def header(workdir: Path) -> str:
    """The comment the spec in `workdir` starts with, its wrapped lines joined."""
    lines = (workdir / "spec.yaml").read_text().split("\n")
    return " ".join(line[1:].strip() for line in lines if line.startswith("#"))


def _capture(cli: Cli, tmp_path: Path, python: Path, cwd: Path) -> CliResult:
    """`reprospec capture -o spec.yaml -- PYTHON crash.py` in `cwd`, which ends 0."""
    result = cli(
        "capture", "-o", "spec.yaml", "--out", str(tmp_path / "out"), "--",
        str(python), "crash.py", cwd=cwd,
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    return result


def _imports_the_checkout_from_its_files(result: CliResult, project: Path) -> None:
    """Capture said the editable install of the workdir's project is no package, and the
    spec it wrote imports the project from its files (PYTHONPATH src), reproduced."""
    assert (
        "capmod 0.3.0 is your editable install of . (pip install -e), which no index has: "
        "not in packages; the spec imports it from its files in the workdir "
        "(environment.env PYTHONPATH: src)"
    ) in result.stdout
    assert "(your editable install of capmod hidden: the copy's files imported)" in result.stdout
    assert "verdict reproduced" in result.stdout
    document = load_spec(str(project / "spec.yaml")).document
    environment = document["environment"]
    assert isinstance(environment, dict)
    assert "packages" not in environment
    variables = environment["env"]
    assert isinstance(variables, dict)
    assert variables["PYTHONPATH"] == "src"
    assert document["files"] == ["src/capmod/__init__.py", "src/capmod/tokens.py"]


@pytest.mark.parametrize("mode", ["path", "finder"])
def test_an_editable_project_is_carried_and_imported_from_its_files_not_pinned(
    cli: Cli, tmp_path: Path, mode: str
) -> None:
    # It was pinned `capmod==0.3.0`, which no index has (every venv and docker build of the
    # spec failed), and the verify in a copy imported the checkout through the install's
    # `.pth`: `reproduced` said nothing of the copy.
    project, python = installed(tmp_path, mode)
    result = _capture(cli, tmp_path, python, project)
    _imports_the_checkout_from_its_files(result, project)
    assert "capmod 0.3.0 is your editable install of . (pip install -e)" in header(project)
    # The spec runs where no install of the project is: this interpreter has none.
    assert subprocess.run([sys.executable, "-c", "import capmod"], check=False).returncode
    ran = cli("run", "spec.yaml", "--out", str(tmp_path / "again"), cwd=project)
    assert ran.code == 0, ran.stdout + ran.stderr


def test_a_setup_py_develop_install_is_editable_too(cli: Cli, tmp_path: Path) -> None:
    # No direct_url.json: capture pinned `capmod==0.3.0`, which no index has, and its verify
    # imported the checkout through easy-install.pth, unseen.
    project, python = developed(tmp_path)
    result = _capture(cli, tmp_path, python, project)
    _imports_the_checkout_from_its_files(result, project)


def test_an_editable_install_outside_the_workdir_is_named_with_what_the_verify_used(
    cli: Cli, tmp_path: Path
) -> None:
    # The workdir does not hold the project, so no spec can carry it: said in the spec and
    # in what capture prints, with where the verify's import came from.
    project, python = installed(tmp_path, "path")
    workdir = tmp_path / "work"
    workdir.mkdir()
    shutil.copy(project / "crash.py", workdir / "crash.py")
    result = _capture(cli, tmp_path, python, workdir)
    assert (
        f"capmod 0.3.0 is your editable install of {project}, outside the workdir, which no "
        "index has and no bundle carries: not in packages"
    ) in result.stdout
    assert (
        f"the verify imports capmod from your editable install at {project}, outside the "
        "workdir: a reader needs it installed the same way"
    ) in result.stdout
    document = load_spec(str(workdir / "spec.yaml")).document
    environment = document["environment"]
    assert isinstance(environment, dict)
    assert "packages" not in environment
    assert "PYTHONPATH" not in environment["env"]  # type: ignore[operator]
    assert f"capmod 0.3.0 is your editable install of {project}, outside" in header(workdir)


@pytest.mark.parametrize("mode", ["path", "finder"])
def test_a_hidden_editable_install_imports_nothing_of_the_checkout(
    tmp_path: Path, mode: str
) -> None:
    # What the verify's children do. Without it, a copy that lacks the package imports the
    # checkout's through the install (its `.pth` path, or its finder), unseen.
    project, python = installed(tmp_path, mode)
    copy = tmp_path / "copy"
    (copy / "src").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": f"{STACKDUMP_DIR}:{copy / 'src'}"}
    where = [str(python), "-c", "import capmod.tokens as t; print(t.__file__)"]
    seen = subprocess.run(where, capture_output=True, text=True, env=env, check=True)
    assert seen.stdout.strip() == str(project / "src" / "capmod" / "tokens.py")
    # Hidden: the import fails and names what was hidden.
    hide = json.dumps({"roots": [str(project / "src")], "modules": ["capmod"]})
    env[HIDE_INSTALLS_VAR] = hide
    hidden = subprocess.run(where, capture_output=True, text=True, env=env, check=False)
    assert hidden.returncode == 1
    assert (
        "ModuleNotFoundError: No module named 'capmod' in the copy of the spec: reprospec's "
        f"verify hid your editable install of it ({project / 'src'})"
    ) in hidden.stderr
    # The copy's own package is imported, and a module no one has fails as Python says.
    shutil.copytree(project / "src" / "capmod", copy / "src" / "capmod")
    from_copy = subprocess.run(where, capture_output=True, text=True, env=env, check=True)
    assert from_copy.stdout.strip() == str(copy / "src" / "capmod" / "tokens.py")
    nowhere = [str(python), "-c", "import capmod.nothere"]
    missing = subprocess.run(nowhere, capture_output=True, text=True, env=env, check=False)
    assert "ModuleNotFoundError: No module named 'capmod.nothere'\n" in missing.stderr
