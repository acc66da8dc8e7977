"""`reprospec amplify` stopped by a real Ctrl-C in the middle of a probe, then resumed: the
probe cut short is not stored (the resumed search asks it again, whole), and its attempt
numbers were forgotten with it, so the resumed probe numbered its attempts as the cut run
had: two runs of one arm with a `cells/CELL/2/`, and a `${{ attempt }}` seed drawing the
cut run's values again (minimize's twin: tests/functional/commands/test_minimize_cut.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.support.cli import ROOT, interrupt_when

# The first later attempt marks STOP_FILE and waits there for the test's Ctrl-C; every
# attempt fails as expected.
PROGRAM = """\
import os
import sys
import time

attempt = int(sys.argv[1])
stop = os.environ["STOP_FILE"]
if attempt >= 2 and not os.path.exists(stop):
    open(stop, "w").close()
    time.sleep(60)
sys.exit(3)
"""

SPEC = """\
reprospec: 1
name: cut
command: python prog.py ${{ attempt }}
run:
  timeout: 60s
expect:
  outcome: error
  exit_code: 3
"""


def test_a_probe_cut_by_ctrl_c_leaves_its_attempt_numbers_drawn(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "spec.yaml").write_text(SPEC)
    stop = tmp_path / "stop"
    out = tmp_path / "out"
    argv = [
        sys.executable, "-m", "reprospec", "amplify", str(tmp_path / "spec.yaml"),
        "--format", "json", "--out", str(out), "-j", "1", "--budget", "16",
        "--try", "switch_interval=1e-6",
    ]  # fmt: skip
    env = {"STOP_FILE": str(stop)}
    stopped = interrupt_when(argv, stop.exists, env=env)
    assert stopped.code == 130, stopped.stderr
    resumed = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, **env}
    )
    assert resumed.returncode in (0, 1), resumed.stderr
    # Every attempt folder of every run the search made: (the arm, the cell, the number)
    # once, the cut run's included.
    seen: Counter[tuple[bool, str, str]] = Counter()
    for run in (out / "runs").iterdir():
        arm = "switch_interval" in (run / "spec.yaml").read_text()
        for folder in (run / "cells").glob("*/*"):
            if folder.name.isdigit():
                seen[arm, folder.parent.name, folder.name] += 1
    again = [where for where, count in seen.items() if count > 1]
    assert not again, again
    assert "2" in {n for arm, _, n in seen if not arm}  # the cut run's
    # The cut probe is not stored; its numbers are (state.json's "cut").
    state = json.loads(next((out / "amplify").glob("*/state.json")).read_text())
    assert state.get("cut"), state
