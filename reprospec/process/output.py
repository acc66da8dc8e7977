"""Child output as files: capped logs (head + tail), events.jsonl, and the marker scanner beside.

Everything here works on raw bytes pushed in by whoever reads the child's
streams (run.py for local attempts, the docker runner for container
output), so memory and disk stay bounded whatever the child prints. Markers
(output lines that become progress events) are `markers.py`; `output_sink`
puts a capped log and a marker scanner on one stream.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from reprospec.core.capped import omission
from reprospec.core.jsontypes import JsonValue

# The runners import the marker names from here too.
from reprospec.process.markers import (
    MAX_EVENT_LINE_CHARS,
    MAX_LINE_BYTES,
    CompiledMarker,
    MarkerMatcher,
    MarkerScanner,
    compile_markers,
    match_marker,
    match_markers,
)

HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 20


class Sink(Protocol):
    """Where a child's stream goes: raw bytes in, closed once at the end."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class CappedLog:
    """A log file that keeps the first `head` and the last `tail` bytes of a stream.

    The head goes to disk as it arrives; the tail lives in a fixed-size ring and is
    written after an omission line on `close()`.
    """

    def __init__(
        self, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES, *, lazy: bool = False
    ) -> None:
        self.path = path
        self.total = 0
        self._head_left = head
        self._head_written = 0
        self._tail = tail
        # Allocated only once the head is full: most logs never need it.
        self._ring = bytearray()
        self._ring_pos = 0
        self._ring_len = 0
        # `lazy`: created at the first byte, so a stream that stays empty leaves no file
        # (most attempts that pass print nothing; their empty logs were created, then
        # removed: runfolder.prune). Closed by close().
        self._file: BinaryIO | None = None if lazy else path.open("wb")
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether close() ran (its file, when one was made, is closed)."""
        return self._closed

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
        if self._file is None:
            self._file = self._made()
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

    def _made(self) -> BinaryIO:
        """The lazy log, created at the first byte. An attempt may have removed its own
        folder by then (a cleanup step's `rm -rf .reprospec`, the run's store and folder
        with it, then `echo cleaned`): the folder is made again, so that what it printed
        after is kept and the attempt judged, where the first byte lost the output and the
        run stopped (exit 3) on the attempt's folder gone (store/db.py puts the store back)."""
        try:
            return self.path.open("wb")
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return self.path.open("wb")

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
        if self._closed:
            return
        self._closed = True
        if self._file is None:
            return  # lazy, and nothing came
        omitted = self.omitted
        if omitted > 0:
            self._file.write(b"\n" + omission(omitted))
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
    *,
    lazy: bool = False,
) -> Sink:
    """The sink for one child stream: a capped log, plus marker scanning when markers exist.

    Pass a shared `matcher` (one per attempt, closed by the runner, which collects
    its warnings); markers + events give the sink a matcher of its own. `lazy`: the log
    file is created at the first byte (CappedLog).
    """
    log = CappedLog(log_path, head=head, tail=tail, lazy=lazy)
    if matcher is not None:
        return Tee(log, MarkerScanner(matcher=matcher))
    if markers and events is not None:
        return Tee(log, MarkerScanner(markers, events))
    return log


__all__ = [
    "HEAD_BYTES",
    "MAX_EVENT_LINE_CHARS",
    "MAX_LINE_BYTES",
    "TAIL_BYTES",
    "CappedLog",
    "CompiledMarker",
    "EventWriter",
    "MarkerMatcher",
    "MarkerScanner",
    "Sink",
    "Tee",
    "compile_markers",
    "match_marker",
    "match_markers",
    "output_sink",
]
