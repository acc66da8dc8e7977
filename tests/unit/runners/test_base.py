"""What every runner shares: the attempt's files an attempt that did not pass keeps."""

from __future__ import annotations

from pathlib import Path

from reprospec.runners.base import keep_files


def test_an_attempt_that_ran_keeps_every_file_and_what_it_wrote(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_bytes(b"Traceback")
    keep_files(tmp_path, ran=True)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "stdout.log": b"",
        "stderr.log": b"Traceback",
        "events.jsonl": b"",
    }


def test_an_attempt_that_could_not_run_keeps_its_events_file_only(tmp_path: Path) -> None:
    keep_files(tmp_path, ran=False)
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]


def test_a_folder_gone_is_left_gone(tmp_path: Path) -> None:
    keep_files(tmp_path / "gone", ran=True)
    assert not (tmp_path / "gone").exists()
