"""SIGURG -> every thread's stack into `$REPROSPEC_STACK_DIR/stack-<pid>.txt` (hang reports).

SIGURG is the engine's asking signal (core/signals.py's STACK_DUMP_SIGNAL, named here: the
harness imports nothing of the engine); ignored by default, taking it over changes nothing
a program sees, where SIGUSR1 kept alive a program that died of it.
"""

from __future__ import annotations

import faulthandler
import os
import signal
from pathlib import Path
from typing import IO

_files: dict[int, IO[str]] = {}


def arm_fatal() -> None:
    """faulthandler on the fatal signals as the engine's sitecustomize arms it: the stack of
    the thread that took the signal, every thread's only where PYTHONFAULTHANDLER asks (the
    dump of running threads can fault itself and turn a SIGBUS into a SIGSEGV)."""
    faulthandler.enable(all_threads=bool(os.environ.get("PYTHONFAULTHANDLER")))


def register() -> None:
    """Register this process's own dump file; again in a forked child (it inherits the parent's)."""
    folder = os.environ.get("REPROSPEC_STACK_DIR")
    pid = os.getpid()
    if not folder or pid in _files or not hasattr(signal, "SIGURG"):
        return
    path = Path(folder) / f"stack-{pid}.txt"
    if path.exists():
        # The file exists once this pid registered a dump (the engine's sitecustomize
        # does so in every Python process, forked ones included): nothing to add.
        return
    try:
        handle = path.open("w")  # kept open for faulthandler
    except OSError:
        return
    faulthandler.register(signal.SIGURG, file=handle, all_threads=True, chain=False)
    _files[pid] = handle
