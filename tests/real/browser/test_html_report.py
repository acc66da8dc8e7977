"""The HTML report in a real headless Chromium: it loads, the cell table sorts when its headings
are clicked, the console stays free of errors."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from reprospec.report import render
from tests.support.browser import load
from tests.support.runs import HOSTILE, grid_run

# After the page's script: click headings like a person, read the column back after each click.
_CHECK = """<script>
(function () {
  var table = document.getElementById("cells");
  var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) {
    return th.textContent.trim();
  });
  function column(name) {
    var i = heads.indexOf(name);
    return Array.prototype.map.call(table.tBodies[0].rows, function (row) {
      return row.cells[i].textContent.trim();
    });
  }
  function click(name) { table.tHead.rows[0].cells[heads.indexOf(name)].click(); }
  var out = {rows: table.tBodies[0].rows.length, heatmap: document.querySelectorAll(
    "#heatmap td.fail").length, before: column("failed")};
  click("failed"); out.failed_up = column("failed");
  out.aria = table.tHead.rows[0].cells[heads.indexOf("failed")].getAttribute("aria-sort");
  click("failed"); out.failed_down = column("failed");
  click("batch"); out.batch_up = column("batch");
  click("verdict"); out.verdict_up = column("verdict");
  out.errors = window.__errors;
  var pre = document.createElement("pre");
  pre.id = "reprospec-test";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def test_html_report_sorts_in_a_real_browser(tmp_path: Path) -> None:
    found, dom, stderr = load(render(grid_run(), "html"), _CHECK, tmp_path)
    assert isinstance(found, dict)
    result: dict[str, Any] = found
    assert result["errors"] == []
    # Chromium logs every console message and uncaught error as INFO:CONSOLE.
    assert "CONSOLE" not in stderr, [ln for ln in stderr.splitlines() if "CONSOLE" in ln]
    assert result["rows"] == 12
    failed = [int(x) for x in result["before"]]
    assert result["heatmap"] == sum(1 for f in failed if f)
    assert [int(x) for x in result["failed_up"]] == sorted(failed)
    assert result["aria"] == "ascending"
    assert [int(x) for x in result["failed_down"]] == sorted(failed, reverse=True)
    # Numbers sort as numbers (8 < 16 < 32), not as text ("16" < "32" < "8").
    batches = list(dict.fromkeys(result["batch_up"]))
    assert [b for b in batches if b.isdigit()] == ["8", "16", "32"]
    assert '<b id="x">' in batches
    assert result["verdict_up"][0] == "not-reproduced"
    assert result["verdict_up"][-1] == "reproduced"
    # The hostile title and script stayed text: the title is the page's title, escaped.
    assert f"<title>{html.escape(HOSTILE, quote=False)}</title>" in dom
