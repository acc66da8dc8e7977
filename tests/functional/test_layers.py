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
    assert "0 problem(s)" in done.stdout


def test_the_check_catches_a_backward_import() -> None:
    # The checker is only worth something if it fails: a store module importing
    # the renderer is flagged (the stage table is the script's own).
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    assert import_graph.stage_of("reprospec.store.db") == "store"
    assert import_graph.stage_of("reprospec.report.markdown") == "report"
    later = import_graph.STAGE_NAMES.index("report") > import_graph.STAGE_NAMES.index("store")
    assert later
    assert import_graph.cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
