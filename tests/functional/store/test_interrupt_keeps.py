"""Ctrl-C in a run of many short attempts keeps every attempt that finished, and `--resume`
runs only the rest: the attempts are stored as they end, planned alike (a spec without
expressions copies a cell's plan), and each knows its own number."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from reprospec.store.db import Store
from tests.support.cli import Cli, interrupt_when

ATTEMPTS = 300


def test_ctrl_c_keeps_every_finished_attempt_and_resume_runs_the_rest(
    cli: Cli, tmp_path: Path
) -> None:
    ran = tmp_path / "ran.txt"
    spec = tmp_path / "many.yaml"
    # Each attempt writes its own number (its folder's name) before it passes.
    spec.write_text(
        "reprospec: 1\nname: many\n"
        f"command: [sh, -c, 'basename \"$REPROSPEC_STACK_DIR\" >> {ran}; sleep 0.02']\n"
        f"run: {{repeat: {ATTEMPTS}}}\nexpect: {{outcome: pass}}\n"
    )
    out = tmp_path / "out"

    def some_ran() -> bool:
        return ran.exists() and len(ran.read_text().split()) >= 8

    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out), "-j", "1"],
        some_ran,
    )
    assert stopped.code == 130, stopped.stderr
    # The progress line of an attempt is printed after its row is stored.
    said = {int(n) for n in re.findall(r"\] default #(\d+): pass", stopped.stderr)}
    assert len(said) >= 7
    run_dir = next((out / "runs").iterdir())
    store = Store(out)
    kept = {number for _, number in store.finished_attempts(run_dir.name)}  # its run id
    assert said <= kept
    assert kept == set(range(1, len(kept) + 1))
    ran_before = Counter(int(n) for n in ran.read_text().split())
    assert kept <= set(ran_before)

    resumed = cli("run", "--resume", "latest", "--out", str(out), "-j", "1")
    assert resumed.code == 0, resumed.stderr
    finished = store.finished_attempts(run_dir.name)
    assert sorted(number for _, number in finished) == list(range(1, ATTEMPTS + 1))
    ran_all = Counter(int(n) for n in ran.read_text().split())
    assert set(ran_all) == set(range(1, ATTEMPTS + 1))
    # What was kept never ran again; only the attempt in flight at Ctrl-C may have.
    assert all(ran_all[n] == 1 for n in kept)
    assert sum(ran_all.values()) - ATTEMPTS <= 1
