"""The verify of a captured hang: called at a stall the first run's progress gives, said
before each verify run, the written spec keeping its timeout (capture/hangwait.py)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from reprospec.capture.hangwait import STILL_WINDOW_S, CpuTrail, cpu_moved
from reprospec.process import tree
from reprospec.spec.load import load_spec
from tests.support.cli import Cli

# Two steps 0.2 s apart, then a real deadlock: the thread waits on a lock it holds.
_DEADLOCK = """\
import threading, time
print("step 1", flush=True)
time.sleep(0.2)
print("step 2", flush=True)
lock = threading.Lock()
lock.acquire()
lock.acquire()
"""


def test_a_hang_after_progress_is_verified_at_a_stall_not_the_timeout(
    cli: Cli, tmp_path: Path
) -> None:
    # Every verify of a hang waited the whole --timeout (300 s by default: about
    # 30 minutes for a hang needing a variable of the shell), saying only "verifying".
    (tmp_path / "dl.py").write_text(_DEADLOCK)
    out = tmp_path / "out"
    argv = ["capture", "--timeout", "24s", "-o", "spec.yaml", "--out", str(out)]
    result = cli(*argv, "--", "python", "dl.py", cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    assert (
        "reprospec: verifying spec.yaml (1 attempt; a hang is called after 10s without "
        "progress (the verify's run.stall), not at the 24s timeout)"
    ) in result.stderr
    assert "the same signature (hang) came back in 1/1 attempt; verdict reproduced" in (
        result.stdout
    )
    # How long the captured hang went quiet depends on when the machine let it start (about
    # 23 s of the 24 s timeout here, less under load): at least twice the stall it gave.
    went = re.search(
        r"the verify called a hang after 10s without progress \(run\.stall, its own\): the "
        r"captured hang went (\d+\.\d) s without progress",
        result.stdout,
    )
    assert went is not None, result.stdout
    assert float(went.group(1)) >= 2 * 10, went.group(0)
    assert "`--set run.stall=10s` calls it early in your runs too" in result.stdout
    # The written spec keeps the user's timeout, and no stall.
    document = load_spec(str(tmp_path / "spec.yaml")).document
    assert document["run"] == {"timeout": "24s"}
    assert document["expect"] == {"outcome": "hang", "step": 2}
    # Each verify attempt was a hang by the stall, well before the timeout. The capture's run
    # is the first; the verify's follow, one, and one more where the shell set variables the
    # verify tests a rerun without (OPENBLAS_*, OMP_*: footprint's RELEVANT_UNTESTED).
    capture_run, *verify_runs = sorted((out / "runs").iterdir())
    assert verify_runs, capture_run
    for run in verify_runs:
        (cell,) = json.loads((run / "results.json").read_text())["cells"]
        (attempt,) = cell["attempts"]
        assert attempt["outcome"]["kind"] == "hang", (run.name, attempt["outcome"])
        assert "(run.stall)" in attempt["outcome"]["detail"], (run.name, attempt["outcome"])
        assert attempt["duration_s"] < 20, (run.name, attempt["duration_s"])
    # What it says to do calls the spec's own hang early too.
    ran = cli("run", "spec.yaml", "--set", "run.stall=10s", "--out", str(out), cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert cell["verdict"] == "reproduced"
    assert cell["attempts"][0]["duration_s"] < 20


def test_a_hang_without_progress_says_each_verify_waits_the_timeout(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "quiet.py").write_text("import time\ntime.sleep(600)\n")
    argv = ["capture", "--timeout", "2s", "-o", "spec.yaml", "--out", str(tmp_path / "out")]
    result = cli(*argv, "--", "python", "quiet.py", cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    assert (
        "reprospec: verifying spec.yaml (1 attempt; a hang waits the spec's timeout, 2s, in "
        "each attempt: capture --timeout D shortens it)"
    ) in result.stderr
    assert "the verify's attempts waited the spec's timeout, 2s, for the hang" in result.stdout


def test_the_cpu_of_short_children_a_test_waits_for_is_counted(tmp_path: Path) -> None:
    """A test that works in short commands it runs one after another (a CLI's tests,
    `subprocess.run` in a loop) uses next to no CPU itself, waiting, and each command has
    ended between two readings: the CPU time of the threads read alone stayed flat, and a
    rerun alone still at work was "hung alone" at its bound. The CPU of the children a
    process reaped (its cutime and cstime) counts too."""
    assert tree.become_subreaper()
    stop = tmp_path / "stop"
    # Each command's CPU (a Python's start-up, some 20 ms) is under what counts as moving,
    # should a reading catch one running; theirs together, 5 s of them, far over it. The
    # loop ends at `stop`, its last command waited for: nothing left to this process.
    script = (
        f"while [ ! -e {shlex.quote(str(stop))} ]; do "
        f"{shlex.quote(sys.executable)} -c pass; sleep 0.2; done"
    )
    proc = subprocess.Popen(["sh", "-c", script])
    try:
        with CpuTrail() as trail:
            time.sleep(6.5)
    finally:
        stop.touch()
        proc.wait(timeout=30)
    end = trail.readings[-1][0]
    assert cpu_moved(trail.readings, end - STILL_WINDOW_S, end) is True
