"""The HTML report of a real 200-cell run, in a real headless Chromium 1,400 px wide.

Before: the page opened with a 200-row table in cell order, above the headline's failure,
and the 10x20 heatmap made it 2,450 px wide. Now the headline, the failure and what
separates it come first, the cells are grouped as the markdown groups them (every cell's
sortable table folded below), and nothing is wider than the window: the grid scrolls
inside its own box when it must.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import chromium, load
from tests.support.cli import run_cli
from tests.support.grid200 import Grid200, run_grid200

WINDOW = 1400

# After the page's script: the page's width, where each part sits in document order.
_CHECK = """<script>
(function () {
  var all = Array.prototype.slice.call(document.querySelectorAll("*"));
  function at(selector) {
    var el = document.querySelector(selector);
    return el === null ? -1 : all.indexOf(el);
  }
  var box = document.getElementById("grid-box");
  var heat = document.getElementById("heatmap");
  var out = {
    scroll_width: document.documentElement.scrollWidth,
    body_width: document.body.scrollWidth,
    inner_width: window.innerWidth,
    summary: at("p.summary"), failure: at("#failure"), separates: at("#separates"),
    first_table: at("table"), groups: at("#groups"), cells: at("#cells"),
    cells_folded: document.querySelector("#cells").closest("details") !== null,
    group_rows: document.querySelectorAll("#groups tbody tr").length,
    squares: document.querySelectorAll("#heatmap td").length,
    heat_rows: heat.tBodies[0].rows.length,
    box_width: box.getBoundingClientRect().width,
    box_right: box.getBoundingClientRect().right,
    errors: window.__errors
  };
  var pre = document.createElement("pre");
  pre.id = "reprospec-test";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


@pytest.fixture(scope="module")
def grid200(tmp_path_factory: pytest.TempPathFactory) -> Grid200:
    chromium()  # skip before the run where there is no browser
    return run_grid200(tmp_path_factory.mktemp("grid200"))


def test_a_200_cell_report_fits_a_1400px_window_and_leads_with_the_failure(
    grid200: Grid200, tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    made = run_cli(
        tmp_path / "out", "report", str(grid200.folder), "--format", "html", "-o", str(page)
    )
    assert made.code == 0, made.stderr
    found, _, stderr = load(page.read_text(encoding="utf-8"), _CHECK, tmp_path, WINDOW)
    assert isinstance(found, dict)
    result: dict[str, Any] = found
    assert result["errors"] == [], result["errors"]
    assert "CONSOLE" not in stderr, [ln for ln in stderr.splitlines() if "CONSOLE" in ln]
    assert result["inner_width"] == WINDOW
    # Nothing wider than the window: no horizontal scroll of the page.
    assert result["scroll_width"] <= WINDOW, result
    assert result["body_width"] <= WINDOW, result
    assert result["box_right"] <= WINDOW, result
    # The headline, then the failure and what separates it, then any table.
    order = [result[k] for k in ("summary", "failure", "separates", "first_table")]
    assert -1 not in order, result
    assert order == sorted(order), result
    # Alike cells grouped (16 exit 3, 5 ValueError, 179 pass), every cell's table folded.
    assert result["group_rows"] == 3, result
    assert result["groups"] < result["cells"], result
    assert result["cells_folded"], result
    # The whole grid is drawn, its longer axis (b: 20 values) down the page.
    assert result["squares"] == 200
    assert result["heat_rows"] == 20
