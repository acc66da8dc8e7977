"""`run.stall` on real children: a program that stops making progress is a hang seconds after
its last progress, its stacks taken; one that is slow but moving, or has made no progress
yet (still starting, still importing), is left to the timeout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import Cli, CliResult
from tests.support.paths import CHILDREN

# One program, one behaviour per cell (argv[1]). Events go where the engine reads them.
PROGRAM = """\
import json, os, sys, time
case = sys.argv[1]
def event(**fields):
    with open(os.environ["REPROSPEC_EVENTS"], "a") as handle:
        handle.write(json.dumps(fields) + "\\n")
if case == "stops":  # three steps, then stuck
    for n in (1, 2, 3):
        print("step", n, flush=True)
        time.sleep(0.1)
    time.sleep(600)
elif case == "slow":  # slow but moving: 4.8 s in all, never 2 s without a line
    for n in range(12):
        print("step", n, flush=True)
        time.sleep(0.4)
elif case == "late":  # silent for longer than the stall before its first line
    time.sleep(5)
    print("ready", flush=True)
elif case == "importing":  # an import event, then a long import: no progress yet
    event(event="import", module="torch", phase="import")
    time.sleep(5)
elif case == "events":  # one line, then progress by events only
    print("start", flush=True)
    for n in range(12):
        event(event="step", phase="train", step=n)
        time.sleep(0.4)
elif case == "never":  # no progress at all: only the timeout ends it
    time.sleep(600)
"""

COMMANDS = """\
reprospec: 1
name: stall-commands
matrix:
  case: [stops, slow, late, importing, events, never]
command: [PYTHON, -c, PROGRAM, "${{ matrix.case }}"]
run:
  timeout: "${{ matrix.case == 'never' and '4s' or '60s' }}"
  stall: 2s
expect:
  outcome: pass
  cases:
    - when: {case: stops}
      outcome: hang
    - when: {case: never}
      outcome: hang
"""


def attempts(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cell["id"]: cell["attempts"][0] for cell in results["cells"]}


def test_a_stalled_command_is_a_hang_early_and_a_slow_or_starting_one_is_not(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "stall.yaml"
    spec.write_text(
        COMMANDS.replace("PYTHON", json.dumps(sys.executable)).replace(
            "PROGRAM", json.dumps(PROGRAM)
        )
    )
    done = cli("run", str(spec), "-j", "3", timeout=300)
    found = attempts(done.results())
    assert done.code == 0, {k: a["outcome"] for k, a in found.items()}

    stopped = found["case=stops"]
    assert stopped["outcome"]["kind"] == "hang"
    assert stopped["outcome"]["detail"].startswith("no progress for 2 s (run.stall); killed after")
    # Called 2 s after its last line, not at the 60 s timeout.
    assert stopped["duration_s"] < 30, stopped["duration_s"]
    # Its stacks were taken as at a timeout.
    assert "line 10 in <module>" in (stopped["stack"] or ""), stopped["stack"]  # sleep(600)

    # Slow but moving, silent before its first progress, or importing: all ran to the end.
    for case in ("slow", "late", "importing", "events"):
        assert found[f"case={case}"]["outcome"]["kind"] == "pass", (case, found[f"case={case}"])
    assert found["case=late"]["duration_s"] >= 5
    assert found["case=importing"]["duration_s"] >= 5

    never = found["case=never"]
    assert never["outcome"]["kind"] == "hang"
    assert never["outcome"]["detail"].startswith("no exit within the timeout (4 s)")


HEARTBEAT = """\
import time
for n in (1, 2):
    print("step", n, flush=True)
while True:  # a stuck program that keeps printing, as watchdogs do
    print("waiting for peers", flush=True)
    time.sleep(0.2)
"""


def _stalled(
    cli: Cli, spec: Path, program: str, markers: str, expect: str
) -> tuple[CliResult, dict[str, Any]]:
    """`program`'s run with `markers` and a 2 s stall (timeout 60 s), expected as `expect`:
    the run and its attempt, checked to have ended by the stall, long before the timeout."""
    spec.write_text(
        f"reprospec: 1\nname: stall-{spec.stem}\n"
        f"command: [{json.dumps(sys.executable)}, -c, {json.dumps(program)}]\n"
        f"markers: [{markers}]\n"
        "run: {timeout: 60s, stall: 2s}\n"
        f"expect: {expect}\n"
    )
    done = cli("run", str(spec), timeout=300)
    (attempt,) = attempts(done.results()).values()
    assert done.code == 0, attempt["outcome"]
    assert attempt["outcome"]["detail"].startswith("no progress for 2 s (run.stall)")
    assert attempt["duration_s"] < 30, attempt["duration_s"]
    return done, attempt


def test_with_markers_only_the_markers_are_progress(cli: Cli, tmp_path: Path) -> None:
    done, _attempt = _stalled(
        cli,
        tmp_path / "heartbeat.yaml",
        HEARTBEAT,
        "{pattern: '^step (?P<step>\\d+)', phase: train}",
        "{outcome: hang, phase: train, step: 2}",
    )
    # It printed all along: that was no progress.
    assert (done.latest_run() / "cells" / "default" / "1" / "stdout.log").read_text().count(
        "waiting for peers"
    ) >= 5


STUCK_BAR = """\
import sys, time
for n in range(1, 8):
    sys.stderr.write(f"\\rtrain:  {n}0%|###   | {n}/10 [00:0{n}<00:05,  1.00it/s]")
    sys.stderr.flush()
    time.sleep(0.2)
t = 0
while True:  # stuck at 7/10; the bar keeps redrawing its clock, as a refresh timer does
    t += 1
    sys.stderr.write(f"\\rtrain:  70%|#######   | 7/10 [00:{t:02d}<00:03,  0.1it/s]")
    sys.stderr.flush()
    time.sleep(0.1)
"""


def test_a_bar_redrawn_at_the_step_it_reached_stalls(cli: Cli, tmp_path: Path) -> None:
    # The tqdm preset saw a bar drawn with "\r" only once the attempt ended (no
    # newline), so nothing was progress and only the timeout ended it, its detail "last
    # progress 0.0 s before the timeout: still progressing?"; each redraw a line, a redraw
    # at 7/10 must not be progress either.
    spec = tmp_path / "bar.yaml"
    _stalled(cli, spec, STUCK_BAR, "{preset: tqdm}", "{outcome: hang, step: 7}")
    # Without a stall, the timeout: its redraws at 7/10 are no sign of progress.
    timed = cli("run", str(spec), "--set", "~run.stall", "--timeout", "5s", timeout=300)
    (attempt,) = attempts(timed.results()).values()
    assert timed.code == 0, attempt["outcome"]
    detail = attempt["outcome"]["detail"]
    assert detail.startswith("no exit within the timeout (5 s)"), detail
    assert "still progressing?" not in detail


# Runnable but starved (its docstring says how): seconds without a line, none of them stuck.
STARVED = (CHILDREN / "starved.py").read_text(encoding="utf-8")


def test_a_starved_command_is_no_stall(cli: Cli, tmp_path: Path) -> None:
    """The time it waited for a CPU is not counted (process/cpuwait.py): it ends, a pass."""
    spec = tmp_path / "starved.yaml"
    spec.write_text(
        "reprospec: 1\nname: stall-starved\n"
        f"command: [{json.dumps(sys.executable)}, -c, {json.dumps(STARVED)}]\n"
        "run: {timeout: 120s, stall: 1s}\n"
        "expect: {outcome: pass}\n"
    )
    done = cli("run", str(spec), timeout=300)
    (attempt,) = attempts(done.results()).values()
    assert done.code == 0, attempt["outcome"]
    assert attempt["outcome"]["kind"] == "pass"
    # It did go without progress for longer than its stall: the wall clock alone called it a
    # hang (this test's first run, before the CPU wait was left out).
    assert attempt["duration_s"] > 2.5, attempt["duration_s"]
