"""The standalone repro of a cell that fails in only some attempts: one plain run of it
usually passed, and the report gave the command bare, as if it failed every time (lo36)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.results import RunResult, Standalone
from reprospec.core.units import parse_rate
from reprospec.report.html import render_html
from reprospec.report.markdown import render_markdown
from reprospec.report.standalone import flaky_loop, repro_line
from tests.support.runs import _attempt, segfault_matrix

CELL = "num_workers=2,pin_memory=true"
PASSED = segfault_matrix().cells[0].attempts[0].outcome


def _run(failed: int, attempts: int, expected: Expectation | None = None) -> RunResult:
    """segfault_matrix's crashing corner, failing in `failed` of `attempts`."""
    run = segfault_matrix()
    corner = run.cells[3]
    crash = corner.attempts[0]
    tries = tuple(
        replace(crash, attempt=n) if n <= failed else _attempt(n, PASSED, False)
        for n in range(1, attempts + 1)
    )
    cells = (
        *run.cells[:3],
        replace(corner, attempts=tries, expected=expected or corner.expected),
    )
    standalone = Standalone(CELL, "command", run="cd work && python crash.py")
    return replace(run, cells=cells, standalone=standalone)


def test_a_flaky_cell_gets_a_loop_until_it_fails() -> None:
    run = _run(3, 10)
    text = render_markdown(run)
    section = text.split("## Standalone repro", 1)[1]
    assert (
        "It failed in 3 of 10 attempts here, so one plain run may well pass: run it until it "
        "fails, at most 10 times (95% odds of a failure at that rate):\n\n```sh\n"
        'for i in $(seq 10); do ( cd work && python crash.py ) || { echo "failed on run $i"; '
        "break; }; done\n```"
    ) in section
    # The line under the headline is the loop too, and says why.
    assert repro_line(run, flaky_loop(run)) == (
        f"**Repro without reprospec** (cell `{CELL}`, from the spec's folder; it fails in some "
        "runs only: looped until it fails; [more](#standalone-repro)): `for i in $(seq 10); "
        'do ( cd work && python crash.py ) || { echo "failed on run $i"; break; }; done`'
    )
    html = render_html(run)
    assert "It failed in 3 of 10 attempts here, so one plain run may well pass" in html
    assert "for i in $(seq 10); do ( cd work &amp;&amp; python crash.py )" in html
    # A rarer failure loops longer: 95% odds at 1/20 takes 59 runs.
    looped = flaky_loop(_run(1, 20))
    assert looped is not None
    assert looped[1].startswith("for i in $(seq 59); do")


def test_a_declared_rate_is_flaky_though_every_attempt_failed() -> None:
    expected = replace(segfault_matrix().cells[3].expected, rate=parse_rate(">0"))
    run = _run(2, 2, expected)
    looped = flaky_loop(run)
    assert looped is not None
    assert looped[0].startswith("Its `expect.rate` (`>0`) says it fails in some attempts")
    assert looped[1].startswith("for i in $(seq 10); do")


def test_a_cell_that_fails_every_time_gets_no_loop() -> None:
    run = _run(3, 3)
    assert flaky_loop(run) is None
    assert "until it fails" not in render_markdown(run)
    assert repro_line(run, flaky_loop(run)).endswith("`cd work && python crash.py`")


def test_a_multi_line_repro_is_looped_in_a_subshell() -> None:
    run = _run(1, 2)
    several = replace(run, standalone=Standalone(CELL, "command", run="cd w\npids=\n(exit 1)"))
    looped = flaky_loop(several)
    assert looped is not None
    assert looped[1] == (
        'for i in $(seq 10); do\n(\ncd w\npids=\n(exit 1)\n) || { echo "failed on run $i"; '
        "break; }\ndone"
    )


def test_report_md_reads_a_flaky_cell_s_loop_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """lo40: the standalone section and the line under the headline each worked out the
    loop; report.md now reads it once and gives it to both."""
    from reprospec.report import markdown, standalone

    calls: list[RunResult] = []

    def counted(run: RunResult, *args: Callable[[str], str]) -> tuple[str, str] | None:
        calls.append(run)
        return flaky_loop(run, *args)

    monkeypatch.setattr(standalone, "flaky_loop", counted)
    monkeypatch.setattr(markdown, "flaky_loop", counted, raising=False)
    text = render_markdown(_run(3, 10))
    assert "**Repro without reprospec**" in text
    assert "It failed in 3 of 10 attempts here" in text
    assert len(calls) == 1


def test_a_run_where_nothing_failed_offers_no_repro_line() -> None:
    """A run whose every attempt passed showed "**Repro without reprospec** ... `sleep 3`"
    under its "No failure" headline, as if there were a failure to reproduce."""
    run = _run(0, 2)
    assert repro_line(run, flaky_loop(run)) == ""
    text = render_markdown(run)
    assert "Repro without reprospec" not in text
    # The section still shows how the cell ran, without claiming a failure.
    assert "## Standalone repro" in text
