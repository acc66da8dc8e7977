"""A process the kernel's OOM killer ended is named so: real kills in a memory cgroup the
test makes (1 GiB), never the machine's memory."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reprospec.perturb.apply import make_memory_cgroup, remove_cgroup
from tests.support.cli import Cli

# `hog` fills memory a MiB at a time until the kernel kills it (3 GiB at most, were no
# limit to stop it); `kill` sends itself the same SIGKILL, as `kill -9` would.
PROGRAM = """\
import os, signal, sys
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
hoard = []
for mib in range(3072):
    hoard.append(bytearray(1 << 20))
print("the hog was not killed")
"""

SPEC = """\
reprospec: 1
name: oom
matrix:
  mode: [hog, kill]
command: [python, prog.py, "${{ matrix.mode }}"]
expect:
  outcome: crash
  signal: SIGKILL
"""


@contextlib.contextmanager
def memory_cgroup(size: int) -> Iterator[Callable[[], None]]:
    """A memory cgroup of `size` bytes, and what a child calls to join it before its exec."""
    folder, why = make_memory_cgroup(size, f"reprospec-test-oom-{os.getpid()}")
    if folder is None:
        pytest.skip(f"no memory cgroup can be made here: {why}")

    def join() -> None:
        (folder / "cgroup.procs").write_text("0")

    try:
        yield join
    finally:
        remove_cgroup(folder)


def _outcomes(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cell["matrix"]["mode"]: cell["attempts"][0]["outcome"] for cell in results["cells"]}


def test_an_engine_in_a_limited_cgroup_names_the_oom_killers_sigkill(tmp_path: Path) -> None:
    """The user's job runs in a container's, a Slurm job's or a systemd slice's memory
    limit: the kernel counts its kill in that cgroup, which the engine shares."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "oom.yaml").write_text(SPEC)
    out = tmp_path / "out"
    with memory_cgroup(2**30) as join:
        # One attempt at a time: the kill is counted while the hog alone runs.
        proc = subprocess.run(
            [sys.executable, "-m", "reprospec", "run", "oom.yaml", "--out", str(out), "-j", "1"],
            cwd=tmp_path,
            preexec_fn=join,  # it only writes to cgroupfs
            env={**os.environ, "NO_COLOR": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "crash SIGKILL by the OOM killer" in proc.stdout
    (run,) = (out / "runs").iterdir()
    outcomes = _outcomes(json.loads((run / "results.json").read_text()))
    hog = outcomes["hog"]
    assert (hog["kind"], hog["signal"], hog.get("oom_killed")) == ("crash", "SIGKILL", True)
    assert hog["detail"].endswith(
        "; the kernel's OOM killer killed 1 process in the attempt's memory cgroup "
        "(its limit: 1.0 GiB)"
    )
    # Its own `kill -9`, in the same cgroup: a SIGKILL, and no kill was counted.
    kill = outcomes["kill"]
    assert (kill["kind"], kill["signal"]) == ("crash", "SIGKILL")
    assert "oom_killed" not in kill
    assert "OOM" not in kill["detail"]
    report = (run / "report.md").read_text()
    assert "`crash SIGKILL by the OOM killer`" in report


def test_a_kill_at_perturb_memory_limit_is_the_oom_killers(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    spec = SPEC.replace("  mode: [hog, kill]", "  mode: [hog]") + (
        "environment:\n  perturb:\n    memory_limit: 200m\n"
    )
    (tmp_path / "oom.yaml").write_text(spec)
    with memory_cgroup(2**30):
        pass  # skips where this machine cannot make one, as the attempt needs
    result = cli("run", str(tmp_path / "oom.yaml"))
    assert result.code == 0, result.stdout + result.stderr
    hog = _outcomes(result.results())["hog"]
    assert hog.get("oom_killed") is True
    assert hog["detail"].endswith(
        "; the kernel's OOM killer killed 1 process at perturb.memory_limit"
    )
