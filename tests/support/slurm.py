"""Helpers for the Slurm tests: does a cluster answer (and why not), wait for a run to settle."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from reprospec.slurm import RunStatus, load, run_status

IN_CI = os.environ.get("CI") == "true"
SETTLE_TIMEOUT_S = 600.0
# The cluster's state (scripts/slurm-setup.sh: pid files, logs, spool).
SLURM_STATE = Path(os.environ.get("REPROSPEC_SLURM_STATE", "/var/tmp/reprospec-slurm"))
# One per cluster, beside its state: xdist's workers and a second pytest beside them,
# whatever TMPDIR each was given (a lock in TMPDIR let one submit as another stopped it).
_CLUSTER_LOCK = SLURM_STATE.parent / f"{SLURM_STATE.name}.tests.lock"


@contextlib.contextmanager
def cluster_held(*, alone: bool) -> Iterator[None]:
    """The cluster shared with other Slurm tests, or held `alone`: a test that stops
    slurmctld (past MessageTimeout: test_submit_timeout.py) makes every other's sbatch and
    squeue time out, so it waits for them to end and they wait for it (tests/real/slurm's
    conftest.py, and whatever else asks the cluster: the session's time-limited run,
    sinfo's probe below). A flock: a test that dies releases it."""
    _CLUSTER_LOCK.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(_CLUSTER_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's: a flock needs only a read
        fd = os.open(_CLUSTER_LOCK, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _cluster() -> str:
    """ "" when sinfo shows a usable node, else why not."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "skipped: no Slurm here (sinfo/sbatch not found; run scripts/slurm-setup.sh)"
    try:
        # Shared with the other Slurm tests: a worker importing this as another's test had
        # slurmctld stopped (15 s, past sinfo's 15) skipped, or in CI failed, every test.
        with cluster_held(alone=False):
            proc = subprocess.run(
                ["sinfo", "--noheader", "--Node", "--format=%T"],
                capture_output=True,
                text=True,
                timeout=15,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return "skipped: sinfo did not answer within 15 s (run scripts/slurm-setup.sh)"
    states = proc.stdout.split()
    if proc.returncode != 0 or not states:
        reason = (proc.stderr.strip().splitlines() or ["no node"])[-1]
        return f"skipped: no Slurm controller answers ({reason}); run scripts/slurm-setup.sh"
    if not any(s.rstrip("*~#") in ("idle", "mixed", "allocated", "completing") for s in states):
        return f"skipped: no usable Slurm node (states: {', '.join(states)})"
    return ""


NO_CLUSTER = _cluster()
# Outside CI a machine without Slurm skips; in CI the cluster is set up, so a missing one fails.
_T = TypeVar("_T", bound=Callable[..., object])


def needs_cluster(test: _T) -> _T:
    """A test that talks to the Slurm cluster: a `slurm` test by construction, skipped with
    the reason when no controller answers outside CI (in CI that is a failure)."""
    skip = pytest.mark.skipif(bool(NO_CLUSTER) and not IN_CI, reason=NO_CLUSTER)
    marked: _T = pytest.mark.slurm(skip(test))
    return marked


def require_cluster() -> None:
    if NO_CLUSTER:
        pytest.fail(NO_CLUSTER)


def only_run(shared: Path) -> Path:
    """The one Slurm run folder under a shared `--out`."""
    runs = sorted((shared / "slurm").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def wait_settled(run_dir: Path, timeout: float = SETTLE_TIMEOUT_S) -> RunStatus:
    """Poll until no shard and no merge of the run is queued or running (or `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        status = run_status(load(run_dir))
        settled = not status.active and status.merge.state not in ("queued", "running", "unknown")
        if settled or time.monotonic() > deadline:
            return status
        time.sleep(0.5)


def wait_for(predicate: object, timeout: float = SETTLE_TIMEOUT_S) -> None:
    """Poll a no-argument callable until it returns true; fail after `timeout` seconds."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:.0f} s for {getattr(predicate, '__name__', predicate)}")
        time.sleep(0.2)
