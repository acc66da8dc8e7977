"""The HTML report: every format renders the hand-built runs; the page is self-contained and
escaped."""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import product

from markupsafe import escape

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.results import AttemptResult, CellResult, Outcome, Rate, RunResult, Standalone
from reprospec.report import render
from tests.support.runs import segfault_matrix

HOSTILE = '<script>alert("title")</script>'


def _attempt(n: int, failed: bool) -> AttemptResult:
    outcome = (
        Outcome(
            "crash",
            signal="SIGSEGV",
            where="worker",
            phase="train",
            step=3,
            signature="crash:SIGSEGV:worker:train",
        )
        if failed
        else Outcome("pass", exit_code=0, phase="train", step=10, signature="pass")
    )
    return AttemptResult(
        attempt=n,
        duration_s=0.5 + n,
        outcome=outcome,
        matched=failed,
        mismatches=(),
        logs=f"cells/x/{n}/",
    )


def grid_run() -> RunResult:
    """A 3x4 matrix in which each cell failed a different number of its 4 attempts."""
    expected = Expectation("crash", signal="SIGSEGV")
    cells = []
    batches: list[int | str] = [8, 16, 32, '<b id="x">']
    for index, (workers, batch) in enumerate(product([0, 2, 4], batches)):
        failed = (index * 7) % 5
        attempts = tuple(_attempt(n, n <= failed) for n in range(1, 5))
        matched = sum(a.matched for a in attempts)
        cells.append(
            CellResult(
                cell=Cell(
                    id=f"workers={workers},batch={batch}",
                    index=index,
                    matrix={"workers": workers, "batch": batch},
                ),
                expected=expected,
                verdict="reproduced" if matched else "not-reproduced",
                reason="",
                rate=Rate(matched, 4, 0.0, 1.0),
                attempts=attempts,
            )
        )
    return RunResult(
        run_id="20261122-101010-grid-0001",
        spec_name="grid",
        spec_path="grid.yaml",
        spec_text="reprospec: 1\nname: grid\n",
        runner="local",
        started="2026-11-22T10:10:10+00:00",
        finished="2026-11-22T10:11:10+00:00",
        environment={"python": {"version": "3.11.7"}},
        cells=tuple(cells),
        title=HOSTILE,
        standalone=Standalone(
            cell="workers=0,batch=8",
            kind="workload",
            run="python repro.py",
            script="print('</pre><script>alert(1)</script>')\n",
        ),
    )


def test_html_is_self_contained_and_escaped() -> None:
    page = render(grid_run(), "html")
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page
    # Nothing is fetched: no external script, style, image or link.
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert not re.search(r"<(?:link|img|iframe|object|embed)\b", page)
    assert HOSTILE not in page
    assert str(escape(HOSTILE)) in page
    assert "<script>alert(1)</script>" not in page
    assert '<b id="x">' not in page
    assert page.count("<script>") == 1  # the page's own sorter


def test_every_format_renders_the_hand_built_runs() -> None:
    page = render(segfault_matrix(), "html")
    assert "crash:SIGSEGV:worker:validation" in page
    assert 'id="heatmap"' in page
    assert 'class="fail"' in page
    assert 'class="pass"' in page


def test_a_hang_beside_the_leading_crash_shows_its_stacks_as_report_md_does() -> None:
    # The crash leads the Failure section; the hang of another cell was "hang (2 attempts)"
    # on the page with no stack anywhere, where report.md folds them under Stacks.
    crash = grid_run()
    hung = AttemptResult(
        attempt=1,
        duration_s=5.0,
        outcome=Outcome("hang", phase="train", signature="hang:train"),
        matched=False,
        mismatches=("outcome: expected crash, got hang",),
        logs="cells/h/1/",
        stack='Thread 0x7f01 (most recent call first):\n  File "svc.py", line 9 in _wait_for_lock',
    )
    cell = CellResult(
        cell=Cell(id="mode=hang", index=len(crash.cells), matrix={"mode": "hang"}),
        expected=Expectation("crash", signal="SIGSEGV"),
        verdict="not-reproduced",
        reason="",
        rate=Rate(0, 1, 0.0, 0.79),
        attempts=(hung,),
    )
    run = replace(crash, cells=(*crash.cells, cell))
    html = render(run, "html")
    assert "line 9 in _wait_for_lock" in html
    assert "Cell <code>mode=hang</code>, attempt 1:" in html
    assert "line 9 in _wait_for_lock" in render(run, "md")
