"""The competitors beside an attempt (`cpu_load`, `io_load`): start them, end them, clean up.

load.py runs them: busy and writing processes in a process group of their own that the
engine kills when the attempt ends. Not in the attempt's group: the engine reads a dead
child of the attempt as a crash of its own. The local and docker runners both use them
(beside a container, on its CPUs: the daemon is this machine's).
"""

from __future__ import annotations

import contextlib
import os
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


def stop_load(proc: subprocess.Popen[bytes] | None, folder: Path) -> None:
    """End the competitors and remove the writers' files in `folder`: killed without grace
    (they would compete on), a writer cannot remove its own 16 MiB."""
    if proc is None:
        return
    from reprospec.process import start

    # Killed with their parent, they become this engine's (a subreaper): reaped here, or
    # each probe of `amplify` would leave its spinners as zombies until the engine exits.
    spinners = _children(proc.pid)
    start.stop_helper(proc, grace_s=0.0)
    for pid in spinners:
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    for written in folder.glob("io-load-*.bin"):
        with contextlib.suppress(OSError):
            written.unlink()


def _children(pid: int) -> list[int]:
    try:
        return [int(n) for n in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []
