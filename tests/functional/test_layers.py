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


def test_the_leaf_modules_import_no_more_of_reprospec_than_they_need() -> None:
    # logtext (whose patterns are compiled on first use so that `validate` and `plan` start
    # lighter) and the atomic writer had a module-level import of core/words (~20-40 ms,
    # its own imports), each for a phrase only a log with lines left out, or one warning, needs.
    code = (
        "import sys\n"
        "import reprospec.core.logtext, reprospec.core.atomicfile\n"
        "assert 'reprospec.core.words' not in sys.modules, 'core.words was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
