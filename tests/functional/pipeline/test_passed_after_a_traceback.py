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


def test_a_pass_whose_thread_died_or_whose_exit_python_ignored_warns(
    cli: Cli, tmp_path: Path
) -> None:
    """A thread's traceback (it died of ValueError, the process exited 0) and an atexit
    callback's `sys.exit(3)` (Python prints it as ignored and exits 0) read as a bare pass:
    they were no uncaught exception of the process, so no traceback was found to warn of."""
    (tmp_path / "t.py").write_text(
        "import atexit, sys, threading\n"
        "def f():\n    raise ValueError('bad')\n"
        "if sys.argv[1] == 'thread':\n"
        "    t = threading.Thread(target=f)\n    t.start()\n    t.join()\n"
        "else:\n    atexit.register(lambda: sys.exit(3))\n"
    )
    spec = tmp_path / "t.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: t
        matrix: {how: [thread, atexit]}
        command: python t.py ${{ matrix.how }}
        expect: {outcome: pass}
        """)
    )
    done = cli("run", str(spec))
    assert done.code == 0, done.stderr
    cells = json.loads((done.latest_run() / "results.json").read_text())["cells"]
    warned = [cell["attempts"][0]["warnings"] for cell in cells]
    thread = "ValueError: bad (a thread's: it ended that thread, not the process)"
    ignored = "SystemExit: 3 (Python ignored it: Exception ignored in atexit callback)"
    assert warned == [
        [f"{PASSED_AFTER_A_TRACEBACK} {thread}"],
        [f"{PASSED_AFTER_A_TRACEBACK} {ignored}"],
    ], warned


def test_a_pass_that_printed_a_rich_traceback_warns(cli: Cli, tmp_path: Path) -> None:
    """rich's box is titled `Traceback (most recent call last)` with no colon: the pass
    looked for CPython's header before it read the output, so 55c00d47's reading of the box
    in `last_printed` was never asked and such a pass read bare."""
    (tmp_path / "rich0.py").write_text(
        "import sys\nfrom rich.console import Console\n"
        "console = Console(file=sys.stderr, width=100)\n"
        "try:\n    1 / 0\nexcept Exception:\n    console.print_exception()\n"
        "print('done')\n"
    )
    spec = tmp_path / "rich0.yaml"
    spec.write_text(
        textwrap.dedent("""\
        reprospec: 1
        name: rich0
        command: python rich0.py
        expect: {outcome: pass}
        """)
    )
    done = cli("run", str(spec))
    assert done.code == 0, done.stderr
    attempt = json.loads((done.latest_run() / "results.json").read_text())["cells"][0]["attempts"][
        0
    ]
    assert attempt["outcome"]["kind"] == "pass"
    said = f"{PASSED_AFTER_A_TRACEBACK} ZeroDivisionError: division by zero"
    assert said in attempt["warnings"], attempt["warnings"]
