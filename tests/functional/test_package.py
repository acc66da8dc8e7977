"""reprospec as a package index would ship it and a pip user would meet it.

A module fixture builds the sdist from a copy of the package's files and the wheel from that
sdist (`python -m build`, as a release would), and installs the wheel into a fresh venv in a
temporary folder outside the checkout; one test then checks both archives as an index would
(`twine check`, the license, the metadata) and runs the installed `reprospec` there: a
command spec, `bundle` + `run x.tar.gz`, the pytest plugin, `schema -o`, `doctor`, and a
workload spec whose harness comes from the venv's site-packages (the target interpreter is
this one, which has torch: `--python`). One test, so that `pytest -n` builds the wheel once.

The venv is made with `python -m venv` and filled by uv (a dependency of reprospec, so it is
here): pip would take minutes to resolve the same dependencies on a shared machine. The
checkout never lends a file: the wheel's own copy answers `import reprospec`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _run(
    argv: Sequence[str | Path], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """A child as a user's shell would start it: no PYTHONPATH or venv of the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (
        f"{result.args}: exit {result.returncode}\n" + (result.stdout + result.stderr)[-4000:]
    )
    return result.stdout


@dataclass(frozen=True)
class Dist:
    """The sdist and the wheel built from it."""

    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class Installed:
    """The wheel installed in a fresh venv, and a folder outside the checkout to work in."""

    venv: Path
    work: Path

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    # A copy of what the sdist is made of: the build writes its egg-info beside the sources,
    # and the checkout must not be written to (nor lend a stale build/ folder).
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "reprospec",
        source / "reprospec",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"),
    )
    out = tmp_path_factory.mktemp("dist")
    # No build isolation: the setuptools of the dev extra builds it, without fetching one.
    # Without --sdist/--wheel, build makes the sdist and then the wheel from the sdist.
    _ok(_run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source], out))
    (sdist,) = out.glob("reprospec-*.tar.gz")
    (wheel,) = out.glob("reprospec-*.whl")
    return Dist(sdist, wheel)


@pytest.fixture(scope="module")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("user")
    assert not home.resolve().is_relative_to(ROOT.resolve())
    venv = home / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", venv], home))
    python = venv / "bin" / "python"
    _ok(_run([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", python,
              dist.wheel, "pytest"], home))  # fmt: skip
    work = home / "work"
    work.mkdir()
    where = _ok(_run([python, "-c", "import reprospec; print(reprospec.__file__)"], work))
    assert Path(where.strip()).is_relative_to(venv), where
    return Installed(venv, work)


# ---- the archives ----------------------------------------------------------------------------


def _check_archives(dist: Dist) -> None:
    # --strict: a warning (a description that would not render) fails too.
    _ok(_run([BIN / "twine", "check", "--strict", dist.sdist, dist.wheel], dist.wheel.parent))
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = wheel.namelist()
        (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert "MIT License" in wheel.read(license_file).decode()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    shipped = ("runners/docker/setup.sh", "runners/docker/Dockerfile",
               "data/reprospec.schema.json", "harness/reprospec_harness/__main__.py",
               "py.typed")  # fmt: skip
    assert [n for n in shipped if f"reprospec/{n}" not in names] == []
    with tarfile.open(dist.sdist) as sdist:
        assert any(m.name.endswith("/LICENSE") for m in sdist.getmembers())
    text = metadata.decode()
    assert "License-Expression: MIT" in text
    assert "Project-URL: Repository, https://github.com/reprospec/reprospec" in text
    # Nothing of the engine imports psutil: only the tests' extras name it.
    assert [r for r in re.findall(r"^Requires-Dist: (.*)$", text, re.M) if "extra ==" not in r
            and r.startswith("psutil")] == []  # fmt: skip
    # The README is the long description, whole (tests/unit/test_links.py checks its links).
    assert "reprospec run specs/segfault.yaml" in text


# ---- the installed command -------------------------------------------------------------------

COMMAND_SPEC = """\
reprospec: 1
name: wheel-command
matrix:
  code: [0, 3]
command: python exits.py ${{ matrix.code }}
expect:
  outcome: error
  exit_code: 3
  cases:
    - {when: {code: 0}, outcome: pass}
"""

WORKLOAD_SPEC = """\
reprospec: 1
name: wheel-workload
workload:
  model: {builtin: mlp, params: {hidden: 8}}
  data: {dataset: {builtin: synthetic, size: 16, shape: [4], classes: 2}, loader: {batch_size: 4}}
  phases: [{name: train, steps: 2}]
  faults:
    - {kind: raise, exception: ValueError, message: from the wheel, at: {phase: train, step: 1}}
run: {timeout: 120s}
expect: {outcome: error, exception: ValueError, phase: train, step: 1}
"""


def _latest_run(out: Path) -> Path:
    return max((out / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)


def _run_a_command_spec(installed: Installed) -> None:
    work = installed.work / "command"
    work.mkdir()
    (work / "spec.yaml").write_text(COMMAND_SPEC)
    (work / "exits.py").write_text("import sys\nsys.exit(int(sys.argv[1]))\n")
    reprospec = installed.bin("reprospec")
    table = _ok(_run([reprospec, "run", "spec.yaml"], work))
    assert "2/2 cells reproduced" in table
    # The bundle carries exits.py: it reruns from a folder that has nothing else.
    _ok(_run([reprospec, "bundle", "latest", "-o", installed.work / "x.tar.gz"], work))
    away = installed.work / "away"
    away.mkdir()
    rerun = _ok(_run([reprospec, "run", installed.work / "x.tar.gz", "--yes"], away))
    assert "2/2 cells reproduced" in rerun
    # The plugin is found through the wheel's pytest11 entry point.
    items = _ok(_run([installed.bin("pytest"), "-q", "-p", "no:cacheprovider", "--reprospec",
                      "spec.yaml"], work))  # fmt: skip
    assert "2 passed" in items


def _run_a_workload_spec(installed: Installed) -> None:
    # The engine without torch (the fresh venv), the harness in an interpreter with torch
    # (this one): what the harness runs is the copy in the venv's site-packages.
    work = installed.work / "workload"
    work.mkdir()
    (work / "spec.yaml").write_text(WORKLOAD_SPEC)
    table = _ok(_run([installed.bin("reprospec"), "run", "spec.yaml", "--python", sys.executable],
                     work))  # fmt: skip
    assert "1/1 cell reproduced" in table
    stderr = (
        _latest_run(work / ".reprospec") / "cells" / "default" / "1" / "stderr.log"
    ).read_text()
    harness = installed.venv / "lib"
    frames = re.findall(r'File "([^"]*reprospec_harness[^"]*)"', stderr)
    assert frames, stderr[-2000:]
    assert all(Path(f).is_relative_to(harness) and "site-packages" in f for f in frames), frames


def _ask_schema_doctor_and_docker(installed: Installed) -> None:
    reprospec = installed.bin("reprospec")
    target = installed.work / "editor" / "reprospec.schema.json"
    line = _ok(_run([reprospec, "schema", "-o", target], installed.work))
    assert line == f"# yaml-language-server: $schema={target.resolve()}\n"
    assert target.read_text() == (ROOT / "schemas" / "reprospec.schema.json").read_text()
    # The venv has no torch: doctor checks the venv's interpreter, says so (exit 1) and how
    # to get it.
    doctor = _run([reprospec, "doctor"], installed.work)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert re.search(r"FAIL\s+torch\s+torch is not installed", doctor.stdout), doctor.stdout
    assert re.search(r"PASS\s+shm", doctor.stdout), doctor.stdout
    assert doctor.stdout.startswith(f"reprospec doctor: {installed.bin('python')}"), doctor.stdout
    setup = _ok(_run([reprospec, "docker", "setup", "--print-path"], installed.work))
    assert Path(setup.strip()) == installed.venv.joinpath(
        "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages",
        "reprospec", "runners", "docker", "setup.sh",
    )  # fmt: skip


def test_the_wheel_builds_checks_installs_and_runs_as_a_user_meets_it(
    dist: Dist, installed: Installed
) -> None:
    _check_archives(dist)
    _run_a_command_spec(installed)
    _ask_schema_doctor_and_docker(installed)
    _type_check_as_a_user(installed)
    if not HAS_TORCH:
        pytest.skip("torch is not installed here: the workload spec (the last part) was not run")
    _run_a_workload_spec(installed)


def _type_check_as_a_user(installed: Installed) -> None:
    """A user's `mypy --strict` reads the installed API's types (py.typed): a wrong one is
    its error, and nothing is `import-untyped` (before, every answer was Any)."""
    script = installed.work / "typed_user.py"
    script.write_text(
        "import reprospec\n\n"
        "found = reprospec.isolate_spec('s.yaml', reprospec.IsolateOptions(budget=5))\n"
        "code: int = reprospec.exit_code(found)\n"
        "wrong: str = found.budget\n"
    )
    argv: list[str | Path] = [BIN / "mypy", "--strict", "--no-incremental", "--python-executable",
            installed.bin("python"), script]  # fmt: skip
    said = _run(argv, installed.work).stdout
    assert "import-untyped" not in said, said
    assert re.findall(r"typed_user\.py:\d+: error: .*", said) == [
        'typed_user.py:5: error: Incompatible types in assignment (expression has type "int", '
        'variable has type "str")  [assignment]'
    ], said


# ---- the schema with an editor's tool --------------------------------------------------------


def test_check_jsonschema_accepts_every_example_spec(tmp_path: Path) -> None:
    # The tool editors' users and CI run: the schema must work outside reprospec's loader.
    specs = sorted((ROOT / "specs").glob("*.yaml")) + sorted((ROOT / "examples").rglob("*.yaml"))
    assert len(specs) >= 10
    schema = ROOT / "schemas" / "reprospec.schema.json"
    _ok(_run([BIN / "check-jsonschema", "--schemafile", schema, *specs], tmp_path))
    bad = tmp_path / "bad.yaml"
    bad.write_text("reprospec: 1\nname: Bad Name\ncommand: 'true'\n")
    refused = _run([BIN / "check-jsonschema", "--schemafile", schema, bad], tmp_path)
    assert refused.returncode == 1
    assert "$.name" in refused.stdout
