"""The stage rule's checker catches a backward import."""

from __future__ import annotations

import sys
from pathlib import Path

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


def test_the_cycle_check_counts_imports_inside_functions_and_for_typing(tmp_path: Path) -> None:
    # a imports b only for its types, b imports a only inside a function: still one cycle.
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (package / "b.py").write_text("def f() -> None:\n    from . import a\n")
    known = {"pkg", "pkg.a", "pkg.b"}
    graph = {
        import_graph.module_name(path, tmp_path): set(
            import_graph.imports_of(path, known, tmp_path, ("pkg",))
        )
        for path in package.glob("*.py")
    }
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.a"}
    assert import_graph.cycles(graph) == [["pkg.a", "pkg.b"]]


def test_the_harness_is_checked_on_its_own() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    harness = import_graph.harness_graph()
    # Relative imports are read: run.py imports distributed.py as `from . import distributed`.
    assert "reprospec_harness.distributed" in harness["reprospec_harness.run"]
    assert all("reprospec" not in deps for deps in harness.values())
