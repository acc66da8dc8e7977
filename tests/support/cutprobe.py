"""A search (amplify, minimize) stopped by a real Ctrl-C in the middle of a probe, then run
again to its end, and the attempt folders both runs left (test_amplify_cut.py,
test_minimize_cut.py): a probe cut short is not stored, but its attempt numbers are drawn
for good, so no (run, cell, attempt) folder may appear twice across the two."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tests.support.cli import ROOT, interrupt_when


def cut_then_resumed(
    tmp_path: Path,
    verb: str,
    program: str,
    spec: str,
    flags: list[str],
    key: Callable[[str], str],
) -> set[tuple[str, str, str]]:
    """`reprospec VERB spec.yaml --format json --out OUT FLAGS...` over `program` (prog.py)
    and `spec`, Ctrl-C'd once the program creates $STOP_FILE, then run again whole.

    Returns each attempt folder of every run the search made, (key(the run's spec.yaml),
    the cell, the number), once each: the cut run's included. `key` says which probe a run
    was (its arm, its candidate), as two probes may number the same cell's attempts alike.
    """
    (tmp_path / "prog.py").write_text(program)
    (tmp_path / "spec.yaml").write_text(spec)
    stop = tmp_path / "stop"
    out = tmp_path / "out"
    argv = [
        sys.executable, "-m", "reprospec", verb, str(tmp_path / "spec.yaml"),
        "--format", "json", "--out", str(out), *flags,
    ]  # fmt: skip
    env = {"STOP_FILE": str(stop)}
    stopped = interrupt_when(argv, stop.exists, env=env)
    assert stopped.code == 130, stopped.stderr
    resumed = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, **env}
    )
    assert resumed.returncode in (0, 1), resumed.stderr
    seen: Counter[tuple[str, str, str]] = Counter()
    for run in (out / "runs").iterdir():
        probe = key((run / "spec.yaml").read_text())
        for folder in (run / "cells").glob("*/*"):
            if folder.name.isdigit():
                seen[probe, folder.parent.name, folder.name] += 1
    again = [where for where, count in seen.items() if count > 1]
    assert not again, again
    # The cut probe is not stored; its numbers are (state.json's "cut").
    state = json.loads(next((out / verb).glob("*/state.json")).read_text())
    assert state.get("cut"), state
    return set(seen)
