"""The process layer in-process: capped logs, event lines, markers, timestamps."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from reprospec.core.inputs import Marker
from reprospec.core.logtext import excerpt
from reprospec.process import run
from reprospec.process.output import (
    CappedLog,
    EventWriter,
    MarkerScanner,
    compile_markers,
)

# -- capped logs -------------------------------------------------------------------------


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("size", [7, 10, 11, 64, 1000])
def test_capped_log_keeps_head_and_tail(tmp_path: Path, size: int, lazy: bool) -> None:
    rng = random.Random(size)
    data = bytes(rng.randrange(256) for _ in range(size))  # NUL bytes included
    log = CappedLog(tmp_path / "log", head=4, tail=6, lazy=lazy)
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 9)
        log.write(data[pos : pos + step])
        pos += step
    log.close()
    got = (tmp_path / "log").read_bytes()
    if size <= 10:
        assert got == data
    else:
        assert got == data[:4] + f"\n[... {size - 10} bytes omitted ...]\n".encode() + data[-6:]
    assert log.total == size


def test_a_capped_logs_omission_is_counted_by_the_reports_excerpt(tmp_path: Path) -> None:
    # The writer wrote `[reprospec: N bytes omitted]`, a line the report's excerpt did not
    # know: its "... unread bytes omitted" left out every byte dropped as the log was written.
    log = CappedLog(tmp_path / "log", head=200, tail=200)
    lines = b"".join(b"%d\n" % n for n in range(1000))
    log.write(lines)
    log.close()
    text = (tmp_path / "log").read_text()
    said = excerpt(text, max_lines=10)
    assert "unread bytes omitted" in said
    assert str(len(lines) - 400) in said


def test_an_empty_stream_leaves_an_empty_log_or_none_when_lazy(tmp_path: Path) -> None:
    eager, lazy = CappedLog(tmp_path / "eager"), CappedLog(tmp_path / "lazy", lazy=True)
    for log in (eager, lazy):
        log.write(b"")
        log.close()
        log.close()  # twice: the second does nothing
    assert (tmp_path / "eager").read_bytes() == b""
    assert not (tmp_path / "lazy").exists()


@pytest.mark.parametrize("lazy", [False, True])
def test_capped_log_head_is_on_disk_while_running(tmp_path: Path, lazy: bool) -> None:
    log = CappedLog(tmp_path / "log", head=5, tail=5, lazy=lazy)
    log.write(b"abcdefgh")
    assert (tmp_path / "log").read_bytes() == b"abcde"
    log.close()
    assert (tmp_path / "log").read_bytes() == b"abcdefgh"


# -- markers -----------------------------------------------------------------------------


def scan(
    chunks: list[bytes], markers: list[Marker], tmp_path: Path, max_line: int = 1 << 16
) -> list[dict[str, Any]]:
    compiled, warnings = compile_markers(markers)
    assert warnings == []
    events = EventWriter(tmp_path / "events.jsonl")
    scanner = MarkerScanner(compiled, events, max_line=max_line)
    for chunk in chunks:
        scanner.write(chunk)
    scanner.close()
    events.close()
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


STEP = Marker(pattern=r"^step (?P<step>\d+)$", phase="train")


def test_markers_split_across_chunks_and_crlf(tmp_path: Path) -> None:
    stream = b"step 1\r\nstep 2\nnoise\nstep 3\r\n"
    chunks = [stream[i : i + 1] for i in range(len(stream))]
    events = scan(chunks, [STEP], tmp_path)
    assert [(e["phase"], e["step"], e["line"]) for e in events] == [
        ("train", 1, "step 1"),
        ("train", 2, "step 2"),
        ("train", 3, "step 3"),
    ]


def test_markers_see_the_text_after_the_last_carriage_return(tmp_path: Path) -> None:
    events = scan([b" 10%|#\r", b" 50%|###\rstep 4", b"\n\x1b[1mstep 5\x1b[0m"], [STEP], tmp_path)
    assert [e["step"] for e in events] == [4, 5]


def test_a_bar_redrawn_in_place_is_a_line_at_each_redraw(tmp_path: Path) -> None:
    # A bar drawn with "\r" and no newline was matched only as the attempt
    # ended, so `run.stall` saw no progress from it; each redraw is a line of what was drawn
    # before it (within one chunk, the last drawn), "\r\n" still one line end.
    events = scan(
        [b"\rstep 1", b"\rstep 2", b"\rstep 3\rstep 4", b"\r", b"step 5\r", b"\n", b"\rstep 6"],
        [STEP],
        tmp_path,
    )
    assert [e["step"] for e in events] == [1, 3, 4, 5, 6]


def test_a_chunk_ending_in_a_redraw_ends_its_bar(tmp_path: Path) -> None:
    # After a chunk whose last "\r" followed a redraw inside it, the next bar was
    # glued to the one before ("step 7step 8") and neither step was seen.
    events = scan([b"step 6\rstep 7\r", b"step 8\r", b"step 9\r"], [STEP], tmp_path)
    assert [e["step"] for e in events] == [6, 7, 8, 9]


def test_markers_cap_the_line_length(tmp_path: Path) -> None:
    events = scan(
        [b"x" * 100_000, b"\rstep 6\n", b"step 7", b"y" * 100_000, b"\n"],
        [Marker(pattern=r"^step (?P<step>\d+)")],
        tmp_path,
        max_line=32,
    )
    assert [e["step"] for e in events] == [6, 7]
    assert len(events[1]["line"]) == 32


def test_marker_named_groups_and_fixed_fields(tmp_path: Path) -> None:
    markers = [
        Marker(pattern=r"Running (?P<phase>\w+)"),
        Marker(pattern=r"epoch done", phase="train", step=99),
        Marker(pattern=r"step (?P<step>\w+)", phase="eval"),
    ]
    events = scan([b"Running validation\nepoch done\nstep abc\n"], markers, tmp_path)
    assert [(e["phase"], e["step"]) for e in events] == [
        ("validation", None),
        ("train", 99),
        ("eval", None),
    ]


def test_invalid_marker_is_a_warning() -> None:
    compiled, warnings = compile_markers([Marker(pattern="(unclosed"), STEP])
    assert len(compiled) == 1
    assert "(unclosed" in warnings[0]


def test_event_writer_keeps_lines_whole_across_threads(tmp_path: Path) -> None:
    events = EventWriter(tmp_path / "events.jsonl")

    def many(n: int) -> None:
        for i in range(300):
            events.write({"writer": n, "i": i, "pad": "z" * 500})

    threads = [threading.Thread(target=many, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1200
    assert all(json.loads(line)["pad"] for line in lines)


def test_iso_timestamps() -> None:
    stamp = run.utc_now()
    assert stamp.endswith("+00:00")
    assert "T" in stamp
    assert time.time() > 0
