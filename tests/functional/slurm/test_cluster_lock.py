"""The Slurm tests' cluster lock (tests/support/slurm.py) is the cluster's, not a TMPDIR's:
a worker given another TMPDIR waited for no test that had slurmctld stopped, and the sinfo
probe each worker runs as it imports the helpers took no lock at all (a stopped slurmctld
past its 15 s: every Slurm test skipped, in CI failed). sinfo and sbatch are fakes here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fakeslurm import fake_tool

ROOT = Path(__file__).resolve().parents[3]
HOLD = """import time
from pathlib import Path
from tests.support.slurm import cluster_held
with cluster_held(alone=True):
    Path({held!r}).touch()
    time.sleep(2)
    Path({released!r}).write_text(repr(time.time()))
"""


def test_the_sinfo_probe_waits_for_a_test_holding_the_cluster_alone_whatever_its_tmpdir(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "sinfo", f"date +%s.%N >> {tmp_path}/sinfo-at; echo idle")
    fake_tool(tools, "sbatch", "exit 1")
    env = {
        **os.environ,
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "REPROSPEC_SLURM_STATE": str(tmp_path / "state"),
        "PYTHONPATH": str(ROOT),
    }
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    held, released = tmp_path / "held", tmp_path / "released"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(held=str(held), released=str(released))],
        env={**env, "TMPDIR": str(tmp_path / "a")},
        cwd=ROOT,
    )
    try:
        while not held.exists():
            assert holder.poll() is None, "the holder ended before it held the cluster"
            time.sleep(0.05)
        probe = subprocess.run(
            [sys.executable, "-c", "import tests.support.slurm as s; print(repr(s.NO_CLUSTER))"],
            env={**env, "TMPDIR": str(tmp_path / "b")},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        assert holder.wait(timeout=60) == 0
    assert probe.stdout.strip() == "''"
    # The holder's own probe, then the second process's: after the cluster was let go.
    asked = [float(line) for line in (tmp_path / "sinfo-at").read_text().split()]
    assert len(asked) == 2
    assert asked[1] >= float(released.read_text())
    assert not (tmp_path / "state").exists()  # the lock is beside the state, not in it
    assert (tmp_path / "state.tests.lock").is_file()
