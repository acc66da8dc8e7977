"""Cells spooled as they end: held only as the report reads them (JudgedCells.for_report)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprospec.core.redact import MASK, Redactor
from reprospec.core.results import AttemptResult, CellResult, Outcome, alike
from reprospec.core.runoptions import RunOptions
from reprospec.outcome.judgedcells import JudgedCells, JudgedRun
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
    # Held as an index into the alike results: cells 0 and 1 share one, made when read.
    assert isinstance(cells, JudgedRun)
    assert sorted(n for _, n in alike(cells)) == [1, 2]
    assert [c.cell for c in cells] == list(plan.cells)


def test_cells_made_as_they_are_read_are_masked_as_results_json_has_them(
    tmp_path: Path,
) -> None:
    # The run's end walks its result for secrets and passes a JudgedRun as it is: each
    # cell is masked as it is made, its matrix values and a secret-looking axis alike.
    secret = "hunter2-s3cr3t"
    plan = make_plan(
        tmp_path,
        f"matrix: {{x: ['{secret}', plain], api_token: [tok-value-1]}}\n"
        "expect: {outcome: pass}\n",
    )
    redactor = Redactor([secret])
    spooled: dict[int, CellResult] = {}

    def spool(position: int, cell: CellResult) -> bool:
        spooled[position] = cell
        return True

    passed = AttemptResult(1, 0.1, Outcome(kind="pass", exit_code=0), True, (), logs="l")
    judged = JudgedCells(plan, spool, redactor)
    for cell in plan.cells:
        judged.add(cell, (passed,))
    cells = judged.all({}, interrupted=False)
    assert [c.cell for c in cells] == [spooled[n].cell for n in range(2)]
    assert [c.cell for c in cells] == [redactor.value(c) for c in plan.cells]
    assert secret not in repr(list(cells))
    # (a secret-looking axis's value is masked in the matrix; the id is as results.json has it)
    assert cells[1].cell.matrix == {"x": "plain", "api_token": MASK}
    # Without a secret-looking key or value, a cell is the plan's as it is.
    plain = make_plan(tmp_path, "matrix: {n: [1, 2]}\nexpect: {outcome: pass}\n")
    judged = JudgedCells(plain, spool, redactor)
    for cell in plain.cells:
        judged.add(cell, (passed,))
    assert [c.cell for c in judged.all({}, interrupted=False)] == list(plain.cells)


def test_a_light_pass_is_found_by_what_it_is_made_of_and_made_where_that_differs(
    tmp_path: Path,
) -> None:
    judged = JudgedCells(make_plan(tmp_path, "run: {repeat: 4}\nexpect: {outcome: pass}\n"))
    passed = Outcome(kind="pass", exit_code=0, duration_s=0.12, pid=41)
    in_child = replace(passed, where="child", pid=43)
    base = AttemptResult(
        1, 0.1234, passed, True, (), logs="cells/default/1", started="t1", finished="t2"
    )
    attempts = [
        base,
        replace(base, duration_s=0.1201, logs="x", started="t3", finished="t4"),
        replace(base, duration_s=0.2),
        replace(base, outcome=in_child),
        replace(base, outcome=replace(in_child, pid=44)),
        replace(base, warnings=("a warning",)),
    ]
    outcomes = [passed, passed, passed, in_child, replace(in_child, pid=44), passed]
    lights = [judged._light(a) for a in attempts]
    # Each is what the two `replace` calls make of it...
    for attempt, outcome, light in zip(attempts, outcomes, lights, strict=True):
        pid = outcome.pid if outcome.where == "child" else None
        assert light == replace(
            attempt, started="", finished="", logs="", duration_s=round(attempt.duration_s, 2),
            outcome=replace(outcome, duration_s=0.0, pid=pid),
        )  # fmt: skip
    # ...alike ones one object, the others apart (a child's pid, a warning, the duration).
    assert lights[1] is lights[0]
    assert len({id(light) for light in lights}) == 5
    assert judged._light(replace(attempts[3], logs="y")) is lights[3]
