"""Leftover records of a dead engine: an empty record is removed, an unreadable one kept;
a record's text is its fields' JSON."""

from __future__ import annotations

import json
from pathlib import Path

from reprospec.process import leftovers


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
