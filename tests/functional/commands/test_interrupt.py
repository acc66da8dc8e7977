"""The stop handlers of a verb that drives runs (reprospec/commands/interrupt.py) and the
command line's first handler (reprospec/__main__.py, core/safepoint.py), in real processes
that really receive SIGINT."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# The signal arrives while a weakref callback runs: Python cannot raise there, dropped the
# KeyboardInterrupt and printed it with its traceback through interrupt.py (the full suite's
# Ctrl-C sweep, once). The stop is raised again after the callback.
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
try:
    del thing
    time.sleep(5)
    print("running on", flush=True)
except KeyboardInterrupt:
    print("stopped after it;", "cancelled" if cancel.is_set() else "not cancelled", flush=True)
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def test_a_stop_python_cannot_raise_in_a_weakref_callback_is_raised_after_it() -> None:
    done = _python(IN_A_CALLBACK)
    assert done.returncode == 0, done.stderr
    # Raised in the callback, it was dropped there; the verb was stopped right after it.
    assert done.stdout.strip() == "stopped after it; cancelled"
    assert "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert "writing what finished first" not in done.stderr  # one signal, told as one


# Code that runs as importlib's module locks do (compiled under their file name): a signal
# arriving in there waits until the machinery has returned.
IN_THE_IMPORT_MACHINERY = """
import os, signal, threading, time
from reprospec.core import safepoint

{install}

MACHINERY = compile(
    "os.kill(os.getpid(), signal.SIGINT)\\n"
    "for _ in range(1000):\\n"  # backward jumps: the handler runs again and again in here
    "    pass\\n"
    "ran.append('to its end')\\n",
    safepoint.IMPORT_MACHINERY,
    "exec",
)
ran = []
try:
    exec(MACHINERY)
    time.sleep(5)
    print("running on", flush=True)
except KeyboardInterrupt:
    print("raised after the machinery ran", *ran, flush=True)
"""

_FIRST_HANDLER = "signal.signal(signal.SIGINT, safepoint.on_sigint)"
_STOP_HANDLERS = (
    "from reprospec.commands.interrupt import install_stop_handlers\n"
    "install_stop_handlers(threading.Event())"
)


@pytest.mark.parametrize("install", [_FIRST_HANDLER, _STOP_HANDLERS], ids=["first", "stop"])
def test_a_ctrl_c_in_the_import_machinery_is_raised_once_it_has_returned(install: str) -> None:
    done = _python(IN_THE_IMPORT_MACHINERY.format(install=install))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raised after the machinery ran to its end"
    assert done.stderr == ""


# The command line run with a tracer that stands for a Ctrl-C arriving at one instant: in a
# module lock's callback, just after it took the global import lock and before its `try`
# (where CI's Ctrl-C sweep once landed), in the first one that runs while `reprospec run`
# loads or, for `running`, once the verb has installed its stop handlers. The tracer is
# compiled under the machinery's file name: it is the moment inside it, not code of its own
# that could take the signal.
CLI_WITH_A_CTRL_C_IN_A_MODULE_LOCK = """
import os, signal, sys
from reprospec.__main__ import main
from reprospec.core import safepoint

TRACER = '''
def tracer(frame, event, arg):
    if frame.f_code.co_name != "cb" or frame.f_code.co_filename != IMPORT_MACHINERY:
        return None
    if RUNNING and signal.getsignal(signal.SIGINT) is safepoint.on_sigint:
        return None  # the verb's handlers are not installed yet
    lines = []
    def at_line(frame, event, arg):
        if event == "line":
            lines.append(frame.f_lineno)
            if len(lines) == 2:  # the `try` after `_imp.acquire_lock()`
                sys.settrace(None)
                os.kill(os.getpid(), signal.SIGINT)
                return None
        return at_line
    return at_line
'''
scope = {
    "sys": sys, "os": os, "signal": signal, "safepoint": safepoint,
    "IMPORT_MACHINERY": safepoint.IMPORT_MACHINERY, "RUNNING": sys.argv[1] == "running",
}
exec(compile(TRACER, safepoint.IMPORT_MACHINERY, "exec"), scope)
sys.argv = ["reprospec", *sys.argv[2:]]
sys.settrace(scope["tracer"])
sys.exit(main())
"""


@pytest.mark.parametrize("phase", ["loading", "running"])
def test_a_ctrl_c_while_an_import_holds_the_import_lock_stops_the_run(
    phase: str, tmp_path: Path
) -> None:
    # Raised there, the KeyboardInterrupt left the global import lock held and was dropped
    # (a weakref callback): `reprospec run` went on, and hung at its first import on another
    # thread, past the Ctrl-C sweep's 60 s.
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        'reprospec: 1\nname: slow\ncommand: python -c "import time; time.sleep(30)"\n'
        "expect: {outcome: pass}\n"
    )
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CLI_WITH_A_CTRL_C_IN_A_MODULE_LOCK, phase, "run", str(spec)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("reprospec: interrupted"), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert time.monotonic() - began < 30  # stopped, not run to the attempt's end


# What a Ctrl-C that Python's own handler raised in an import's lock callback, before the
# command line's first line (Python's start-up, the package's first imports), leaves: the
# global import lock held by the main thread, the KeyboardInterrupt dropped.
CLI_AFTER_A_CTRL_C_DROPPED_IN_THE_START_UP = """
import _imp, runpy, sys
_imp.acquire_lock()
sys.argv = ["reprospec", *sys.argv[1:]]
runpy.run_module("reprospec", run_name="__main__", alter_sys=True)
"""


def test_a_ctrl_c_python_dropped_with_the_import_lock_held_stops_the_command(
    tmp_path: Path,
) -> None:
    # The Ctrl-C sweep's residual window, before core/safepoint.py's handler: the run went
    # on, and hung at the first import of its environment capture's and its job's threads;
    # SIGTERM did not end it either (its threads could not end).
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: quick\ncommand: 'true'\nexpect: {outcome: pass}\n")
    done = subprocess.run(
        [sys.executable, "-c", CLI_AFTER_A_CTRL_C_DROPPED_IN_THE_START_UP, "run", str(spec)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "reprospec: interrupted", done.stderr
    assert not (tmp_path / ".reprospec").exists()  # nothing ran, nothing was written
