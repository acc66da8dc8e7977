"""run.py's `run.stall` judge: the child's pipes are read before a stall is called.

An engine descheduled for the whole stall window left the child's lines unread in the
pipe, and the loop's output count from its previous step called a stall of a child that
printed all along (pt40 item 3). The seam: the pump over pipes of the test's own (no
child process), written to and left unread, as a starved engine leaves them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprospec.process.progress import ProgressWatch
from reprospec.process.run import StallJudge, _Pump
from reprospec.process.start import _Descriptor
from tests.support.sinks import KeptSink


class _Root:
    """The attempt's root as the pump sees it: its two pipes, and a process that runs on
    (this one: its pidfd never says it ended)."""

    def __init__(self, stdout: int, stderr: int) -> None:
        self.pid = os.getpid()
        self.returncode: int | None = None
        self.stdout = _Descriptor(stdout)
        self.stderr = _Descriptor(stderr)

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:  # noqa: ARG002 (the protocol's)
        return 0


@pytest.fixture
def pipe() -> Iterator[tuple[_Pump, int, KeptSink]]:
    """A pump over two pipes, the write end of its stdout, and the sink it fills."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    root = _Root(out_r, err_r)
    kept = KeptSink()
    pump = _Pump(root, kept, KeptSink())
    try:
        yield pump, out_w, kept
    finally:
        pump.close()
        for fd in (out_w, err_w):
            os.close(fd)
        root.stdout.close()
        root.stderr.close()


def _event(path: Path, **event: object) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(event) + "\n")


def _markers_at_100(tmp_path: Path) -> tuple[Path, ProgressWatch]:
    """A watch where only markers count (5 s stall), its last progress step 1's marker at
    100 s: the events file the markers' thread would append to, and the watch."""
    events = tmp_path / "events.jsonl"
    _event(events, event="marker", line="step 1", phase="train", step=1)
    watch = ProgressWatch(events, 5.0, output_counts=False)
    watch.poll(100.0)
    return events, watch


def test_lines_left_in_the_pipe_are_read_before_a_stall_is_called(
    tmp_path: Path, pipe: tuple[_Pump, int, KeptSink]
) -> None:
    pump, write_end, kept = pipe
    events = tmp_path / "events.jsonl"
    events.touch()
    watch = ProgressWatch(events, 5.0, output_counts=True)
    os.write(write_end, b"epoch 1\n")
    pump.drain()
    watch.output(100.0, pump.bytes_read)  # its first line: progress at 100
    # It printed again; the engine, starved, read nothing for 100 s.
    os.write(write_end, b"epoch 2\n")
    judge = StallJudge(watch, pump)
    # What the output count of the loop's last step said: a stall.
    assert watch.stalled(200.0)
    assert not judge.stalled(200.0)
    assert kept.data == b"epoch 1\nepoch 2\n"
    assert watch.last == 200.0
    # Nothing more in the pipe: a stall, called.
    assert judge.stalled(205.0)


def test_where_only_markers_count_a_line_read_holds_the_stall_back_one_sweep(
    tmp_path: Path, pipe: tuple[_Pump, int, KeptSink]
) -> None:
    pump, write_end, _ = pipe
    events, watch = _markers_at_100(tmp_path)
    judge = StallJudge(watch, pump)
    os.write(write_end, b"step 2\n")
    # The line is read; its marker's event comes from the markers' thread: not yet.
    assert not judge.stalled(200.0)
    _event(events, event="marker", line="step 2", phase="train", step=2)
    assert not judge.stalled(200.5)
    assert watch.last == 200.5
    # A line that is no marker (a heartbeat) holds it back once, not for ever.
    os.write(write_end, b"still alive\n")
    assert not judge.stalled(300.0)
    os.write(write_end, b"still alive\n")
    assert judge.stalled(300.5)


def test_an_empty_pipe_is_a_stall_at_once(
    tmp_path: Path, pipe: tuple[_Pump, int, KeptSink]
) -> None:
    pump, _, _ = pipe
    events = tmp_path / "events.jsonl"
    _event(events, event="step", phase="train", step=1)
    watch = ProgressWatch(events, 5.0, output_counts=False)
    watch.poll(100.0)
    assert StallJudge(watch, pump).stalled(106.0)


def test_lines_the_loops_own_step_read_before_the_sweep_hold_the_stall_back_too(
    tmp_path: Path, pipe: tuple[_Pump, int, KeptSink]
) -> None:
    # The starved engine wakes in the loop's step, which reads the waiting marker line just
    # before the sweep: the drain finds the pipes empty, and the line is still in the
    # markers' queue, its event not written.
    pump, write_end, _ = pipe
    events, watch = _markers_at_100(tmp_path)
    judge = StallJudge(watch, pump)
    os.write(write_end, b"step 2\n")
    pump.step(0.0)  # the loop's step
    assert not judge.stalled(200.0)
    _event(events, event="marker", line="step 2", phase="train", step=2)
    assert not judge.stalled(200.5)
    assert watch.last == 200.5


_F_GETPIPE_SZ = 1032


def test_a_pipe_is_enlarged_once_the_child_fills_it(pipe: tuple[_Pump, int, KeptSink]) -> None:
    """Both pipes were resized to 1 MiB at every attempt's start (two system calls, most
    attempts never fill 64 KiB); a pipe is resized at the first read that finds it full,
    and the child's bytes all arrive either way."""
    import fcntl

    pump, out_w, kept = pipe
    out_r = pump.proc.stdout
    assert out_r is not None
    os.write(out_w, b"a line\n")
    pump.drain()
    assert fcntl.fcntl(out_r.fileno(), _F_GETPIPE_SZ) == 1 << 16
    os.write(out_w, b"x" * (1 << 16))  # full: the write would block for a byte more
    pump.drain()
    assert fcntl.fcntl(out_r.fileno(), _F_GETPIPE_SZ) == 1 << 20
    assert kept.data == b"a line\n" + b"x" * (1 << 16)
