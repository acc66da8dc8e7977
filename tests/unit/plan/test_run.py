"""RunPlan's attempts are planned as they are read: the same plans, in the same order, as
planning every attempt up front, with nothing planned before anyone asks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.results import AttemptResult, Outcome
from reprospec.core.runoptions import RunOptions, Shard
from reprospec.outcome.judge import CellJudge, JudgedCells, judge_cells
from reprospec.plan import attempt as attempt_module
from reprospec.plan.attempt import expectation_for, plan_attempt
from reprospec.plan.run import RunPlan, plan_run
from reprospec.spec.load import load_spec

BODY = (
    "matrix: {n: [1, 2, 3, 4, 5], m: [a, b]}\nrun: {repeat: 3, timeout: 5s}\n"
    "environment: {env: {N: '${{ matrix.n }}'}}\nexpect: {outcome: pass}\n"
)


def make_plan(tmp_path: Path, body: str = BODY, options: RunOptions | None = None) -> RunPlan:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text("reprospec: 1\nname: lazy\ncommand: 'echo ${{ attempt }}'\n" + body)
    return plan_run(load_spec(spec_file), options or RunOptions(out=tmp_path))


@pytest.mark.parametrize(
    "options",
    [
        RunOptions(),
        RunOptions(shard=Shard(2, 3)),
        RunOptions(shard=Shard(3, 7)),
        RunOptions(matrix_filters=("n=2", "n=4"), timeout_s=9.0),
    ],
    ids=["whole", "shard-2-of-3", "shard-3-of-7", "filtered"],
)
def test_the_attempts_are_those_planned_up_front(tmp_path: Path, options: RunOptions) -> None:
    plan = make_plan(tmp_path, options=options)
    # What plan_run built before the attempts were planned as read: every attempt,
    # round-robin over the (filtered) cells, then the shard's stride.
    cells = list(plan.attempts.cells)
    eager = [
        plan_attempt(plan.spec, cell, number, expectation=expectation_for(plan.spec, cell))
        for number in range(1, 4)
        for cell in cells
    ]
    if plan.options.timeout_s is not None:
        assert all(a.timeout_s == 5.0 for a in eager)
        eager = [replace(a, timeout_s=9.0) for a in eager]
    shard = plan.options.shard
    if shard is not None:
        eager = [a for i, a in enumerate(eager) if i % shard.count == shard.index - 1]
    assert list(plan.attempts) == eager
    assert len(plan.attempts) == len(eager)
    assert [plan.attempts[i] for i in range(len(eager))] == eager
    assert plan.attempts[-1] == eager[-1]
    assert plan.attempts[1:4] == tuple(eager[1:4])
    assert plan.attempts == tuple(eager)
    with pytest.raises(IndexError):
        plan.attempts[len(eager)]
    assert plan.first_attempts() == tuple(a for a in eager if a.attempt == 1)
    # A shard's cells are the cells it runs an attempt of, in matrix order.
    ran = list(dict.fromkeys(a.cell.id for a in eager))
    assert [c.id for c in plan.cells] == [c.id for c in cells if c.id in ran]


def test_nothing_is_planned_until_an_attempt_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned: list[tuple[str, int]] = []
    real = attempt_module.plan_attempt

    def counting(*args: object, **kwargs: object) -> object:
        made = real(*args, **kwargs)  # type: ignore[arg-type]
        planned.append((made.cell.id, made.attempt))
        return made

    monkeypatch.setattr("reprospec.plan.run.plan_attempt", counting)
    plan = make_plan(tmp_path)
    assert planned == []
    assert len(plan.attempts) == 30
    assert planned == []
    assert plan.attempts[12].attempt == 2
    assert planned == [(plan.attempts.cells[2].id, 2)]
    planned.clear()
    plan.first_attempts()  # what a foreign report's confirmation shows: attempt 1 alone
    assert planned == [(cell.id, 1) for cell in plan.attempts.cells]


def test_the_judge_reads_each_cells_first_attempt_and_shares_equal_environments(
    tmp_path: Path,
) -> None:
    body = (
        "matrix: {n: [1, 2, 3, 4]}\nrun: {repeat: 2}\n"
        "environment: {env: {BIG: '${{ matrix.n > 2 }}'}}\nexpect: {outcome: pass}\n"
    )
    plan = make_plan(tmp_path, body, RunOptions(shard=Shard(2, 3)))
    cells = judge_cells(plan, {}, interrupted=True)
    # Shard 2 of 3 holds globals 1, 4, 7: n=2 #1, n=1 #2, n=4 #2.
    assert [(c.cell.id, c.command) for c in cells] == [
        ("n=1", "echo 2"),
        ("n=2", "echo 1"),
        ("n=4", "echo 2"),
    ]
    assert all(c.verdict == "not-run" for c in cells)
    small, _, big = (c.environment for c in cells)
    assert small["env"] == {"BIG": "false"}
    assert big["env"] == {"BIG": "true"}
    assert cells[0].environment is cells[1].environment  # equal: one object
    assert cells[0].environment is not cells[2].environment


def test_a_cell_judged_alone_reads_as_judged_with_the_others(tmp_path: Path) -> None:
    # -m leaves n=2 and n=4 out: the judge still finds each cell's place among the rest.
    options = RunOptions(out=tmp_path, matrix_filters=("n=1", "n=3", "n=5"))
    plan = make_plan(tmp_path, options=options)
    assert sorted({c.matrix["n"] for c in plan.cells}) == [1, 3, 5]  # type: ignore[type-var]
    ran = AttemptResult(1, 0.1, Outcome(kind="pass", exit_code=0), True, (), logs="")
    attempts = {cell.id: [replace(ran, attempt=n) for n in (1, 2, 3)] for cell in plan.cells}
    together = judge_cells(plan, attempts)
    judge = CellJudge(plan)
    alone = [judge.judge(cell, attempts[cell.id]) for cell in reversed(plan.cells)][::-1]
    assert alone == list(together)
    assert [c.command for c in alone] == ["echo 1"] * len(alone)
    # Each its own first attempt's environment, not a neighbour's.
    assert all(c.environment["env"] == {"N": str(c.cell.matrix["n"])} for c in alone)
    # Equal reasons and rates are one object each, however many cells read them.
    assert len({id(c.reason) for c in alone}) == 1
    assert len({id(c.rate) for c in alone}) == 1


def test_cells_judged_as_they_end_and_the_rest_at_the_end_keep_the_plans_order(
    tmp_path: Path,
) -> None:
    plan = make_plan(
        tmp_path, "matrix: {n: [1, 2, 3]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n"
    )
    one, two, three = plan.cells
    ran = AttemptResult(1, 0.1, Outcome(kind="pass", exit_code=0), True, (), logs="")
    judged = JudgedCells(plan)
    judged.add(three, (ran, replace(ran, attempt=2)))
    cells = judged.all({two.id: [ran]}, interrupted=True)
    assert [c.cell.id for c in cells] == [one.id, two.id, three.id]
    assert [c.verdict for c in cells] == ["not-run", "reproduced", "reproduced"]
    assert "interrupted after 1 of 2 attempts" in cells[1].reason
    assert "interrupted" not in cells[2].reason  # complete when it was judged
