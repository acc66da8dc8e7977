"""The names eu-addr2line gave a library build's frames, kept for the next core (framenames.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.native import framenames

BUILD = "49daf84ed369fe589b73ea876f2591cd4c3588bb"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "reprospec" / "symbols"


def test_answers_are_kept_by_build_and_offset_and_merged_with_later_ones(cache: Path) -> None:
    inlined: framenames.Entries = [
        ("_PyObject_VectorcallTstate", "./Include/internal/pycore_call.h:92:11"),
        ("PyObject_Vectorcall", "Objects/call.c:299:12"),
    ]
    framenames.store({BUILD: {0x158BA2: inlined}, "ab" * 20: {}})
    framenames.store({BUILD: {0x10: [(None, None)]}})
    kept = framenames.load([BUILD, "cd" * 20])
    assert kept == {BUILD: {0x158BA2: inlined, 0x10: [(None, None)]}, "cd" * 20: {}}
    assert [p.name for p in cache.iterdir()] == [f"{BUILD}.nodbg.names"]


def test_a_damaged_file_is_no_answer(cache: Path) -> None:
    framenames.store({BUILD: {1: [("f", None)]}})
    (cache / f"{BUILD}.nodbg.names").write_text('{"magic": "reprospec-frame-names-1", "fr')
    assert framenames.load([BUILD]) == {BUILD: {}}
    (cache / f"{BUILD}.nodbg.names").write_text('{"magic": "other", "frames": {"1": []}}')
    assert framenames.load([BUILD]) == {BUILD: {}}
