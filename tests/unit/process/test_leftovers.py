"""Leftover records of a dead engine: an empty record is removed, an unreadable one kept."""

from __future__ import annotations

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
