"""The array script and slurm.json of a venv-runner run: the shared environments folder."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from reprospec.slurm import ShardArgs, SlurmOptions, array_script, new_run
from reprospec.slurm.plan import run_from_dict, run_to_dict
from tests.support.cli import SPECS


def test_a_venv_run_exports_its_shared_envs_and_slurm_json_keeps_them(tmp_path: Path) -> None:
    envs = tmp_path / "shared dir" / "envs"
    run = new_run(
        SPECS / "segfault-command.yaml",
        "x",
        tmp_path,
        SlurmOptions(shards=2),
        ShardArgs(runner="venv", envs=str(envs)),
        (1, 1),
    )
    script = array_script(run)
    # Before the shard's `reprospec run`, so its venv runner looks there, not in shards/K/.
    export = f"export REPROSPEC_ENVS={shlex.quote(str(envs))}"
    assert export in script
    assert script.index(export) < script.index(" run ")
    again = run_from_dict(json.loads(json.dumps(run_to_dict(run))), run.run_dir)
    assert again.shard_args.envs == str(envs)


def test_a_local_run_and_an_older_slurm_json_have_no_envs(tmp_path: Path) -> None:
    run = new_run(
        SPECS / "segfault-command.yaml", "x", tmp_path, SlurmOptions(shards=1), ShardArgs(), (1,)
    )
    assert "REPROSPEC_ENVS" not in array_script(run)
    data = run_to_dict(run)
    args = data["shard_args"]
    assert isinstance(args, dict)
    del args["envs"]  # as slurm.json was written before the venv runner
    assert run_from_dict(data, run.run_dir).shard_args.envs is None
