"""progress.undecided_lines: what decides each undecided cell, said under the run's count."""

from __future__ import annotations

from dataclasses import replace

from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonObject
from reprospec.core.rates import judge_rate, rate_of
from reprospec.core.results import CellResult, RunResult
from reprospec.core.units import parse_rate
from reprospec.report.progress import undecided_lines
from reprospec.spec.matrix import matrix_cells, select
from reprospec.spec.yamlsource import load_yaml
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


def _run(*cells: CellResult, spec_cells: int = 0, filters: tuple[str, ...] = ()) -> RunResult:
    """A run of `cells` (axis `n`), of a spec whose matrix is n: 0.. (`spec_cells` of them,
    else as many as the run has) that `filters` (`-m`) selected them from."""
    values = ", ".join(str(n) for n in range(spec_cells or len(cells)))
    spec = f"reprospec: 1\nname: val-segfault\nmatrix:\n  n: [{values}]\ncommand: ./crash\n"
    options: JsonObject = {"matrix_filters": list(filters)}
    return replace(segfault_matrix(), cells=cells, spec_text=spec, options=options)


def test_a_decidable_cell_is_told_its_repeat() -> None:
    (line,) = undecided_lines(_run(_undecided(1, 3, ">=0.1")))
    assert line.startswith("undecided: n=0: 1/3 (95% CI 0.06–0.80) straddles >=0.1; ")
    # At 1/3 itself (2 of 5 was 0.4, which 1 of 3 is not).
    assert "at the rate seen, about 7 attempts decide it (reproduced): --repeat 7" in line
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
        "expect does not describe the failure that happens; more attempts will not settle it"
    )


def test_the_bound_itself_is_said_only_of_a_rate_at_the_bound() -> None:
    (line,) = undecided_lines(_run(_undecided(10, 100, ">=0.1")))
    assert line.endswith("the rate seen is the bound itself: more attempts may not decide it")
    # 21/200 is 0.105, not the bound: it takes more than --repeat's limit.
    (line,) = undecided_lines(_run(_undecided(21, 200, ">=0.1")))
    assert line.endswith("at the rate seen, it takes more than 10,000 attempts (--repeat's limit)")


def test_a_large_matrix_is_told_the_repeat_of_the_cell_alone() -> None:
    # 43/400 is decided at 6,147 attempts, which 20 cells (5,000 each at most) cannot run:
    # the cell alone can (`-m n=0 --repeat 6147`), where the line said it could not be.
    cells = [_undecided(43, 400, ">=0.1", n) for n in range(20)]
    lines = undecided_lines(_run(*cells))
    assert lines[0].endswith(
        "about 6147 attempts decide it (reproduced): --repeat 6147 -m n=0, the cell alone "
        "(20 cells x 6147 is past a run's limit of 100,000 attempts)"
    )
    assert "run.max_repeat" not in lines[0]
    assert lines[-1] == "undecided: 15 more cells (report.md)"
    assert len(lines) == 6


def test_run_max_repeat_is_offered_only_where_the_specs_whole_matrix_takes_it() -> None:
    # 2 of 40 cells kept by -m run 6,147 attempts each, but run.max_repeat is checked
    # against all 40 cells (245,880 attempts): it was offered, and validation refused it.
    cells = [_undecided(43, 400, ">=0.1", n) for n in range(2)]
    (line, _) = undecided_lines(_run(*cells, spec_cells=40, filters=("n=0", "n=1")))
    assert line.endswith("about 6147 attempts decide it (reproduced): --repeat 6147")
    # 7 attempts each of the 40 is within it: offered.
    (line,) = undecided_lines(_run(_undecided(1, 3, ">=0.1"), spec_cells=40, filters=("n=0",)))
    assert line.endswith("--repeat 7 (or run.repeat: auto with run.max_repeat: 7)")


def test_the_cell_alone_is_said_with_the_axes_other_cells_hold() -> None:
    # An axis only another cell holds (an `include` entry's `pin`) is null in this one, and
    # said so, as a job matrix's filters are: the words keep this cell alone.
    spec = (
        "reprospec: 1\nname: g\ncommand: ./crash\nmatrix:\n"
        f"  n: [{', '.join(str(n) for n in range(20))}]\n  include: [{{n: 19, pin: true}}]\n"
    )
    document = load_yaml(spec).data
    assert isinstance(document, dict)
    assert isinstance(document["matrix"], dict)
    every = matrix_cells(document["matrix"])
    cells = [replace(_undecided(43, 400, ">=0.1"), cell=cell) for cell in every]
    lines = undecided_lines(replace(_run(*cells), spec_text=spec))
    assert len(every) == 20
    said = lines[0].partition("--repeat 6147 ")[2].partition(", the cell alone")[0]
    assert said == "-m n=0 -m pin=null"
    assert list(select(every, ["n=0", "pin=null"])) == [every[0]]


def test_no_failure_seen_against_more_than_zero_is_told_a_bound_clean_attempts_refute() -> None:
    # No count of clean attempts decides `>0` (0/11 once read as met): none is suggested.
    (line,) = undecided_lines(_run(_undecided(0, 3, ">0")))
    assert "--repeat" not in line
    assert line.endswith(
        "one failure meets >0 and no count of clean attempts refutes it: "
        "expect.rate: '>=0.01' is refuted by 382 clean attempts"
    )


def test_every_attempt_failing_against_less_than_one_is_told_a_bound_failures_refute() -> None:
    # The mirror of `>0`: no count of failures decides `<1` and one clean attempt meets it;
    # 3/3 was told "the rate seen is the bound itself", which left nothing to do.
    (line,) = undecided_lines(_run(_undecided(3, 3, "<1")))
    assert "--repeat" not in line
    assert line.endswith(
        "one clean attempt meets <1 and no count of failures refutes it: "
        "expect.rate: '<=0.99' is refuted by 382 failing attempts"
    )
    # ... which they do: 382 of 382 fail `<=0.99`.
    assert judge_rate(rate_of(382, 382), parse_rate("<=0.99")) == "failed"


def test_an_interrupted_run_says_none() -> None:
    assert undecided_lines(replace(_run(_undecided(1, 3, ">=0.1")), interrupted=True)) == []
