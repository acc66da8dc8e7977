"""`envs prune` removes the lock files no run holds: an earlier version left one per
environment ever built in the environments' `.locks/`, empty, never removed. A run's hold
(this process's, as a run in another terminal holds it) stays."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reprospec import venvs
from reprospec.venvs.build import hold, in_use_lock
from tests.support.cli import ROOT


def test_prune_sweeps_the_lock_files_no_run_holds(tmp_path: Path) -> None:
    root = tmp_path / "envs"
    locks = in_use_lock(root, "0123456789abcdef").parent
    locks.mkdir(parents=True)
    for name in ("0123456789abcdef.use", "0123456789abcdef.lock", "fedcba9876543210.use"):
        (locks / name).write_text("")
    held = hold(root, "aaaaaaaaaaaaaaaa")
    assert held is not None
    env = {
        **os.environ,
        venvs.ENVS_VARIABLE: str(root),
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
    }
    with held:
        done = subprocess.run(
            [sys.executable, "-m", "reprospec", "envs", "prune", "--all"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in locks.iterdir()) == ["aaaaaaaaaaaaaaaa.use"]
    assert list(locks.iterdir()) == []
