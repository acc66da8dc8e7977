"""Leftover records of a dead engine: an empty record is removed, an unreadable one kept;
a record's text is its fields' JSON."""

from __future__ import annotations

import fcntl
import io
import json
import subprocess
from pathlib import Path

import pytest

from reprospec.process import leftovers, watchdog


def test_resume_removes_an_empty_record_and_keeps_one_it_cannot_read(tmp_path: Path) -> None:
    # Empty: the engine died between creating its record and writing it, before the
    # attempt started. Unreadable otherwise: not the engine's to judge, left as found.
    empty = tmp_path / "run" / "cells" / "c" / "1" / leftovers.INFLIGHT
    garbled = tmp_path / "run" / "cells" / "c" / "2" / leftovers.INFLIGHT
    for record in (empty, garbled):
        record.parent.mkdir(parents=True)
    empty.write_text("")
    garbled.write_text('{"token": ')
    assert leftovers.reap(tmp_path / "run") == ()
    assert not empty.exists()
    assert garbled.read_text() == '{"token": '


def test_a_record_is_the_json_of_its_fields(tmp_path: Path) -> None:
    # Written without the encoder's walk: the text json.dumps gives, read back the same.
    engine = leftovers.Engine(12, 345, "b0\u00e9t")
    for record in (
        leftovers.InFlight("0f" * 16, 7 << 50, engine=engine),
        leftovers.InFlight('tok"en\\\n', None, container="c\u00fc", engine=None),
        leftovers.InFlight("t", 0, container=None, engine=leftovers.Engine(1, None, "")),
    ):
        assert record.to_json() == json.dumps(record.to_dict())
        assert leftovers.InFlight.from_dict(json.loads(record.to_json())) == record
    path = tmp_path / leftovers.INFLIGHT
    flight = leftovers.Flight(path, "ab" * 16, None)
    flight.begin()
    assert json.loads(path.read_text()) == flight.data.to_dict()
    flight.end()
    assert not path.exists()


def test_a_reused_record_is_written_over_the_one_there_and_left_blank(tmp_path: Path) -> None:
    path = tmp_path / leftovers.INFLIGHT
    first = leftovers.Flight(path, "ab" * 16, None, reuse=True)
    first.begin()
    # Padded with spaces to its size, and the JSON of its fields all the same.
    assert path.stat().st_size == leftovers.RECORD_SIZE
    assert json.loads(path.read_text()) == first.data.to_dict()
    inode = path.stat().st_ino
    first.end()
    # Left where it is, blank: it ends nothing, and `reap` removes it as an empty one.
    assert path.read_text() == " " * leftovers.RECORD_SIZE
    assert leftovers.blank(path.read_text())
    second = leftovers.Flight(path, "cd" * 16, None, reuse=True)
    second.begin()
    assert path.stat().st_ino == inode  # the same file, written over
    assert json.loads(path.read_text()) == second.data.to_dict()
    second.end()
    run = tmp_path / "run"
    kept = run / "cells" / "c" / "1" / leftovers.INFLIGHT
    kept.parent.mkdir(parents=True)
    path.replace(kept)
    assert leftovers.reap(run) == ()
    assert not kept.exists()


def test_a_reused_record_longer_than_a_blank_one_is_cut_to_its_own(tmp_path: Path) -> None:
    # One `reap` could not read and kept, in the folder of an attempt run again: what is
    # past the new record must not make it unreadable in turn.
    path = tmp_path / leftovers.INFLIGHT
    path.write_text("x" * (3 * leftovers.RECORD_SIZE))
    flight = leftovers.Flight(path, "ab" * 16, None, reuse=True)
    flight.begin()
    assert json.loads(path.read_text()) == flight.data.to_dict()
    flight.end()
    assert path.read_text() == " " * leftovers.RECORD_SIZE


def test_a_pipe_not_enlarged_asks_the_watchdog_first_to_read_each_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past pipe-max-size or the user's pipe quota, F_SETPIPE_SZ fails: a small pipe would
    # fill between two of the watchdog's reads, so its first line is EACH (no process is
    # started: Popen stands in).
    class Stdin(io.BytesIO):
        def fileno(self) -> int:
            return -1

    stdin = Stdin()

    class Popen:
        pid = 1
        returncode = None

        def __init__(self, *_: object, **__: object) -> None:
            self.stdin = stdin

    def refused(*_: object) -> int:
        raise OSError("EPERM")

    monkeypatch.setattr(subprocess, "Popen", Popen)
    monkeypatch.setattr(fcntl, "fcntl", refused)
    told = leftovers._Watchdog()
    told.tell("done-path /x", later=True)
    told.tell("path /y")
    assert stdin.getvalue() == watchdog.EACH + b"\ndone-path /x\npath /y\n"
