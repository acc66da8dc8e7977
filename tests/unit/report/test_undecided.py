"""progress.undecided_lines: what decides each undecided cell, said under the run's count."""

from __future__ import annotations

from dataclasses import replace

from reprospec.core.inputs import Cell
from reprospec.core.rates import rate_of
from reprospec.core.results import CellResult, RunResult
from reprospec.core.units import parse_rate
from reprospec.report.progress import undecided_lines
from tests.support.runs import segfault_matrix


def _undecided(matched: int, attempts: int, rate: str, index: int = 0) -> CellResult:
    template = segfault_matrix().cells[0]
    return replace(
        template,
        cell=Cell(id=f"n={index}", index=index, matrix={"n": index}),
        expected=replace(template.expected, rate=parse_rate(rate)),
        verdict="undecided",
        rate=rate_of(matched, attempts),
    )


def _run(*cells: CellResult) -> RunResult:
    return replace(segfault_matrix(), cells=cells)


def test_a_decidable_cell_is_told_its_repeat() -> None:
    (line,) = undecided_lines(_run(_undecided(1, 3, ">=0.1")))
    assert line.startswith("undecided: n=0: 1/3 (95% CI 0.06–0.80) straddles >=0.1; ")
    assert "at the rate seen, about 5 attempts decide it (reproduced): --repeat 5" in line
    # Which way more attempts decide it is said: none of 3 straddles >=0.5, none of 4 fails it.
    (line,) = undecided_lines(_run(_undecided(0, 3, ">=0.5")))
    assert "about 4 attempts decide it (not reproduced): --repeat 4" in line


def test_a_cell_whose_attempts_all_missed_alike_is_pointed_to_its_expect() -> None:
    # The report's reason said more attempts will not settle it, and the terminal told
    # --repeat 4 (which decides it as not reproduced).
    crash = segfault_matrix().cells[3].attempts[0]
    missed = ("signal: expected SIGSEGV, got SIGABRT",)
    attempts = tuple(replace(crash, attempt=n, matched=False, mismatches=missed) for n in (1, 2, 3))
    cell = replace(_undecided(0, 3, ">=0.5"), attempts=attempts)
    (line,) = undecided_lines(_run(cell))
    assert "--repeat" not in line
    assert line.endswith(
        "every attempt failed that way but missed signal: expected SIGSEGV, got SIGABRT: the "
        "expect does not describe the failure that happens, and more attempts will not settle it"
    )


def test_the_bound_itself_is_said_only_of_a_rate_at_the_bound() -> None:
    (line,) = undecided_lines(_run(_undecided(10, 100, ">=0.1")))
    assert line.endswith("the rate seen is the bound itself: more attempts may not decide it")
    # 21/200 is 0.105, not the bound: it takes more than --repeat's limit.
    (line,) = undecided_lines(_run(_undecided(21, 200, ">=0.1")))
    assert line.endswith("at the rate seen, it takes more than 10,000 attempts (--repeat's limit)")


def test_a_large_matrix_is_told_no_repeat_past_a_runs_limit() -> None:
    # 43/400 is decided at 6,014 attempts, which 20 cells (5,000 each at most) cannot run.
    cells = [_undecided(43, 400, ">=0.1", n) for n in range(20)]
    lines = undecided_lines(_run(*cells))
    assert lines[0].endswith(
        "at the rate seen, it takes more than 5,000 attempts "
        "(a run's limit of 100,000 attempts over 20 cells)"
    )
    assert lines[-1] == "undecided: 15 more cells (report.md)"
    assert len(lines) == 6


def test_no_failure_seen_against_more_than_zero_is_told_a_bound_clean_attempts_refute() -> None:
    # No count of clean attempts decides `>0` (0/11 once read as met): none is suggested.
    (line,) = undecided_lines(_run(_undecided(0, 3, ">0")))
    assert "--repeat" not in line
    assert line.endswith(
        "one failure meets >0 and no count of clean attempts refutes it: "
        "expect.rate: '>=0.01' is refuted by 382 clean attempts"
    )


def test_an_interrupted_run_says_none() -> None:
    assert undecided_lines(replace(_run(_undecided(1, 3, ">=0.1")), interrupted=True)) == []
