"""RunPlan's attempts are planned as they are read: the same plans, in the same order, as
planning every attempt up front, with nothing planned before anyone asks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.inputs import AttemptPlan, Cell, Expectation, Spec
from reprospec.core.results import AttemptResult, Outcome
from reprospec.core.runoptions import RunOptions, Shard
from reprospec.errors import UsageError
from reprospec.outcome.judge import CellJudge, judge_cells
from reprospec.outcome.judgedcells import JudgedCells
from reprospec.plan import attempt as attempt_module
from reprospec.plan import run as run_module
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


def test_first_reproduction_without_a_rate_says_it_stopped_at_its_first_match(
    tmp_path: Path,
) -> None:
    """`not-reproduced ... (stopped by run.stop_on: first-reproduction after 3 of 5
     attempts)` read as if it reproduced: the misses before the match settled the verdict
    . The counts still read back (a merge adds them up over shards)."""
    from reprospec.core.words import stopped_counts

    plan = make_plan(
        tmp_path,
        "run: {repeat: 5, stop_on: first-reproduction}\nexpect: {outcome: error}\n",
    )
    (cell,) = plan.cells
    missed = AttemptResult(1, 0.1, Outcome(kind="pass", exit_code=0), False, ("x",), logs="")
    matched = AttemptResult(3, 0.1, Outcome(kind="error", exit_code=1), True, (), logs="")
    judged = CellJudge(plan).judge(cell, (missed, replace(missed, attempt=2), matched))
    assert judged.verdict == "not-reproduced"
    assert judged.reason.endswith(
        "(stopped by run.stop_on: first-reproduction after 3 of 5 attempts, at its first that "
        "matched; 2 missed before it, and without an expect.rate one miss makes the cell "
        "not-reproduced)"
    )
    assert stopped_counts(judged.reason) == ("first-reproduction", 3, 5)
    # Its first attempt matched: reproduced, and the bare phrase says all there is.
    first = CellJudge(plan).judge(cell, (replace(matched, attempt=1),))
    assert first.verdict == "reproduced"
    assert first.reason.endswith(
        "(stopped by run.stop_on: first-reproduction after 1 of 5 attempts)"
    )


def test_a_cell_stop_on_stopped_says_so_in_its_reason_rate_column_and_junit(
    tmp_path: Path,
) -> None:
    """A stopped cell read `1/2 not-reproduced` in results.json, report.md and the JUnit
    report, as if its third attempt were lost."""
    from reprospec.core.results import RunResult
    from reprospec.report import render

    plan = make_plan(
        tmp_path,
        "matrix: {n: [1, 2]}\nrun: {repeat: 3, stop_on: first-miss}\nexpect: {outcome: pass}\n",
    )
    one, two = plan.cells
    ran = AttemptResult(1, 0.1, Outcome(kind="pass", exit_code=0), True, (), logs="")
    missed = AttemptResult(2, 0.1, Outcome(kind="error", exit_code=3), False, ("x",), logs="")
    judge = CellJudge(plan)
    stopped = judge.judge(one, (ran, missed))
    whole = judge.judge(two, (ran, replace(ran, attempt=2), replace(ran, attempt=3)))
    assert stopped.reason.endswith("(stopped by run.stop_on: first-miss after 2 of 3 attempts)")
    assert "stopped" not in whole.reason  # every planned attempt ran
    # An interrupted cell is said interrupted, not stopped.
    assert "stopped" not in judge.judge(one, (ran,), interrupted=True).reason
    # A stopped one in an interrupted run is said stopped: a resume keeps it stopped, and
    # "--resume finishes it" promised what would not happen.
    stopped_then = judge.judge(one, (ran, missed), interrupted=True).reason
    assert stopped_then.endswith("(stopped by run.stop_on: first-miss after 2 of 3 attempts)")
    assert "--resume" not in stopped_then
    run = RunResult(
        run_id="r", spec_name="s", spec_path="s.yaml", spec_text="", runner="local",
        started="", finished="", environment={}, cells=(stopped, whole),
    )  # fmt: skip
    assert "| 1/2 (95% CI 0.09–0.91) (stopped by run.stop_on) |" in render(run, "md")
    junit = render(run, "junit")
    assert junit.count("stopped by run.stop_on: first-miss after 2 of 3 attempts") == 2
    assert junit.count('name="stopped"') == 1


CONSTANT = "matrix: {n: [1, 2, 3]}\nrun: {repeat: 4, timeout: 5s}\nexpect: {outcome: pass}\n"


def test_a_spec_without_expressions_copies_each_cells_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No `${{ }}` anywhere: every attempt of a cell is its first plan with its number, so
    # the later ones are copies of the kept plan, equal to planning each afresh.
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text("reprospec: 1\nname: constant\ncommand: [true]\n" + CONSTANT)
    plan = plan_run(load_spec(spec_file), RunOptions(out=tmp_path, timeout_s=7.0))
    eager = [
        replace(
            plan_attempt(plan.spec, cell, number, expectation=expectation_for(plan.spec, cell)),
            timeout_s=7.0,
        )
        for number in range(1, 5)
        for cell in plan.attempts.cells
    ]
    planned: list[int] = []

    def counted(
        spec: Spec,
        cell: Cell,
        attempt: int,
        *,
        base_env: Mapping[str, str],
        expectation: Expectation | None = None,
    ) -> AttemptPlan:
        planned.append(attempt)
        return plan_attempt(spec, cell, attempt, base_env=base_env, expectation=expectation)

    monkeypatch.setattr(run_module, "plan_attempt", counted)
    assert list(plan.attempts) == eager
    assert planned == [1, 1, 1]  # each cell planned once; its later attempts copied


def test_a_spec_with_an_expression_plans_every_attempt(tmp_path: Path) -> None:
    # `${{ attempt }}` in the command: no copy may stand for attempt 2.
    plan = make_plan(tmp_path, body=CONSTANT)
    argvs = [a.argv for a in plan.attempts if a.cell.id == plan.attempts.cells[0].id]
    assert argvs == [("/bin/sh", "-c", f"echo {n}") for n in range(1, 5)]


def test_each_cells_expectation_is_held_by_index_and_reads_as_the_mapping_by_id(
    tmp_path: Path,
) -> None:
    body = (
        "matrix: {n: [1, 2, 3, 4, 5], m: [a, b]}\n"
        "expect:\n  outcome: pass\n  cases:\n"
        "    - {when: {n: 2}, outcome: crash, signal: SIGSEGV}\n"
        "    - {when: {m: b}, outcome: fail, exit_code: 7}\n"
    )
    whole = make_plan(tmp_path, body)
    kept = make_plan(tmp_path, body, RunOptions(matrix_filters=("n=2", "n=5")))
    for plan in (whole, kept):
        # What plan_run held before: a dict of every cell's expectation by its id.
        by_id = {cell.id: expectation_for(plan.spec, cell) for cell in plan.cells}
        assert dict(plan.expectations) == by_id
        assert list(plan.expectations.values()) == list(by_id.values())
        assert [plan.expectation(c) for c in plan.cells] == list(by_id.values())
        # Equal expectations are one object.
        assert len(plan.expectations.distinct) == len(set(by_id.values()))
    assert [e.outcome for e in kept.expectations.values()] == ["crash", "crash", "pass", "fail"]
    # A cell -m left out has none: asked, it is a KeyError as the dict's was.
    left_out = whole.cells[0]
    assert left_out not in kept.cells
    with pytest.raises(KeyError):
        kept.expectation(left_out)
    with pytest.raises(KeyError):
        kept.expectations[left_out.id]


def test_a_repeat_option_is_held_to_the_attempts_per_run_bound(tmp_path: Path) -> None:
    # The spec's own repeat was bounded when it was validated; --repeat replaces it after,
    # so it is checked again: 10 cells x 10,000 is the most (docs/limits.md), 11 are not.
    plan = make_plan(tmp_path, options=RunOptions(out=tmp_path, repeat=10_000))
    assert len(plan.attempts) == 100_000
    eleven = BODY.replace("n: [1, 2, 3, 4, 5], m: [a, b]", "n: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")
    with pytest.raises(UsageError, match=r"110000 attempts \(11 cells x 10000\)"):
        make_plan(tmp_path, eleven, RunOptions(out=tmp_path, repeat=10_000))


def test_a_shard_of_adaptive_repeats_is_refused_before_anything_runs(tmp_path: Path) -> None:
    # Each shard added attempts to the cells undecided on its own share, numbered after
    # its own: both shards' attempt 5 of a cell, which `merge` then refused.
    body = "matrix: {k: [a, b, c]}\nrun: {repeat: auto, max_repeat: 12}\n"
    rate = body + "expect: {outcome: error, rate: '>=0.3'}\n"
    with pytest.raises(UsageError, match=r"--shard 1/2: `repeat: auto`"):
        make_plan(tmp_path, rate, RunOptions(out=tmp_path, shard=Shard(1, 2)))
    # A fixed number of attempts shards, and so does `auto` where no cell has a rate (it
    # runs the first attempts only).
    fixed = make_plan(tmp_path, rate, RunOptions(out=tmp_path, shard=Shard(1, 2), repeat=4))
    assert len(fixed.attempts) == 6
    plain = body + "expect: {outcome: pass}\n"
    assert make_plan(tmp_path, plain, RunOptions(out=tmp_path, shard=Shard(2, 2))).attempts


def test_plan_prints_each_cell_as_it_is_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `reprospec plan` writes cell by cell (commands/plan.plan_blocks over
    # plan.each_first_attempt), so that a reader gone early (`plan | head`) stops the
    # planning too: the same plans as first_attempts, joined the same text as plan_text.
    from reprospec.commands.plan import plan_blocks, plan_text
    from reprospec.plan.attempt import each_first_attempt, first_attempts

    plan = make_plan(tmp_path)
    cells = plan.attempts.cells
    assert list(each_first_attempt(plan.spec, cells)) == list(first_attempts(plan.spec, cells))
    planned: list[str] = []
    real = attempt_module.plan_attempt

    def counting(*args: object, **kwargs: object) -> object:
        made = real(*args, **kwargs)  # type: ignore[arg-type]
        planned.append(made.cell.id)
        return made

    monkeypatch.setattr(attempt_module, "plan_attempt", counting)
    blocks = plan_blocks(plan.spec, 3, len(cells), each_first_attempt(plan.spec, cells))
    head = next(blocks)
    assert head == "spec lazy: 10 cells x 3 attempts"
    assert planned == []
    first = next(blocks)
    assert first.startswith("\n\n[n=1,m=a]\n  index: 0\n")
    assert planned == ["n=1,m=a"]  # the second cell is planned when it is to be written
    rest = "".join(blocks)
    assert planned == [c.id for c in cells]
    planned.clear()
    assert head + first + rest == plan_text(plan.spec, 3, first_attempts(plan.spec, cells))


@pytest.mark.parametrize("alike", [False, True], ids=["expression", "constant"])
def test_a_probe_numbers_its_attempts_from_its_first_attempt(tmp_path: Path, alike: bool) -> None:
    """A search's probe (RunOptions.first_attempt) plans attempts 7, 8, 9 of each cell, each
    evaluating `${{ attempt }}` as its own number; a run plans 1, 2, 3 as before. Every probe
    planned 1..N, so a seed of the attempt number drew the same values in each."""
    body = "matrix: {m: [a, b]}\nrun: {repeat: 3}\nexpect: {outcome: pass}\n"
    spec_file = tmp_path / "spec.yaml"
    command = "echo same" if alike else "echo ${{ attempt }}"
    spec_file.write_text(f"reprospec: 1\nname: probe\ncommand: '{command}'\n{body}")
    spec = load_spec(spec_file)
    plan = plan_run(spec, RunOptions(out=tmp_path, first_attempt=7))
    assert [(a.cell.id, a.attempt) for a in plan.attempts] == [
        (cell, n) for n in (7, 8, 9) for cell in ("m=a", "m=b")
    ]
    if not alike:
        assert [(a.argv or ("",))[-1].split()[-1] for a in plan.attempts][:3] == ["7", "7", "8"]
    assert [a.attempt for a in plan.first_attempts()] == [7, 7]
    assert list(plan.attempts.numbers_of(1)) == [7, 8, 9]
    assert plan.attempts.planned(1, 8) == plan.attempts[3]
    assert [a.attempt for a in plan_run(spec, RunOptions(out=tmp_path)).attempts] == [
        1, 1, 2, 2, 3, 3,
    ]  # fmt: skip


def test_a_probes_first_attempt_is_stored_and_read_back() -> None:
    """`--resume` of a probe's run plans the numbers it began with; a run's stored options
    are as they were (no `first_attempt` where it is 1)."""
    out = Path("/tmp/out")
    probe = RunOptions(out=out, purpose="amplify", first_attempt=13)
    assert probe.to_dict()["first_attempt"] == 13
    assert RunOptions.from_dict(probe.stored(), out).first_attempt == 13
    assert "first_attempt" not in RunOptions(out=out).to_dict()
    assert RunOptions.from_dict(RunOptions(out=out).to_dict(), out).first_attempt == 1
    for bad in (0, -2, 1.5, True, "3"):
        with pytest.raises(UsageError, match="first_attempt"):
            RunOptions(first_attempt=bad)  # type: ignore[arg-type]
