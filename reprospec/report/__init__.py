"""Render a RunResult as a markdown bug report, a self-contained HTML page, JUnit XML, a GitHub
summary, or results.json.

A report is made from the result alone: the attempts carry what it quotes
(log excerpts, stacks), so no run folder is read.
"""

from __future__ import annotations

import json

from reprospec.errors import UsageError
from reprospec.models import RunResult

FORMATS = ("md", "html", "junit", "json", "github")


def render(run: RunResult, fmt: str) -> str:
    """The run in `fmt` (md | html | junit | json | github)."""
    if fmt == "md":
        from reprospec.report.markdown import render_markdown

        return render_markdown(run)
    if fmt == "html":
        from reprospec.report.html import render_html

        return render_html(run)
    if fmt == "junit":
        from reprospec.report.junit import render_junit

        return render_junit(run)
    if fmt == "github":
        from reprospec.report.github import render_github_summary

        return render_github_summary(run)
    if fmt == "json":
        from reprospec.results import run_to_dict

        return json.dumps(run_to_dict(run), indent=2, ensure_ascii=False) + "\n"
    raise UsageError(f"unknown report format {fmt!r}: expected one of {', '.join(FORMATS)}")
