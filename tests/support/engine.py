"""An engine process as the escape tests treat it (tests/functional/process and
tests/real/docker): started with this checkout's reprospec, killed with its watchdog at once,
waited on until what it left is gone."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import psutil

from tests.support.paths import ROOT

# The engine's environment: this checkout's reprospec, plain text.
ENV = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
# How long what a killed engine left may take to go.
GONE_WITHIN_S = 30.0


def wait_until(check: Callable[[], bool], timeout: float = GONE_WITHIN_S) -> bool:
    """Whether `check()` holds within `timeout` seconds (polled every 50 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def cmdline(process: psutil.Process) -> str:
    """Its command line; "" for a child that already exited (a zombie until the engine
    reaps it: the environment capture's, say) or is gone."""
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return ""


def kill_with_its_watchdog(engine: subprocess.Popen[str]) -> None:
    """SIGKILL the engine and its watchdog at once: nothing of the engine's side cleans up."""
    dog = [c for c in psutil.Process(engine.pid).children() if "watchdog.py" in cmdline(c)]
    assert len(dog) == 1
    dog[0].kill()
    engine.kill()
    engine.wait()
    try:
        os.waitpid(dog[0].pid, 0)  # ours to reap when the test process is a subreaper
    except ChildProcessError:
        dog[0].wait(timeout=30)
