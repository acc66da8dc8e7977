"""The stop handlers of a verb that drives runs (reprospec/commands/interrupt.py), in a real
process that really receives SIGINT."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# The signal arrives while a weakref callback runs (as importlib's module lock's does while
# a module loads): Python cannot raise there, drops the KeyboardInterrupt and printed it
# with its traceback through interrupt.py (the full suite's Ctrl-C sweep, once).
IN_A_CALLBACK = """
import os, signal, threading, time, weakref
from reprospec.commands.interrupt import install_stop_handlers

cancel = threading.Event()
install_stop_handlers(cancel)

class Thing:
    pass

def callback(_ref):
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):  # the handler runs at the next bytecode boundary, in here
        time.sleep(0.001)

thing = Thing()
ref = weakref.ref(thing, callback)
del thing
print("cancelled" if cancel.is_set() else "running on", flush=True)
"""


def test_a_stop_python_cannot_raise_in_a_weakref_callback_stops_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IN_A_CALLBACK],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cancelled"  # the stop still reached the verb
    assert "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
