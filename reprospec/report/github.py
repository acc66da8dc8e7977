"""The GitHub Actions job summary: the headline and one row per cell (`GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

from reprospec.core.results import RunResult
from reprospec.core.words import VERDICT_MARKS, attempts_phrase, rate_phrase
from reprospec.report.failure import summary_line


def render_github_summary(run: RunResult) -> str:
    """Markdown for the job summary page: the headline and the results table."""
    lines = [
        f"### reprospec: {run.title or run.spec_name}",
        "",
        f"**{summary_line(run)}**",
        "",
        "| | cell | actual | attempts | verdict |",
        "|---|---|---|---|---|",
    ]
    for cell in run.cells:
        lines.append(
            f"| {VERDICT_MARKS[cell.verdict]} | `{cell.cell.id}` | "
            f"{_cell(attempts_phrase(cell.attempts))} | {_cell(rate_phrase(cell.rate))} | "
            f"{cell.verdict} |"
        )
    return "\n".join(lines) + "\n\n"


def _cell(text: str) -> str:
    # A pipe would end the table cell; a newline the row.
    return text.replace("|", "\\|").replace("\n", " ")
