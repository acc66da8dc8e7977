"""Child: reach validation step 3 (events on $REPROSPEC_EVENTS), then end as MODE says.

Usage: python behave.py MODE   (see the MODES table)
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import sys
import time
import traceback


class Boom(Exception):
    """An exception type of our own (a __main__ type prints unqualified: `Boom`)."""


def event(**fields: object) -> None:
    path = os.environ.get("REPROSPEC_EVENTS")
    if path:
        # One os.write on an O_APPEND fd: the line survives a crash right after it.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, (json.dumps({"t": time.time(), **fields}) + "\n").encode())
        os.close(fd)


def boom() -> None:
    raise Boom("widget 7 exploded at 0xdeadbeef")


def interrupt() -> None:
    raise KeyboardInterrupt


def during_handling() -> None:
    try:
        print(1 / 0)
    except ZeroDivisionError:
        raise RuntimeError("loss is NaN at step 3\nsecond line of the message")  # noqa: B904


class AcceleratorError(RuntimeError):
    """As torch.AcceleratorError: the primary error of a chain a handler then buries."""


def save_checkpoint() -> None:
    # The built-in open, as a training script saves: Path.open would add a pathlib frame.
    with open("/nonexistent/reprospec/checkpoint.pt", "wb") as f:  # noqa: PTH123
        f.write(b"")


def accelerator_chain() -> None:
    """AcceleratorError -> (during handling) FileNotFoundError -> (direct cause) RuntimeError."""
    try:
        raise AcceleratorError("CUDA error: an illegal memory access was encountered")
    except AcceleratorError:
        try:
            save_checkpoint()  # the handler's own mistake
        except FileNotFoundError as exc:
            raise RuntimeError("emergency checkpoint failed") from exc


def backward_segv() -> None:
    """As the harness does: a stage event inside the step, then the crash in that stage."""
    event(event="stage", phase="validation", step=3, stage="forward")
    event(event="stage", phase="validation", step=3, stage="backward")
    ctypes.string_at(0)


def import_hang() -> None:
    """As the harness's imports: one event per module, then a module that never returns."""
    event(event="import", module="json", phase="import")
    event(event="import", module="wandb", phase="import")
    time.sleep(60)


def traceback_then_segv() -> None:
    try:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    except RuntimeError:
        traceback.print_exc()
        sys.stderr.flush()
    ctypes.string_at(0)


def logged_then_exit() -> None:
    try:
        {}["missing"]
    except KeyError:
        logging.exception("lookup failed, falling back")
    print("checkpoint dir not writable", file=sys.stderr)
    sys.exit(2)


MODES = {
    "pass": lambda: None,
    "exit3": lambda: sys.exit(3),
    "raise": boom,
    "chained": during_handling,
    "accelerator-chain": accelerator_chain,
    "backward-segv": backward_segv,
    "import-hang": import_hang,
    "systemexit": lambda: sys.exit("fatal: no dataset found"),
    "segv": lambda: ctypes.string_at(0),
    "abort": os.abort,
    "traceback-segv": traceback_then_segv,
    "logged-exit2": logged_then_exit,
    "keyboardinterrupt": interrupt,
    "hang": lambda: time.sleep(60),
    "sigkill": lambda: os.kill(os.getpid(), signal.SIGKILL),
}


def main() -> None:
    mode = sys.argv[1]
    event(event="phase", phase="train")
    for step in range(3):
        event(event="step", phase="train", step=step)
    event(event="phase", phase="validation")
    for step in range(4):
        event(event="step", step=step)  # no phase: inherits validation
    print(f"validation step 3, mode {mode}", flush=True)
    MODES[mode]()


if __name__ == "__main__":
    main()
