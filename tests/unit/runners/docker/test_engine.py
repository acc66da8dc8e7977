"""The docker runner's output pump (engine.py OutputPump) under `run.stall`'s judge.

The runner judged a stall on the output thread's count as it stood: an engine starved for
the whole stall window left the container's lines unread on the attach socket (or read and
not yet counted), and a container that printed all along was called stalled, as the local
runner's was before its judge read the pipes first (pt40 item 3; pt42). The seam: a stream
of the test's own whose thread takes its next frame late, as a starved thread does, and
says the bytes are waiting until it has.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.process.progress import ProgressWatch
from reprospec.process.run import StallJudge
from reprospec.runners.docker.engine import OutputPump, _socket_waiting
from tests.support.sinks import KeptSink


class _LateStream:
    """`epoch 1` at once; `epoch 2` once `printed` is set, taken 0.1 s late; then nothing.
    `waiting` says the second line is on the socket until the thread has counted it (it
    asks for the next frame)."""

    def __init__(self) -> None:
        self.printed = threading.Event()
        self.held = threading.Event()
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        yield b"epoch 1\n", None
        self.printed.wait()
        time.sleep(0.1)  # the starved thread wakes late
        yield b"epoch 2\n", None
        self.held.clear()
        self.closed.wait()

    def waiting(self) -> bool:
        return self.held.is_set()

    def close(self) -> None:
        self.closed.set()


def test_a_line_the_output_thread_has_not_counted_is_waited_for_before_a_stall(
    tmp_path: Path,
) -> None:
    stream = _LateStream()
    kept = KeptSink()
    pump = OutputPump(stream, kept, KeptSink(), waiting=stream.waiting)
    pump.thread.start()
    try:
        deadline = time.monotonic() + 10
        while pump.bytes_read < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        events = tmp_path / "events.jsonl"
        events.touch()
        watch = ProgressWatch(events, 5.0, output_counts=True)
        watch.output(100.0, pump.bytes_read)  # its first line: progress at 100
        judge = StallJudge(watch, pump)
        # It printed again; the thread has not taken it yet.
        stream.held.set()
        stream.printed.set()
        watch.output(200.0, pump.bytes_read)
        # What the thread's count said as it stood: a stall.
        assert watch.stalled(200.0)
        assert not judge.stalled(200.0)
        assert kept.data == b"epoch 1\nepoch 2\n"
        assert watch.last == 200.0
        # Nothing more waiting: a stall, called.
        assert judge.stalled(205.0)
    finally:
        stream.close()
        assert pump.finish(5.0)
    assert not pump.thread.is_alive()
    # The output's end is not the container's: a stall is still judged.
    assert not pump.exited
    assert pump.drain() == 0


def _sdk_stream(raw: object) -> SimpleNamespace:
    """The SDK's CancellableStream as `_socket_waiting` reads it: `raw`, its response's
    socket file (`_response.raw._fp.fp.raw`), which holds the socket."""
    fp = SimpleNamespace(fp=SimpleNamespace(raw=raw))
    return SimpleNamespace(_response=SimpleNamespace(raw=SimpleNamespace(_fp=fp)))


def test_the_attach_streams_socket_is_asked_whether_bytes_wait() -> None:
    # The SDK's CancellableStream: its response's socket, found as its own close finds it.
    ours, theirs = socket.socketpair()
    with ours, theirs:
        waiting = _socket_waiting(_sdk_stream(SimpleNamespace(sock=ours)))
        assert not waiting()
        theirs.sendall(b"\x01\x00\x00\x00\x00\x00\x00\x02ok")
        assert waiting()
        ours.recv(64)
        assert not waiting()
    # A stream without one: nothing is known to wait.
    assert not _socket_waiting(iter(()))()  # type: ignore[arg-type]


class _TlsSocket:
    """A TLS socket's face: its file descriptor, and `pending`, the bytes decrypted and held
    in the SSL object, which poll on the descriptor does not see."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.held = 0

    def fileno(self) -> int:
        return self._sock.fileno()

    def pending(self) -> int:
        return self.held


def test_bytes_a_tls_socket_holds_decrypted_are_waiting() -> None:
    # The SSL object had read the frame off the descriptor; poll said nothing waits.
    ours, theirs = socket.socketpair()
    with ours, theirs:
        tls = _TlsSocket(ours)
        waiting = _socket_waiting(_sdk_stream(SimpleNamespace(_sock=tls)))
        assert not waiting()
        tls.held = 10
        assert waiting()
