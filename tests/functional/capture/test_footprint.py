"""What capture reads of the interpreter that ran a command (its packages, in a child) and of
a real crash's faulthandler dump (the frame it died in)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.capture.footprint import crash_frame, faulthandler_stack, pins


def test_distributions_are_pinned_without_what_they_require() -> None:
    # yaml is PyYAML; regex and rich are reprospec's own dependencies, imported here. Read
    # in a child of the interpreter given (reprospec_harness.pins), as capture reads them.
    pinned = pins(["yaml", "json", "rich.console", "reprospec.cli", "_ctypes"], sys.executable)
    names = [pin.split("==")[0].lower() for pin in pinned.packages]
    assert names == ["pyyaml", "rich"]
    assert all(re.match(r"^[\w.-]+==\S+$", pin) for pin in pinned.packages)
    assert pinned.python == f"{sys.version_info.major}.{sys.version_info.minor}"
    missing = pins(["yaml"], "/nonexistent/python")
    assert (missing.packages, missing.python) == ((), "")
    assert "/nonexistent/python did not run" in missing.error


# A worker thread idle in sleep, started after the thread that crashes: faulthandler lists
# threads newest first, so its block comes before the crashed (`Current thread`) one. The
# crash waits until the worker is in its sleep (line 8), where a fixed 0.2 s let a starved
# worker still be in threading's bootstrap, and its block lacked `line 8 in idle`.
IDLE_WORKER = """\
import ctypes, sys
import faulthandler
import threading
import time


def idle():
    time.sleep(60)


def read_shared(ptr):
    return ctypes.string_at(ptr)


def crash():
    read_shared(0)


def start_idle():
    worker = threading.Thread(target=idle, daemon=True)
    worker.start()
    while (frame := sys._current_frames().get(worker.ident)) is None or (
        frame.f_code.co_name, frame.f_lineno) != ("idle", 8):
        time.sleep(0.01)


faulthandler.enable()
if CRASH_IN_THREAD:
    started = threading.Event()
    crasher = threading.Thread(target=lambda: (started.wait(), crash()))
    crasher.start()
    start_idle()
    started.set()
    crasher.join()
else:
    start_idle()
    crash()
"""


@pytest.mark.parametrize("in_thread", [False, True], ids=["main", "another-thread"])
def test_a_crash_frame_is_the_crashed_threads_not_the_first_listed(
    tmp_path: Path, in_thread: bool
) -> None:
    program = tmp_path / "prog.py"
    program.write_text(IDLE_WORKER.replace("CRASH_IN_THREAD", str(in_thread)))
    ran = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == -signal.SIGSEGV, ran
    dump = ran.stderr
    # The idle worker's block is listed first, the crashed thread's is marked.
    headers = re.findall(r"^(Current thread|Thread) 0x", dump, re.M)
    assert headers[0] == "Thread", dump
    assert "Current thread" in headers, dump
    assert "line 8 in idle" in dump, dump
    assert crash_frame(dump, tmp_path) == "read_shared (prog.py:12)", dump
    stack = faulthandler_stack(dump)
    assert stack is not None
    assert stack.startswith("Current thread 0x"), dump
    assert crash_frame(stack, tmp_path) == "read_shared (prog.py:12)"
