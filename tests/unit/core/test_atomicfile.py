"""core/atomicfile: a file replaced so that its readers see the old one or the new one."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from reprospec.core.atomicfile import write_atomic


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "results.json"
    write_atomic(target, "old")

    def broken_replace(_src: str, _dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_written_files_are_readable_by_others_as_the_logs_are(tmp_path: Path) -> None:
    # mkstemp made results.json, report.md and spec.yaml 0600: another user of a shared
    # --out saw the run in history, and report and compare said "Permission denied".
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "report.md", "report")
    finally:
        os.umask(old)
    assert (tmp_path / "report.md").stat().st_mode & 0o777 == 0o644
    old = os.umask(0o077)
    try:
        write_atomic(tmp_path / "report.md", "again")
    finally:
        os.umask(old)
    assert (tmp_path / "report.md").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_two_writers_of_one_file_never_rename_each_others_half(tmp_path: Path) -> None:
    # isolate's and amplify's state files were written through one fixed `.json.tmp`: two
    # searches of one spec could each rename the other's half-written file into place.
    target = tmp_path / "state.json"
    texts = ["a" * 200_000, "b" * 200_000]
    seen: list[str] = []

    def write(text: str) -> None:
        for _ in range(50):
            write_atomic(target, text)
            seen.append(target.read_text())

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 100
    assert set(seen) <= set(texts)
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
