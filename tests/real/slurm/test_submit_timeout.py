"""An sbatch that times out after slurmctld took the job: the job is found and recorded, not
left queued to run into a removed run folder.

sbatch times out for real here: slurmctld is stopped (SIGSTOP) for longer than the cluster's
MessageTimeout (10 s) as the array's sbatch starts, so sbatch says "Socket timed out on
send/recv operation", exit 1, and slurmctld, continued, queues the job all the same.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import Cli
from tests.support.fakeslurm import fake_tool
from tests.support.slurm import (
    IN_CI,
    SLURM_STATE,
    needs_cluster,
    only_run,
    require_cluster,
    wait_settled,
)

pytestmark = pytest.mark.slurm

SPEC = "reprospec: 1\nname: slurm-timeout\ncommand: 'true'\nexpect: {outcome: pass}\n"
# A fake sbatch's body: it says what a real one says when slurmctld did not answer in time.
_TIMED_OUT = (
    'echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv '
    'operation" >&2; exit 1'
)
# Longer than MessageTimeout (slurm-setup.sh's 10 s): sbatch gives up before slurmctld
# continues, and reads its job id nowhere.
STOPPED_S = 15
# slurmctld's pid file, where scripts/slurm-setup.sh keeps it.
PID_FILE = SLURM_STATE / "run" / "slurmctld.pid"


@pytest.fixture
def slurmctld_pid() -> int:
    """slurmctld's pid, where this test may stop it; else skipped (a failure in CI). Asked
    for, it holds the cluster alone (conftest.py): no other Slurm test runs as it stops."""
    try:
        pid = int(PID_FILE.read_text().strip())
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        if comm != "slurmctld":
            raise OSError(f"pid {pid} is {comm}")
        os.kill(pid, 0)
    except (OSError, ValueError) as exc:
        reason = f"slurmctld cannot be stopped here ({PID_FILE}: {exc})"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    return pid


def _tools(tmp_path: Path, slow_sbatch: str, script: str = "array") -> dict[str, str]:
    """PATH with an sbatch that runs `slow_sbatch` for `script`'s sbatch (the array's or
    the merge's; `@SBATCH@` the real sbatch) and is the real sbatch for the other's."""
    real = shutil.which("sbatch")
    assert real is not None
    tools = tmp_path / "bin"
    tools.mkdir()
    case = f'case "$*" in\n  *{script}.sbatch*) {slow_sbatch} ;;\n  *) exec {real} "$@" ;;\nesac'
    fake_tool(tools, "sbatch", case.replace("@SBATCH@", real))
    return {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}


@needs_cluster
@pytest.mark.parametrize("script", ["array", "merge"])
def test_a_job_whose_sbatch_timed_out_but_was_queued_is_recorded_and_runs(
    cli: Cli, tmp_path: Path, script: str, slurmctld_pid: int
) -> None:
    # "sbatch refused the job: ... Socket timed out on send/recv operation", exit 3, and
    # the run folder removed: slurmctld had queued the array, whose tasks then ran into
    # no folder (their output lost), with no merge after them and no record of them.
    require_cluster()
    pid = slurmctld_pid
    # The wrapper ends once slurmctld is continued (sbatch's own end, its status kept), as
    # it did when its SIGCONT-er held the pipe: one that had exited is ended a second after
    # sbatch (capped.run's linger_s), the SIGCONT-er with it, and slurmctld stayed stopped.
    env = _tools(
        tmp_path,
        f'kill -STOP {pid}; (sleep {STOPPED_S}; kill -CONT {pid}) & @SBATCH@ "$@"; '
        "said=$?; wait; exit $said",
        script,
    )
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    shared = tmp_path / "shared"
    try:
        done = cli("slurm", str(spec), "--shards", "1", "--out", str(shared), env=env)
    finally:
        os.kill(pid, signal.SIGCONT)  # whatever happened: the cluster is others' too
    assert done.code == 0, done.stderr
    run = only_run(shared)
    (sub,) = json.loads((run / "slurm.json").read_text())["submissions"]
    warning = (
        "warning: sbatch timed out: sbatch: error: Batch job submission failed: Socket timed "
        f"out on send/recv operation; slurmctld queued it all the same: job "
        f"{sub[f'{script}_job']} ({run / f'{script}.sbatch'})"
    )
    assert warning in done.stderr.splitlines(), done.stderr
    said = f"array job {sub['array_job']} (1 shard, 1 attempt), merge job {sub['merge_job']} after"
    assert said in done.stdout
    # The found job is the run's array: its shard runs into the folder, the merge after it.
    status = wait_settled(run)
    assert [s.state for s in status.shards] == ["done"], status
    assert status.merge.state == "done", status


@needs_cluster
def test_a_timed_out_sbatch_whose_job_squeue_does_not_list_keeps_the_run_folder(
    cli: Cli, tmp_path: Path
) -> None:
    # sbatch's timeout does not say whether slurmctld took the job: a folder removed then
    # is one a job queued later runs into. Kept, and said so (exit 3: nothing recorded).
    require_cluster()
    env = _tools(tmp_path, _TIMED_OUT)
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    shared = tmp_path / "shared"
    done = cli("slurm", str(spec), "--shards", "1", "--out", str(shared), env=env)
    assert done.code == 3, done.stderr
    run = only_run(shared)
    (said,) = done.stderr.splitlines()
    assert re.fullmatch(
        re.escape(
            "reprospec: sbatch timed out: sbatch: error: Batch job submission failed: Socket "
            f"timed out on send/recv operation; squeue lists no job of {run / 'array.sbatch'} "
            "with this sbatch's reprospec:"
        )
        + "[0-9a-f]{32}"
        + re.escape(
            # The test cluster keeps no accounting (scripts/slurm-setup.sh): sacct says so.
            ", and sacct cannot say (Slurm accounting storage is disabled): it may still be "
            f"queued (see squeue --me --format=%i,%V,%k,%o); the run folder is kept: {run}"
        ),
        said,
    ), said
    assert (run / "array.sbatch").is_file()
    assert json.loads((run / "slurm.json").read_text())["submissions"] == []
    # The job queued after all (here by hand, held: it stays queued): a resume submitted
    # the shards again, two jobs writing one shard's folder. It waits for it instead.
    real = shutil.which("sbatch")
    assert real is not None
    held = subprocess.run(
        [real, "--parsable", "--hold", str(run / "array.sbatch")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    try:
        resumed = cli("slurm", "resume", str(run), env=env)
    finally:
        subprocess.run(["scancel", held], check=False, timeout=60)
    assert resumed.code == 2, resumed.stderr
    assert resumed.stderr.splitlines() == [
        f"reprospec: job {held} of this run's scripts is in Slurm, not recorded in slurm.json "
        "(an sbatch that timed out?): wait for it (or scancel), then resume"
    ]
    assert json.loads((run / "slurm.json").read_text())["submissions"] == []


@needs_cluster
def test_a_resume_whose_sbatch_timed_out_does_not_adopt_an_older_finished_job_of_its_script(
    cli: Cli, tmp_path: Path
) -> None:
    # The lookup took the newest job of array.sbatch that slurm.json did not record, in any
    # state squeue still lists: here shard 2's job, run by hand and finished before the
    # resume, recorded as the resume's array of shards 1 and 2 (exit 0), whose shard 1
    # then never ran and whose merge failed. A job is this sbatch's only if it was
    # marked by this sbatch (its --comment), with the tasks it asked for.
    require_cluster()
    env = _tools(tmp_path, _TIMED_OUT)
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.replace("expect:", "run: {repeat: 2}\nexpect:"))
    shared = tmp_path / "shared"
    done = cli("slurm", str(spec), "--shards", "2", "--out", str(shared), env=env)
    assert done.code == 3, done.stderr
    run = only_run(shared)
    real = shutil.which("sbatch")
    assert real is not None
    by_hand = subprocess.run(
        [real, "--parsable", "--wait", "--array=2", str(run / "array.sbatch")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert by_hand.returncode == 0, by_hand.stderr
    resumed = cli("slurm", "resume", str(run), env=env)
    assert resumed.code == 3, resumed.stderr
    (said,) = resumed.stderr.splitlines()
    assert re.fullmatch(
        re.escape(
            "reprospec: sbatch timed out: sbatch: error: Batch job submission failed: Socket "
            f"timed out on send/recv operation; squeue lists no job of {run / 'array.sbatch'} "
            "with this sbatch's reprospec:"
        )
        + "[0-9a-f]{32}"
        + re.escape(
            ", and sacct cannot say (Slurm accounting storage is disabled): it may still be "
            "queued (see squeue --me --format=%i,%V,%k,%o)"
        ),
        said,
    ), said
    assert json.loads((run / "slurm.json").read_text())["submissions"] == []
