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


def test_write_probe_makes_what_writing_would_and_leaves_nothing(tmp_path: Path) -> None:
    from reprospec.core.atomicfile import write_probe

    (tmp_path / "notes.txt").write_text("mine\n")
    assert write_probe(tmp_path / "new" / "deeper") is None
    assert write_probe(tmp_path, existing=True) is None
    # A file where a folder is asked for is the caller's to say; a folder under it is not.
    assert write_probe(tmp_path / "notes.txt", existing=True) is None
    failed = write_probe(tmp_path / "notes.txt" / "sub")
    assert failed is not None
    assert failed[0] == "mkdir"
    assert isinstance(failed[1], NotADirectoryError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_unwritable_says_the_probe_in_words(tmp_path: Path) -> None:
    # The words minimize's and bisect's refusals of a read-only --out give, one function.
    from reprospec.core.atomicfile import unwritable

    (tmp_path / "notes.txt").write_text("mine\n")
    assert unwritable(tmp_path) == ""
    assert unwritable(tmp_path / "notes.txt" / "sub") == "Not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_write_probe_asks_the_folder_not_its_permissions() -> None:
    # os.access (and a read-only mount's flag) said root can write /proc/x and in /proc:
    # minimize's DIR check, its own rule beside the command line's, let both through.
    from reprospec.core.atomicfile import write_probe

    failed = write_probe(Path("/proc/reprospec-nope"))
    assert failed is not None
    assert failed[0] == "mkdir"
    inside = write_probe(Path("/proc"), existing=True)
    assert inside is not None
    assert inside[0] == "write in"
    assert inside[1].filename == "/proc"
    # An existing folder is probed only where asked: the command line leaves it to the verb.
    assert write_probe(Path("/proc")) is None
