"""The competitors beside an attempt (`cpu_load`, `io_load`): start them, end them, clean up.

load.py runs them: busy and writing processes in a process group of their own that the
engine kills when the attempt ends. Not in the attempt's group: the engine reads a dead
child of the attempt as a crash of its own. The local and docker runners both use them
(beside a container, on its CPUs: the daemon is this machine's).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from reprospec.core.sections import Perturb
from reprospec.perturb.apply import PerturbRefused

LOAD = Path(__file__).with_name("load.py")


def start_load(
    perturb: Perturb, cpus: tuple[int, ...], folder: Path
) -> subprocess.Popen[bytes] | None:
    """Start the busy and writing competitors beside the attempt (None when it asks none).

    They share the attempt's CPUs (`cpus`): on other CPUs they would compete with nothing.
    """
    if not perturb.cpu_load and not perturb.io_load:
        return None
    from reprospec.process import start

    argv = [sys.executable, "-S", "-E", str(LOAD), "--cpu", str(perturb.cpu_load)]
    argv += ["--io", str(perturb.io_load), "--dir", str(folder)]
    if cpus:
        argv += ["--cpus", ",".join(str(c) for c in cpus)]
    try:
        return start.start_helper(
            argv, env=dict(os.environ), cwd=folder, pass_fds=(), log=folder / "load.log"
        )
    except OSError as exc:
        raise PerturbRefused(f"perturb cpu_load/io_load not applied: {exc}") from None


# The files the io_load writers make in the attempt's folder (perturb/load.py), removed
# by stop_load once the attempt is over.
IO_LOAD_FILES = "io-load-*.bin"


def stop_load(proc: subprocess.Popen[bytes] | None, folder: Path) -> None:
    """End the competitors and remove the writers' files in `folder`: killed without grace
    (they would compete on), a writer cannot remove its own 16 MiB."""
    if proc is None:
        return
    from reprospec.process import start

    # Killed while the helper is unreaped, so the group id is still its own: no reused id is
    # hit. Killed with their parent, the spinners become this engine's (a subreaper): reaped
    # here by group, or each probe of `amplify` would leave them as zombies until the engine
    # exits. By group, not by a list of the helper's children read before the kill: a spinner
    # forked after that read (an attempt that ended as load.py started) was missed (CI, stop 48).
    if proc.returncode is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    start.stop_helper(proc, grace_s=0.0)
    _reap_group(proc.pid)
    for written in folder.glob(IO_LOAD_FILES):
        with contextlib.suppress(OSError):
            written.unlink()


def _reap_group(pgid: int) -> None:
    """Wait for every child of this engine in process group `pgid`, until none is left.

    Each was killed with the group; one not re-parented here (no subreaper) is init's."""
    while True:
        try:
            os.waitpid(-pgid, 0)
        except ChildProcessError:
            return
