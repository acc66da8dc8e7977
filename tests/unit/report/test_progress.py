"""The live progress's plain form, off a terminal: a line per attempt, and a line while an
attempt runs long with nothing written."""

from __future__ import annotations

import io
import sys
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from reprospec.core.inputs import Cell
from reprospec.core.results import AttemptResult
from reprospec.report import progress


def test_off_a_terminal_a_long_attempt_is_said_to_be_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A hang waits for its timeout (5 minutes by default) and a CI log said nothing
    # after "running X (1 attempt)" all that time.
    monkeypatch.setattr(progress, "QUIET_S", 0.1)
    stream = io.StringIO()
    cell = Cell(id="default", index=0, matrix={})
    with progress.Progress(1, stream=stream) as shown:
        assert not shown.live
        shown.update("start", cell, None, 0, 1)
        deadline = time.monotonic() + 10
        while "still running" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    said = stream.getvalue().splitlines()
    assert said, "nothing said while the attempt ran"
    assert said[0].startswith("reprospec: still running: 1 attempt, the longest (default) for ")


def test_off_a_terminal_nothing_more_is_said_where_no_attempt_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "QUIET_S", 0.05)
    stream = io.StringIO()
    with progress.Progress(1, stream=stream):
        time.sleep(0.3)
    assert stream.getvalue() == ""


def test_off_a_terminal_the_longest_is_the_attempt_still_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kept by cell, an attempt of the cell that ended (on another worker thread) took the
    # start of the one still running, a hang 5 minutes in, which was said to run for 10s.
    clock = [1000.0]
    monkeypatch.setattr(progress, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(progress, "QUIET_S", 0.05)
    stream = io.StringIO()
    cell = Cell(id="flaky", index=0, matrix={})

    def short_attempt() -> None:
        clock[0] = 1290.0
        shown.update("start", cell, None, 0, 2)
        clock[0] = 1295.0
        shown.update("attempt", cell, AttemptResult.not_run(2, "skipped"), 1, 2)

    with progress.Progress(2, stream=stream) as shown:
        shown.update("start", cell, None, 0, 2)  # the hang, on this thread
        other = threading.Thread(target=short_attempt)
        other.start()
        other.join()
        clock[0] = 1300.0
        deadline = time.monotonic() + 10
        while not stream.getvalue().endswith(" for 5m00s\n") and time.monotonic() < deadline:
            time.sleep(0.02)
    last = stream.getvalue().splitlines()[-1]
    assert last == "reprospec: still running: 1 attempt, the longest (flaky) for 5m00s"


def test_off_a_terminal_a_reader_gone_is_said_by_the_quiet_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `run SPEC 2>&1 | head`: while a long attempt ran, the quiet line's EPIPE ended the
    # watching thread and nothing else, and the run went on to the attempt's end (a hang's
    # timeout) with the reader's pipeline waiting on it. The run is told (its cancel).
    monkeypatch.setattr(progress, "QUIET_S", 0.05)

    class Gone(io.StringIO):
        def write(self, _text: str) -> int:
            raise BrokenPipeError

    told = threading.Event()
    cell = Cell(id="default", index=0, matrix={})
    with progress.Progress(1, stream=Gone(), gone=told.set) as shown:
        shown.update("start", cell, None, 0, 1)
        assert told.wait(10), "the reader's going was not told"


def test_the_first_lines_eta_at_j_n_counts_the_attempts_ending_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # -j 4, 8 attempts of 10s each: the first ends at 10s with three more ending with it,
    # then four more to go, 10s. Wall time per finished attempt times the 7 left said 70s.
    clock = [1000.0]
    monkeypatch.setattr(progress, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    stream = io.StringIO()
    cells = [Cell(id=f"c={n}", index=n, matrix={"c": n}) for n in range(8)]
    ten = replace(AttemptResult.not_run(1, "ran"), duration_s=10.0)
    with progress.Progress(8, stream=stream) as shown:
        for cell in cells[:4]:
            shown.update("start", cell, None, 0, 8)
        clock[0] = 1010.0
        shown.update("attempt", cells[0], ten, 1, 8)
        first = stream.getvalue().splitlines()[-1]
        for finished, cell in enumerate(cells[1:4], start=2):
            shown.update("attempt", cell, ten, finished, 8)
        for cell in cells[4:]:
            shown.update("start", cell, None, 4, 8)
        clock[0] = 1015.0
        shown.update("attempt", cells[4], replace(ten, duration_s=5.0), 5, 8)
        later = stream.getvalue().splitlines()[-1]
    assert first.endswith(", eta 10s)"), first
    # Mean 9s an attempt; the three running 5s in have 4s left each.
    assert later.endswith(", eta 4s)"), later


def test_the_eta_at_j_1_is_not_shared_among_attempts_whose_ends_are_not_said_yet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A command line's run says an end STOPPED_SLACK_S after it (pipeline/slack.py): at -j 1
    # the attempts started meanwhile were counted as running at once with it, and 10
    # attempts of 1s, each end said 3s late, had "eta 2s" on the first line where 6.5s
    # were left (-j 1 of `sleep 0.02`, 299 left: "eta 1s").
    clock = [1000.0]
    monkeypatch.setattr(progress, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    stream = io.StringIO()
    cell = Cell(id="default", index=0, matrix={})
    second = replace(AttemptResult.not_run(1, "ran"), duration_s=1.0)

    def ended(ago: float) -> str:
        return (datetime.now(timezone.utc) - timedelta(seconds=ago)).isoformat()

    with progress.Progress(10, stream=stream) as shown:
        for start in range(4):  # one at a time, a second each
            clock[0] = 1000.0 + start
            shown.update("start", cell, None, 0, 10)
        clock[0] = 1003.5  # the first attempt's end (1001.0), said now
        shown.update("attempt", cell, replace(second, finished=ended(2.5)), 1, 10)
        first = stream.getvalue().splitlines()[-1]
        clock[0] = 1004.5  # the second's end (1002.0)
        shown.update("attempt", cell, replace(second, attempt=2, finished=ended(2.5)), 2, 10)
        later = stream.getvalue().splitlines()[-1]
    # The fourth has 0.5s left, then six more of 1s; then 0.5s and five more. Each end is
    # matched to its own start (1s before its end), not to a later attempt's (1s before
    # now), which left the first attempt's start as the one still running.
    assert first.endswith(", eta 6s)") or first.endswith(", eta 7s)"), first
    assert later.endswith(", eta 5s)") or later.endswith(", eta 6s)"), later


def test_an_attempts_line_reads_each_clock_once() -> None:
    # Said once per attempt on the run's main thread: the monotonic clock was read three
    # times a line (its end, its ETA, when it was written) and its lateness made a datetime
    # of now and a timedelta of the difference.
    cell = Cell(id="default", index=0, matrix={})
    result = replace(
        AttemptResult.not_run(1, "ran"),
        duration_s=0.001,
        finished=datetime.now(timezone.utc).isoformat(),
    )
    called: list[str] = []

    def count(_frame: object, event: str, arg: object) -> None:
        if event == "c_call":
            called.append(getattr(arg, "__name__", ""))

    stream = io.StringIO()
    with progress.Progress(10, stream=stream) as shown:
        shown.update("start", cell, None, 0, 10)
        sys.setprofile(count)
        try:
            shown.update("attempt", cell, result, 1, 10)
        finally:
            sys.setprofile(None)
    assert stream.getvalue().startswith("[1/10] default #1: ")
    assert called.count("monotonic") == 1, called
    assert "now" not in called, called
