"""`reprospec validate` of a folder skips stores and hidden folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reprospec.spec.validate import validate
from tests.support.paths import ROOT

SMALL = "reprospec: 1\nname: s\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"


def _reprospec(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m reprospec ARGS` of this checkout, in `cwd`."""
    return subprocess.run(
        [sys.executable, "-m", "reprospec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _validate_refuses(tmp_path: Path) -> str:
    """`reprospec validate wl.yaml` in tmp_path, refused (exit 2, no traceback): what it said."""
    done = _reprospec(tmp_path, "validate", "wl.yaml")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out
    return out


# -- validate of a folder ----------------------------------------------------------------


def test_validate_of_a_folder_skips_stores_and_hidden_folders(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SMALL.replace("touch EXECUTED", "'true'"))
    for out in (".reprospec", "store"):
        done = _reprospec(tmp_path, "run", "s.yaml", "--out", out)
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
    assert found.summary() == "2 problems in 1 of 1 file"


def test_validate_refuses_a_fault_that_can_never_fire(tmp_path: Path) -> None:
    # A worker fault with num_workers 0 was valid, and its run a plain not-reproduced.
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
    out = _validate_refuses(tmp_path)
    assert (
        "wl.yaml:10:7: workload.faults[0]: this fault can never fire: where: worker needs "
        "num_workers > 0; this cell has 0 (in cell default)"
    ) in out


def test_validate_refuses_a_fault_past_the_data_and_a_rank_its_cell_lacks(tmp_path: Path) -> None:
    # wf2.yaml's index past 32 items and step past val's one pass of 8
    # batches were valid; dd6.yaml's rank-2 fault armed in its 2-rank cell was infra-error
    # there only after the attempt's torch import, and its 3-rank cell alone is fine.
    (tmp_path / "wl.yaml").write_text(
        "reprospec: 1\nname: wl\nmatrix: {f: [idx, steps, ranks]}\nworkload:\n"
        "  model: {builtin: mlp, params: {hidden: 8}}\n"
        "  data:\n"
        "    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}\n"
        "    loader: {batch_size: 4, num_workers: 2}\n"
        "  phases: [{name: train, steps: 3}, {name: val}]\n"
        "  distributed: {world_size: \"${{ matrix.f == 'idx' and 3 or 2 }}\"}\n"
        "  faults:\n"
        "    - {kind: segfault, where: worker, at: {index: 999},"
        " when: \"${{ matrix.f == 'idx' }}\"}\n"
        "    - {kind: segfault, at: {phase: val, step: 12}, when: \"${{ matrix.f == 'steps' }}\"}\n"
        "    - {kind: hang, rank: 2, when: \"${{ matrix.f != 'steps' }}\"}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    out = _validate_refuses(tmp_path)
    assert [line for line in out.splitlines() if line.startswith("wl.yaml:")] == [
        "wl.yaml:12:7: workload.faults[0]: this fault can never fire: at.index 999 is past "
        "the dataset: it has 32 items (indexes 0..31) (in cell f=idx)",
        "wl.yaml:13:7: workload.faults[1]: this fault can never fire: step 12 never comes: "
        "phase 'val' gives no steps, so it runs one pass of the data, 4 batches (16 items per "
        "rank of 32, batch_size 4) (in cell f=steps)",
        "wl.yaml:14:26: workload.faults[2].rank: rank 2 does not exist: world_size is 2 "
        "(ranks 0..1) (in cell f=ranks)",
    ]


def test_validate_says_a_cell_value_beside_an_unrelated_typo(tmp_path: Path) -> None:
    # The per-cell checks waited for a file free of every other problem, so the typo
    # came first and the timeout only at a second `validate`, once the typo was fixed.
    (tmp_path / "wl.yaml").write_text(
        "reprospec: 1\nname: wl\ncommand: [python3, -c, pass]\n"
        "titel: x\n"
        "matrix: {t: [10s, -5s]}\n"
        "run: {timeout: '${{ matrix.t }}'}\n"
    )
    out = _validate_refuses(tmp_path)
    assert [line for line in out.splitlines() if line.startswith("wl.yaml:")] == [
        "wl.yaml:4:1: (top level): unknown key 'titel' (did you mean 'title'?)",
        "wl.yaml:6:16: run.timeout: expected a duration like 90s, 5m or 1h, got '-5s' "
        "(in cell t=-5s)",
    ]
    assert "2 problems in 1 of 1 file" in out
