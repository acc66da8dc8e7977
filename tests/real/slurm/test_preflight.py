"""`reprospec slurm` and the spec's packages: checked on the login node, venvs built there once.

A spec whose packages the shards' runner cannot give is refused before anything is
submitted (exit 2 on the local runner, 3 where the venv runner cannot build them);
with `--runner venv` every environment is built on the login node into SHARED/envs
and each shard, on the real cluster, runs its cells in them.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from reprospec import venvs
from tests.support.cli import Cli
from tests.support.envs import make_broken_sdist, make_wheel, uv_environment
from tests.support.slurm import needs_cluster, only_run, require_cluster, wait_settled

pytestmark = pytest.mark.slurm

DEMO = "reprospec-slurmdemo"


def _spec(folder: Path, packages: str, versions: list[str]) -> Path:
    """Each cell prints its demo module's VERSION_SEEN and its interpreter's prefix."""
    spec = folder / "pkgs.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        reprospec: 1
        name: slurm-pkgs
        environment:
          packages: {packages}
        matrix:
          version: {json.dumps(versions)}
        command: >-
          python -c "import sys, reprospec_slurmdemo as m; print(m.VERSION_SEEN, sys.prefix)"
        expect:
          outcome: pass
        """),
        encoding="utf-8",
    )
    return spec


def _no_shared_envs() -> dict[str, str]:
    """uv's cache beside the test envs; no $REPROSPEC_ENVS, so SHARED/envs is the folder."""
    return {**uv_environment(), venvs.ENVS_VARIABLE: ""}


def test_local_runner_refuses_a_spec_whose_packages_its_interpreter_lacks(
    cli: Cli, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    spec = _spec(tmp_path, f'["{DEMO}==${{{{ matrix.version }}}}"]', ["1.0", "1.1"])
    for dry in ((), ("--dry-run",)):
        refused = cli("slurm", str(spec), "--shards", "2", "--out", str(shared), *dry)
        assert refused.code == 2, refused.stderr
        assert "Traceback" not in refused.stderr
        err = refused.stderr
        assert "not submitted: on the local runner every cell of slurm-pkgs" in err
        assert f"{DEMO} is not installed (the cell needs {DEMO}==1.0)" in err
        assert "cell version=1.1" in err
        # The way out, with the folder it would use.
        assert f"--runner venv builds each cell's environment once, here, into {shared}" in err
        assert not shared.exists(), "nothing written, nothing submitted"


def test_an_interpreter_that_is_not_there_is_refused_before_submitting(
    cli: Cli, tmp_path: Path
) -> None:
    # `run --python PATH` refuses a missing one, exit 3; slurm submitted it, and every task
    # exited 3 with `interpreter not found` in its log.
    shared = tmp_path / "shared"
    spec = _spec(tmp_path, "[]", ["1.0"])
    missing = tmp_path / "no-such-python"
    for runner in ("local", "venv"):
        refused = cli(
            "slurm", str(spec), "--shards", "1", "--runner", runner, "--python", str(missing),
            "--out", str(shared),
        )  # fmt: skip
        assert refused.code == 3, refused.stdout + refused.stderr
        assert f"not submitted: interpreter not found: {missing} (--python)" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not shared.exists(), "nothing written, nothing submitted"


def test_local_runner_warns_of_the_cells_it_cannot_run_and_plans_the_others(
    cli: Cli, tmp_path: Path
) -> None:
    # `packaging` is one of reprospec's own dependencies: the cell that asks for it runs.
    spec = _spec(tmp_path, '["${{ matrix.version }}"]', ["packaging", f"{DEMO}==1.0"])
    planned = cli("slurm", str(spec), "--shards", "2", "--dry-run", "--out", str(tmp_path / "s"))
    assert planned.code == 0, planned.stderr
    assert (
        "warning: on the local runner these cells will be infra-error, not run: "
        f"cell version={DEMO}==1.0: environment does not satisfy"
    ) in planned.stderr
    assert "version=packaging" not in planned.stderr
    assert "#SBATCH --array=1-2" in planned.stdout


def test_venv_runner_refuses_when_no_cell_environment_can_be_built(
    cli: Cli, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    make_broken_sdist(wheels, DEMO, "1.2")
    shared = tmp_path / "shared"
    spec = _spec(tmp_path, f'["{DEMO}==${{{{ matrix.version }}}}"]', ["1.2"])
    refused = cli(
        "slurm", str(spec), "--shards", "1", "--runner", "venv", "--find-links", str(wheels),
        "--out", str(shared), env=_no_shared_envs(),
    )  # fmt: skip
    assert refused.code == 3, refused.stderr
    assert "not submitted: on the venv runner every cell of slurm-pkgs" in refused.stderr
    assert f"cannot install {DEMO}==1.2" in refused.stderr
    assert not (shared / "slurm").exists(), "no run folder, no job"
    # uv's whole output, shown only to its `error:` line, is kept beside the environments
    # and named (it was kept nowhere: no attempt folder receives it here).
    (log,) = (shared / "envs" / venvs.FAILED).glob("*.build.log")
    assert f"(uv's whole output: {log})" in refused.stderr
    assert f"error: Failed to build `{DEMO}==1.2" in log.read_text()
    assert "[stderr]" not in refused.stderr


def test_venv_dry_run_builds_nothing_and_shows_the_shared_envs(cli: Cli, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    spec = _spec(tmp_path, f'["{DEMO}==${{{{ matrix.version }}}}"]', ["1.0"])
    planned = cli(
        "slurm", str(spec), "--shards", "1", "--runner", "venv", "--dry-run",
        "--out", str(shared), env=_no_shared_envs(),
    )  # fmt: skip
    assert planned.code == 0, planned.stderr
    assert f"export REPROSPEC_ENVS={shared.resolve() / 'envs'}" in planned.stdout
    assert "--runner venv" in planned.stdout
    assert not shared.exists()


@needs_cluster
@pytest.mark.slow
def test_venv_runner_builds_each_environment_once_here_and_every_shard_runs_in_it(
    cli: Cli, tmp_path: Path
) -> None:
    require_cluster()
    wheels = tmp_path / "wheels"
    for version in ("1.0", "1.1"):
        make_wheel(wheels, DEMO, version, f"VERSION_SEEN = {version!r}\n")
    shared = tmp_path / "shared"
    spec = _spec(tmp_path, f'["{DEMO}==${{{{ matrix.version }}}}"]', ["1.0", "1.1"])
    submitted = cli(
        "slurm", str(spec), "--shards", "2", "--runner", "venv", "--find-links", str(wheels),
        "--out", str(shared), env=_no_shared_envs(),
    )  # fmt: skip
    assert submitted.code == 0, submitted.stderr
    # Built on the login node, before the jobs: each shard finds them there.
    envs = {e.packages: e.path for e in venvs.list_envs(shared / "envs")}
    assert set(envs) == {(f"{DEMO}==1.0",), (f"{DEMO}==1.1",)}
    assert "building 1/2" in submitted.stderr
    run_dir = only_run(shared)
    assert (
        f"export REPROSPEC_ENVS={shared.resolve() / 'envs'}"
        in (run_dir / "array.sbatch").read_text()
    )

    status = wait_settled(run_dir)
    assert [s.state for s in status.shards] == ["done", "done"], status
    assert status.merge.state == "done", status
    assert status.merge.report is not None
    merged = json.loads((status.merge.report.parent / "results.json").read_text())
    assert merged["runner"] == "venv"
    for cell in merged["cells"]:
        assert cell["verdict"] == "reproduced", cell
        logs = status.merge.report.parent / cell["attempts"][0]["logs"] / "stdout.log"
        seen, prefix = logs.read_text().split()
        version = cell["matrix"]["version"]
        assert seen == version
        # Its cell's environment in SHARED/envs, the one built on the login node.
        assert Path(prefix) == envs[(f"{DEMO}=={version}",)]
    # No shard built an environment of its own.
    assert not list((run_dir / "shards").glob("*/envs"))
    assert len(venvs.list_envs(shared / "envs")) == 2
