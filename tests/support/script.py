"""A Python script run in a child process of its own, with this checkout importable: the
process tests' way to make a subreaper, a watchdog or a pids cgroup without making the
pytest worker one (tree.become_subreaper is never undone in a process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.support.cli import ROOT


def json_of(code: str, *args: str) -> dict[str, Any]:
    """`python -c code args...` run from the checkout; what it printed, a JSON object. A
    script that fails fails the test with its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert isinstance(seen, dict), done.stdout
    return seen
