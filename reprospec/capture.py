"""Child output as files: capped logs (head + tail) and `markers` turned into progress events.

Everything here works on raw bytes pushed in by whoever reads the child's
streams (process.py for local attempts, the docker runner for container
output), so memory and disk stay bounded whatever the child prints.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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

    def write(self, event: dict[str, Any]) -> None:
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


@dataclass(frozen=True)
class CompiledMarker:
    """A `Marker` with its regex compiled."""

    regex: re.Pattern[str]
    phase: str | None
    step: int | None


def compile_markers(markers: Iterable[Marker]) -> tuple[tuple[CompiledMarker, ...], list[str]]:
    """Compile marker regexes: (the valid ones, warnings naming the invalid ones)."""
    compiled: list[CompiledMarker] = []
    warnings: list[str] = []
    for marker in markers:
        try:
            regex = re.compile(marker.pattern)
        except re.error as exc:
            warnings.append(f"marker {marker.pattern!r} ignored: invalid regex: {exc}")
            continue
        compiled.append(CompiledMarker(regex, marker.phase, marker.step))
    return tuple(compiled), warnings


def match_markers(markers: Sequence[CompiledMarker], line: str) -> list[dict[str, Any]]:
    """The marker events (without `t`) that one output line produces."""
    events: list[dict[str, Any]] = []
    for marker in markers:
        found = marker.regex.search(line)
        if found is None:
            continue
        groups = found.groupdict()
        phase = groups.get("phase") or marker.phase
        step: int | None = marker.step
        if groups.get("step") is not None:
            try:
                step = int(groups["step"])
            except ValueError:
                step = marker.step
        events.append(
            {"event": "marker", "phase": phase, "step": step, "line": line[:MAX_EVENT_LINE_CHARS]}
        )
    return events


class MarkerScanner:
    """Splits a byte stream into lines and writes a marker event for each matching line.

    A line is the text after its last carriage return (what a terminal would show
    of a progress bar), with ANSI escapes removed; at most MAX_LINE_BYTES of it
    are kept.
    """

    def __init__(
        self,
        markers: Sequence[CompiledMarker],
        events: EventWriter,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self._markers = markers
        self._events = events
        self._max_line = max_line
        self._buf = bytearray()
        # A trailing "\r" may be the first half of "\r\n": decide when the next byte arrives.
        self._pending_cr = False

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
        """Scan the last line, even without a final newline."""
        if self._buf:
            self._end_line()

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
        line = _ANSI.sub("", raw.decode("utf-8", "replace"))
        for event in match_markers(self._markers, line):
            self._events.write({"t": time.time(), **event})


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
) -> Sink:
    """The sink for one child stream: a capped log, plus marker scanning when markers exist."""
    log = CappedLog(log_path, head=head, tail=tail)
    if markers and events is not None:
        return Tee(log, MarkerScanner(markers, events))
    return log
