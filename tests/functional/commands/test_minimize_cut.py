"""`reprospec minimize` stopped by a real Ctrl-C in the middle of a probe, then resumed: the
probe cut short is not stored (the resumed search asks it again, whole), and its attempt
numbers were forgotten with it, so the resumed probe numbered its attempts as the cut run
had: two runs of one configuration with a `cells/mode=bad/2/`, and a `${{ attempt }}`
seed drawing the cut run's values again (amplify's twin:
tests/functional/amplify/test_amplify_cut.py; their driver: tests/support/cutprobe.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cutprobe import cut_then_resumed

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


def workdir(spec: str) -> str:
    """Which candidate a run was: the workdir its spec was given."""
    return next(line.strip() for line in spec.splitlines() if line.strip().startswith("workdir:"))


def test_a_probe_cut_by_ctrl_c_leaves_its_attempt_numbers_drawn(tmp_path: Path) -> None:
    result = str(tmp_path / "result")
    flags = ["-o", result, "-j", "1", "--min-rate", "0.9", "--budget", "6"]
    seen = cut_then_resumed(tmp_path, "minimize", PROGRAM, SPEC, flags, key=workdir)
    assert ("mode=bad", "2") in {(cell, n) for _, cell, n in seen}  # the cut run's
