"""After a DataLoader failure: which worker died, of which signal, fetching which item."""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from typing import TypeAlias

from . import events
from .data import FetchTracker

WorkerExit: TypeAlias = "dict[str, int | str | None]"


def report_dead_workers(
    iterator: object,
    tracker: FetchTracker,
    phases: Sequence[str],
    main_phase: str | None,
    main_step: int | None,
    grace: float = 0.0,
) -> list[WorkerExit]:
    """Emit one `worker_exit` event per worker that has exited; returns them.

    A worker of a live iterator exits only when told to (its shutdown, not yet come):
    one that exited, even with code 0 (the `exit` fault's `code: 0`, a library's
    sys.exit(0)), died under the loader, as torch's "exited unexpectedly" says. Counting
    only non-zero codes left code 0 unnamed (a crash with no signal) and waited out the
    whole grace for a death already there (a hang under a 10 s `run.stall`).
    `grace`: how long to wait for a dying worker. The main process can see the
    broken pipe (ConnectionResetError, EOFError) before the worker has finished dying.
    """
    # torch's SIGCHLD handler raises again inside our except block: default it first.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # The DataLoader iterator's worker processes (a private attribute of torch's).
    workers: list[BaseProcess] = list(getattr(iterator, "_workers", None) or [])
    deadline = time.monotonic() + grace
    # exitcode is waitpid(WNOHANG): a dead worker is still an unreaped zombie until then.
    while all(p.exitcode is None for p in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    found: list[WorkerExit] = []
    for worker, process in enumerate(workers):
        code = process.exitcode
        if code is None:
            continue
        record: WorkerExit = {"worker": worker, "pid": process.pid}
        if code < 0:
            record["signal"] = _signal_name(-code)
        else:
            record["exit_code"] = code
        fetching = tracker.fetching(worker)
        if fetching is not None:
            phase, step, index = fetching
            # The bad item's own phase and step: the main loop is steps behind or ahead of it.
            record.update(index=index, phase=phases[phase], step=step)
        record.update(main_phase=main_phase, main_step=main_step)
        events.emit("worker_exit", **record)
        found.append(record)
    return found


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
