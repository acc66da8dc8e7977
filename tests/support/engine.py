"""An engine process as the escape tests treat it: killed with its watchdog at once."""

from __future__ import annotations

import os
import subprocess

import psutil


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
