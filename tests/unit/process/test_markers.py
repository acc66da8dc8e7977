"""Marker regexes from a stranger's spec cannot hang the engine (issue 16 item 8).

`(a+)+b` against forty `a`s backtracks for hours in Python's `re`; matched in the
thread that enforces the timeout, it kept a 3-second attempt alive for as long
as the child lived. Markers now run on their own thread with the `regex`
package's timeout: the attempt ends at its timeout, and a stalled marker is a
warning while the other markers keep working.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reprospec.core.inputs import Marker
from reprospec.process.output import EventWriter, MarkerMatcher, MarkerScanner, compile_markers
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
        "run: {timeout: 3s}\nexpect: {outcome: hang, phase: train, step: 3}\n"
    )
    # Before: the engine sat in re.search for hours and this call hit its own timeout.
    done = cli("run", str(spec), timeout=120)
    assert done.code == 0, done.stderr
    (attempt,) = done.results()["cells"][0]["attempts"]
    assert attempt["outcome"]["kind"] == "hang"
    assert (attempt["outcome"]["phase"], attempt["outcome"]["step"]) == ("train", 3)
    stalled = [w for w in attempt["warnings"] if "stalled" in w]
    assert stalled
    assert "(a|aa)+b" in stalled[0]


def test_matcher_drops_a_stalled_marker_and_keeps_matching_the_others(tmp_path: Path) -> None:
    compiled, warnings = compile_markers(
        [Marker(pattern=r"(a|aa)+b", phase="slow"), Marker(pattern=r"^step (?P<step>\d+)")]
    )
    assert warnings == []
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, timeout_s=0.05)
    scanner = MarkerScanner(matcher=matcher)
    scanner.write(b"a" * 60 + b"\nstep 1\n" + b"a" * 60 + b"b\nstep 2\n")
    scanner.close()
    found = matcher.close()
    events.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2]
    assert len(found) == 1
    assert found[0].startswith("marker '(a|aa)+b' stalled")


def test_lines_are_cut_before_matching_and_a_full_queue_skips_lines(tmp_path: Path) -> None:
    compiled, _ = compile_markers([Marker(pattern=r"(?P<step>\d+)$")])
    events = EventWriter(tmp_path / "events.jsonl")
    matcher = MarkerMatcher(compiled, events, max_pending=1)
    # The digits lie past MAX_MARKER_LINE_CHARS: cut off, never matched.
    matcher.submit("x" * 10_000 + "7")
    for _ in range(10_000):
        matcher.submit("5")
    found = matcher.close()
    events.close()
    assert matcher.skipped > 0
    assert any("not matched" in w for w in found)
    steps = [json.loads(x)["step"] for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert 7 not in steps
