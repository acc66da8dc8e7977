"""GitHub Actions: the job summary (the headline and one row per cell, for
`GITHUB_STEP_SUMMARY`) and the `::error` annotations that put a failing cell on its spec line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reprospec.core.results import CellResult, RunResult
from reprospec.core.words import (
    VERDICT_MARKS,
    attempts_phrase,
    cell_rate_phrase,
    expectation_phrase,
    plural,
    rate_phrase,
    resume_command,
    resumed_phrase,
    shard_phrase,
)
from reprospec.report.failure import summary_line


def render_github_summary(run: RunResult) -> str:
    """Markdown for the job summary page: the headline and the results table.

    A resumed run says so under its headline, as report.md and the JUnit report do: the
    page a CI shows read a run finished in parts as one that went straight through.
    """
    lines = [
        f"### reprospec: {_cell(run.title or run.spec_name)}",
        "",
        f"**{_cell(summary_line(run))}**",
        "",
    ]
    if run.shard:
        lines += [f"> {_cell(shard_phrase(run.shard))}.", ""]
    if run.resumed is not None:
        command = _code(resume_command(run.run_id, run.store))
        lines += [f"> **Resumed** (`{command}`): {_cell(resumed_phrase(run.resumed))}.", ""]
    # As report.md's table: what was expected beside what happened (a not-reproduced row
    # read `crash SIGSEGV ❌` with no word of why), and a cell a Ctrl-C or run.stop_on cut
    # short said so beside its rate.
    from reprospec.report.tables import rate_said

    lines += [
        "| | cell | expected | actual | attempts | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for cell in run.cells:
        rate = rate_said(cell_rate_phrase(cell.rate, cell.expected), cell.reason, run.interrupted)
        lines.append(
            f"| {VERDICT_MARKS[cell.verdict]} | `{_code(cell.cell.id)}` | "
            f"{_cell(expectation_phrase(cell.expected))} | "
            f"{_cell(attempts_phrase(cell.attempts))} | {_cell(rate)} | {cell.verdict} |"
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


# GitHub shows at most 10 error annotations of a step (50 of a job): the tenth says how many
# more there are, rather than the rest vanishing without a word.
MAX_ANNOTATIONS = 10
# The verdicts a person must look at; `reproduced` cells are the run doing its job.
_ANNOTATED = ("not-reproduced", "undecided", "infra-error")


def error_annotations(run: RunResult, file: str, lines: Mapping[str, int]) -> list[str]:
    """One `::error file=F,line=N,title=T::message` workflow command per cell whose verdict
    needs a look (`lines`: each cell's line in the spec file `file`, spec/lines.py), so a
    pull request shows the failure on the spec line of the cell. Without a `file` (the spec
    file is not in the checkout: a merge job's), `::error title=T::message`, which GitHub
    shows on the run's page, where a file and line 1 it lacks pointed at nothing."""
    failing = [cell for cell in run.cells if cell.verdict in _ANNOTATED]
    shown = failing[:MAX_ANNOTATIONS]
    out = []
    of_shard = f" (shard {run.shard})" if run.shard else ""
    for i, cell in enumerate(shown):
        message = _annotation_message(cell)
        if run.shard:
            message += f"\n{shard_phrase(run.shard)}"
        if i == len(shown) - 1 and len(failing) > len(shown):
            message += f"\n... and {plural(len(failing) - len(shown), 'more cell')}: see the report"
        where = {"file": file, "line": str(lines.get(cell.cell.id, 1))} if file else {}
        title = _BREAKS.sub(" ", f"reprospec{of_shard}: {cell.verdict}: {cell.cell.id}")
        properties = {**where, "title": title}
        head = ",".join(f"{k}={_property(v)}" for k, v in properties.items())
        out.append(f"::error {head}::{_data(message)}")
    return out


def _annotation_message(cell: CellResult) -> str:
    # A reason that begins with its verdict (`undecided: 1/1 = 1.00 straddles >=0.3`) is
    # not given it again ("undecided: undecided: ..."); a rate judged by a bound shows
    # its interval even of one attempt, which the reason says straddles the bound.
    said = cell.reason.startswith(cell.verdict)
    rate = rate_phrase(cell.rate, interval=cell.expected.rate is not None)
    return (
        f"{cell.cell.id}: {cell.reason if said else f'{cell.verdict}: {cell.reason}'}\n"
        f"expected: {expectation_phrase(cell.expected)}\n"
        f"actual:   {attempts_phrase(cell.attempts)} ({rate} matched)"
    )


def _data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped as the runner reads them back
    (a spec value with a line break cannot start a command of its own)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value: `_data`, and `:` and `,`, which end it."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")
