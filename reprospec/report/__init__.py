"""Render a RunResult as a markdown bug report, a self-contained HTML page, JUnit XML, a GitHub
summary, or results.json.

A report is made from the result alone: the attempts carry what it quotes
(log excerpts, stacks), so no run folder is read.
"""

from __future__ import annotations

import json

from reprospec.core.formats import REPORT_FORMATS
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import printable
from reprospec.core.results import RunResult
from reprospec.errors import UsageError

_UNPRINTABLE_IN_JSON = Lazy("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

FORMATS = REPORT_FORMATS


def warm_up() -> None:
    """Import and compile, ahead of the run's result, what its report.md, the results table
    and the report's sections need (about a hundred modules, Jinja's and rich's among
    them, and the template). `pipeline.stages` calls it while it waits for the environment
    capture's child: a short run paid for both in turn (issue 30, item 4). The same work as
    later, done once: importing a module twice and the template (functools.cache) cost
    nothing more."""
    from importlib import import_module

    from reprospec.report.markdown import template

    template()
    # Imported by name: these are what `render` and `progress.print_outcome` import at their
    # use, and a name imported here only to be imported would be an unused import.
    for name in (
        "rich.console",
        "rich.table",
        "reprospec.report.markup",
        "reprospec.report.tables",
        "reprospec.report.failure",
        "reprospec.report.standalone",
        "reprospec.plan.standalone",
    ):
        import_module(name)


def render(run: RunResult, fmt: str) -> str:
    """The run in `fmt` (md | html | junit | json | github)."""
    # What a spec or a child wrote is text in every format: its control characters
    # are written out (logtext.printable), never sent to whoever reads the output
    # (HTML escapes everything itself and runs no script but its own).
    if fmt in ("md", "html", "junit", "github"):
        from reprospec.report.paths import with_short_commands

        run = with_short_commands(run)
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
