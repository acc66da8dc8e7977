"""The GitHub Actions job summary: the headline and one row per cell (`GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

from reprospec.models import RunResult


def render_github_summary(run: RunResult) -> str:
    """Markdown for the job summary page: the headline and the results table."""
    from reprospec.progress import VERDICT_MARKS, actual_text
    from reprospec.report.markdown import summary_line

    lines = [
        f"### reprospec: {run.title or run.spec_name}",
        "",
        f"**{summary_line(run)}**",
        "",
        "| | cell | actual | attempts | verdict |",
        "|---|---|---|---|---|",
    ]
    for cell in run.cells:
        rate = cell.rate
        lines.append(
            f"| {VERDICT_MARKS.get(cell.verdict, '?')} | `{cell.cell.id}` | "
            f"{actual_text(cell).replace('|', '/')} | {rate.matched}/{rate.attempts} | "
            f"{cell.verdict} |"
        )
    return "\n".join(lines) + "\n\n"
