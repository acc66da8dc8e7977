"""`reprospec validate` of a folder skips stores and hidden folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reprospec.spec.validate import validate
from tests.support.paths import ROOT

SMALL = "reprospec: 1\nname: s\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"


# -- validate of a folder ----------------------------------------------------------------


def test_validate_of_a_folder_skips_stores_and_hidden_folders(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SMALL.replace("touch EXECUTED", "'true'"))
    for out in (".reprospec", "store"):
        done = subprocess.run(
            [sys.executable, "-m", "reprospec", "run", "s.yaml", "--out", out],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stderr
        # The run keeps a copy of the spec: the very file `validate .` used to pick up.
        assert list((tmp_path / out / "runs").glob("*/spec.yaml"))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.yaml").write_text("not: a spec\n")
    found = validate([tmp_path])
    assert found.files == [str(tmp_path / "s.yaml")]
    assert found.problems == []
    # A store or hidden folder named on the command line is still searched.
    assert validate([tmp_path / "store"]).files


def test_a_file_two_paths_reach_is_checked_and_counted_once(tmp_path: Path) -> None:
    (tmp_path / "typo.yaml").write_text(SMALL.replace("command:", "comand:"))
    found = validate([tmp_path / "typo.yaml", tmp_path, f"{tmp_path}/./typo.yaml"])
    assert found.files == [str(tmp_path / "typo.yaml")]
    assert len(found.problems) == 2, found.problems  # the typo, and no command: once each
    assert found.summary() == "2 problem(s) in 1 of 1 file(s)"


def test_validate_refuses_a_fault_that_can_never_fire(tmp_path: Path) -> None:
    # nu17 D3: a worker fault with num_workers 0 was valid, and its run a plain not-reproduced.
    (tmp_path / "wl.yaml").write_text(
        "reprospec: 1\nname: wl\nworkload:\n"
        "  model: {builtin: mlp, params: {hidden: 8}}\n"
        "  data:\n"
        "    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}\n"
        "    loader: {batch_size: 4, num_workers: 0}\n"
        "  phases: [{name: train, steps: 3}]\n"
        "  faults:\n"
        "    - {kind: segfault, where: worker, at: {phase: train, step: 2}}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "validate", "wl.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert (
        "wl.yaml:10:7: workload.faults[0]: this fault can never fire: where: worker needs "
        "num_workers > 0; this cell has 0 (in cell default)"
    ) in done.stdout + done.stderr
