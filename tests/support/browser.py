"""Real headless Chromium for the HTML report's tests: find it, and load a page as a person would.

Skips where Chromium is not installed; fails in CI, which installs it (scripts/test.sh).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonValue

# Before the page's own script: remember every error and console.error.
CATCH_ERRORS = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
var __consoleError = console.error;
console.error = function () { window.__errors.push([].join.call(arguments, " ")); };
</script>"""


def chromium() -> str:
    """The Chromium binary; skips the test where there is none (fails in CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing in CI: scripts/test.sh installs it")
        pytest.skip("skipped: chromium not installed (apt-get install chromium)")
    return found


def load(page: str, check: str, tmp: Path, width: int = 1400) -> tuple[JsonValue, str, str]:
    """Load `page` in a `width` px wide window with `check` (a script that ends by putting its
    JSON in `<pre id="reprospec-test">`) run after the page's own script.

    Returns what `check` found, the DOM Chromium dumped and its stderr (where it logs
    every console message and uncaught error as INFO:CONSOLE).
    """
    page = page.replace("<head>", "<head>\n" + CATCH_ERRORS, 1).replace(
        "</body>", check + "</body>"
    )
    path = tmp / "report.html"
    path.write_text(page, encoding="utf-8")
    done = subprocess.run(
        [
            chromium(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            f"--window-size={width},900",
            f"--user-data-dir={tmp / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.search(r'<pre id="reprospec-test">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the check did not run; DOM tail: {done.stdout[-1500:]}"
    result: JsonValue = json.loads(html.unescape(found.group(1)))
    return result, done.stdout, done.stderr
