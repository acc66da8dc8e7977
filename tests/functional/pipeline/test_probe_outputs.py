"""A search's probe run writes its folder's files unsynced (its engine killed loses none of
them; write_atomic says what only an operating-system crash could); a run a person started
syncs each one. Real runs of a real command; os.fsync is counted, and still called."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import reprospec


@pytest.mark.parametrize(("purpose", "synced"), [("run", True), ("isolate", False)])
def test_only_a_search_probe_writes_its_run_folder_unsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, purpose: str, synced: bool
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: probe-outputs\ncommand: 'true'\nexpect: {outcome: pass}\n")
    calls: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    options = reprospec.RunOptions(out=tmp_path / "out", purpose=purpose)
    result = reprospec.run(spec, options)
    # results.json, spec.yaml and report.md (the store's own syncs are sqlite's, not these).
    assert (len(calls) >= 3) if synced else calls == []
    folder = tmp_path / "out" / "runs" / result.run_id
    written = json.loads((folder / "results.json").read_text())
    assert written["run_id"] == result.run_id
    (cell,) = written["cells"]
    assert len(cell["attempts"]) == 1
    assert (folder / "report.md").read_text().strip()
    assert (folder / "spec.yaml").read_text() == spec.read_text()
