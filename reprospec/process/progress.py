"""`run.stall`: when an attempt that made progress has made none for too long.

The loop that already watches an attempt (run.py's output pump and timeout, the docker
runner's wait) asks a `ProgressWatch` at each turn; nothing here runs a thread.

What counts as progress, and why:

- an event in events.jsonl of a progress kind (`childprotocol.PROGRESS_EVENTS`, or a
  line with no `event`): the harness's phases and steps, a command's own events, and
  the spec's markers, which the engine writes there as `marker` events. Not `import`:
  the harness writes it *before* the import starts (so an import that hangs is located),
  and importing torch on a loaded machine takes tens of seconds of no progress that is
  no stall. Before the first progress only the timeout applies, so an attempt still
  starting (an interpreter, its imports, a rendezvous) is never called stalled;
- for a command without markers, any output too, a line or a progress bar's redraw
  (`\\r`): nothing else says it is alive. A command with markers has said what its
  progress looks like, and a stuck program often keeps printing (a heartbeat, a
  watchdog's warnings, a collective's retries), so there only its markers count. A
  workload's progress is its events; its output is the program's, not the harness's;
- a marker's match that reports a step counts only where it moves the phase and step
  the last such match reported: a progress bar stuck at 7/10 that keeps redrawing its
  elapsed time (a refresh timer, rich's auto_refresh) matches at every redraw, and
  counted as progress it never stalled. A match without a step has nothing to compare.

Time in which the attempt's threads waited for a CPU does not count (cpuwait.py): a
starved program is not a stuck one. The runner that can see the attempt's processes hands
the watch a `CpuWait` (`count_cpu_wait`); without one the stall is the wall clock. A wait
the kernel has not counted yet (`CpuWait.unseen`) only holds the stall back: a real hang
is called at most one poll later.

The events file is read from where the last read stopped, whole lines only, at most
`_READ_BYTES` per turn: a child that floods it is behind by a turn, never misread. Which
process wrote an event is not asked (evidence.py decides whose word a harness event is):
progress from any process of the attempt is progress of the attempt.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from reprospec.process.childprotocol import PROGRESS_EVENTS

# Bytes of events.jsonl read per turn of the watching loop.
_READ_BYTES = 1 << 20
# A longer line is no event the classifier would read either (evidence.py): skipped.
_MAX_LINE = 64 * 1024
# The event written before its work (see above): where the attempt is, not that it moves.
_NOT_PROGRESS = frozenset({"import"})


class CpuWaitReader(Protocol):
    """What the watch asks of `cpuwait.CpuWait`: the seconds the attempt waited for a CPU
    since the last call (`elapsed` seconds ago), and the seconds it may have waited that
    no reading has counted yet."""

    def __call__(self, elapsed: float) -> float: ...

    def unseen(self) -> float: ...


def is_progress(line: bytes) -> bool:
    """Whether one line of events.jsonl is progress (see the module's docstring)."""
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict) and is_progress_event(event)


def marker_position(event: Mapping[str, object]) -> tuple[object, object] | None:
    """The (phase, step) a marker event reports, where it reports a step (None: it is no
    marker event, or has no step): the same position again is a redraw, not progress."""
    if event.get("event") != "marker" or event.get("step") is None:
        return None
    return (event.get("phase"), event.get("step"))


def is_progress_event(event: Mapping[str, object]) -> bool:
    """Whether one event of events.jsonl, read, is progress (`is_progress` of its line)."""
    kind = event.get("event")
    return kind is None or (kind in PROGRESS_EVENTS and kind not in _NOT_PROGRESS)


class ProgressWatch:
    """The time of an attempt's last progress, and when it has stalled.

    `output_counts`: the attempt is a command without markers, whose output is its
    progress. Times are `time.monotonic()`, as the watching loop's.
    """

    def __init__(self, events_path: Path, stall_s: float, *, output_counts: bool) -> None:
        self.stall_s = stall_s
        self.output_counts = output_counts
        self._path = events_path
        self._fd = -1
        self._partial = b""
        self._skipping = False
        # The attempt's output bytes at the last `output` call.
        self._printed = 0
        # When the last progress was seen; None until the first.
        self.last: float | None = None
        # Since the last progress: seconds in which the attempt waited for a CPU (cpuwait.py).
        self.waited_s = 0.0
        self._cpu_wait: CpuWaitReader | None = None
        self._polled: float | None = None
        # The (phase, step) of the last marker event that reported a step.
        self._marker_at: tuple[object, object] | None = None

    def count_cpu_wait(self, cpu_wait: CpuWaitReader) -> None:
        """Leave out of the stall the time `cpu_wait` says the attempt waited for a CPU (the
        longest wait of one of its threads since the last call, asked with the seconds
        since then: `cpuwait.CpuWait`), and do not call a stall on a wait it has not
        counted yet."""
        self._cpu_wait = cpu_wait

    def _progressed(self, now: float) -> None:
        self.last = now
        self.waited_s = 0.0

    def output(self, now: float, printed: int) -> None:
        """`printed`: the bytes the attempt has printed so far (the pump's count); more than
        at the last call is output, progress where output counts."""
        if printed != self._printed:
            self._printed = printed
            if self.output_counts:
                self._progressed(now)

    def poll(self, now: float) -> None:
        """Read what was appended to events.jsonl since the last poll, and, once there was
        progress, how long the attempt waited for a CPU since the last poll."""
        if self._cpu_wait is not None:
            # Read at every poll, from the start: the reading before the first progress is
            # the baseline of the wait after it (the engine's own sweep may come seconds
            # late on a loaded machine). Read before the events: a wait that ends in
            # progress is forgotten with it.
            waited = self._cpu_wait(0.0 if self._polled is None else now - self._polled)
            if self._polled is not None and self.last is not None:
                # A wait that began before the last poll counts whole (cpuwait.py), but the
                # waits since the last progress never add up to more than the time since it
                # (a wait that began before it; output between two polls). The first call
                # is a baseline.
                self.waited_s = min(self.waited_s + max(0.0, waited), now - self.last)
            self._polled = now
        if self._fd < 0:
            try:
                self._fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return  # not made yet (the runner makes it before the child starts)
        try:
            data = os.read(self._fd, _READ_BYTES)
        except OSError:
            return
        if not data:
            return
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        found = False
        for line in lines:
            if self._skipping:
                self._skipping = False  # the end of an over-long line
            elif self._moved(line):
                found = True
        if found:
            self._progressed(now)
        if len(self._partial) > _MAX_LINE:
            self._partial, self._skipping = b"", True

    def _moved(self, line: bytes) -> bool:
        """Whether one line of events.jsonl is progress: a progress event, and for a marker
        that reports a step, a position other than the last one's (see the module's
        docstring). Every line is read: a redraw after a move must find the move's step."""
        try:
            event = json.loads(line)
        except ValueError:
            return False
        if not isinstance(event, dict) or not is_progress_event(event):
            return False
        position = marker_position(event)
        if position is None:
            return True
        if position == self._marker_at:
            return False
        self._marker_at = position
        return True

    def stalled(self, now: float) -> bool:
        """Whether the attempt made progress once and then none for `stall_s` until `now`,
        not counting the time it waited for a CPU, nor a wait not counted yet."""
        if self.last is None or now - self.last - self.waited_s < self.stall_s:
            return False
        unseen = 0.0 if self._cpu_wait is None else self._cpu_wait.unseen()
        return now - self.last - self.waited_s - unseen >= self.stall_s

    def close(self) -> None:
        """Close the events file."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
