"""GitHub's workflow commands from a run: which cells are annotated, and the escaping that
keeps a spec's text inside its annotation."""

from __future__ import annotations

from dataclasses import replace

from reprospec.core.inputs import Cell
from reprospec.core.words import time_left
from reprospec.report.github import MAX_ANNOTATIONS, error_annotations
from tests.support.runs import error_run, infra_run


def test_only_cells_that_need_a_look_are_annotated_at_their_line() -> None:
    run = error_run()
    failing = [c.cell.id for c in run.cells if c.verdict != "reproduced"]
    lines = error_annotations(run, "specs/e.yaml", {cell_id: 7 for cell_id in failing})
    assert len(lines) == len(failing)
    assert all(
        line.startswith("::error file=specs/e.yaml,line=7,title=reprospec%3A ") for line in lines
    )
    infra = error_annotations(infra_run(), "x.yaml", {})
    assert infra
    assert all(",line=1,title=reprospec%3A infra-error%3A " in line for line in infra)


def test_a_value_cannot_end_the_annotation_or_start_a_command() -> None:
    run = infra_run()
    cell = run.cells[0]
    forged = replace(cell, cell=Cell("v=a,b:c%\n::warning::x", 0, {}), reason="r\r\n::error::y")
    (line,) = error_annotations(replace(run, cells=(forged,)), "a,b:c.yaml", {})
    assert "\n" not in line
    assert "\r" not in line
    head, message = line.split("::", 2)[1:]
    assert head == (
        "error file=a%2Cb%3Ac.yaml,line=1,"
        "title=reprospec%3A infra-error%3A v=a%2Cb%3Ac%25 %3A%3Awarning%3A%3Ax"
    )
    assert message.startswith("v=a,b:c%25%0A::warning::x: infra-error: r%0D%0A::error::y%0A")


def test_past_the_cap_the_last_annotation_counts_the_rest() -> None:
    run = infra_run()
    many = tuple(
        replace(run.cells[0], cell=Cell(f"n={i}", i, {"n": i})) for i in range(MAX_ANNOTATIONS + 3)
    )
    lines = error_annotations(replace(run, cells=many), "x.yaml", {})
    assert len(lines) == MAX_ANNOTATIONS
    assert lines[-1].endswith("%0A... and 3 more cells: see the report")


def test_time_left_is_coarse() -> None:
    assert [time_left(s) for s in (0.4, 42, 190, 3900)] == [
        "eta 0s",
        "eta 42s",
        "eta 3m10s",
        "eta 1h05m",
    ]


def test_the_job_summary_of_a_resumed_run_says_so_as_report_md_does() -> None:
    """report.md, the HTML page, results.json and the JUnit report said a run was resumed;
    the job summary, the page a CI shows, read it as a run that went straight through."""
    from reprospec.core.resumed import Resumed
    from reprospec.report import render

    run = replace(error_run(), resumed=Resumed(2, 2, "interrupted", "2026-12-01T09:28:58+00:00"))
    said = "2 attempts carried over from the run interrupted at 2026-12-01 09:28:58 UTC, 2 run now"
    summary = render(run, "github")
    note = f"> **Resumed** (`reprospec run --resume {run.run_id}`): {said}.\n"
    assert note in summary
    assert note in render(run, "md")
    # Under the headline, above the table.
    assert summary.index(note) < summary.index("| | cell |")
    assert "Resumed" not in render(error_run(), "github")


def test_an_undecided_cell_is_named_undecided_once_with_its_interval() -> None:
    # "p=0.5: undecided: undecided: 1/1 = 1.00 straddles >=0.3 ..." and `1/1` alone, where
    # the reason says the interval straddles the bound.
    from reprospec.core.results import AttemptResult, CellResult, Outcome
    from reprospec.core.units import parse_rate
    from reprospec.outcome.judge import judge_cell

    run = infra_run()
    expected = replace(run.cells[0].expected, outcome="crash", rate=parse_rate(">=0.3"))
    crashed = AttemptResult(1, 0.1, Outcome(kind="crash", signal="SIGSEGV"), True, (), logs="")
    verdict = judge_cell(expected, (crashed,))
    assert verdict.kind == "undecided"
    cell = CellResult.judged(run.cells[0].cell, expected, verdict, (crashed,), "x", None)
    (line,) = error_annotations(replace(run, cells=(cell,)), "x.yaml", {})
    message = line.split("::", 2)[2]
    assert message.count("undecided") == 1, message
    assert "(1/1 (95%25 CI 0.20–1.00) matched)" in message  # `%` escaped, as GitHub reads it
