"""A preloaded attempt's stacks are the program's: the fork server runs its main, so every
faulthandler dump of one ended in the server's `_run_main`, `_become` and `<module>`, where
`python prog.py` has no frame under the program's. A real server, a real
SIGSEGV, a real deadlock."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: preloaded-%s
command: python %s.py
run: {timeout: 3s, preload: [ctypes]}
expect: {outcome: %s}
"""


def test_a_preloaded_crashs_excerpt_and_a_hangs_stacks_hold_no_frame_of_the_server(
    tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "seg.py").write_text(
        "import ctypes\n\ndef deref():\n    ctypes.string_at(0)\n\nderef()\n"
    )
    (tmp_path / "lock.py").write_text(
        "import threading\n\ndef stuck():\n    lock = threading.Lock()\n"
        "    lock.acquire()\n    lock.acquire()\n\nstuck()\n"
    )
    for name, outcome in (("seg", "crash"), ("lock", "hang")):
        (tmp_path / f"{name}.yaml").write_text(SPEC % (name, name, outcome))
        ran = cli("run", str(tmp_path / f"{name}.yaml"), timeout=120)
        (attempt,) = ran.results()["cells"][0]["attempts"]
        assert attempt["launch"] == "forked", attempt
        # The program's frames, to its <module>, and nothing below it.
        quoted = attempt["stack"] if outcome == "hang" else attempt["excerpt"]
        assert f'{name}.py", line ' in quoted, quoted
        assert "in <module>" in quoted, quoted
        assert "reprospec_forkserver" not in quoted, quoted
        report = (ran.latest_run() / "report.md").read_text()
        assert "reprospec_forkserver" not in report
    # The hang's stack.txt too (the report's stacks are read from it).
    stack_txt = next((ran.latest_run() / "cells").glob("*/1/stack.txt")).read_text()
    assert 'lock.py", line 6 in stuck' in stack_txt
    assert "reprospec_forkserver" not in stack_txt
