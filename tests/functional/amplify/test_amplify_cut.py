"""`reprospec amplify` stopped by a real Ctrl-C in the middle of a probe, then resumed: the
probe cut short is not stored (the resumed search asks it again, whole), and its attempt
numbers were forgotten with it, so the resumed probe numbered its attempts as the cut run
had: two runs of one arm with a `cells/CELL/2/`, and a `${{ attempt }}` seed drawing the
cut run's values again (minimize's twin: tests/functional/commands/test_minimize_cut.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cutprobe import cut_then_resumed

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
    flags = ["-j", "1", "--budget", "16", "--try", "switch_interval=1e-6"]
    seen = cut_then_resumed(
        tmp_path,
        "amplify",
        PROGRAM,
        SPEC,
        flags,
        key=lambda spec: "arm" if "switch_interval" in spec else "baseline",
    )
    assert "2" in {n for probe, _, n in seen if probe == "baseline"}  # the cut run's
