"""A catastrophic marker regex cannot hang the engine: the timeout and the other markers still
hold."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.cli import Cli

CATASTROPHIC = [r"(a+)+b", r"(a|aa)+b"]


def test_a_catastrophic_marker_neither_delays_the_timeout_nor_stops_other_markers(
    cli: Cli, tmp_path: Path
) -> None:
    script = (
        "import time; print('a' * 40, flush=True); print('step 3', flush=True); time.sleep(600)"
    )
    spec = tmp_path / "s.yaml"
    markers = "".join(f"  - {{pattern: '{p}', phase: slow}}\n" for p in CATASTROPHIC)
    spec.write_text(
        "reprospec: 1\nname: stalled-marker\n"
        f"command: [{json.dumps(sys.executable)}, -c, {json.dumps(script)}]\n"
        "markers:\n" + markers + "  - {pattern: '^step (?P<step>\\d+)', phase: train}\n"
        "run: {timeout: 6s}\nexpect: {outcome: hang, phase: train, step: 3}\n"
    )  # 6s: the hang's bound, with room for the child to print `step 3` on a loaded machine
    # Before: the engine sat in re.search for hours and this call hit its own timeout.
    done = cli("run", str(spec), timeout=120)
    assert done.code == 0, done.stderr
    (attempt,) = done.results()["cells"][0]["attempts"]
    assert attempt["outcome"]["kind"] == "hang"
    assert (attempt["outcome"]["phase"], attempt["outcome"]["step"]) == ("train", 3)
    stalled = [w for w in attempt["warnings"] if "stalled" in w]
    assert stalled
    assert "(a|aa)+b" in stalled[0]
