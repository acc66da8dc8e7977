"""The stage rule and no import cycles, checked by the same script anyone can run."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import ROOT


def test_import_graph_has_no_cycle_and_no_backward_stage_import() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    assert "0 problems" in done.stdout
