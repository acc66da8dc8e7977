"""A program that prints its failure's traceback and exits 0: the pass says so."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from reprospec.core.words import PASSED_AFTER_A_TRACEBACK
from tests.support.cli import Cli


def test_a_pass_that_printed_a_traceback_warns_with_the_exception(cli: Cli, tmp_path: Path) -> None:
    """nu-c: `traceback.print_exc()` then exit 0 read as a bare `pass` everywhere (table,
    report, results.json): a maintainer never learned the program reported a failure."""
    (tmp_path / "tb0.py").write_text(
        "import traceback\ntry:\n    1 / 0\nexcept Exception:\n    traceback.print_exc()\n"
        "print('done')\n"
    )
    spec = tmp_path / "tb0.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: tb0
        command: python tb0.py
        expect: {outcome: pass}
        """)
    )
    done = cli("run", str(spec))
    assert done.code == 0, done.stderr
    run = done.latest_run()
    attempt = json.loads((run / "results.json").read_text())["cells"][0]["attempts"][0]
    assert attempt["outcome"]["kind"] == "pass"
    said = f"{PASSED_AFTER_A_TRACEBACK} ZeroDivisionError: division by zero"
    assert said in attempt["warnings"], attempt["warnings"]
    assert said in (run / "report.md").read_text()
