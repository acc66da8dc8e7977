"""The watchdog's reader of what the engine tells it (`_told`), on a pipe in this process:
a thread reads, this one writes (no process is started)."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Iterator

import pytest

from reprospec.process import watchdog

_END = b"<end>"


@contextlib.contextmanager
def _reading() -> Iterator[tuple[int, queue.Queue[bytes], threading.Thread]]:
    """A pipe's write end, the lines `_told` yields from its read end (then _END), and
    the thread that reads them."""
    read, write = os.pipe()
    lines: queue.Queue[bytes] = queue.Queue()

    def drain() -> None:
        try:
            for line in watchdog._told(read):
                lines.put(line)
        finally:
            lines.put(_END)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        yield write, lines, thread
    finally:
        with contextlib.suppress(OSError):
            os.close(write)
        thread.join(10)
        os.close(read)


def test_told_each_it_yields_each_line_as_it_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    # EACH (the engine could not enlarge the pipe): each line is read as it is written,
    # long before the next DRAIN_S read, and none ends the reading while the pipe is open.
    # The first read is a short DRAIN_S's; then DRAIN_S is long (`_told` reads it at each
    # poll), so a reader that still polled would miss the 1.5 s gets (a first read of 3 s
    # made this the slowest unit test, review).
    monkeypatch.setattr(watchdog, "DRAIN_S", 0.05)
    with _reading() as (write, lines, thread):
        os.write(write, watchdog.EACH + b"\nattempt 1 a\n")
        assert lines.get(timeout=8) == b"attempt 1 a"  # the first DRAIN_S read
        monkeypatch.setattr(watchdog, "DRAIN_S", 30.0)
        for n in range(2, 5):
            os.write(write, b"attempt %d b\n" % n)
            assert lines.get(timeout=1.5) == b"attempt %d b" % n
        assert thread.is_alive()
        os.write(write, b"done 4")
        os.close(write)
        assert lines.get(timeout=5) == b"done 4"  # what the pipe held at its end
        assert lines.get(timeout=5) == _END


def test_told_lines_alone_it_reads_on_until_the_pipe_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Lines (POLLIN) are no hangup: the reader reads them every DRAIN_S and goes on to
    # the pipe's close, which alone ends it.
    monkeypatch.setattr(watchdog, "DRAIN_S", 0.05)
    with _reading() as (write, lines, thread):
        for n in range(3):
            os.write(write, b"path /x%d\n" % n)
        assert [lines.get(timeout=5) for _ in range(3)] == [b"path /x0", b"path /x1", b"path /x2"]
        thread.join(0.5)  # ten DRAIN_S polls, each with a line waiting or read
        assert thread.is_alive()
        assert lines.empty()
        os.close(write)
        assert lines.get(timeout=5) == _END
