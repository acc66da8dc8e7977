"""`doctor SPEC --runner venv` asks whether each cell's packages resolve, as the venv build
installs them: a spec of `six==99` passed ("the venv runner installs the spec's packages"),
and only the build at run time failed, every such cell `infra-error`. An index that does
not answer is said as not checked, never as a failure.

Real uv resolves against a real wheelhouse (--find-links) and an empty file:// index, or an
index at a port nothing listens on."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import Cli
from tests.support.envs import make_broken_sdist, make_wheel, uv_environment

DEMO = "reprospec-envdemo"


def _spec(folder: Path, versions: str) -> None:
    (folder / "s.yaml").write_text(
        f"reprospec: 1\nname: s\nmatrix: {{v: [{versions}]}}\n"
        f"environment: {{packages: ['{DEMO}==${{{{ matrix.v }}}}']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )


def _checks(stdout: str) -> dict[str, dict[str, str]]:
    return {check["name"]: check for check in json.loads(stdout)}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_packages_the_index_cannot_give_fail_doctor(cli: Cli, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    make_broken_sdist(wheels, DEMO, "1.2")
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    _spec(tmp_path, "'1.0', '9', '1.2'")
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels))
    done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "fail", check
    assert check["why"].startswith(f"{DEMO}==9 cannot be installed (in cell v=9): "), check
    assert f"no version of {DEMO}==9" in check["why"]
    assert "infra error" in check["why"]
    # An sdist whose build fails here, as the run's build would build it (not "could not
    # check": nothing was unreachable).
    assert f"{DEMO}==1.2 cannot be installed (in cell v=1.2): " in check["why"], check
    assert "this release has no wheel for this Python and cannot build" in check["why"]
    # The wheelhouse has 1.0: the same spec without 9 passes, as its run builds.
    _spec(tmp_path, "'1.0'")
    done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    assert _checks(done.stdout)["venv-packages"]["status"] == "pass"


def test_an_index_that_does_not_answer_is_not_a_failure(cli: Cli, tmp_path: Path) -> None:
    env = {
        **uv_environment(),
        "UV_INDEX_URL": f"http://127.0.0.1:{_closed_port()}/simple",
        "UV_HTTP_RETRIES": "0",
    }
    _spec(tmp_path, "'1.0'")
    done = cli("doctor", "s.yaml", "--runner", "venv", "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "warn", check
    assert check["why"].startswith("could not check that the cells' packages resolve"), check
    assert "Connection refused" in check["why"]


# An in-tree backend whose metadata hook succeeds and whose wheel build fails, as a setup.py
# whose egg_info runs and whose bdist_wheel needs a compiler that is not here.
_HALF_BUILT = """\
import pathlib

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = pathlib.Path(metadata_directory) / "halfbuilt-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\\nName: halfbuilt\\nVersion: 1.0\\n")
    return dist.name

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise SystemExit("error: command 'gcc-13' failed: No such file or directory")

def build_sdist(sdist_directory, config_settings=None):
    raise SystemExit("no")
"""


def test_an_sdist_whose_wheel_does_not_build_fails_doctor(cli: Cli, tmp_path: Path) -> None:
    """uv's resolver reads an sdist's metadata, which built: doctor passed `the cells'
    packages resolve`, and the run's build of its wheel failed, every cell an infra error.
    Its wheel is built as the run builds it, and its failure said in the build's words (of
    a folder's too, `./mypkg`, which the build builds alike); an sdist that builds (cell
    pkg=builds-fine==1.0) passes."""
    from tests.support.envs import _sdist, make_slow_sdist

    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    _sdist(wheels, "halfbuilt", "1.0", _HALF_BUILT)
    make_slow_sdist(wheels, "builds-fine", "1.0", tmp_path / "started", 0)
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "backend.py").write_text(_HALF_BUILT)
    (tmp_path / "mypkg" / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: s\nmatrix: {pkg: [halfbuilt==1.0, ./mypkg, builds-fine==1.0]}\n"
        f"environment:\n  packages: ['${{{{ matrix.pkg }}}}', '{DEMO}==1.0']\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels))
    done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "fail", check
    gcc = "error: command 'gcc-13' failed: No such file or directory"
    assert check["why"].startswith(
        f"halfbuilt==1.0, {DEMO}==1.0 cannot be installed (in cell pkg=halfbuilt==1.0): could "
        "not build halfbuilt==1.0 (no wheel of it for this interpreter; its build from the "
        f"sdist failed: {gcc}); ./mypkg, {DEMO}==1.0 (in cell pkg=./mypkg): could not build "
        f"./mypkg (its build from that path failed: {gcc}): "
    ), check
    # A path's build is no index's: its todo was "name versions the index has".
    assert check["todo"] == (
        "name versions the index has (`uv pip compile` of the same list says which is "
        "missing), or give the wheelhouse that has them with --find-links DIR (to doctor and "
        "to run alike); and fix the build of ./mypkg (its own error is the one quoted): `uv "
        "pip install ./mypkg` in the spec's folder shows its whole output (the venv runner "
        "builds it the same way)"
    ), check
    assert "builds-fine" not in check["why"], check
    assert (tmp_path / "started").exists()  # (its wheel was built, as the run builds it)


def _path_project(folder: Path, backend: str) -> None:
    """A project at `folder` built by its own in-tree backend (nothing fetched to build it)."""
    folder.mkdir()
    (folder / "backend.py").write_text(backend)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )


def test_a_path_entry_whose_metadata_build_fails_fails_doctor(cli: Cli, tmp_path: Path) -> None:
    """A path entry whose build raises as it is imported (a setup.py that needs a variable
    not set) fails uv's resolve itself, whose words name no distribution (`The build
    backend returned an error` alone): doctor said `could not check`, exit 0, and the run's
    build failed, every cell an infra error. It fails, naming the entry (of two paths, the
    one that raises) and quoting the build's own last words, its todo that build's."""
    _path_project(tmp_path / "good", _HALF_BUILT.replace("halfbuilt", "good"))
    _path_project(tmp_path / "mypkg", 'raise RuntimeError("FOO_HOME is not set")\n')
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    for packages in ("'./mypkg'", "'./good', './mypkg'"):
        (tmp_path / "s.yaml").write_text(
            f"reprospec: 1\nname: s\nenvironment: {{packages: [{packages}]}}\n"
            "command: 'true'\nexpect: {outcome: pass}\n"
        )
        argv = ("doctor", "s.yaml", "--runner", "venv", "--format", "json")
        done = cli(*argv, env=env, cwd=tmp_path)
        assert done.code == 1, done.stdout + done.stderr
        check = _checks(done.stdout)["venv-packages"]
        assert check["status"] == "fail", check
        listed = "" if packages == "'./mypkg'" else "./good, ./mypkg: "
        assert check["why"].startswith(
            f"{listed}could not build ./mypkg (its build from that path failed: "
        ), check
        assert "RuntimeError: FOO_HOME is not set)" in check["why"], check
        assert check["why"].endswith(
            ": on the venv runner, every cell is an infra error (its venv cannot be built), not run"
        ), check
        assert check["todo"].startswith("fix the build of ./mypkg "), check


def _git_project(folder: Path) -> str:
    """`folder` committed as a git repository: its `git+file://` URL."""
    git = ("git", "-C", str(folder))
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True
    )
    return f"git+{folder.as_uri()}"


def test_a_url_entry_whose_build_fails_blames_no_path_beside_it(cli: Cli, tmp_path: Path) -> None:
    """A `git+file://` entry whose build raises beside one healthy path entry: uv names
    neither, and the one path, never asked alone, was said to fail (`could not build
    ./good`, its todo to fix that build). The path is asked alone, builds, and is not
    blamed: the failure is the list's, the build's own words quoted."""
    _path_project(tmp_path / "good", _HALF_BUILT.replace("halfbuilt", "good"))
    _path_project(tmp_path / "gitbad", 'raise RuntimeError("FOO_HOME is not set")\n')
    url = _git_project(tmp_path / "gitbad")
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    (tmp_path / "s.yaml").write_text(
        f"reprospec: 1\nname: s\nenvironment: {{packages: ['./good', '{url}']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    argv = ("doctor", "s.yaml", "--runner", "venv", "--format", "json")
    done = cli(*argv, env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "fail", check
    assert "./good" not in check["todo"], check
    assert check["why"].startswith(f"./good, {url} cannot be installed: "), check
    assert "RuntimeError: FOO_HOME is not set" in check["why"], check


def test_a_path_entry_blamed_beside_a_failing_url_entry_is_quoted_its_own_failure(
    cli: Cli, tmp_path: Path
) -> None:
    """A `git+file://` entry whose build raises beside a path entry whose build raises too:
    the path, asked alone, is the one blamed, and the failure quoted is its own (BAR_HOME),
    where the whole list's output, the URL entry's (FOO_HOME), was quoted as the path's."""
    _path_project(tmp_path / "bar", 'raise RuntimeError("BAR_HOME is not set")\n')
    _path_project(tmp_path / "gitbad", 'raise RuntimeError("FOO_HOME is not set")\n')
    url = _git_project(tmp_path / "gitbad")
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    (tmp_path / "s.yaml").write_text(
        f"reprospec: 1\nname: s\nenvironment: {{packages: ['{url}', './bar']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    argv = ("doctor", "s.yaml", "--runner", "venv", "--format", "json")
    done = cli(*argv, env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert f"{url}, ./bar: could not build ./bar (" in check["why"], check
    assert "RuntimeError: BAR_HOME is not set" in check["why"], check
    assert "FOO_HOME" not in check["why"], check


def test_a_silent_index_costs_one_wait_told_once(cli: Cli, tmp_path: Path) -> None:
    """An index that accepts the connection and never answers: uv waited its own timeout
    and retries past the resolve's 120 s, read as a long list's backtracking, and the next
    list was asked again: 2 x 120 s. Each request now waits once (here the user's shorter
    UV_HTTP_TIMEOUT, 1 s, however many retries they set), uv says the index timed out, and
    the other list is not asked."""
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # (the kernel accepts; nothing ever reads or answers)
        env = {
            **uv_environment(),
            "UV_INDEX_URL": f"http://127.0.0.1:{silent.getsockname()[1]}/simple",
            "UV_HTTP_TIMEOUT": "1",
            "UV_HTTP_RETRIES": "50",
        }
        _spec(tmp_path, "'1.0', '2.0'")
        argv = ("doctor", "s.yaml", "--runner", "venv", "--format", "json")
        began = time.monotonic()
        done = cli(*argv, env=env, cwd=tmp_path)
        took = time.monotonic() - began
    assert done.code == 0, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "warn", check
    assert check["why"].count("did not answer") == 2, check  # the list's, the others' line
    assert f"{DEMO}==1.0 (in cell v=1.0): the index did not answer in 1 s (" in check["why"]
    assert check["why"].endswith("1 other package list not checked: the index did not answer")
    assert check["todo"].startswith("make the index reachable"), check
    assert took < 30, took


def test_find_links_is_for_the_venv_and_docker_runners(cli: Cli, tmp_path: Path) -> None:
    _spec(tmp_path, "'1.0'")
    done = cli("doctor", "s.yaml", "--find-links", str(tmp_path), cwd=tmp_path)
    assert done.code == 2, done.stdout + done.stderr
    assert "--find-links" in done.stderr
    assert "for --runner venv or docker with a SPEC only" in done.stderr
    assert "Traceback" not in done.stderr
    # Without a SPEC, no packages to resolve from it: refused too.
    done = cli("doctor", "--runner", "venv", "--find-links", str(tmp_path), cwd=tmp_path)
    assert done.code == 2, done.stdout + done.stderr
    assert "for --runner venv or docker with a SPEC only" in done.stderr


def test_the_torch_check_is_of_the_cells_venvs_not_the_interpreter(
    cli: Cli, tmp_path: Path
) -> None:
    """The torch check judged the interpreter the cells' venvs are built on (this one): its
    torch, and its numpy bridge (`pip install numpy` into it), where each cell's venv holds
    the spec's torch and numpy, or a torch without numpy."""
    (tmp_path / "index").mkdir()  # (nothing resolved from an index: venv-packages fails)
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    said = {}
    for name, packages in (("both", "'torch', 'numpy'"), ("bare", "'torch'")):
        (tmp_path / f"{name}.yaml").write_text(
            f"reprospec: 1\nname: {name}\nenvironment: {{packages: [{packages}]}}\n"
            "command: python -c 'import torch, numpy'\nexpect: {outcome: pass}\n"
        )
        argv = ("doctor", f"{name}.yaml", "--runner", "venv", "--format", "json")
        said[name] = _checks(cli(*argv, env=env, cwd=tmp_path).stdout)["torch"]
    assert said["both"]["status"] == "skipped", said
    assert said["both"]["why"].endswith(
        "not what the cells run: the venv runner installs the spec's torch for each cell"
    ), said
    assert said["bare"]["status"] == "warn", said
    assert "the cell's packages name no numpy" in said["bare"]["why"], said


def _another_python() -> str:
    """A Python of another minor version than this one, by the venv runner's own search."""
    from reprospec import venvs

    ours = sys.version_info[:2]
    for minor in (10, 12, 13, 11, 14):
        if (3, minor) == ours:
            continue
        try:
            venvs.find_interpreter(f"3.{minor}")
        except venvs.EnvBuildError:
            continue
        return f"3.{minor}"
    pytest.skip("no Python of another minor version here")


def test_each_cell_is_resolved_for_its_own_python(cli: Cli, tmp_path: Path) -> None:
    """`python: [3.10, 3.11]` with a package of `python_version < "3.11"`, which no index
    has: it was resolved for the interpreter checked first alone (whose needs forget the
    others), and passed where every 3.10 cell's build fails."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    other = _another_python()
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    (tmp_path / "s.yaml").write_text(
        f"reprospec: 1\nname: s\nmatrix: {{py: ['{ours}', '{other}']}}\n"
        "environment:\n  python: '${{ matrix.py }}'\n"
        f"  packages: ['{DEMO}==1.0', '{DEMO}==9; python_version == \"{other}\"']\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels))
    done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "fail", check
    assert f"cannot be installed (in cell py={other}): " in check["why"], check


def test_with_a_spec_the_venv_runner_still_needs_uv(cli: Cli, tmp_path: Path) -> None:
    """`doctor --runner venv` checked uv only without a SPEC: with one, a machine without uv
    passed (every cell an infra error at run time). Here uv's package finds no binary, and
    no PATH folder holds one."""
    fake = tmp_path / "site" / "uv"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "def find_uv_bin():\n    raise FileNotFoundError('no uv here')\n"
    )
    path = os.pathsep.join(
        folder
        for folder in os.environ["PATH"].split(os.pathsep)
        if folder and not (Path(folder) / "uv").exists()
    )
    _spec(tmp_path, "'1.0'")
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": path}
    done = cli("doctor", "s.yaml", "--runner", "venv", "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    checks = _checks(done.stdout)
    assert checks["uv"]["status"] == "fail", checks.get("uv")
    assert checks["venv-packages"]["status"] == "warn", checks["venv-packages"]
    assert "uv is not installed" in checks["venv-packages"]["why"]


def test_the_header_says_the_venv_runner_builds_on_the_interpreter(
    cli: Cli, tmp_path: Path
) -> None:
    """Where the spec names no python, the header named the path alone, read as what the
    cells run, where each runs in a venv of its own packages built on it."""
    _spec(tmp_path, "'1.0'")
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    done = cli("doctor", "s.yaml", "--runner", "venv", env=env, cwd=tmp_path)
    assert done.stdout.splitlines()[0].endswith(
        "for s.yaml (the venv runner builds each cell's venv on it)"
    ), done.stdout


# mypkg 1.0's metadata written as a backend's metadata hook writes it (`_mypkg`).
_METADATA_HOOK = """
def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = pathlib.Path(metadata_directory) / "mypkg-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\\nName: mypkg\\nVersion: 1.0\\n")
    return info.name
"""


def _mypkg(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A spec in `tmp_path` of `./mypkg` (a folder whose in-tree build backend touches the
    file `started` as it builds) and DEMO==1.0 (in the wheelhouse `wheels`), and the env of
    an empty index: (wheels, started, env).

    Its backend has a metadata hook: `uv pip compile` reads ./mypkg's metadata without
    building its wheel, so `started` says a build of the wheel alone (doctor's, the run's),
    whatever uv's shared cache holds (without the hook, compile ran build_wheel, unless the
    cache had ./mypkg's metadata from another test)."""
    import tarfile

    from tests.support.envs import make_slow_sdist

    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    started = tmp_path / "started"
    sdist = make_slow_sdist(tmp_path / "sdists", "mypkg", "1.0", started, 0)
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "src", filter="data")
    (tmp_path / "src" / "mypkg-1.0").rename(tmp_path / "mypkg")
    with (tmp_path / "mypkg" / "backend.py").open("a") as backend:
        backend.write(_METADATA_HOOK)
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    (tmp_path / "s.yaml").write_text(
        f"reprospec: 1\nname: s\nenvironment: {{packages: [./mypkg, '{DEMO}==1.0']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    return wheels, started, env


def test_a_second_doctor_does_not_build_a_path_entry_again(cli: Cli, tmp_path: Path) -> None:
    """uv builds a folder's wheel again at every install, so each `doctor` built `./mypkg`
    anew (minutes of a compiled package, each time). The first records it, keyed as the run
    keys an environment (by the folder's files), and the second builds nothing; an edit to
    the folder builds it again."""
    wheels, started, env = _mypkg(tmp_path)
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels), "--format")
    said = []
    for _ in range(2):
        started.unlink(missing_ok=True)
        done = cli(*argv, "json", env=env, cwd=tmp_path)
        assert done.code == 0, done.stdout + done.stderr
        said.append((_checks(done.stdout)["venv-packages"], started.exists()))
    (first, built_first), (second, built_second) = said
    assert first["status"] == "pass", first
    assert "(uv pip compile; ./mypkg built as the venv build builds it " in first["why"], first
    assert built_first
    assert second["status"] == "pass", second
    assert not built_second, second  # (its backend never started)
    records = tmp_path / ".reprospec" / "envs" / ".built"
    assert second["why"].endswith(
        f"(uv pip compile; nothing built; ./mypkg built by an earlier doctor as it is now "
        f"(recorded in {records}): not built again)"
    ), second
    # The folder edited: built again, as the run's build of it would be.
    (tmp_path / "mypkg" / "extra.py").write_text("X = 1\n")
    started.unlink(missing_ok=True)
    done = cli(*argv, "json", env=env, cwd=tmp_path)
    assert _checks(done.stdout)["venv-packages"]["status"] == "pass", done.stdout
    assert started.exists()
    # Two lists of ./mypkg in one doctor, edited again: the second list found the record the
    # first had just written, and the pass said ./mypkg "built by an earlier doctor" and
    # "nothing built", of the build this same doctor ran.
    make_wheel(wheels, DEMO, "2.0", "VERSION = '2.0'\n")
    (tmp_path / "s.yaml").write_text(
        f"reprospec: 1\nname: s\nmatrix: {{v: ['1.0', '2.0']}}\n"
        f"environment: {{packages: [./mypkg, '{DEMO}==${{{{ matrix.v }}}}']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    (tmp_path / "mypkg" / "extra.py").write_text("X = 2\n")
    started.unlink(missing_ok=True)
    done = cli(*argv, "json", env=env, cwd=tmp_path)
    both = _checks(done.stdout)["venv-packages"]
    assert both["status"] == "pass", both
    assert started.exists()
    assert "(uv pip compile; ./mypkg built as the venv build builds it " in both["why"], both
    assert "earlier doctor" not in both["why"], both


def test_an_index_that_fails_once_is_asked_once_more(cli: Cli, tmp_path: Path) -> None:
    """A flaky index: its first answer a 503, the next ones good. doctor said `could not
    check` of one failed request (uv retries nothing there, UV_HTTP_RETRIES=0); a request
    the index failed quickly is asked once more, and the packages resolve."""
    from tests.support.envs import flaky_index

    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    _spec(tmp_path, "'1.0'")
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels))
    with flaky_index(1) as (url, answered):
        env = {**uv_environment(), "UV_INDEX_URL": url}
        done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "pass", check
    assert answered[:2] == [503, 404], answered  # (asked again after the 503; no project)
    # An index that fails every request is still said as not checked, after its one retry.
    with flaky_index(1000) as (url, answered):
        env = {**uv_environment(), "UV_INDEX_URL": url}
        done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "warn", check
    assert "503 Service Unavailable" in check["why"], check
    assert len(answered) == 2, answered


def test_a_failure_names_the_cells_it_makes_infra_errors(cli: Cli, tmp_path: Path) -> None:
    """Which cells a failing venv-packages says a run makes infra errors: those of the
    lists that cannot be installed, by name, and that the others run; where every cell's
    list fails, every cell, none named. It said "the venv runner's build of each such
    cell's venv fails, so each is an infra error, not run", leaving the user to work out
    which, and whether the other cells ran."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION = '1.0'\n")
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels))
    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: s\nmatrix: {v: ['1.0', '9'], w: [a, b]}\n"
        f"environment: {{packages: ['{DEMO}==${{{{ matrix.v }}}}']}}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "fail", check
    assert check["why"].startswith(f"{DEMO}==9 cannot be installed (in cells v=9"), check
    assert check["why"].count("v=9") == 2, check
    assert "v=1.0" not in check["why"], check
    assert check["why"].endswith(
        ": on the venv runner, every such cell is an infra error (its venv cannot be built), "
        "not run; the other cells run"
    ), check
    # Every cell's list fails: every cell, none named.
    _spec(tmp_path, "'9'")
    done = cli(*argv, "--format", "json", env=env, cwd=tmp_path)
    check = _checks(done.stdout)["venv-packages"]
    assert check["status"] == "fail", check
    assert check["why"].startswith(f"{DEMO}==9 cannot be installed: "), check
    assert check["why"].endswith(
        ": on the venv runner, every cell is an infra error (its venv cannot be built), not run"
    ), check


def test_a_build_that_fails_on_its_own_network_error_is_built_once_and_said_so(
    cli: Cli, tmp_path: Path
) -> None:
    """A path entry whose own build prints `urlopen error [Errno 111] Connection refused`
    and fails: uv's output holds the backend's stderr, whose network words were read as the
    index failing quickly, so the build was run twice (a long build doubled), and then said
    `could not check` (the index did not answer). Then it was `cannot be installed`, exit 1,
    no word of the network: a failure read permanent, of a build that may pass once that
    network answers. Built once, it is not checked, its network failure quoted."""
    import textwrap

    tries = tmp_path / "tries"  # a line per start of the backend's build_wheel
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (package / "backend.py").write_text(
        textwrap.dedent(f"""\
            import pathlib, sys

            def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
                info = pathlib.Path(metadata_directory) / "mypkg-1.0.dist-info"
                info.mkdir()
                metadata = "Metadata-Version: 2.1\\nName: mypkg\\nVersion: 1.0\\n"
                (info / "METADATA").write_text(metadata)
                return info.name

            def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
                with open({str(tries)!r}, "a") as out:
                    out.write("built\\n")
                print("fetching the compiler: <urlopen error [Errno 111] Connection refused>",
                      file=sys.stderr)
                raise SystemExit("could not fetch the compiler")
            """)
    )
    (tmp_path / "index").mkdir()
    env = {**uv_environment(), "UV_INDEX_URL": (tmp_path / "index").as_uri()}
    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: s\nenvironment: {packages: [./mypkg]}\n"
        "command: 'true'\nexpect: {outcome: pass}\n"
    )
    done = cli("doctor", "s.yaml", "--runner", "venv", "--format", "json", env=env, cwd=tmp_path)
    check = _checks(done.stdout)["venv-packages"]
    assert tries.read_text() == "built\n", check  # (built once, not again)
    assert check["status"] == "warn", check
    assert check["why"].startswith(
        "could not check that the cells' packages resolve (uv pip compile): ./mypkg: could "
        "not build ./mypkg (its build from that path failed: "
    ), check
    assert check["why"].endswith(
        "; its build hit a network failure of its own (fetching the compiler: <urlopen error "
        "[Errno 111] Connection refused>)"
    ), check
    assert check["todo"].startswith("the build fetches from the network itself: "), check
    assert done.code == 0, done.stdout + done.stderr


def test_doctors_build_records_are_listed_and_pruned(cli: Cli, tmp_path: Path) -> None:
    """doctor's records of the wheels it built (ENVS/.built/KEY.json, one more at each edit
    of ./mypkg) were never listed by `envs list` nor removed by `envs prune`, --all
    included, after which doctor still skipped the builds they named."""
    from tests.functional.venvs.test_unreadable import envs_cli

    wheels, started, env = _mypkg(tmp_path)
    argv = ("doctor", "s.yaml", "--runner", "venv", "--find-links", str(wheels))
    assert cli(*argv, env=env, cwd=tmp_path).code == 0
    assert started.exists()
    root = tmp_path / ".reprospec" / "envs"
    (record,) = (root / ".built").iterdir()
    listed = envs_cli(root, tmp_path, "list")
    assert f"1 doctor build record in {root / '.built'}: " in listed.stdout, listed.stdout
    rows = json.loads(envs_cli(root, tmp_path, "list", "--format", "json").stdout)
    assert [(r["kind"], r["path"]) for r in rows] == [("doctor-build-record", str(record))]
    # Written now: the default rule (30 days) keeps it; --all removes it.
    assert "doctor build record" not in envs_cli(root, tmp_path, "prune").stdout
    assert record.exists()
    pruned = envs_cli(root, tmp_path, "prune", "--all")
    assert f"removed doctor build record {record}  " in pruned.stdout, pruned.stdout
    assert "removed 0 environments and 1 doctor build record, " in pruned.stderr, pruned.stderr
    assert not record.exists()
    # And the next doctor builds ./mypkg again.
    started.unlink()
    assert cli(*argv, env=env, cwd=tmp_path).code == 0
    assert started.exists()
