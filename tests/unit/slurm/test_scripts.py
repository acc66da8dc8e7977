"""The array script and slurm.json of a venv-runner run: the shared environments folder."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from reprospec.slurm import ShardArgs, SlurmOptions, array_script, merge_script, new_run
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


def test_a_path_with_a_space_or_a_quote_is_one_word_of_its_sbatch_directive(
    tmp_path: Path,
) -> None:
    """`--out "/shared/sl 9"` (or a spec's folder with a space, the `--chdir`) ended
    the `#SBATCH --output=` word at the space: sbatch refused the script (`Invalid directive
    found in batch script: 9/slurm/...`), exit 3, nothing submitted. sbatch groups a quoted
    value and reads `\\` as an escape (src/sbatch/opt.c, `_get_argument`)."""
    shared = tmp_path / "sl 9" / 'it\'s "q"'
    run = new_run(
        SPECS / "segfault-command.yaml",
        "x",
        shared,
        SlurmOptions(shards=1, partition="debug"),
        ShardArgs(),
        (1,),
        chdir=tmp_path / "we ird",
    )
    quoted = str(run.run_dir).replace('"', '\\"')
    array = array_script(run).splitlines()
    assert f'#SBATCH --output="{quoted}/logs/shard-%a-%A.out"' in array
    assert f'#SBATCH --chdir="{tmp_path}/we ird"' in array
    assert "#SBATCH --partition=debug" in array  # a plain word stays as it was
    assert f'#SBATCH --output="{quoted}/logs/merge-%j.out"' in merge_script(run).splitlines()


def test_a_path_with_a_hash_is_quoted_where_sbatch_read_the_rest_as_a_comment(
    tmp_path: Path,
) -> None:
    """sbatch ends a `#SBATCH` line at an unquoted `#` (`_get_argument`): `--chdir=/p/a#1`
    ran the task in `/p/a`, and `--output=/p/a#1/...` wrote its log to the file `/p/a`."""
    run = new_run(
        SPECS / "segfault-command.yaml",
        "x",
        tmp_path / "run#1",
        SlurmOptions(shards=1),
        ShardArgs(),
        (1,),
        chdir=tmp_path / "work#1",
    )
    array = array_script(run).splitlines()
    assert f'#SBATCH --output="{run.run_dir}/logs/shard-%a-%A.out"' in array
    assert f'#SBATCH --chdir="{tmp_path}/work#1"' in array
    assert f'#SBATCH --output="{run.run_dir}/logs/merge-%j.out"' in merge_script(run).splitlines()


def test_slurm_json_keeps_the_specs_digest_and_the_task_checks_it_before_it_runs(
    tmp_path: Path,
) -> None:
    """A task runs when the queue lets it; the spec, edited since `reprospec slurm`
    planned it, ran as edited in every task that started after (two specs in one run)."""
    import hashlib

    spec = tmp_path / "it's.yaml"
    spec.write_text((SPECS / "segfault-command.yaml").read_text())
    run = new_run(spec, "x", tmp_path, SlurmOptions(shards=1), ShardArgs(), (1,))
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()
    assert run.spec_sha256 == digest
    script = array_script(run)
    check = f'"$(sha256sum < {shlex.quote(str(spec))} | cut -d " " -f 1)" != {digest}'
    assert check in script
    # A spec the node cannot read (another filesystem) is `reprospec run`'s to say, not
    # "changed".
    assert f"if [ -r {shlex.quote(str(spec))} ] && " in script
    # In the fresh branch, before the run: a resumed shard runs the spec its run stored.
    assert script.index("--resume") < script.index(check) < script.index(" --shard ")
    assert "changed since reprospec slurm planned this run" in script
    again = run_from_dict(json.loads(json.dumps(run_to_dict(run))), run.run_dir)
    assert again.spec_sha256 == digest
    data = run_to_dict(run)
    del data["spec_sha256"]  # as slurm.json was written before it was kept: no check
    older = run_from_dict(data, run.run_dir)
    assert older.spec_sha256 is None
    assert "sha256sum" not in array_script(older)
