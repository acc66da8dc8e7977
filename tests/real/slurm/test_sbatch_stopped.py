"""A second Ctrl-C while a hung sbatch is waited for: it ends sbatch (its whole process
group) at once, where it waited out sbatch's own answer (up to 120 s) and only cut the
squeue lookup after it. The run ends unconfirmed (exit 3), its folder kept, the message
saying what may be queued.

The sbatch is the real one behind a wrapper on PATH that first sleeps (a slurmctld slow to
take the submission reads the same from here); the stops are real SIGINTs to a real
`reprospec slurm` process.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT
from tests.support.fakeslurm import fake_tool
from tests.support.slurm import needs_cluster, only_run, require_cluster

pytestmark = pytest.mark.slurm

SPEC = "reprospec: 1\nname: slurm-stopped\ncommand: 'true'\nexpect: {outcome: pass}\n"
# The wrapper's sleep: longer than the test waits for the verb to end after its stops.
SLOW_S = 60


def _alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie its new parent has yet to reap counts as ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in "ZX"


@needs_cluster
def test_a_second_ctrl_c_ends_a_hung_sbatch_at_once_and_keeps_the_run_folder(
    tmp_path: Path,
) -> None:
    require_cluster()
    real = shutil.which("sbatch")
    assert real is not None
    tools = tmp_path / "bin"
    tools.mkdir()
    # Its sleep's pid written where the test looks: the group sbatch leads must end with it.
    fake_tool(
        tools,
        "sbatch",
        f'sleep {SLOW_S} & echo $! > "{tools}/sleeper"; wait $!; exec {real} "$@"',
    )
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    shared = tmp_path / "shared"
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    argv = [sys.executable, "-m", "reprospec", "slurm", str(spec), "--shards", "1"]
    proc = subprocess.Popen(
        [*argv, "--out", str(shared)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    sleeper = tools / "sleeper"
    try:
        deadline = time.monotonic() + 120
        while not sleeper.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sleeper.exists(), "sbatch was never started"
        # Past sbatch's first moment (2 s), where a first stop is told what it waits for.
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        _, stderr = proc.communicate(timeout=SLOW_S / 2)
        took = time.monotonic() - stopped
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if sleeper.exists():  # sbatch's own group, where it was not ended
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(sleeper.read_text()), signal.SIGKILL)
    assert took < 10, stderr
    run = only_run(shared)
    lines = stderr.splitlines()
    assert re.fullmatch(
        r"reprospec: stopping once sbatch answers, or squeue says whether it queued the job "
        r"\(up to \d+ s\), so that slurm\.json records it: press Ctrl-C again to stop "
        r"waiting \(the run folder is kept\)",
        lines[0],
    ), stderr
    assert lines[1] == (
        "reprospec: stopping: sbatch is ended before it answers, and squeue is not asked "
        "whether it queued the job"
    ), stderr
    assert re.fullmatch(
        r"reprospec: sbatch was stopped before it answered \(after \d+ s\); squeue was not "
        + re.escape(f"asked: the job of {run / 'array.sbatch'} (with this sbatch's reprospec:")
        + r"[0-9a-f]{32}"
        + re.escape(
            ") may be queued all the same (see squeue --me --format=%i,%V,%k,%o); the run "
            f"folder is kept: {run}"
        ),
        lines[2],
    ), stderr
    assert lines[3:] == [], stderr
    assert proc.returncode == 3, stderr
    assert (run / "array.sbatch").is_file()
    # sbatch's whole group ended: the wrapper's sleep with it, not left to exec sbatch.
    assert not _alive(int(sleeper.read_text()))
