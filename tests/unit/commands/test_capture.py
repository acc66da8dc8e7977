"""`reprospec capture`'s own handling, without running a command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.cli import main


class _StoppedStdin:
    """A pasted log Ctrl-C interrupts before its end."""

    def read(self) -> str:
        raise KeyboardInterrupt


def test_ctrl_c_while_a_log_is_read_from_stdin_says_nothing_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `pbpaste | reprospec capture --from-log -` stopped: it said "the spec is still the
    # first draft: capture again with --force", of a spec it never wrote.
    monkeypatch.setattr(sys, "stdin", _StoppedStdin())
    monkeypatch.chdir(tmp_path)
    assert main(["capture", "--from-log", "-", "-o", "t.yaml"]) == 130
    said = capsys.readouterr().err
    assert "interrupted while reading the log; nothing written" in said
    assert "first draft" not in said
    assert not (tmp_path / "t.yaml").exists()
