"""Cells judged as they end are spooled whole and held only as the report reads them
(store/cellspool.py, JudgedCells.for_report): what a run writes is what the whole cells
make, and an interrupted or resumed run loses none of them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import reprospec
from reprospec.report import render
from reprospec.store.resultsjson import load_run, run_json
from tests.support.cli import Cli, interrupt_when

# A real SIGSEGV (ctypes), a failure (exit 7) and cells that pass where a crash is
# expected; 33 cells (a large run's grouped tables) or 3, two attempts each.
SEGV = "import ctypes; ctypes.string_at(0)"


def mixed_spec(folder: Path, cells: int) -> Path:
    values = ", ".join(str(n) for n in range(1, cells // 3 + 1))
    spec = folder / f"mixed-{cells}.yaml"
    spec.write_text(
        "reprospec: 1\nname: mixed\n"
        f"matrix: {{kind: [segv, exit7, ok], n: [{values}]}}\n"
        "command: >-\n"
        f'  sh -c \'case $0 in segv) exec {sys.executable} -c "{SEGV}";;'
        " exit7) echo failing >&2; exit 7;; esac; echo fine' ${{ matrix.kind }}\n"
        "run: {repeat: 2}\nexpect: {outcome: crash, signal: SIGSEGV}\n"
    )
    return spec


@pytest.mark.parametrize("cells", [3, 33])
def test_the_report_of_cells_held_for_it_is_the_report_of_the_whole_cells(
    cli: Cli, tmp_path: Path, cells: int
) -> None:
    ran = cli("run", str(mixed_spec(tmp_path, cells)), "-j", "2")
    assert ran.code == 1, ran.stderr  # not reproduced: the exit-7 and passing cells
    run_dir = ran.latest_run()
    whole = load_run(run_dir / "results.json")
    # The engine rendered report.md from cells without their attempts' timestamps, log
    # folders and exact durations: the same text as from every cell whole.
    assert (run_dir / "report.md").read_text() == render(whole, "md")
    # results.json has each cell whole, from the spool, in plan order; the spool is gone.
    text = (run_dir / "results.json").read_text()
    assert text == "".join(run_json(whole)) + "\n"
    assert [c.cell.index for c in whole.cells] == list(range(cells))
    attempts = [a for c in whole.cells for a in c.attempts]
    assert len(attempts) == 2 * cells
    assert all(a.started and a.finished for a in attempts)
    assert all(a.logs for a in attempts if a.failed)
    assert {p.name for p in run_dir.iterdir()} == {
        "cells",
        "results.json",
        "report.md",
        "spec.yaml",
        "engine.json",  # which engine ran it (history's `killed`); the spool is gone
    }


def test_the_python_api_returns_every_cell_whole(tmp_path: Path) -> None:
    spec = reprospec.load_spec(mixed_spec(tmp_path, 3))
    result = reprospec.run(spec, reprospec.RunOptions(out=tmp_path / "out"))
    assert result == load_run(next((tmp_path / "out" / "runs").iterdir()))
    assert all(a.started and a.logs for c in result.cells for a in c.attempts if a.failed)
    assert all(a.started for c in result.cells for a in c.attempts)


def test_ctrl_c_and_resume_keep_the_cells_spooled_before(cli: Cli, tmp_path: Path) -> None:
    # Cells 1 and 2 end (spooled); cells 3 and 4 wait on a gate until Ctrl-C, then resume.
    gate = tmp_path / "gate"
    spec = tmp_path / "gated.yaml"
    spec.write_text(
        "reprospec: 1\nname: gated\nmatrix: {n: [1, 2, 3, 4]}\n"
        "command: >-\n"
        f"  sh -c 'if [ $0 -gt 2 ]; then touch {tmp_path}/started-$0;"
        f" while [ ! -e {gate} ]; do sleep 0.05; done; fi' ${{{{ matrix.n }}}}\n"
        "run: {timeout: 60s}\nexpect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out), "-j", "2"],
        lambda: (tmp_path / "started-3").exists() and (tmp_path / "started-4").exists(),
    )
    assert stopped.code == 130, stopped.stderr
    run_dir = next((out / "runs").iterdir())
    data = json.loads((run_dir / "results.json").read_text())
    assert data["interrupted"] is True
    cells = data["cells"]
    assert [c["verdict"] for c in cells[:2]] == ["reproduced", "reproduced"]
    assert all(a["started"] and a["finished"] for c in cells[:2] for a in c["attempts"])
    assert [c["verdict"] for c in cells[2:]] == ["not-run", "not-run"]
    assert not (run_dir / "results.spool").exists()

    gate.touch()
    resumed = cli("run", "--resume", run_dir.name, "--out", str(out))
    assert resumed.code == 0, resumed.stderr
    again = json.loads((run_dir / "results.json").read_text())
    assert [c["verdict"] for c in again["cells"]] == ["reproduced"] * 4
    # The two cells that ended before Ctrl-C are the same attempts, read from the store.
    assert again["cells"][:2] == cells[:2]
    assert not (run_dir / "results.spool").exists()
