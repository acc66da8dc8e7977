"""Spec `markers`: output lines that match a marker's regex become progress events.

Markers are matched on a thread of their own (`MarkerMatcher`), never in the
thread that pumps output and enforces the attempt's timeout: a marker regex
from a stranger's spec may backtrack for hours. Each match is bounded
(`patterns.search`, MARKER_MATCH_TIMEOUT_S, lines cut to MAX_MARKER_LINE_CHARS);
a marker that stalls is dropped for the rest of the attempt with a warning.
`MarkerScanner` cuts a child's byte stream into lines for it (capture.py puts it
beside the capped log).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias

from reprospec.core import patterns
from reprospec.core.bounds import MARKER_MATCH_TIMEOUT_S, MAX_MARKER_LINE_CHARS
from reprospec.core.inputs import Marker
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.logtext import without_escapes
from reprospec.core.words import plural, plural_verb

if TYPE_CHECKING:
    import regex


class EventSink(Protocol):
    """Where a matched marker's event goes: output.py's EventWriter (events.jsonl).

    A Protocol, so this module does not import output.py, which imports it.
    """

    def write(self, event: Mapping[str, JsonValue]) -> None: ...


# A newline-less flood must not grow the line buffer or make the regexes slow.
MAX_LINE_BYTES = 64 << 10
# Events are read back whole by the classifier and the report; a line excerpt is enough.
MAX_EVENT_LINE_CHARS = 1000


# (named here: the marker's field `regex` would hide the module in the class body; a
# string, since `regex` is imported only by a spec with markers: patterns.py)
Pattern: TypeAlias = "regex.Pattern[str]"


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class CompiledMarker(NamedTuple):
    """A `Marker` with its regex compiled (a `regex` Pattern, searched with a timeout)."""

    regex: Pattern
    phase: str | None
    step: int | None

    @property
    def pattern(self) -> str:
        return str(self.regex.pattern)


def compile_markers(markers: Iterable[Marker]) -> tuple[tuple[CompiledMarker, ...], list[str]]:
    """Compile marker regexes: (the valid ones, warnings naming the invalid ones)."""
    wanted = tuple(markers)
    if not wanted:
        return (), []
    import regex  # only a spec with markers pays for it (patterns.py)

    compiled: list[CompiledMarker] = []
    warnings: list[str] = []
    for marker in wanted:
        try:
            pattern = patterns.compile_bounded(marker.pattern)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            warnings.append(f"marker {marker.pattern!r} ignored: invalid regex: {exc}")
            continue
        compiled.append(CompiledMarker(pattern, marker.phase, marker.step))
    return tuple(compiled), warnings


def match_marker(
    marker: CompiledMarker, line: str, timeout_s: float = MARKER_MATCH_TIMEOUT_S
) -> JsonObject | None:
    """The marker event (without `t`) of one line, or None; PatternTimeout past `timeout_s`."""
    found = patterns.search(marker.regex, line[:MAX_MARKER_LINE_CHARS], timeout_s)
    if found is None:
        return None
    groups = found.groupdict()
    phase = groups.get("phase") or marker.phase
    step: int | None = marker.step
    if groups.get("step") is not None:
        try:
            step = int(groups["step"])
        except ValueError:
            step = marker.step
    return {"event": "marker", "phase": phase, "step": step, "line": line[:MAX_EVENT_LINE_CHARS]}


def match_markers(markers: Sequence[CompiledMarker], line: str) -> list[JsonObject]:
    """The marker events (without `t`) that one output line produces (a stalled marker: none)."""
    events: list[JsonObject] = []
    for marker in markers:
        try:
            event = match_marker(marker, line)
        except patterns.PatternTimeout:
            continue
        if event is not None:
            events.append(event)
    return events


# Lines waiting to be matched; past this the matcher is behind and lines are skipped.
MAX_PENDING_LINES = 2000
# Matching time one marker may use over a whole attempt before it is dropped.
MARKER_BUDGET_S = 2.0
# How long closing waits for the lines still queued.
CLOSE_WAIT_S = 2.0
# The output's last lines, matched again at the end by the markers that missed them (one
# dropped for its budget, lines skipped while matching fell behind): the last step a
# program printed is at its end, and a run judged `step` by one 700,000 lines old.
TAIL_LINES = 200


class MarkerMatcher:
    """Matches output lines against markers on its own thread and writes their events.

    `submit` never blocks (it is called by the thread that enforces the timeout);
    `close` waits at most CLOSE_WAIT_S and returns the warnings: markers that
    stalled, lines skipped because matching fell behind.
    """

    def __init__(
        self,
        markers: Sequence[CompiledMarker],
        events: EventSink,
        timeout_s: float = MARKER_MATCH_TIMEOUT_S,
        budget_s: float = MARKER_BUDGET_S,
        max_pending: int = MAX_PENDING_LINES,
    ) -> None:
        self._markers = list(markers)
        self._events = events
        self._timeout_s = timeout_s
        self._budget_s = budget_s
        self._spent = [0.0] * len(self._markers)
        self._active = [True] * len(self._markers)
        self._queue: queue.Queue[tuple[int, float, str] | None] = queue.Queue(maxsize=max_pending)
        self._stop = threading.Event()
        self._warnings: list[str] = []
        self._lock = threading.Lock()
        self.skipped = 0
        self._closed = False
        # (number, time seen, line) of the last TAIL_LINES lines submitted, and for each
        # marker the number of the first line it did not see (dropped for its budget), the
        # lines the thread was handed, and those it never was (skipped, or still queued).
        self._tail: deque[tuple[int, float, str]] = deque(maxlen=TAIL_LINES)
        self._submitted = 0
        self._unmatched_from: list[int | None] = [None] * len(self._markers)
        self._timed_out = [False] * len(self._markers)
        self._handled = 0
        self._skipped_numbers: deque[int] = deque(maxlen=TAIL_LINES)
        self._thread = threading.Thread(target=self._run, name="reprospec-markers", daemon=True)
        self._thread.start()

    def submit(self, line: str, seen: float | None = None) -> None:
        """Queue one output line (cut to MAX_MARKER_LINE_CHARS); never blocks. `seen`: when
        it was written, where that is not now (a line left unended, scanned at the end)."""
        if self._closed:
            return
        self._submitted += 1
        item = (self._submitted, seen or time.time(), line[:MAX_MARKER_LINE_CHARS])
        self._tail.append(item)
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.skipped += 1
            self._skipped_numbers.append(self._submitted)

    def close(self) -> list[str]:
        """Finish the queued lines (bounded wait) and stop; returns the warnings."""
        if not self._closed:
            self._closed = True
            deadline = time.monotonic() + CLOSE_WAIT_S
            while self._thread.is_alive() and time.monotonic() < deadline:
                try:
                    self._queue.put(None, timeout=0.05)
                    break
                except queue.Full:
                    continue
            self._thread.join(max(0.0, deadline - time.monotonic()))
            if self._thread.is_alive():
                self._stop.set()
                # It stops between two matches (one takes at most the match timeout): the
                # output's end is then matched here (_match_tail), which an alive thread's
                # state would forbid.
                self._thread.join(self._timeout_s + 0.25)
                with self._lock:
                    self._warnings.append(
                        f"markers: matching had not finished {plural(self._queue.qsize(), 'line')} "
                        f"{CLOSE_WAIT_S:g}s after the attempt ended; their events are missing"
                    )
            if self.skipped:
                with self._lock:
                    self._warnings.append(
                        f"markers: {plural_verb(self.skipped, 'output line')} not matched: "
                        "matching fell behind the output"
                    )
            self._match_tail()
        with self._lock:
            return list(self._warnings)

    def _match_tail(self) -> None:
        """Match the output's last lines with each marker that missed them (dropped for its
        budget, or lines skipped or left queued), after the thread stopped: their events come
        last, so the attempt's step is where the output ended, not where matching stopped."""
        if self._thread.is_alive():
            return  # a marker stuck in a line: it still holds the markers' state
        skipped = set(self._skipped_numbers)
        found = 0
        for number, seen, line in self._tail:
            missed = number in skipped or number > self._handled
            for index, marker in enumerate(self._markers):
                if self._timed_out[index]:
                    continue  # one line took it past its timeout: not again
                dropped = self._unmatched_from[index]
                if not missed and (dropped is None or number < dropped):
                    continue  # the thread matched this line with it
                try:
                    event = match_marker(marker, line, self._timeout_s)
                except patterns.PatternTimeout:
                    self._timed_out[index] = True
                    continue
                if event is not None:
                    self._events.write({"t": seen, **event})
                    found += 1
        if found:
            self._warn(
                f"markers: the output's last {plural_verb(len(self._tail), 'line')} "
                "matched after the attempt "
                f"ended ({plural(found, 'event')}): the step and phase are where it ended"
            )

    def _warn(self, text: str) -> None:
        with self._lock:
            self._warnings.append(text)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue  # look at _stop again: close() may have given up on us
            if item is None:
                return
            number, seen, line = item
            for index, marker in enumerate(self._markers):
                if not self._active[index] or self._stop.is_set():
                    continue
                begin = time.monotonic()
                try:
                    event = match_marker(marker, line, self._timeout_s)
                except patterns.PatternTimeout:
                    self._active[index] = False
                    self._timed_out[index] = True
                    self._warn(
                        f"marker {marker.pattern!r} stalled: matching one line took more than "
                        f"{self._timeout_s:g}s; it was not matched for the rest of the attempt"
                    )
                    continue
                self._spent[index] += time.monotonic() - begin
                if self._spent[index] > self._budget_s:
                    self._active[index] = False
                    self._unmatched_from[index] = number + 1
                    self._warn(
                        f"marker {marker.pattern!r} stalled: it used more than "
                        f"{self._budget_s:g}s of matching; it was not matched for the rest "
                        "of the attempt"
                    )
                if event is not None:
                    self._events.write({"t": seen, **event})
            if not self._stop.is_set():
                self._handled = number  # stopped within it, its later markers never saw it


class MarkerScanner:
    """Splits a byte stream into lines and hands each to a MarkerMatcher.

    A line is the text after its last carriage return (what a terminal would show
    of a progress bar), with ANSI escapes removed; at most MAX_LINE_BYTES of it
    are kept. A bar redrawn in place (a carriage return, no newline until it closes)
    is a line at each redraw, the last one drawn before it: else its steps came only
    once the attempt ended, and `run.stall` saw no progress from a bar at all. Given
    markers and events (not a shared `matcher`), the scanner owns
    its matcher: `close` then waits for it, and `warnings` holds what it said.
    """

    def __init__(
        self,
        markers: Sequence[CompiledMarker] = (),
        events: EventSink | None = None,
        max_line: int = MAX_LINE_BYTES,
        matcher: MarkerMatcher | None = None,
    ) -> None:
        self._owned = matcher is None
        if matcher is None:
            if events is None:
                raise ValueError("MarkerScanner needs an EventWriter or a shared MarkerMatcher")
            matcher = MarkerMatcher(markers, events)
        self._matcher = matcher
        self._max_line = max_line
        self._buf = bytearray()
        # A trailing "\r" may be the first half of "\r\n": decide when the next byte arrives.
        self._pending_cr = False
        # When the line in the buffer began: pytest -v writes `path::test ` as a test starts
        # and ends the line when it ends, so a hung test's line is scanned only at close, and
        # its event was stamped at the kill ("last progress 0.0 s before the timeout").
        self._begun: float | None = None
        self.warnings: list[str] = []

    def write(self, data: bytes) -> None:
        """Feed a chunk of the stream."""
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                self._append(data[start:])
                return
            self._append(data[start:newline])
            self._end_line()
            start = newline + 1

    def close(self) -> None:
        """Scan the last line, even without a final newline, as of when it began (and stop an
        owned matcher)."""
        if self._buf:
            self._end_line(self._begun)
        if self._owned:
            self.warnings = self._matcher.close()

    def _append(self, piece: bytes) -> None:
        if not piece:
            return
        if self._pending_cr:
            self._end_line()  # a "\r" not followed by "\n": a redraw of what was drawn
        stripped = piece.rstrip(b"\r")
        redraw = stripped.rfind(b"\r")
        if redraw >= 0:
            # The bar last drawn before this redraw is a line (the ones drawn and redrawn
            # within this chunk never showed: only the last of them is).
            drawn = stripped[:redraw]
            earlier = drawn.rfind(b"\r")
            if earlier >= 0:
                self._buf.clear()
                drawn = drawn[earlier + 1 :]
            self._keep(drawn)
            self._end_line()
            stripped = stripped[redraw + 1 :]
        self._keep(stripped)
        # Set last: the redraw's _end_line above clears it, and a chunk ending in "\r" then
        # glued the next redraw onto its bar ("step 7step 8", neither step matched).
        self._pending_cr = piece.endswith(b"\r")

    def _keep(self, piece: bytes) -> None:
        if piece and not self._buf:
            self._begun = time.time()
        room = self._max_line - len(self._buf)
        if room > 0:
            self._buf += piece[:room]

    def _end_line(self, seen: float | None = None) -> None:
        raw = bytes(self._buf)
        self._buf.clear()
        self._pending_cr = False
        if not raw:
            return
        self._matcher.submit(without_escapes(raw.decode("utf-8", "replace")), seen)
