"""The HTML report: every format renders the hand-built runs; the page is self-contained and
escaped."""

from __future__ import annotations

import re
from dataclasses import replace

from markupsafe import escape

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.results import AttemptResult, CellResult, Outcome, Rate
from reprospec.report import render
from tests.support.runs import HOSTILE, grid_run, segfault_matrix


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
