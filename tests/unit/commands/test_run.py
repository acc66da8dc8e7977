"""What `reprospec run` decides before its end: whether it keeps its cells whole."""

from __future__ import annotations

import pytest

from reprospec.commands.run import reads_whole_cells


def test_a_run_in_github_actions_or_printing_another_format_keeps_its_cells_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GitHub's summary and annotations, and json/html/junit on stdout, read what a large
    # run's held cells leave out (their logs, times): those runs ask for whole cells.
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert [reads_whole_cells(f) for f in (None, "md", "json", "junit")] == [0, 0, 1, 1]
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert reads_whole_cells(None)
    monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/tmp/summary.md")
    assert reads_whole_cells("md")
