"""Child output as files: capped logs (head + tail) and `markers` turned into progress events.

Everything here works on raw bytes pushed in by whoever reads the child's
streams (process.py for local attempts, the docker runner for container
output), so memory and disk stay bounded whatever the child prints.

Markers are matched on a thread of their own (`MarkerMatcher`), never in the
thread that pumps output and enforces the attempt's timeout: a marker regex
from a stranger's spec may backtrack for hours. Each match is bounded
(`patterns.search`, MARKER_MATCH_TIMEOUT_S, lines cut to MAX_MARKER_LINE_CHARS);
a marker that stalls is dropped for the rest of the attempt with a warning.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeAlias

import regex

from reprospec import patterns
from reprospec.bounds import MARKER_MATCH_TIMEOUT_S, MAX_MARKER_LINE_CHARS
from reprospec.jsontypes import JsonObject, JsonValue
from reprospec.models import Marker

HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 20
# A newline-less flood must not grow the line buffer or make the regexes slow.
MAX_LINE_BYTES = 64 << 10
# Events are read back whole by the classifier and the report; a line excerpt is enough.
MAX_EVENT_LINE_CHARS = 1000

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class Sink(Protocol):
    """Where a child's stream goes: raw bytes in, closed once at the end."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class CappedLog:
    """A log file that keeps the first `head` and the last `tail` bytes of a stream.

    The head goes to disk as it arrives; the tail lives in a fixed-size ring and is
    written after an omission line on `close()`.
    """

    def __init__(self, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.path = path
        self.total = 0
        self._head_left = head
        self._head_written = 0
        self._tail = tail
        # Allocated only once the head is full: most logs never need it.
        self._ring = bytearray()
        self._ring_pos = 0
        self._ring_len = 0
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()

    @property
    def omitted(self) -> int:
        """Bytes of the stream kept in neither the head nor the tail."""
        return self.total - self._head_written - self._ring_len

    def write(self, data: bytes) -> None:
        """Append a chunk of the stream."""
        if not data:
            return
        self.total += len(data)
        view = memoryview(data)
        if self._head_left > 0:
            part = view[: self._head_left]
            self._file.write(part)
            # Flushed so the head is readable on disk while the child still runs.
            self._file.flush()
            self._head_left -= len(part)
            self._head_written += len(part)
            view = view[len(part) :]
        if view:
            self._into_ring(view)

    def _into_ring(self, view: memoryview) -> None:
        size = self._tail
        if size == 0:
            return
        if not self._ring:
            self._ring = bytearray(size)
        if len(view) >= size:
            self._ring[:] = view[len(view) - size :]
            self._ring_pos = 0
            self._ring_len = size
            return
        first = min(len(view), size - self._ring_pos)
        self._ring[self._ring_pos : self._ring_pos + first] = view[:first]
        rest = len(view) - first
        if rest:
            self._ring[:rest] = view[first:]
        self._ring_pos = (self._ring_pos + len(view)) % size
        self._ring_len = min(size, self._ring_len + len(view))

    def _tail_bytes(self) -> bytes:
        if self._ring_len < len(self._ring):
            return bytes(self._ring[: self._ring_len])
        return bytes(self._ring[self._ring_pos :] + self._ring[: self._ring_pos])

    def close(self) -> None:
        """Write the omission line and the tail, then close the file."""
        if self._file.closed:
            return
        omitted = self.omitted
        if omitted > 0:
            self._file.write(f"\n[reprospec: {omitted} bytes omitted]\n".encode())
        self._file.write(self._tail_bytes())
        self._file.close()


class EventWriter:
    """Appends JSON events to events.jsonl: one `os.write` per event on an O_APPEND fd.

    One write per event keeps lines whole when the child and the engine append to
    the same file at once.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._lock = threading.Lock()

    def write(self, event: Mapping[str, JsonValue]) -> None:
        """Append one event (a JSON object) as one line."""
        line = json.dumps(event, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._fd >= 0:
                os.write(self._fd, line.encode())

    def close(self) -> None:
        """Close the file descriptor; later writes are dropped."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


# (named here: the marker's field `regex` would hide the module in the class body)
Pattern: TypeAlias = regex.Pattern[str]


@dataclass(frozen=True)
class CompiledMarker:
    """A `Marker` with its regex compiled (a `regex` Pattern, searched with a timeout)."""

    regex: Pattern
    phase: str | None
    step: int | None

    @property
    def pattern(self) -> str:
        return str(self.regex.pattern)


def compile_markers(markers: Iterable[Marker]) -> tuple[tuple[CompiledMarker, ...], list[str]]:
    """Compile marker regexes: (the valid ones, warnings naming the invalid ones)."""
    compiled: list[CompiledMarker] = []
    warnings: list[str] = []
    for marker in markers:
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


class MarkerMatcher:
    """Matches output lines against markers on its own thread and writes their events.

    `submit` never blocks (it is called by the thread that enforces the timeout);
    `close` waits at most CLOSE_WAIT_S and returns the warnings: markers that
    stalled, lines skipped because matching fell behind.
    """

    def __init__(
        self,
        markers: Sequence[CompiledMarker],
        events: EventWriter,
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
        self._queue: queue.Queue[tuple[float, str] | None] = queue.Queue(maxsize=max_pending)
        self._stop = threading.Event()
        self._warnings: list[str] = []
        self._lock = threading.Lock()
        self.skipped = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="reprospec-markers", daemon=True)
        self._thread.start()

    def submit(self, line: str) -> None:
        """Queue one output line (cut to MAX_MARKER_LINE_CHARS); never blocks."""
        if self._closed:
            return
        try:
            self._queue.put_nowait((time.time(), line[:MAX_MARKER_LINE_CHARS]))
        except queue.Full:
            self.skipped += 1

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
                with self._lock:
                    self._warnings.append(
                        f"markers: matching had not finished {self._queue.qsize()} line(s) "
                        f"{CLOSE_WAIT_S:g}s after the attempt ended; their events are missing"
                    )
            if self.skipped:
                with self._lock:
                    self._warnings.append(
                        f"markers: {self.skipped} output line(s) were not matched: "
                        "matching fell behind the output"
                    )
        with self._lock:
            return list(self._warnings)

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
            seen, line = item
            for index, marker in enumerate(self._markers):
                if not self._active[index] or self._stop.is_set():
                    continue
                begin = time.monotonic()
                try:
                    event = match_marker(marker, line, self._timeout_s)
                except patterns.PatternTimeout:
                    self._active[index] = False
                    self._warn(
                        f"marker {marker.pattern!r} stalled: matching one line took more than "
                        f"{self._timeout_s:g}s; it was not matched for the rest of the attempt"
                    )
                    continue
                self._spent[index] += time.monotonic() - begin
                if self._spent[index] > self._budget_s:
                    self._active[index] = False
                    self._warn(
                        f"marker {marker.pattern!r} stalled: it used more than "
                        f"{self._budget_s:g}s of matching; it was not matched for the rest "
                        "of the attempt"
                    )
                if event is not None:
                    self._events.write({"t": seen, **event})


class MarkerScanner:
    """Splits a byte stream into lines and hands each to a MarkerMatcher.

    A line is the text after its last carriage return (what a terminal would show
    of a progress bar), with ANSI escapes removed; at most MAX_LINE_BYTES of it
    are kept. Given markers and events (not a shared `matcher`), the scanner owns
    its matcher: `close` then waits for it, and `warnings` holds what it said.
    """

    def __init__(
        self,
        markers: Sequence[CompiledMarker] = (),
        events: EventWriter | None = None,
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
        """Scan the last line, even without a final newline (and stop an owned matcher)."""
        if self._buf:
            self._end_line()
        if self._owned:
            self.warnings = self._matcher.close()

    def _append(self, piece: bytes) -> None:
        if not piece:
            return
        if self._pending_cr:
            self._buf.clear()
            self._pending_cr = False
        stripped = piece.rstrip(b"\r")
        if len(stripped) < len(piece):
            self._pending_cr = True
        redraw = stripped.rfind(b"\r")
        if redraw >= 0:
            self._buf.clear()
            stripped = stripped[redraw + 1 :]
        room = self._max_line - len(self._buf)
        if room > 0:
            self._buf += stripped[:room]

    def _end_line(self) -> None:
        raw = bytes(self._buf)
        self._buf.clear()
        self._pending_cr = False
        if not raw:
            return
        self._matcher.submit(_ANSI.sub("", raw.decode("utf-8", "replace")))


class Tee:
    """Sends every chunk to several sinks (a capped log and a marker scanner)."""

    def __init__(self, *sinks: Sink) -> None:
        self._sinks = sinks

    def write(self, data: bytes) -> None:
        """Pass a chunk to every sink."""
        for sink in self._sinks:
            sink.write(data)

    def close(self) -> None:
        """Close every sink."""
        for sink in self._sinks:
            sink.close()


def output_sink(
    log_path: Path,
    markers: Sequence[CompiledMarker] = (),
    events: EventWriter | None = None,
    head: int = HEAD_BYTES,
    tail: int = TAIL_BYTES,
    matcher: MarkerMatcher | None = None,
) -> Sink:
    """The sink for one child stream: a capped log, plus marker scanning when markers exist.

    Pass a shared `matcher` (one per attempt, closed by the runner, which collects
    its warnings); markers + events give the sink a matcher of its own.
    """
    log = CappedLog(log_path, head=head, tail=tail)
    if matcher is not None:
        return Tee(log, MarkerScanner(matcher=matcher))
    if markers and events is not None:
        return Tee(log, MarkerScanner(markers, events))
    return log
