"""Marker matching of a stranger's regexes in-process: long lines cut, a stalled pattern dropped."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from reprospec.core.inputs import Marker
from reprospec.process import markers
from reprospec.process.output import EventWriter, MarkerMatcher, MarkerScanner, compile_markers


def test_matcher_drops_a_stalled_marker_and_keeps_matching_the_others(tmp_path: Path) -> None:
    compiled, warnings = compile_markers(
        [Marker(pattern=r"(a|aa)+b", phase="slow"), Marker(pattern=r"^step (?P<step>\d+)")]
    )
    assert warnings == []
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, timeout_s=0.05)
    scanner = MarkerScanner(matcher=matcher)
    scanner.write(b"a" * 60 + b"\nstep 1\n" + b"a" * 60 + b"b\nstep 2\n")
    scanner.close()
    found = matcher.close()
    events.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2]
    assert len(found) == 1
    assert found[0].startswith("marker '(a|aa)+b' stalled")


def test_lines_are_cut_before_matching_and_a_full_queue_skips_lines(tmp_path: Path) -> None:
    compiled, _ = compile_markers([Marker(pattern=r"(?P<step>\d+)$")])
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, max_pending=1)
    # The digits lie past MAX_MARKER_LINE_CHARS: cut off, never matched.
    matcher.submit("x" * 10_000 + "7")
    for _ in range(10_000):
        matcher.submit("5")
    found = matcher.close()
    events.close()
    assert matcher.skipped > 0
    assert any("not matched" in w for w in found)
    steps = [json.loads(x)["step"] for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert 7 not in steps


def _steps(path: Path) -> list[int]:
    return [json.loads(x)["step"] for x in path.read_text().splitlines()]


def test_lines_skipped_while_matching_fell_behind_are_matched_at_the_end(tmp_path: Path) -> None:
    # A program that logs each of 2,000,000 steps outran the matcher: the last event was
    # step 715429, and the run judged `step: 1999999` against it (not-reproduced).
    compiled, _ = compile_markers([Marker(pattern=r"^train step (?P<step>\d+)")])
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, max_pending=1)
    for step in range(5_000):
        matcher.submit(f"train step {step}")
    found = matcher.close()
    events.close()
    assert matcher.skipped > 0
    steps = _steps(tmp_path / "events.jsonl")
    assert steps[-1] == 4_999
    assert len(steps) == len(set(steps))  # no line's event written twice
    assert any("matched after the attempt ended" in w for w in found)


def test_a_marker_dropped_for_its_budget_still_matches_the_outputs_end(tmp_path: Path) -> None:
    compiled, _ = compile_markers(
        [Marker(pattern=r"^train step (?P<step>\d+)"), Marker(pattern=r"^eval (?P<step>\d+)")]
    )
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, budget_s=0.0)  # dropped after its first line
    for step in range(50):
        matcher.submit(f"train step {step}")
    found = matcher.close()
    events.close()
    steps = _steps(tmp_path / "events.jsonl")
    # Line 0 by the thread, then the tail: every line once, the last one last.
    assert steps == list(range(50))
    assert any("stalled" in w for w in found)


def test_a_marker_that_timed_out_is_not_tried_again_at_the_end(tmp_path: Path) -> None:
    compiled, _ = compile_markers([Marker(pattern=r"(a|aa)+b", phase="slow")])
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, timeout_s=0.05, max_pending=1)
    for _ in range(20):
        matcher.submit("a" * 60)
    found = matcher.close()
    events.close()
    assert (tmp_path / "events.jsonl").read_text() == ""
    assert not any("matched after the attempt ended" in w for w in found)


def test_the_outputs_end_is_matched_when_matching_had_not_finished_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # close() gave up waiting for the queued lines and stopped the thread: _match_tail saw
    # it still alive and returned, so the step stayed where matching had stopped.
    monkeypatch.setattr(markers, "CLOSE_WAIT_S", 0.05)
    compiled, _ = compile_markers([Marker(pattern=r"^train step (?P<step>\d+)")])
    events = EventWriter(tmp_path / "events.jsonl")
    slow = threading.Event()
    real = markers.match_marker

    def held(marker: markers.CompiledMarker, line: str, timeout_s: float) -> object:
        if not slow.is_set():
            time.sleep(0.01)  # the thread falls behind while the lines are queued
        return real(marker, line, timeout_s)

    monkeypatch.setattr(markers, "match_marker", held)
    matcher = MarkerMatcher(compiled, events)
    for step in range(300):
        matcher.submit(f"train step {step}")
    found = matcher.close()
    slow.set()
    events.close()
    assert any("had not finished" in w for w in found)
    assert _steps(tmp_path / "events.jsonl")[-1] == 299


def test_a_line_left_unended_is_stamped_when_it_began_not_at_close(tmp_path: Path) -> None:
    """pt35: pytest -v writes `path::test ` as a test starts and ends the line when the test
    ends: a hung test's line was scanned at close, its event stamped at the kill, and the
    hang read "last progress 0.0 s before the timeout: still progressing?" (its verify got
    no stall, and waited the whole timeout)."""
    compiled, _ = compile_markers([Marker(pattern=r"^(?P<phase>\S+\.py::\S+)")])
    events = EventWriter(tmp_path / "events.jsonl")
    scanner = MarkerScanner(compiled, events)
    scanner.write(b"t.py::test_first PASSED\nt.py::test_stuck ")
    written = time.time()
    time.sleep(0.3)
    scanner.close()
    events.close()
    found = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["phase"] for e in found] == ["t.py::test_first", "t.py::test_stuck"]
    assert found[1]["t"] <= written
