"""The stage rule's checker catches a backward import."""

from __future__ import annotations

import sys

from tests.support.cli import ROOT


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
