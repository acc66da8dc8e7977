"""Cells spooled as they end: held only as the report reads them (JudgedCells.for_report)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprospec.core.results import AttemptResult, CellResult, Outcome
from reprospec.core.runoptions import RunOptions
from reprospec.outcome.judgedcells import JudgedCells
from reprospec.plan.run import RunPlan, plan_run
from reprospec.spec.load import load_spec


def make_plan(tmp_path: Path, body: str) -> RunPlan:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text("reprospec: 1\nname: held\ncommand: 'echo ${{ attempt }}'\n" + body)
    return plan_run(load_spec(spec_file), RunOptions(out=tmp_path))


def test_cells_spooled_as_they_end_are_held_only_as_the_report_reads_them(
    tmp_path: Path,
) -> None:
    plan = make_plan(
        tmp_path, "matrix: {n: [1, 2, 3]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n"
    )
    one, two, three = plan.cells
    spooled: dict[int, CellResult] = {}

    def spool(position: int, cell: CellResult) -> bool:
        spooled[position] = cell
        return position != 2  # the third could not be written (a full disk)

    passed = AttemptResult(
        1,
        0.1234,
        Outcome(kind="pass", exit_code=0, duration_s=0.12, pid=41),
        True,
        (),
        logs="cells/n=1/1",
        started="t1",
        finished="t2",
    )
    crashed = AttemptResult(
        2, 0.5, Outcome(kind="crash", signal="SIGSEGV", pid=42), False, ("miss",), logs="l"
    )
    judged = JudgedCells(plan, spool)
    judged.add(one, (passed, crashed))
    again = replace(passed, duration_s=0.1201, logs="cells/n=2/1", started="t3", finished="t4")
    judged.add(two, (again, crashed))
    judged.add(three, (again, crashed))
    cells = judged.all({}, interrupted=False)
    # The spool has each cell whole, at its position among the plan's cells.
    assert [spooled[n].attempts for n in range(3)] == [(passed, crashed)] + [(again, crashed)] * 2
    # Held: a passing attempt without what no report shows, alike ones one object; a
    # failing attempt whole.
    light = cells[0].attempts[0]
    assert (light.started, light.finished, light.logs, light.duration_s) == ("", "", "", 0.12)
    assert (light.outcome, light.matched) == (Outcome(kind="pass", exit_code=0), True)
    assert cells[0].attempts[1] is crashed
    assert cells[1].attempts is cells[0].attempts
    assert [c.verdict for c in cells] == ["not-reproduced"] * 3
    assert cells[1].reason == spooled[1].reason
    # Not written, not lightened: results.json takes it from what is held.
    assert cells[2] == spooled[2]
