"""Render a RunResult as a markdown bug report, JUnit XML, or results.json text."""

from __future__ import annotations

import json
from pathlib import Path

from reprospec.errors import UsageError
from reprospec.models import RunResult

FORMATS = ("md", "junit", "json", "github")


def render(run: RunResult, fmt: str, *, run_dir: Path | None = None) -> str:
    """The run in `fmt` (md | junit | json | github); `run_dir` holds its logs and stacks."""
    if fmt == "md":
        from reprospec.report.markdown import render_markdown

        return render_markdown(run, run_dir)
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
