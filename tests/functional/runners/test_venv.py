"""The venv runner from the CLI: each cell of a matrix in its own env, checked in the child."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from reprospec import venvs
from tests.support.cli import Cli, CliResult
from tests.support.envs import (
    caller_venv,
    envs_root,
    make_broken_sdist,
    make_wheel,
    uv_environment,
)

DEMO = "reprospec-venvdemo"


def write_spec(folder: Path, name: str, package: str, versions: list[str], module: str) -> Path:
    spec = folder / f"{name}.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: {name}
        environment:
          packages: ["{package}==${{{{ matrix.version }}}}"]
        matrix:
          version: {json.dumps(versions)}
        command: python -c "import sys, {module} as m; print(m.__name__, m.VERSION_SEEN)"
        expect:
          outcome: pass
        """)
    )
    return spec


def cells_of(cli_result: CliResult) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in cli_result.results()["cells"]}


def stdout_of(cli_result: CliResult, cell: dict[str, Any]) -> str:
    logs: str = cell["attempts"][0]["logs"]
    return (cli_result.latest_run() / logs / "stdout.log").read_text()


def test_each_cell_gets_its_own_version_from_the_index(cli: Cli, tmp_path: Path) -> None:
    """sqlparse from the configured index, two versions in one matrix (envs kept between runs)."""
    spec = tmp_path / "two-versions.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: two-versions
        environment:
          packages: ["sqlparse==${{ matrix.sqlparse }}"]
        matrix:
          sqlparse: ["0.3.0", "0.3.1"]
        command: python -c "import sqlparse, sys; print(sqlparse.__version__, sys.prefix)"
        expect:
          outcome: pass
        """)
    )
    env = {venvs.ENVS_VARIABLE: str(envs_root() / "envs"), **uv_environment()}
    done = cli("run", str(spec), "--runner", "venv", env=env)
    assert done.code == 0, done.stderr
    cells = cells_of(done)
    for version in ("0.3.0", "0.3.1"):
        cell = cells[f"sqlparse={version}"]
        seen_version, prefix = stdout_of(done, cell).split()
        assert seen_version == version
        # Its own environment, in the shared folder, not the engine's interpreter.
        assert Path(prefix).parent == envs_root() / "envs"
    prefixes = {stdout_of(done, c).split()[1] for c in cells.values()}
    assert len(prefixes) == 2


def test_build_failures_are_infra_errors_and_a_tampered_env_is_built_again(
    cli: Cli, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    for version in ("1.0", "1.1"):
        make_wheel(wheels, DEMO, version, f"VERSION_SEEN = {version!r}\n")
    make_broken_sdist(wheels, DEMO, "1.2")
    spec = write_spec(tmp_path, "venv-demo", DEMO, ["1.0", "1.1", "1.2"], "reprospec_venvdemo")
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    args = ("run", str(spec), "--runner", "venv", "--find-links", str(wheels))

    first = cli(*args, env=env)
    assert first.code == 3, first.stderr
    cells = cells_of(first)
    assert stdout_of(first, cells["version=1.0"]).split()[1] == "1.0"
    assert stdout_of(first, cells["version=1.1"]).split()[1] == "1.1"
    broken = cells["version=1.2"]
    assert broken["verdict"] == "infra-error"
    assert f"cannot install {DEMO}==1.2" in broken["attempts"][0]["infra_error"]
    # Progress was shown while environments built.
    assert "building 1/3" in first.stderr
    assert f"+ {DEMO}==1.0" in first.stderr

    # Someone changes the cached environment of the 1.0 cell behind reprospec's back.
    (env_10,) = [e for e in venvs.list_envs(tmp_path / "envs") if e.packages == (f"{DEMO}==1.0",)]
    subprocess.run(
        [
            venvs.uv_binary(),
            "pip",
            "install",
            "--python",
            str(env_10.path / "bin" / "python"),
            "--find-links",
            str(wheels),
            f"{DEMO}==1.1",
        ],
        check=True,
        capture_output=True,
        env={**os.environ, **uv_environment()},
    )
    # Its reuse sees it, says why, and builds it again (docs/investigating.md): the cell
    # runs on the version it names, where every run of it was infra-error until the
    # folder was removed by hand.
    second = cli(*args, "-m", "version=1.0", "-m", "version=1.1", env=env)
    assert second.code == 0, second.stderr
    assert (
        f"no longer holds what it was built with ({DEMO} is 1.1, built with 1.0): "
        "building it again" in second.stderr
    )
    cells = cells_of(second)
    assert cells["version=1.0"]["verdict"] == "reproduced"
    assert stdout_of(second, cells["version=1.0"]).split()[1] == "1.0"
    assert cells["version=1.1"]["verdict"] == "reproduced"
    # Only the tampered one was built again.
    assert second.stderr.count("building 1/") == 1


def test_a_failed_build_is_kept_once_per_cell_and_named_by_its_reason(
    cli: Cli, tmp_path: Path
) -> None:
    """The console shows uv's lines up to its `error:` line and the reason one of the rest:
    the whole output is kept in the folder of the cell's first attempt, once (it was copied
    into all 3), and every attempt's infra-error reason names the file (in results.json,
    report.md and the console), where nothing said it was there."""
    wheels = tmp_path / "wheels"
    make_broken_sdist(wheels, DEMO, "1.2")
    spec = write_spec(tmp_path, "venv-broken", DEMO, ["1.2"], "reprospec_venvdemo")
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    done = cli(
        "run", str(spec), "--runner", "venv", "--find-links", str(wheels), "--repeat", "3",
        "-j", "2", env=env,
    )  # fmt: skip
    assert done.code == 3, done.stderr
    run = done.latest_run()
    (log,) = run.glob("cells/*/*/build.log")
    assert f"error: Failed to build `{DEMO}==1.2" in log.read_text()
    named = f"(uv's whole output: {log})"
    reasons = [a["infra_error"] for a in cells_of(done)["version=1.2"]["attempts"]]
    assert len(reasons) == 3
    assert all(reason.endswith(named) for reason in reasons), reasons
    # report.md writes paths as its paths are labelled (under the cwd: out/runs/...).
    report = (run / "report.md").read_text()
    assert f"{log.relative_to(run)})" in report.split("(uv's whole output: ", 1)[1], report
    assert "[stderr]" not in done.stderr  # the build's report, kept in the file


def test_the_environment_is_captured_in_a_cell_whose_env_was_built(
    cli: Cli, tmp_path: Path
) -> None:
    """The first cell's environment cannot be built: the run's environment (the report's
    Environment section) is the next cell's, which ran, where it was only the first
    cell's build error."""
    wheels = tmp_path / "wheels"
    make_broken_sdist(wheels, DEMO, "1.2")
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = write_spec(tmp_path, "venv-first-broken", DEMO, ["1.2", "1.0"], "reprospec_venvdemo")
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    done = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), env=env)
    assert done.code == 3, done.stderr
    cells = cells_of(done)
    assert cells["version=1.2"]["verdict"] == "infra-error"
    assert cells["version=1.0"]["verdict"] == "reproduced"
    environment = done.results()["environment"]
    assert "error" not in environment, environment.get("error")
    assert environment["captured_in"] == "version=1.0"
    assert environment["python"]["version"]


def test_instances_run_in_the_cells_venv(cli: Cli, tmp_path: Path) -> None:
    """`run.instances` through the venv runner: every instance in the cell's own env."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = tmp_path / "venv-instances.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: venv-instances
        environment:
          packages: ["{DEMO}==1.0"]
        command: >-
          python -c "import os, sys, reprospec_venvdemo as m;
          print(os.environ['REPROSPEC_INSTANCE'], m.VERSION_SEEN, sys.prefix)"
        run:
          instances: 2
        expect:
          outcome: pass
        """)
    )
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    done = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), env=env)
    assert done.code == 0, done.stderr
    (cell,) = cells_of(done).values()
    (attempt,) = cell["attempts"]
    said = [
        (done.latest_run() / i["logs"] / "stdout.log").read_text().split()
        for i in attempt["instances"]
    ]
    assert [s[:2] for s in said] == [["0", "1.0"], ["1", "1.0"]]
    assert said[0][2] == said[1][2]
    assert Path(said[0][2]).parent == tmp_path / "envs"


def test_a_folder_package_the_venv_installed_is_not_refused_as_unchecked(
    cli: Cli, tmp_path: Path
) -> None:
    """`packages: ["./mypkg"]`, a folder as spec-format.md allows: uv installed it, then the
    package check refused it ("names no distribution this interpreter can be checked for"),
    so every venv cell of a folder package was infra-error. The local runner, which installs
    nothing, still refuses it."""
    project = tmp_path / "mypkg"
    (project / "src" / "mypkg").mkdir(parents=True)
    (project / "src" / "mypkg" / "__init__.py").write_text("VALUE = 3\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "mypkg"\nversion = "0.3"\n'
    )
    spec = tmp_path / "folder.yaml"
    spec.write_text(
        "reprospec: 1\nname: folder-package\nenvironment: {packages: [./mypkg]}\n"
        'command: python -c "import mypkg, sys; sys.exit(mypkg.VALUE)"\n'
        "expect: {outcome: error, exit_code: 3}\n"
    )
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    done = cli("run", str(spec), "--runner", "venv", env=env)
    assert done.code == 0, done.stdout + done.stderr
    assert [c["verdict"] for c in cells_of(done).values()] == ["reproduced"]
    local = cli("run", str(spec))
    assert local.code == 3
    (cell,) = cells_of(local).values()
    assert "names no distribution" in cell["attempts"][0]["infra_error"]


def test_a_failed_build_of_a_cell_of_instances_is_named_by_its_reason(
    cli: Cli, tmp_path: Path
) -> None:
    """A plain cell's infra-error named uv's whole output (`build.log`); a `run.instances`
    cell whose venv failed to build gave the bare reason, and kept the output nowhere."""
    wheels = tmp_path / "wheels"
    make_broken_sdist(wheels, DEMO, "1.2")
    spec = write_spec(tmp_path, "venv-instances-broken", DEMO, ["1.2"], "reprospec_venvdemo")
    spec.write_text(spec.read_text() + "run:\n  instances: 2\n")
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    done = cli(
        "run", str(spec), "--runner", "venv", "--find-links", str(wheels), "--repeat", "2",
        env=env,
    )  # fmt: skip
    assert done.code == 3, done.stderr
    run = done.latest_run()
    (log,) = run.glob("cells/*/*/build.log")  # once for the cell, as a plain cell's
    assert f"error: Failed to build `{DEMO}==1.2" in log.read_text()
    reasons = [a["infra_error"] for a in cells_of(done)["version=1.2"]["attempts"]]
    assert len(reasons) == 2
    assert all(reason.endswith(f"(uv's whole output: {log})") for reason in reasons), reasons
    assert "(uv's whole output: " in (run / "report.md").read_text()


def _rerun_on_the_venv_runner(
    cli: Cli, tmp_path: Path, bundle: Path, wheels: Path, env: dict[str, str]
) -> tuple[Path, str]:
    """`reprospec run BUNDLE` in a folder of its own, as its recipient would: it must pass on
    the venv runner. The folder and the README the rerun unpacked."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rerun = cli("run", str(bundle), "--yes", "--find-links", str(wheels), "--out",
                str(elsewhere / "out"), "--format", "json", cwd=elsewhere, env=env)  # fmt: skip
    assert rerun.code == 0, rerun.stderr + rerun.stdout
    assert json.loads(rerun.stdout)["runner"] == "venv"
    return elsewhere, next((elsewhere / "out" / "bundles").glob("*/*/README.md")).read_text()


def test_a_bundle_of_a_venv_run_reruns_on_the_venv_runner(cli: Cli, tmp_path: Path) -> None:
    # bundle.json kept -m, --repeat, --timeout and observe, not the runner: the rerun ran
    # on the local runner and every cell was infra-error (the package not installed), and
    # the README's command said nothing of --runner venv.
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = write_spec(tmp_path, "venv-bundle", DEMO, ["1.0"], "reprospec_venvdemo")
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    out = tmp_path / "out"
    ran = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), "--out",
              str(out), env=env)  # fmt: skip
    assert ran.code == 0, ran.stderr
    bundle = tmp_path / "venv.tar.gz"
    assert cli("bundle", str(ran.latest_run()), "--out", str(out), "-o", str(bundle)).code == 0
    elsewhere, readme = _rerun_on_the_venv_runner(cli, tmp_path, bundle, wheels, env)
    assert "on the venv runner it ran on" in readme
    # --runner given here wins over the bundle's.
    local = cli("run", str(bundle), "--yes", "--runner", "local", "--out",
                str(elsewhere / "out"), "--format", "json", cwd=elsewhere, env=env)  # fmt: skip
    assert local.code == 3, local.stderr
    assert json.loads(local.stdout)["runner"] == "local"


def test_the_repro_and_the_bundle_name_what_a_range_resolved_to(cli: Cli, tmp_path: Path) -> None:
    """`demo<1.1` installed 1.0: the standalone repro's note and the bundle's README name
    `demo==1.0` and how to install it, where they said only the range, which today's index
    may resolve otherwise; the README's rerun names the archive as written."""
    wheels = tmp_path / "wheels"
    for version in ("1.0", "1.1"):
        make_wheel(wheels, DEMO, version, f"VERSION_SEEN = {version!r}\n")
    spec = tmp_path / "range.yaml"
    spec.write_text(
        "reprospec: 1\nname: range\n"
        f"environment:\n  packages: ['{DEMO}<1.1']\n"
        'command: python -c "import reprospec_venvdemo as m; print(m.VERSION_SEEN)"\n'
        "expect: {outcome: pass}\n"
    )
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    out = tmp_path / "out"
    ran = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), "--out",
              str(out), env=env)  # fmt: skip
    assert ran.code == 0, ran.stderr
    (cell,) = ran.results()["cells"]
    assert stdout_of(ran, cell).strip() == "1.0"
    pinned = f"{DEMO}==1.0"
    note = (
        f"the run gave the cell packages {DEMO}<1.1 (installed as {pinned}: "
        f"`pip install {pinned}`); a plain command line does not"
    )
    assert ran.results()["standalone"]["notes"] == [note]
    assert note in (ran.latest_run() / "report.md").read_text()
    bundle = tmp_path / "range.tgz"
    assert cli("bundle", str(ran.latest_run()), "--out", str(out), "-o", str(bundle)).code == 0
    with tarfile.open(bundle) as tar:
        (member,) = [m for m in tar.getmembers() if m.name.endswith("/README.md")]
        extracted = tar.extractfile(member)
        assert extracted is not None
        readme = extracted.read().decode()
    assert "    reprospec run range.tgz\n" in readme
    assert f"Not in that command line: {note}." in readme


def test_a_program_the_cells_venv_lacks_never_runs_from_the_callers_venv(
    cli: Cli, tmp_path: Path
) -> None:
    """With the caller's venv activated, `pytest` (not in the cell's packages) ran
    from it, and the cell was judged on the caller's package version. Now the venv's own
    scripts run, another environment's Python script is the cell's infra-error naming it
    (run directly, from a shell line, or started by the program), and system programs
    still run."""
    wheels = tmp_path / "wheels"
    tool = {"demo-tool": "reprospec_venvdemo:main"}
    for version in ("1.0", "1.1"):
        module = f"VERSION_SEEN = {version!r}\ndef main():\n    print('demo', VERSION_SEEN)\n"
        make_wheel(wheels, DEMO, version, module, scripts=tool)
    other = "reprospec-venvother"
    make_wheel(wheels, other, "1.0", "def main():\n    print('other ran')\n",
               scripts={"other-tool": "reprospec_venvother:main"})  # fmt: skip
    # The caller's environment, activated: demo 1.1 and a tool the cell does not list.
    caller = caller_venv(tmp_path / "caller-venv", wheels, f"{DEMO}==1.1", other)
    spec = tmp_path / "programs.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: programs
        environment:
          packages: ["{DEMO}==1.0"]
        matrix:
          how: [own, direct, line, started, system]
          include:
            - how: own
              run: demo-tool
            - how: direct
              run: other-tool --version
            - how: line
              run: cd . && other-tool
            - how: started
              run: python -c "import subprocess; subprocess.run(['other-tool'])"
            - how: system
              run: sh -c 'true' && cat /dev/null && echo "$VIRTUAL_ENV"
        command: ${{{{ matrix.run }}}}
        expect:
          outcome: pass
        """)
    )
    env = {
        venvs.ENVS_VARIABLE: str(tmp_path / "envs"),
        **uv_environment(),
        "PATH": f"{caller / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(caller),
    }
    done = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), env=env)
    assert done.code == 3, done.stderr
    cells = {c["matrix"]["how"]: c for c in done.results()["cells"]}
    # The cell's own console script, though the caller's is first on the outer PATH.
    assert stdout_of(done, cells["own"]).strip() == "demo 1.0"
    assert cells["own"]["verdict"] == "reproduced"
    for how in ("direct", "line", "started"):
        cell = cells[how]
        assert cell["verdict"] == "infra-error", (how, cell)
        reason = cell["attempts"][0]["infra_error"]
        assert reason.startswith(
            f"other-tool is not installed in the cell's environment "
            f"(found {caller / 'bin' / 'other-tool'}, another environment's"
        ), reason
        assert reason.endswith("add it to environment.packages"), reason
        assert "other ran" not in stdout_of(done, cell)
    # sh, true, cat: system programs run; the active venv is the cell's.
    system = cells["system"]
    assert system["verdict"] == "reproduced", system
    venv_seen = Path(stdout_of(done, system).strip())
    assert venv_seen.parent == tmp_path / "envs"
    # The local runner holds a cell that lists packages to the same rule, against the
    # interpreter it runs: here the cell's venv, which has demo 1.0 but not other-tool.
    (cell_env,) = venvs.list_envs(tmp_path / "envs")
    local = cli(
        "run", str(spec), "--python", str(cell_env.path / "bin" / "python"),
        "-m", "how=own", "-m", "how=direct", "-m", "how=system", env=env,
    )  # fmt: skip
    assert local.code == 3, local.stderr
    cells = {c["matrix"]["how"]: c for c in local.results()["cells"]}
    assert stdout_of(local, cells["own"]).strip() == "demo 1.0"
    assert cells["direct"]["verdict"] == "infra-error"
    assert "other-tool is not installed" in cells["direct"]["attempts"][0]["infra_error"]
    assert cells["system"]["verdict"] == "reproduced"


def test_the_apis_say_takes_the_build_lines_off_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """`reprospec.run` with `RunOptions.say`: the venv's build lines come to it, and none is
    printed, where `reprospec: env ...` went to stderr whatever the API caller wanted."""
    import reprospec

    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = write_spec(tmp_path, "venv-said", DEMO, ["1.0"], "reprospec_venvdemo")
    for name, value in {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}.items():
        monkeypatch.setenv(name, value)
    said: list[str] = []
    options = reprospec.RunOptions(
        runner="venv", find_links=wheels, out=tmp_path / "out", say=said.append
    )
    result = reprospec.run(spec, options)
    assert [cell.verdict for cell in result.cells] == ["reproduced"]
    assert any(line.startswith("env ") for line in said), said
    assert "reprospec: env" not in capfd.readouterr().err


def test_a_bundle_of_a_run_with_another_interpreters_packages_reruns_on_the_venv_runner(
    cli: Cli, tmp_path: Path
) -> None:
    """A captured spec pins the packages of the interpreter that ran it, and its run
    was made with `--python PATH`. Its bundle's `reprospec run FILE` ran on reprospec's
    own interpreter: infra-error (the package not installed), and `bundle --verify` said
    "not verified", exit 1, of a run that reproduced (its package here is in a wheelhouse
    only, which the verify is not given). A recipient has no such path: the bundle reruns
    on the venv runner, which installs what the run's interpreter had."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = write_spec(tmp_path, "python-bundle", DEMO, ["1.0"], "reprospec_venvdemo")
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    built = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), env=env)
    assert built.code == 0, built.stderr
    (python,) = (tmp_path / "envs").glob("*/bin/python")  # "the user's" interpreter
    out = tmp_path / "out"
    ran = cli("run", str(spec), "--python", str(python), "--out", str(out), env=env)
    assert ran.code == 0, ran.stderr
    bundle = tmp_path / "python.tar.gz"
    packed = cli("bundle", str(ran.latest_run()), "--out", str(out), "-o", str(bundle))
    assert packed.code == 0, packed.stdout + packed.stderr
    _, readme = _rerun_on_the_venv_runner(cli, tmp_path, bundle, wheels, env)
    assert "on the venv runner, which installs its cells' packages: the run ran them" in readme


def test_an_environment_whose_lock_cannot_be_made_is_reused_unheld(
    cli: Cli, tmp_path: Path
) -> None:
    """A folder of environments this user cannot write (another's, shared) was reused as it
    is; holding each one made its lock file there first, and the run stopped on
    the OSError. (As root no mode denies it: the locks' folder is a file here.)"""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = write_spec(tmp_path, "venv-unheld", DEMO, ["1.0"], "reprospec_venvdemo")
    envs = tmp_path / "envs"
    env = {venvs.ENVS_VARIABLE: str(envs), **uv_environment()}
    args = ("run", str(spec), "--runner", "venv", "--find-links", str(wheels))
    first = cli(*args, env=env)
    assert first.code == 0, first.stderr
    shutil.rmtree(envs / venvs.LOCKS)
    (envs / venvs.LOCKS).write_text("")
    again = cli(*args, env=env)
    assert again.code == 0, again.stderr
    assert "building" not in again.stderr
    assert "1/1 cell reproduced" in again.stdout


def test_a_prune_while_a_run_uses_its_environment_leaves_it(tmp_path: Path) -> None:
    """`envs prune --all` while an attempt ran in its cell's venv removed the venv
    under it: the attempt, importing its package after that, ended infra-error ("not
    installed where the attempt ran"). The run holds its environments until it ends; the
    prune leaves a held one and says so, and removes it once the run is over."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    go = tmp_path / "go"
    spec = tmp_path / "late.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: late-import
        environment:
          packages: ["{DEMO}==1.0"]
        command: >-
          python -c "import os, time;
          open('{tmp_path / "started"}', 'w').close();
          [time.sleep(0.05) for _ in range(400) if not os.path.exists('{go}')];
          import reprospec_venvdemo as m; print(m.VERSION_SEEN)"
        expect:
          outcome: pass
        """)
    )
    envs = tmp_path / "envs"
    # No engine for the prunes: they would remove every machine's reprospec-env images.
    env = {
        **os.environ,
        venvs.ENVS_VARIABLE: str(envs),
        **uv_environment(),
        "NO_COLOR": "1",
        "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}",
    }
    base = [sys.executable, "-m", "reprospec"]
    run = subprocess.Popen(
        [*base, "run", str(spec), "--runner", "venv", "--find-links", str(wheels),
         "--out", str(tmp_path / "out")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "started").exists() and run.poll() is None:
            assert time.monotonic() < deadline, "the attempt never started"
            time.sleep(0.05)
        prune = subprocess.run(
            [*base, "envs", "prune", "--all", "--out", str(tmp_path / "out")],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        go.touch()
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert prune.returncode == 0, prune.stderr
    assert "removed 0 environments" in prune.stderr
    assert "in use by a run now" in prune.stderr
    assert run.returncode == 0, err
    assert "1/1 cell reproduced" in out
    # The run over, nothing holds it: the next prune removes it.
    again = subprocess.run(
        [*base, "envs", "prune", "--all", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "removed 1 environment" in again.stderr, again.stderr
    assert venvs.list_envs(envs) == []


def test_a_module_a_declared_version_lacks_under_another_name(cli: Cli, tmp_path: Path) -> None:
    """A top-level module 2.0 of a declared package added under a name that is not the
    package's (`tlz` of toolz): `python -m` of it in 1.0 said `install it there, or add it
    to environment.packages` of a package that is there. No metadata of 1.0 names the
    module, so `-m` stays unjudged, saying so and how to judge the version; the import of
    it is the program's error."""
    wheels = tmp_path / "wheels"
    for version, others in (("1.0", {}), ("2.0", {"reprospec_newtop": "print('new ran')\n"})):
        make_wheel(wheels, DEMO, version, "", others=others)
    spec = tmp_path / "newtop.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: newtop
        environment:
          packages: ["{DEMO}==${{{{ matrix.version }}}}"]
        matrix:
          version: ["1.0", "2.0"]
          how: ["-m reprospec_newtop", "-c 'import reprospec_newtop'"]
        command: python ${{{{ matrix.how }}}}
        expect:
          outcome: pass
        """)
    )
    env = {venvs.ENVS_VARIABLE: str(tmp_path / "envs"), **uv_environment()}
    done = cli("run", str(spec), "--runner", "venv", "--find-links", str(wheels), env=env)
    cells = {(c["matrix"]["version"], c["matrix"]["how"][:2]): c for c in done.results()["cells"]}
    for how in ("-m", "-c"):
        assert cells[("2.0", how)]["verdict"] == "reproduced", cells[("2.0", how)]
    unjudged = cells[("1.0", "-m")]
    assert unjudged["verdict"] == "infra-error"
    reason = unjudged["attempts"][0]["infra_error"]
    assert reason.endswith(
        f"-m reprospec_newtop: no module named reprospec_newtop in that interpreter (exit 1); "
        "install it there, or add the package that provides it to environment.packages (none "
        f"of those it names, {DEMO}, provides it there: where a version of theirs lacks "
        "reprospec_newtop, `python -c 'import reprospec_newtop'` judges that version)"
    ), reason
    imported = cells[("1.0", "-c")]["attempts"][0]["outcome"]
    assert (imported["kind"], imported["exception"]) == ("error", "ModuleNotFoundError")
