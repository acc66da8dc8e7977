"""`reprospec minimize` stopped by a real Ctrl-C in the middle of a probe, then resumed: the
probe cut short is not stored (the resumed search asks it again, whole), and its attempt
numbers were forgotten with it, so the resumed probe numbered its attempts as the cut run
had: two runs of one configuration with a `cells/mode=bad/2/`, and a `${{ attempt }}`
seed drawing the cut run's values again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.support.cli import ROOT, interrupt_when

# Attempt 1 passes; the first later attempt of the failing cell marks STOP_FILE and waits
# there for the test's Ctrl-C; every later one segfaults (a real invalid read).
PROGRAM = """\
import ctypes
import os
import sys
import time

mode, attempt = sys.argv[1], int(sys.argv[2])
stop = os.environ["STOP_FILE"]
if mode == "bad" and attempt >= 2 and not os.path.exists(stop):
    open(stop, "w").close()
    time.sleep(60)
if mode == "bad" and attempt >= 2:
    ctypes.string_at(0)
print("ok")
"""

SPEC = """\
reprospec: 1
name: cut
matrix:
  mode: [bad, good]
command: python prog.py ${{ matrix.mode }} ${{ attempt }} --unused
run:
  timeout: 60s
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {mode: good}
      outcome: pass
"""


def test_a_probe_cut_by_ctrl_c_leaves_its_attempt_numbers_drawn(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "spec.yaml").write_text(SPEC)
    stop = tmp_path / "stop"
    out = tmp_path / "out"
    argv = [
        sys.executable, "-m", "reprospec", "minimize", str(tmp_path / "spec.yaml"),
        "--format", "json", "--out", str(out), "-o", str(tmp_path / "result"), "-j", "1",
        "--min-rate", "0.9", "--budget", "6",
    ]  # fmt: skip
    env = {"STOP_FILE": str(stop)}
    stopped = interrupt_when(argv, stop.exists, env=env)
    assert stopped.code == 130, stopped.stderr
    resumed = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, **env}
    )
    assert resumed.returncode in (0, 1), resumed.stderr
    # Every attempt folder of every run the search made: (the candidate's workdir, the
    # cell, the number) once, the cut run's included.
    seen: Counter[tuple[str, str, str]] = Counter()
    for run in (out / "runs").iterdir():
        spec = (run / "spec.yaml").read_text()
        workdir = next(line for line in spec.splitlines() if line.strip().startswith("workdir:"))
        for folder in (run / "cells").glob("*/*"):
            if folder.name.isdigit():
                seen[workdir.strip(), folder.parent.name, folder.name] += 1
    again = [where for where, count in seen.items() if count > 1]
    assert not again, again
    assert ("mode=bad", "2") in {(cell, n) for _, cell, n in seen}  # the cut run's
    # The cut probe is not stored; its numbers are (state.json's "cut").
    state = json.loads(next((out / "minimize").glob("*/state.json")).read_text())
    assert state.get("cut"), state
