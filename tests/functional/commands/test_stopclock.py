"""When a stop signal arrived (reprospec/core/stopclock.py), with real signals, each in a
fresh interpreter: the wakeup descriptor and the signal handlers are the process's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# SIGTERM from another thread while the main thread sleeps with it blocked (as a loaded
# machine leaves the main thread without the CPU): the signal comes to another thread, where
# Python's C-level handler runs, and Python runs its handler on the main thread only once
# that sleep is over; the arrival read then is the signal's, not the handler's.
LATE_HANDLER = """
import os, signal, threading, time
from reprospec.core import stopclock

ran, sent = [], []
signal.signal(signal.SIGTERM, lambda *_: ran.append(time.monotonic()))
assert stopclock.install() and stopclock.installed()

def send():
    time.sleep(0.1)
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGTERM)

begin = time.monotonic()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
threading.Thread(target=send).start()
time.sleep(1.0)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
arrival = stopclock.first_since(begin)
print(arrival - sent[0] < 0.2, ran[0] - sent[0] > 0.5, stopclock.first_since(ran[0] + 0.5))
"""


def test_a_stop_arrives_when_the_signal_came_though_its_handler_ran_later() -> None:
    # The handler's own time was the stop's only moment: on a loaded machine an attempt
    # that ended just before the signal read as ended a long while before the stop.
    assert _python(LATE_HANDLER) == "True True None"


# Another signal with a Python handler writes its byte too; only SIGTERM, which a stop of
# every process sends, counts: Ctrl-C's SIGINT and a closed terminal's SIGHUP never reach
# an attempt (each runs in a session of its own).
OTHER_SIGNALS = """
import os, signal, time
from reprospec.core import stopclock

for signum in (signal.SIGUSR1, signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(signum, lambda *_: None)
stopclock.install()
begin = time.monotonic()
for signum in (signal.SIGUSR1, signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    os.kill(os.getpid(), signum)
    time.sleep(0.1)
    print(stopclock.first_since(begin) is not None, end=" ")
"""


def test_only_a_sigterm_is_a_stop_that_reached_the_attempts() -> None:
    assert _python(OTHER_SIGNALS) == "False False False True"


# An event loop's wakeup descriptor is left to it: the handler's time is the arrival then.
TAKEN = """
import os, signal, socket, time
from reprospec.core import stopclock

theirs, _other = socket.socketpair()
theirs.setblocking(False)
signal.set_wakeup_fd(theirs.fileno())
print(stopclock.install(), signal.set_wakeup_fd(-1) == theirs.fileno(), end=" ")
begin = time.monotonic()
stopclock.heard(signal.SIGTERM)
print(stopclock.first_since(begin) is not None)
"""


def test_a_wakeup_descriptor_already_taken_is_left_to_its_owner() -> None:
    assert _python(TAKEN) == "False True True"


# Every attempt asks twice whether a stop came: with none, the question reads nothing (a
# read of the empty pipe raised BlockingIOError each time: 2 us and a system call). A byte
# its thread has not read yet (here the main thread holds the clock's lock, so the thread
# waits for it) is read by the question itself, as before.
ASKED = """
import os, signal, time
from reprospec.core import stopclock

signal.signal(signal.SIGTERM, lambda *_: None)
stopclock.install()
reads = []
read = os.read
os.read = lambda fd, n: reads.append(fd) or read(fd, n)
begin = time.monotonic()
for _ in range(100):
    stopclock.first_since(begin)
print(len(reads), end=" ")
with stopclock._lock:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)
    print(stopclock.first_since(begin) is not None, len(reads) > 0)
"""


def test_asking_with_no_stop_reads_nothing_and_a_waiting_byte_is_read() -> None:
    assert _python(ASKED) == "0 True True"
