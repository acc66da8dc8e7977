"""A stop (SIGTERM, Ctrl-C, SIGHUP) while `reprospec slurm` submits: it waits until
slurm.json records what was submitted, then exits 130. This machine has no Slurm: sbatch
is a fake on PATH that sends the verb its stop as it submits the merge job, as a CI's
cancel or a closed terminal would at that moment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import Cli
from tests.support.fakeslurm import fake_tool

# The array is job 101, the merge 102. The merge's sbatch stops its caller (reprospec:
# the script's parent), then lingers so that the stop lands while it runs, and answers.
SBATCH = """\
echo "$*" >> "$(dirname "$0")/submitted"
case "$*" in
  *merge.sbatch*) kill -{signal} $PPID; sleep 0.5; echo 102 ;;
  *) echo 101 ;;
esac"""


@pytest.mark.parametrize("signal", ["TERM", "HUP"])
def test_a_stop_while_submitting_waits_for_the_jobs_to_be_recorded(
    cli: Cli, tmp_path: Path, signal: str
) -> None:
    # The stop was raised after the array's sbatch, before the merge was submitted or
    # slurm.json saved: the array was queued, `slurm status` said it was never submitted
    # and `slurm resume` submitted it again.
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "sbatch", SBATCH.format(signal=signal))
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    done = cli("slurm", str(spec), "--shards", "1", "--out", str(shared), env=env)
    # Both jobs were submitted (the merge's sbatch ended, its job id read) ...
    assert len((tools / "submitted").read_text().splitlines()) == 2, done.stderr
    (run,) = (shared / "slurm").iterdir()
    record = json.loads((run / "slurm.json").read_text())
    # ... and recorded: status and resume know them.
    jobs = [(sub["array_job"], sub["merge_job"]) for sub in record["submissions"]]
    assert jobs == [("101", "102")], record
    assert done.stdout.startswith("submitted s: array job 101 (1 shard, 1 attempt), merge job 102")
    assert (done.code, done.stderr.splitlines()[-1:]) == (130, ["reprospec: interrupted"]), (
        done.stderr
    )
