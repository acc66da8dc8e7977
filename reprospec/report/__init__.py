"""Render a RunResult as a markdown bug report, a self-contained HTML page, JUnit XML, a GitHub
summary, or results.json.

A report is made from the result alone: the attempts carry what it quotes
(log excerpts, stacks), so no run folder is read.
"""

from __future__ import annotations

import json
import re

from reprospec.core.logtext import printable
from reprospec.core.results import RunResult
from reprospec.errors import UsageError

_UNPRINTABLE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

FORMATS = ("md", "html", "junit", "json", "github")


def render(run: RunResult, fmt: str) -> str:
    """The run in `fmt` (md | html | junit | json | github)."""
    # What a spec or a child wrote is text in every format: its control characters
    # are written out (logtext.printable), never sent to whoever reads the output
    # (HTML escapes everything itself and runs no script but its own).
    if fmt == "md":
        from reprospec.report.markdown import render_markdown
        from reprospec.report.markup import printable_report

        return printable_report(render_markdown(run))
    if fmt == "html":
        from reprospec.report.html import render_html

        return render_html(run)
    if fmt == "junit":
        from reprospec.report.junit import render_junit

        return printable(render_junit(run))
    if fmt == "github":
        from reprospec.report.github import render_github_summary

        return printable(render_github_summary(run))
    if fmt == "json":
        from reprospec.store.resultsjson import run_to_dict

        # json escapes C0 itself; DEL, C1 and bidi controls only appear inside strings.
        text = json.dumps(run_to_dict(run), indent=2, ensure_ascii=False) + "\n"
        return _UNPRINTABLE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    raise UsageError(f"unknown report format {fmt!r}: expected one of {', '.join(FORMATS)}")
