"""Observe mode's explanations: outcomes grouped by signature, values that explain them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from reprospec.core.inputs import Cell
from reprospec.core.results import AttemptResult, CellResult, NotRun, Outcome, RunResult
from reprospec.outcome.judge import judge_cell
from reprospec.plan.attempt import OBSERVE
from reprospec.report import render
from reprospec.report.environment import CellEnvironments
from reprospec.report.signatures import outcome_groups
from reprospec.report.tables import LARGE_RUN_CELLS, result_groups

PASS = Outcome(kind="pass", exit_code=0, signature="pass")


SEGV = Outcome(kind="crash", signal="SIGSEGV", signature="crash:SIGSEGV:main")


ABRT = Outcome(kind="crash", signal="SIGABRT", signature="crash:SIGABRT:main")


def observed_run(
    cells: Sequence[tuple[Mapping[str, Any], Sequence[Outcome | NotRun]]],
) -> RunResult:
    results = []
    for index, (matrix, outcomes) in enumerate(cells):
        cell = Cell(",".join(f"{k}={v}" for k, v in matrix.items()), index, dict(matrix))
        attempts = tuple(
            AttemptResult(n, 0.1, o, not isinstance(o, NotRun), (), f"cells/{n}")
            for n, o in enumerate(outcomes, start=1)
        )
        verdict = judge_cell(OBSERVE, attempts)
        results.append(CellResult.judged(cell, OBSERVE, verdict, attempts, ""))
    return RunResult(
        run_id="r",
        spec_name="s",
        spec_path="s.yaml",
        spec_text="",
        runner="local",
        started="",
        finished="",
        environment={},
        cells=tuple(results),
    )


def grid(rule: Callable[[dict[str, bool]], bool], outcome: Outcome = SEGV) -> RunResult:
    """Three boolean toggles; cells where `rule(matrix)` holds end with `outcome`."""
    cells = []
    for a in (False, True):
        for b in (False, True):
            for c in (False, True):
                matrix = {"a": a, "b": b, "c": c}
                cells.append((matrix, [outcome if rule(matrix) else PASS]))
    return observed_run(cells)


def texts(run: RunResult, signature: str) -> list[str]:
    group = next(g for g in outcome_groups(run) if g.signature == signature)
    return [e.text(code=False) for e in group.explanations]


def test_observed_cells_are_recorded_not_judged() -> None:
    run = grid(lambda m: m["a"])
    assert {c.verdict for c in run.cells} == {"observed"}
    assert run.observes
    assert run.summary["observed"] == 8
    assert all(a.matched for c in run.cells for a in c.attempts)


def test_a_single_value_explains_an_outcome_both_ways() -> None:
    run = grid(lambda m: m["a"])
    assert texts(run, "crash:SIGSEGV:main") == [
        "a=true: in every cell with this outcome, in no other",
        "a=false: in no cell with this outcome, in every cell without it",
    ]
    groups = outcome_groups(run)
    assert [g.signature for g in groups] == ["crash:SIGSEGV:main", "pass"]  # failures first
    assert groups[0].headline(code=False) == "crash SIGSEGV in 4 of 8 cells (4 attempts)"


def test_a_pair_explains_what_no_single_value_does() -> None:
    run = grid(lambda m: m["a"] and m["c"])
    assert texts(run, "crash:SIGSEGV:main") == [
        "a=true and c=true together: in every cell with this outcome, together in no other"
    ]
    # The other way round: every passing cell has a=false or c=false, so no value (or
    # pair) is in every passing cell and never with the crash.
    assert texts(run, "pass") == [
        "a=true and c=true together: in no cell with this outcome, "
        "together in every cell without it"
    ]


def test_a_protective_value_is_found_from_the_other_side() -> None:
    # It crashes unless b is on: b=true is in every passing cell and no crashing one.
    run = grid(lambda m: not m["b"])
    assert "b=true: in no cell with this outcome, in every cell without it" in texts(
        run, "crash:SIGSEGV:main"
    )
    assert "b=true: in every cell with this outcome, in no other" in texts(run, "pass")


def test_patterns_explain_what_no_value_nor_pair_does() -> None:
    """A crash of `a and (b or c)`: no value nor pair is in its cells alone; the two
    patterns that hold them are, and observe says so as the judged report does, in one
    statement (--observe explained nothing)."""
    run = grid(lambda m: m["a"] and (m["b"] or m["c"]))
    (group,) = [g for g in outcome_groups(run) if g.failure]
    assert group.explanations == ()
    assert group.lines(code=False) == [
        "(a=true, b=true) or (a=true, c=true): every cell with this outcome is one or the "
        "other, no other cell is either"
    ]
    text = render(run, "md")
    assert (
        "  - `a=true, b=true` or `a=true, c=true`: every cell with this outcome is one or "
        "the other, no other cell is either"
    ) in text.split("## Outcomes", 1)[1]


def test_two_disjoint_patterns_are_found_whatever_order_the_axes_merge_in() -> None:
    """A crash of `(a and b) or (not a and c)`: merged on `a` first, (a, b, c) = (1, 1, 1)
    and (0, 1, 1) joined, and no two patterns were left; the run said nothing of why its
    four cells crashed (nu-b o2)."""
    run = grid(lambda m: (m["a"] and m["b"]) or (not m["a"] and m["c"]))
    (group,) = [g for g in outcome_groups(run) if g.failure]
    assert group.lines(code=False) == [
        "(a=false, c=true) or (a=true, b=true): every cell with this outcome is one or the "
        "other, no other cell is either"
    ]
    # A crash of odd parity needs four patterns (no pattern holds two of its cells and no
    # passing one): still nothing said.
    odd = grid(lambda m: (m["a"] + m["b"] + m["c"]) % 2 == 1)
    (group,) = [g for g in outcome_groups(odd) if g.failure]
    assert group.lines(code=False) == []


def test_each_signature_is_its_own_group_and_flaky_cells_count_in_each() -> None:
    run = observed_run(
        [
            ({"x": 0}, [PASS, PASS]),
            ({"x": 1}, [SEGV, PASS]),  # flaky: both outcomes
            ({"x": 2}, [ABRT]),
            ({"x": 3}, [NotRun("no interpreter")]),  # could not run: in no group
        ]
    )
    groups = {g.signature: g for g in outcome_groups(run)}
    assert set(groups) == {"crash:SIGSEGV:main", "crash:SIGABRT:main", "pass"}
    assert groups["pass"].cells == ("x=0", "x=1")
    assert groups["pass"].attempts == 3
    assert groups["crash:SIGSEGV:main"].of_cells == 3
    assert next(e.text(code=False) for e in groups["crash:SIGABRT:main"].explanations) == (
        "x=2: in every cell with this outcome, in no other"
    )
    assert run.cells[3].verdict == "infra-error"


def test_an_outcome_of_every_cell_that_ran_is_not_said_of_every_cell() -> None:
    # A cell that could not run (command not found) and one that passed: "pass in every cell
    # (2 attempts)", though the infra-error cell never passed.
    run = observed_run([({"p": "a"}, [PASS, PASS]), ({"p": "b"}, [NotRun("command not found")])])
    (group,) = outcome_groups(run)
    assert group.headline(code=False) == "pass in every cell that ran, 1 of 2 (2 attempts)"
    three = observed_run(
        [({"p": "a"}, [PASS]), ({"p": "b"}, [SEGV]), ({"p": "c"}, [NotRun("no interpreter")])]
    )
    said = {g.signature: g.headline(code=False) for g in outcome_groups(three)}
    assert said["pass"] == "pass in 1 of the 2 cells that ran, of 3 (1 attempt)"
    assert "`pass` in every cell that ran, 1 of 2 (2 attempts)" in render(run, "md")


def test_no_matrix_no_explanation() -> None:
    run = observed_run([({}, [SEGV, SEGV])])
    (group,) = outcome_groups(run)
    assert group.explanations == ()
    assert group.headline(code=False).endswith("in every attempt (2 attempts)")


def test_a_crash_whose_core_was_lost_joins_the_one_it_agrees_with() -> None:
    # -j 2 in one folder under kernel.core_pattern=core: one crash's core replaced another's.
    framed = Outcome(kind="crash", signal="SIGSEGV", signature="crash:SIGSEGV:main:strlen@libc")
    run = observed_run([({"x": 0}, [PASS]), ({"x": 1}, [framed]), ({"x": 2}, [SEGV])])
    lost = "_native stacks unavailable: the attempt exited 139 but left no core_\n"
    read = "Native frames of the crashing thread: `strlen (libc.so.6)`\n"
    cells = []
    for cell, native in zip(run.cells, (None, read, lost), strict=True):
        attempts = tuple(replace(a, native=native) for a in cell.attempts)
        cells.append(replace(cell, attempts=attempts))
    groups = {g.signature: g for g in outcome_groups(replace(run, cells=tuple(cells)))}
    assert set(groups) == {"crash:SIGSEGV:main:strlen@libc", "pass"}
    assert groups["crash:SIGSEGV:main:strlen@libc"].cells == ("x=1", "x=2")
    # Read, and no frame there: a crash of its own, whatever the others' frames.
    cells[2] = replace(cells[2], attempts=tuple(replace(a, native=read) for a in cells[2].attempts))
    groups = {g.signature: g for g in outcome_groups(replace(run, cells=tuple(cells)))}
    assert set(groups) == {"crash:SIGSEGV:main:strlen@libc", "crash:SIGSEGV:main", "pass"}


def test_a_large_observed_runs_rows_count_attempts_not_a_match_rate() -> None:
    # More cells than LARGE_RUN_CELLS: one row per group, whose attempts column is the
    # count of attempts, as a small run's rows, not `2/2 (95% CI …)` of "anything".
    run = observed_run([({"x": n}, [PASS, SEGV]) for n in range(LARGE_RUN_CELLS + 1)])
    (group,) = result_groups(run, CellEnvironments())
    assert group["rate"] == "2"
    assert group["count"] == LARGE_RUN_CELLS + 1


def test_a_large_observed_runs_page_names_each_outcomes_cells_by_pattern_as_the_report() -> None:
    # One builder for both (markdown.outcome_rows): the page listed all 34 ids one by one.
    run = observed_run(
        [({"x": n, "y": n % 2}, [SEGV if n % 2 else PASS]) for n in range(LARGE_RUN_CELLS + 2)]
    )
    html, md = render(run, "html"), render(run, "md")
    pattern = "x=" + "|".join(str(n) for n in range(1, LARGE_RUN_CELLS + 2, 2)) + ", y=1"
    outcomes = html.split('<h2 id="outcomes">Outcomes</h2>')[1].split("</ul>\n</li>")[0]
    assert f"<code>{pattern}</code>" in outcomes
    assert "<code>x=1,y=1</code>" not in outcomes
    assert f"in 17 of 34 cells (17 attempts): `{pattern}`\n" in md


def test_a_run_of_one_cell_says_each_outcome_s_share_of_its_attempts() -> None:
    """`run --observe` of a spec of one cell, 4 crashes and 2 passes, printed "crash SIGABRT
    in every cell (4 attempts)" and "pass in every cell (2 attempts)": two outcomes each
    said of every cell. Its one cell's attempts are the measure."""
    run = observed_run([({}, [ABRT, PASS, ABRT, ABRT, PASS, ABRT])])
    said = {g.signature: g.headline(code=False) for g in outcome_groups(run)}
    assert said["crash:SIGABRT:main"] == "crash SIGABRT in 4 of 6 attempts"
    assert said["pass"] == "pass in 2 of 6 attempts"
    (alone,) = outcome_groups(observed_run([({}, [ABRT, ABRT])]))
    assert alone.headline(code=False) == "crash SIGABRT in every attempt (2 attempts)"
    assert "`crash SIGABRT` in 4 of 6 attempts" in render(run, "md")
    # The report's first line counted each outcome's cells: "crash SIGABRT in 1, pass in 1".
    assert "**Observed 1 cell, 6 attempts: crash SIGABRT in 4, pass in 2**" in render(run, "md")
    (once,) = outcome_groups(observed_run([({}, [ABRT])]))
    assert once.headline(code=False) == "crash SIGABRT in its one attempt"


def test_a_run_of_one_cell_says_the_attempts_that_did_not_run() -> None:
    """A cell of 5 passes and 1 attempt that could not run read `pass in every attempt
    (5 attempts)` and `Observed 1 cell, 5 attempts`: the sixth was in no word."""
    missing = NotRun("no GPU")
    run = observed_run([({}, [PASS] * 5 + [missing])])
    (passed,) = outcome_groups(run)
    assert passed.headline(code=False) == "pass in every attempt that ran, 5 of 6"
    assert "**Observed 1 cell, 6 attempts (1 not run): pass in 5**" in render(run, "md")
    mixed = observed_run([({}, [PASS, ABRT, missing])])
    said = {g.signature: g.headline(code=False) for g in outcome_groups(mixed)}
    assert said["pass"] == "pass in 1 of the 2 attempts that ran, of 3"
    assert "**Observed 1 cell, 3 attempts (1 not run): crash SIGABRT in 1, pass in 1**" in (
        render(mixed, "md")
    )
    (alone,) = outcome_groups(observed_run([({}, [ABRT, missing])]))
    assert alone.headline(code=False) == "crash SIGABRT in the one attempt that ran, of 2"
