"""The GitHub Actions job summary: the headline and one row per cell (`GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

import re

from reprospec.core.results import RunResult
from reprospec.core.words import VERDICT_MARKS, attempts_phrase, rate_phrase
from reprospec.report.failure import summary_line


def render_github_summary(run: RunResult) -> str:
    """Markdown for the job summary page: the headline and the results table."""
    lines = [
        f"### reprospec: {_cell(run.title or run.spec_name)}",
        "",
        f"**{_cell(summary_line(run))}**",
        "",
        "| | cell | actual | attempts | verdict |",
        "|---|---|---|---|---|",
    ]
    for cell in run.cells:
        lines.append(
            f"| {VERDICT_MARKS[cell.verdict]} | `{_code(cell.cell.id)}` | "
            f"{_cell(attempts_phrase(cell.attempts))} | {_cell(rate_phrase(cell.rate))} | "
            f"{cell.verdict} |"
        )
    return "\n".join(lines) + "\n\n"


def _cell(text: str) -> str:
    """Spec strings (a matrix value, a title) as one line of one table cell: a pipe would
    end the cell, a line break the row (a matrix value could forge a row of its own), and
    `<` opens HTML, which the summary page renders."""
    flat = _BREAKS.sub(" ", text)
    return flat.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    """`_cell`, for inside a code span: a backtick would end the span."""
    return _BREAKS.sub(" ", text).replace("`", "'").replace("|", "\\|")


# Every character a Markdown renderer may take as the end of a line.
_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
