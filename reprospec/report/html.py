"""The HTML report: one self-contained file (inline CSS and JS, no network), for people who
would rather look than read: a sortable table of the cells and a heatmap of the grid.

It shows what the markdown report shows, in the same order (the headline, the failure,
what separates it, then the results), from the RunResult alone, with the same words
(words.py, report/failure.py, report/separation.py, report/environment.py). A large run
leads its results with alike cells counted together as the markdown does (tables.py),
its sortable table of every cell folded below; the heatmap scrolls inside its own box,
so a 10x20 grid never makes the page wider than the window. Every value reaches the page
through Jinja2's autoescaping, and the page's Content-Security-Policy forbids loading
anything: it renders the same on an air-gapped machine.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from markupsafe import Markup

from reprospec.core.frozen import frozen
from reprospec.core.results import CellResult, RunResult
from reprospec.core.words import (
    attempts_phrase,
    cell_rate_phrase,
    expectation_phrase,
    launch_summary,
    plural,
    resume_command,
    resumed_phrase,
    seconds,
)
from reprospec.environment.facts import run_one_cell_fields
from reprospec.report.environment import (
    CellEnvironments,
    cell_environments,
    env_vars,
    environment_rows,
    perturbed_cells,
)
from reprospec.report.failure import failure_section, stack_sections, summary_line
from reprospec.report.markdown import (
    attempt_warnings,
    axes_of,
    machine_note,
    outcome_rows,
    reproduce_command,
)
from reprospec.report.markup import show_value
from reprospec.report.paths import PathNames
from reprospec.report.separation import heading, separators
from reprospec.report.standalone import files_from, flaky_loop, found_files
from reprospec.report.tables import LARGE_RUN_CELLS, result_groups
from reprospec.report.templating import load_template
from reprospec.report.versions import captured_where, versions_text

if TYPE_CHECKING:
    from jinja2 import Template

# Sort order of the verdict column: what needs attention first.
_VERDICT_RANK = {
    "not-reproduced": 0,
    "infra-error": 1,
    "undecided": 2,
    "reproduced": 3,
    "observed": 4,
}
_CODE = re.compile(r"(`+)(.+?)\1")


def inline(text: str) -> Markup:
    """Markdown-ish words (`code`, **bold**) as HTML, everything else escaped."""
    escaped = html.escape(str(text), quote=True)
    escaped = _CODE.sub(lambda m: f"<code>{m.group(2).strip()}</code>", escaped)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return Markup(escaped)


_FENCE = re.compile(r"^(`{3,}|~{3,})[\w-]*\s*$")
_DETAILS = re.compile(r"^<details><summary>(.*)</summary>\s*$")
# The link native/render.py writes to an attempt's full native stacks, relative to the report
# (" (gdb)" in reports written when gdb was the one reader).
_NATIVE_LINK = re.compile(r"^Full native stacks(?: \(gdb\))?: \[(cells/[^\]]+)\]\((cells/[^)]+)\)$")


def fragment(text: str) -> Markup:
    """A markdown fragment of the report (the native stacks' text) as HTML.

    Only what those fragments use: paragraphs with `code`, bullet lists, fenced
    blocks, `<details><summary>` folds and the link to the attempt's native-stacks.txt;
    every piece of text is escaped.
    """
    out: list[str] = []
    fence: str | None = None
    block: list[str] = []
    in_list = False
    for line in text.splitlines():
        if fence is not None:
            if line.strip() == fence:
                out.append(f"<pre>{html.escape(chr(10).join(block))}</pre>")
                fence, block = None, []
            else:
                block.append(line)
            continue
        opening = _FENCE.match(line)
        is_item = line.startswith("- ")
        if in_list and not is_item:
            out.append("</ul>")
            in_list = False
        if opening:
            fence = opening.group(1)
        elif (link := _NATIVE_LINK.match(line)) is not None and link[1] == link[2]:
            target = html.escape(link[1])
            out.append(f'<p>Full native stacks: <a href="{target}">{target}</a></p>')
        elif (details := _DETAILS.match(line)) is not None:
            out.append(f"<details><summary>{inline(details.group(1))}</summary>")
        elif line.strip() == "</details>":
            out.append("</details>")
        elif is_item:
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{inline(line.strip().strip('_'))}</p>")
    if fence is not None:
        out.append(f"<pre>{html.escape(chr(10).join(block))}</pre>")
    if in_list:
        out.append("</ul>")
    return Markup("\n".join(out))


@frozen
class Square:
    """One square of the heatmap: a cell (or a combination the matrix does not have)."""

    label: str
    title: str
    css: str  # pass | fail | infra | missing
    style: str  # the red's strength: the share of attempts that failed


@frozen
class Heatmap:
    """Rows are values of the first half of the axes, columns of the rest (of two axes, the
    one with more values runs down the page: the page scrolls down, not across)."""

    row_axes: tuple[str, ...]
    col_axes: tuple[str, ...]
    cols: tuple[str, ...]
    rows: tuple[tuple[str, tuple[Square, ...]], ...]


def _values(cell: CellResult, axes: Sequence[str]) -> str:
    return ", ".join(show_value(cell.cell.matrix.get(a, "—")) for a in axes) or "all"


def _square(cell: CellResult) -> Square:
    ran = [a for a in cell.attempts if a.ran is not None]
    failed = sum(a.failed for a in ran)
    phrase = attempts_phrase(cell.attempts) if cell.attempts else "not run"
    title = f"{cell.cell.id}: {phrase} ({cell.verdict})"
    if not ran:
        return Square("not run", title, "infra", "")
    share = failed / len(ran)
    css = "fail" if failed else "pass"
    label = f"{failed}/{len(ran)} failed"
    # Only numbers reach the style attribute. Emoji marks stay out of the page: fonts without
    # them draw boxes; the verdict's own colour says it.
    style = f"--share: {share:.3f}" if failed else ""
    return Square(label, title, css, style)


def heatmap(cells: Sequence[CellResult]) -> Heatmap | None:
    """The grid of cells by their axes, coloured by how many attempts failed."""
    if not cells:
        return None
    axes = axes_of(cells)
    if len(axes) == 2 and _count(cells, axes[1]) > _count(cells, axes[0]):
        axes = [axes[1], axes[0]]
    split = max(1, len(axes) // 2) if len(axes) > 1 else 0
    row_axes, col_axes = tuple(axes[:split]), tuple(axes[split:])
    rows = list(dict.fromkeys(_values(c, row_axes) for c in cells))
    cols = list(dict.fromkeys(_values(c, col_axes) for c in cells))
    squares = {(_values(c, row_axes), _values(c, col_axes)): _square(c) for c in cells}
    missing = Square("—", "not in the matrix", "missing", "")
    return Heatmap(
        row_axes,
        col_axes,
        tuple(cols),
        tuple((r, tuple(squares.get((r, c), missing) for c in cols)) for r in rows),
    )


def _count(cells: Sequence[CellResult], axis: str) -> int:
    """How many values `axis` takes in `cells`."""
    return len({_values(c, [axis]) for c in cells})


@frozen
class Row:
    """One cell in the sortable table: (text, sort key) per column."""

    verdict: str
    columns: tuple[tuple[str, str], ...]


def cell_rows(
    run: RunResult, axes: Sequence[str], differs: CellEnvironments | None = None
) -> list[Row]:
    """The sortable table's rows; with an environment column where `differs` has settings
    that differ from cell to cell, as report.md's table has (the page had only the
    Environment section's line saying they differ, and no cell's values)."""
    rows = []
    for cell in run.cells:
        ran = [a for a in cell.attempts if a.ran is not None]
        failed = sum(a.failed for a in ran)
        duration = sum(a.duration_s for a in cell.attempts)
        env = (
            [(", ".join(differs.per_cell.get(cell.cell.id, ())), "")]
            if differs is not None and differs.varying
            else []
        )
        columns = [
            (cell.verdict, str(_VERDICT_RANK.get(cell.verdict, 9))),
            *((show_value(cell.cell.matrix.get(a, "—")), "") for a in axes),
            *env,
            (expectation_phrase(cell.expected), ""),
            (attempts_phrase(cell.attempts) if cell.attempts else "not run", ""),
            (
                cell_rate_phrase(cell.rate, cell.expected),
                f"{cell.rate.matched / max(cell.rate.attempts, 1):.6f}",
            ),
            (str(failed), str(failed)),
            (seconds(duration), f"{duration:.3f}"),
        ]
        rows.append(Row(cell.verdict, tuple(columns)))
    return rows


def context(run: RunResult) -> dict[str, object]:
    """What the HTML template shows (computed here; the template only lays it out)."""
    axes = axes_of(run.cells)
    standalone = run.standalone
    large = len(run.cells) > LARGE_RUN_CELLS
    separated = None if run.observes else separators(run)
    differs = cell_environments(run.cells)
    one_cell = run_one_cell_fields(run)
    return {
        "title": " ".join((run.title or run.spec_name).split()),
        "summary": summary_line(run),
        "description": run.description.strip(),
        "run": run,
        "warnings": list(run.warnings),
        "perturbed": perturbed_cells(run),
        # Without what a toggle chose per cell: the rows say what every cell ran with.
        "environment": environment_rows(run.environment, differs),
        "env_vars": env_vars(run.environment, differs),
        "versions": versions_text(run.environment, one_cell),
        "versions_where": captured_where(run, one_cell),
        # What an attempt left or could not do: for a crash before `| tee`, the only sign.
        "attempt_warnings": attempt_warnings(run, PathNames(run.paths).shorten),
        # The other hangs' stacks and the crashed children's, as report.md folds them: a
        # hang beside the leading crash had none on the page.
        "stacks": stack_sections(run, PathNames(run.paths)),
        "headers": [
            "verdict",
            *axes,
            *(["environment"] if differs.varying else []),
            *("expected", "actual", "rate", "failed", "duration"),
        ],
        "numeric": {"rate", "failed", "duration"},
        "rows": cell_rows(run, axes, differs),
        # A large run reads by groups of alike cells first; its every-cell table is folded.
        "large": large,
        "groups": result_groups(run, differs) if large else [],
        "heatmap": heatmap(run.cells),
        "separators": separated,
        "separators_heading": heading(run) if separated is not None else "",
        # An observed run's outcomes, each with what explains it (report.md's Outcomes):
        # the HTML page left out the explanation `--observe` exists for.
        "outcomes": outcome_rows(run),
        "failure": failure_section(run, PathNames(run.paths)),
        "standalone": standalone if standalone is not None else None,
        # A cell failing in some attempts only: why one plain run may pass, and the loop.
        "looped": flaky_loop(run),
        # As report.md words it (markupsafe: the workdir is escaped, the tags are not).
        "files_from": Markup(
            files_from(standalone, lambda t: f"<code>{html.escape(t, quote=True)}</code>")
        )
        if standalone is not None
        else "",
        "found_files": Markup(found_files(lambda t: f"<code>{html.escape(t, quote=True)}</code>")),
        "spec_text": run.spec_text.rstrip("\n"),
        "command": reproduce_command(run),
        # machine_note's words, its code as code: the page escapes the path, not the tags.
        "machine_note": Markup(
            re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(machine_note(run)))
        ),
        "launch": launch_summary(a for c in run.cells for a in c.attempts),
        # As report.md's note under its headline: a resumed run's page read as one run that
        # went straight through.
        "resumed": resumed_phrase(run.resumed) if run.resumed else "",
        "resume_command": resume_command(run.run_id, run.store),
    }


def render_html(run: RunResult) -> str:
    """The self-contained HTML report of `run`."""
    text: str = _template().render(**context(run))
    return text


@functools.cache
def _template() -> Template:
    """The HTML template, loaded once per process (templating.py)."""
    return load_template(
        "report.html.j2",
        autoescape=True,
        filters={"inline": inline, "fragment": fragment, "plural": plural},
    )
