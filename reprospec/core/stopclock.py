"""When a SIGTERM that stops the engine arrived: the moment the process got it, not the moment
Python ran its handler.

A stop sent to every process at once (systemd's control-group kill, Slurm, a shutdown, `kill
-TERM -1`) reaches an attempt's processes too. A shell whose `sleep` it killed goes on and
exits 0 before its own SIGTERM comes, and the engine took that end for the program's own
(`pass`, a run read complete). The engine sets aside what ended as it was stopped
(pipeline/scheduler.py), and for that it needs the stop's real arrival: Python runs a
signal's handler on the main thread alone, at its next bytecode boundary once it is given
the CPU, which on a loaded machine is seconds later.

Python's own C-level handler runs as the signal arrives, and writes the signal's number to
the wakeup descriptor (`signal.set_wakeup_fd`); a thread of this module blocked on its other
end timestamps each byte as it comes, with the interpreter lock released. `first_since`
reads what is still unread first, so an arrival is never missed because the thread had not
been given the CPU yet.

The wakeup descriptor is one per process: `install` takes it only where nothing else has
(an asyncio loop on the main thread sets its own; the engine runs none), and otherwise the
stop handler's own call of `heard` is the arrival, late as it may be.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time

from reprospec.core import safepoint

# Of the signals that stop a verb (commands/interrupt.py), those that reach its attempts, as
# the bytes Python writes for them. SIGTERM is what a stop of every process sends (systemd,
# Slurm, a shutdown). Ctrl-C's SIGINT goes to the terminal's foreground process group, and a
# closed terminal's SIGHUP to its session: the engine's, never an attempt's, each of which
# runs in a session of its own (process/start.py), so neither cuts an attempt short.
_REACHING_ATTEMPTS = frozenset({signal.SIGTERM})
# Arrivals kept: the first stop is the one that counts; the rest only say "stopping".
_KEPT = 64

# Reentrant: the stop handler (`heard`) runs on the main thread, between two bytecodes of
# whatever it was doing, which may be `first_since` holding this lock.
_lock = threading.RLock()
# time.monotonic() of each stop that arrived, in order of reading.
_arrivals: list[float] = []
# The read end of the wakeup pipe; None until `install` took the wakeup descriptor.
_reader: int | None = None
# Asks whether the wakeup pipe holds a byte (`first_since`'s look, every attempt twice): a
# poll that answers nothing is a third of the cost of the read that raises BlockingIOError.
_waiting: select.poll | None = None
# Whether `install` was called: the stop handlers of the command line are in place.
_installed = False


def install() -> bool:
    """Timestamp every stop signal as it arrives, from here on; whether the wakeup descriptor
    was ours to take (on the main thread only, once per process)."""
    global _reader, _installed, _waiting
    with _lock:
        if _reader is not None:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        _installed = True
        read, write = os.pipe()  # close-on-exec: no attempt inherits either end
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        try:
            # A full pipe (a storm of signals nobody read) drops the byte, not the signal.
            previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(read)
            os.close(write)
            return False
        if previous != -1:
            # Someone else's (an event loop's): theirs to keep.
            signal.set_wakeup_fd(previous)
            os.close(read)
            os.close(write)
            return False
        _waiting = select.poll()
        _waiting.register(read, select.POLLIN)
        _reader = read
    threading.Thread(target=_watch, args=(read,), name="reprospec-stopclock", daemon=True).start()
    return True


def _watch(read: int) -> None:
    """The thread: wait for a byte (the lock released), and timestamp it at once."""
    while True:
        try:
            select.select([read], [], [])
        except (OSError, ValueError):
            return
        with _lock:
            _drain(read)


# Marked as part of the stop handler (`heard` calls them): a second signal while they run is
# judged by the frame the handler was called in (core/safepoint.py).
@safepoint.handling
def _drain(read: int) -> None:
    """Read what the wakeup pipe holds, under `_lock`: a stop among it arrived by now."""
    now = time.monotonic()
    while True:
        try:
            data = os.read(read, 512)
        except BlockingIOError:
            return
        except OSError:
            return
        if not data:
            return
        if len(_arrivals) < _KEPT and any(byte in _REACHING_ATTEMPTS for byte in data):
            _arrivals.append(now)


@safepoint.handling
def heard(signum: int) -> None:
    """A stop handler ran for `signum`: it has arrived. Read from the wakeup pipe where it is
    ours (the byte was written as the signal came, before this handler ran); else now, the
    handler's time, is the arrival, late as it may be."""
    now = time.monotonic()
    with _lock:
        if _reader is not None:
            _drain(_reader)
        elif len(_arrivals) < _KEPT and signum in _REACHING_ATTEMPTS:
            _arrivals.append(now)


def installed() -> bool:
    """Whether stop signals are timestamped in this process (`install`: the command line's
    verbs); the Python API's caller stops the engine with its own event."""
    return _installed


def first_since(moment: float) -> float | None:
    """The first stop that may have reached the attempts (SIGTERM) that arrived at or after
    `moment` (time.monotonic()), or None: every one that arrived before this call is
    counted, read or not by the thread."""
    with _lock:
        # Read only where a byte waits: nearly always nothing does, and each attempt asks.
        if _reader is not None and _waiting is not None and _waiting.poll(0):
            _drain(_reader)
        if not _arrivals:
            return None
        later = [at for at in _arrivals if at >= moment]
    return min(later) if later else None


__all__ = ["first_since", "heard", "install", "installed"]
