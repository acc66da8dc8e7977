"""A spec whose cells hold a bad `${{ }}` value is refused by every verb before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

HEAD = "reprospec: 1\nname: s\ncommand: [python3, -c, \"open('EXECUTED', 'w')\"]\n"


@pytest.mark.parametrize("verb", ["validate", "plan", "run"])
def test_every_verb_refuses_before_anything_runs(tmp_path: Path, verb: str) -> None:
    (tmp_path / "s.yaml").write_text(
        HEAD + "matrix: {m: [1g, lots]}\nenvironment: {memory: '${{ matrix.m }}'}\n"
        "expect: {outcome: pass}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", verb, "s.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "s.yaml:5:23: environment.memory: expected a size like 64m or 4g, got 'lots'"
        " (in cell m=lots)"
    )
    assert not (tmp_path / "EXECUTED").exists()
