"""Reading the engine's own tree: a `children` file read until it is steady."""

from __future__ import annotations

import pytest

from reprospec.process import tree


def _reads(monkeypatch: pytest.MonkeyPatch, texts: list[bytes]) -> list[str]:
    asked: list[str] = []

    def read_proc(path: str) -> bytes:
        asked.append(path)
        return texts[len(asked) - 1]

    monkeypatch.setattr(tree, "read_proc", read_proc)
    return asked


def test_an_empty_children_file_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A read that listed no child skipped none (the kernel found none at its first position).
    asked = _reads(monkeypatch, [b""])
    assert tree._steady_children("children") == set()
    assert len(asked) == 1


def test_a_listed_child_is_read_until_two_reads_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child listed first was reaped while the kernel listed on: 8 was skipped.
    asked = _reads(monkeypatch, [b"7 ", b"8 ", b"8 "])
    assert tree._steady_children("children") == {7, 8}
    assert len(asked) == 3
    asked = _reads(monkeypatch, [b"7 ", b""])
    assert tree._steady_children("children") == {7}
    assert len(asked) == 2
