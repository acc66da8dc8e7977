"""The markdown bug report: a view of a RunResult, laid out by a sandboxed Jinja2 template.

The report is made from the result alone (no run folder): outcomes and rates
are worded by words.py, the environment table by report/environment.py, the
failure and stacks by report/failure.py, what separates failing from passing
cells by report/separation.py; this module computes the rest of what the
template shows (the results table, the grid, the attempts) and fills the template.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from reprospec.core.redact import Redactor
from reprospec.core.reportspec import marker_line, rerun_command
from reprospec.core.results import AttemptResult, CellResult, Outcome, RunResult, alike
from reprospec.report.cellsets import describe_cells
from reprospec.report.environment import (
    CellEnvironments,
    cell_environments,
    env_vars,
    environment_rows,
    mismatches,
    perturbed_cells,
    unjudged,
    unjudged_said,
)
from reprospec.report.failure import failure_section, stack_sections, summary_line
from reprospec.report.markup import fence_for, inline_code, plain_markdown, show_value, table_cell
from reprospec.report.paths import PathNames
from reprospec.report.slots import runs_noun, slot_label, slot_runs
from reprospec.report.standalone import (
    flaky_loop,
    repro_line,
    standalone_markdown,
    versions_markdown,
)
from reprospec.report.tables import LARGE_RUN_CELLS, attempt_rows, result_groups, result_rows
from reprospec.report.templating import load_template

if TYPE_CHECKING:
    from jinja2 import Template

    from reprospec.report.childwarnings import WarningRow
    from reprospec.report.separation import Separation
from reprospec.core.words import (
    OBSERVE_LEGEND,
    VERDICT_MARKS,
    agree,
    attempt_phrase,
    launch_summary,
    plural,
    resume_command,
    resumed_phrase,
    shorten,
    verdict_legend,
)

__all__ = ["axes_of", "context", "render_markdown"]


def axes_of(cells: Iterable[CellResult]) -> list[str]:
    """Matrix axes in the order they first appear (include-only keys last)."""
    axes: dict[str, None] = {}
    for cell in cells:
        axes.update(dict.fromkeys(cell.cell.matrix))
    return list(axes)


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class Grid(NamedTuple):
    """A two-axis matrix as a table: each row's value with the outcome in each column."""

    row_axis: str
    col_axis: str
    cols: list[str]
    rows: list[tuple[str, list[str]]]


def _grid(cells: Sequence[CellResult], axes: Sequence[str]) -> Grid | None:
    """Rows = first axis, columns = second axis, for a two-axis matrix of at most
    GRID_ROWS x GRID_COLS.

    The size is checked before any corner is worded: at 65,536 cells the words of every
    corner of a grid too big to draw were 15 MiB of the engine's peak at a run's end.
    """
    if len(axes) != 2:
        return None
    row_axis, col_axis = axes
    # One pass, left as soon as the grid is too big (a large run's cells are made as
    # they are read): either way, or with a cell that lacks an axis, there is none.
    seen_rows: dict[str, None] = {}
    seen_cols: dict[str, None] = {}
    for c in cells:
        matrix = c.cell.matrix
        if row_axis not in matrix or col_axis not in matrix:
            return None
        seen_rows[show_value(matrix[row_axis])] = None
        seen_cols[show_value(matrix[col_axis])] = None
        if len(seen_rows) > GRID_ROWS or len(seen_cols) > GRID_COLS:
            return None
    rows, cols = list(seen_rows), list(seen_cols)
    # What happened in each corner (the news), with the verdict mark beside it.
    marks = {
        (show_value(c.cell.matrix[row_axis]), show_value(c.cell.matrix[col_axis])): (
            f"{_cell_outcome(c)} {VERDICT_MARKS[c.verdict]}"
        )
        for c in cells
    }
    return Grid(
        row_axis=row_axis,
        col_axis=col_axis,
        cols=cols,
        rows=[(r, [marks.get((r, c), "—") for c in cols]) for r in rows],
    )


def _cell_outcome(cell: CellResult) -> str:
    """`crash SIGSEGV (worker)`, `pass`, or `crash SIGSEGV (worker) 3/5` when attempts differ.

    Where attempts differ, the corner names the commonest failure, not the commonest
    outcome: a crash in 4 of 10 attempts read `pass 6/10 ✅`, a pass beside a verdict
    that says the crash reproduced (the HTML heatmap's corner said `4/10 failed`).
    """
    phrases = [attempt_phrase(a, where=False) for a in cell.attempts]
    if not phrases:
        return "not run"
    failed = [
        phrase
        for attempt, phrase in zip(cell.attempts, phrases, strict=True)
        if isinstance(attempt.outcome, Outcome) and attempt.outcome.kind != "pass"
    ]
    named = failed or phrases
    top = max(dict.fromkeys(named), key=named.count)
    count = phrases.count(top)
    return top if count == len(phrases) else f"{top} {count}/{len(phrases)}"


# A table with more rows than this is folded into <details>.
FOLD_ROWS = 16
# The grid is drawn up to this many rows and columns.
GRID_ROWS, GRID_COLS = 20, 12


# The report lists this many attempt warnings; results.json keeps them all.
MAX_ATTEMPT_WARNINGS = 20


def attempt_warnings(run: RunResult, short: Callable[[str], str]) -> tuple[list[str], int]:
    """`cell, attempt N: warning` lines (at most MAX_ATTEMPT_WARNINGS), and how many were left out.

    What an attempt left behind (files in its private TMPDIR, /dev/shm leaks) or could
    not do (no native stacks) is part of what ran: a maintainer reading the report
    must see it next to the verdict, not only in results.json.
    """
    if not any(a.warnings for c, _ in alike(run.cells) for a in c.attempts):
        return [], 0
    lines = [
        f"{inline_code(cell.cell.id)}, attempt {a.attempt}: {short(warning)}"
        for cell in run.cells
        for a in cell.attempts
        for warning in a.warnings
    ]
    return lines[:MAX_ATTEMPT_WARNINGS], max(0, len(lines) - MAX_ATTEMPT_WARNINGS)


def _warning_rows(run: RunResult) -> list[WarningRow]:
    """`childwarnings.warning_rows`: imported only when a child printed a warning."""
    if not any(a.child_warnings for c, _ in alike(run.cells) for a in c.attempts):
        return []
    from reprospec.report.childwarnings import warning_rows

    return warning_rows(run)


def _child_warnings(
    run: RunResult, rows: Sequence[WarningRow], short: Callable[[str], str]
) -> list[dict[str, object]]:
    """Each warning the children printed, once: where from, in which cells, what it nullifies."""
    if not rows:
        return []
    ran = [c for c in run.cells if c.attempts]
    return [
        {
            "text": short(row.warning.text()),
            "where": short(row.warning.where),
            "cells": (
                "every cell"
                if len(row.cells) == len(ran)
                else f"{len(row.cells)} of {plural(len(ran), 'cell')}: "
                + "; ".join(inline_code(p) for p in describe_cells(row.cells, ran))
            ),
            "nullifies": ", ".join(inline_code(f"{axis}={value}") for axis, value in row.nullifies),
        }
        for row in rows
    ]


def _noted(lines: Sequence[str], rows: Sequence[WarningRow]) -> list[str]:
    """Separator lines that credit a value a warning says had no effect, flagged as such."""
    if not rows:
        return list(lines)
    from reprospec.report.childwarnings import nullified

    quiet = nullified(rows)
    out = []
    for line in lines:
        for (axis, value), warning in quiet.items():
            if inline_code(f"{axis}={value}") in line:
                line += (
                    f" — ⚠️ but `{axis}={value}` had no effect, the child warned: "
                    f"{inline_code(shorten(warning.message, 160))}"
                )
        out.append(line)
    return out


def _noted_separators(
    groups: list[Separation] | None, rows: Sequence[WarningRow]
) -> list[Separation] | None:
    """`separators`, each line flagged where a warning says its value had no effect."""
    if groups is None:
        return None
    from reprospec.report.separation import Separation

    return [Separation(g.headline, tuple(_noted(g.lines, rows))) for g in groups]


def _slot_rows(run: RunResult) -> list[tuple[str, int, int, int]]:
    """(slot, runs, failed, matched) per GPU slot: a crash tied to one GPU shows here.

    A run is an attempt, or one instance of an attempt with `run.instances`.
    """
    slots: dict[str, list[tuple[bool, bool]]] = {}
    if not _on_slots(run):
        return []
    for cell in run.cells:
        for a in cell.attempts:
            for slot_run in slot_runs(a):
                if slot_run.gpu_slot:
                    slots.setdefault(slot_label(slot_run.gpu_slot), []).append(
                        (slot_run.failed, slot_run.matched)
                    )
    return [
        (slot, len(group), sum(f for f, _ in group), sum(m for _, m in group))
        for slot, group in slots.items()
    ]


def _slot_noun(run: RunResult) -> str:
    """The slot table's column: `attempts`, `instances`, or `runs` when both ran."""
    if not _on_slots(run):
        return runs_noun([], 2)
    runs = [r for c in run.cells for a in c.attempts for r in slot_runs(a) if r.gpu_slot]
    return runs_noun(runs, 2)


def _on_slots(run: RunResult) -> bool:
    """Whether an attempt or an instance ran on a GPU slot (read once per alike result)."""
    return any(r.gpu_slot for c, _ in alike(run.cells) for a in c.attempts for r in slot_runs(a))


def _launch(run: RunResult) -> str | None:
    """`launch_summary` of every attempt, read only where some attempt had a preload."""
    if not any(_launched(a) for c, _ in alike(run.cells) for a in c.attempts):
        return None
    return launch_summary(a for c in run.cells for a in c.attempts)


def _launched(attempt: AttemptResult) -> bool:
    # What launch_summary counts: a forked attempt, or a fresh one that says why.
    return attempt.launch == "forked" or (attempt.launch == "fresh" and bool(attempt.launch_note))


def _separators(run: RunResult) -> list[Separation] | None:
    """`separation.separators`: None (nothing to compare) where no attempt nor instance
    failed, without importing what compares them."""
    if not any(
        a.failed or any(i.failed for i in a.instances)
        for c, _ in alike(run.cells)
        for a in c.attempts
    ):
        return None
    from reprospec.report.separation import separators

    return separators(run)


def _separators_heading(run: RunResult) -> str:
    from reprospec.report.separation import heading

    return heading(run)


def _instances(run: RunResult) -> dict[str, object] | None:
    """The `run.instances` section: how together they started, and each instance's record."""
    if not any(len(a.instances) > 1 for c, _ in alike(run.cells) for a in c.attempts):
        return None  # instance_rows has none: one copy alone tells no instance from another
    from reprospec.report.instances import instance_rows, start_spread

    rows = instance_rows(run.cells)
    if not rows:
        return None
    return {
        "spread": start_spread(run.cells),
        "rows": rows,
        "show_gpu": any(row.gpu_slots for row in rows),
    }


def outcome_rows(
    run: RunResult, rows: Sequence[WarningRow] | None = None
) -> list[dict[str, object]]:
    """An observe run's outcomes, each with what explains it (`signatures.outcome_groups`),
    and the values a child's warning says had no effect flagged: report.md's Outcomes and
    the HTML page's, built once (the page had its own, without either)."""
    if not run.observes:
        return []
    from reprospec.report.signatures import outcome_groups

    rows = _warning_rows(run) if rows is None else rows
    large = len(run.cells) > LARGE_RUN_CELLS
    # A large run names a group's cells by patterns, not one id after another; only then
    # is a map of every cell by id made (memory a large run's end does not need else).
    by_id = {c.cell.id: c for c in run.cells} if large else {}
    return [
        {
            "headline": group.headline(),
            "cells": describe_cells([by_id[i] for i in group.cells], run.cells)
            if large
            else list(group.cells),
            "sep": "; " if large else ", ",
            "lines": _noted(group.lines(), rows),
        }
        for group in outcome_groups(run)
    ]


def reproduce_command(run: RunResult) -> str:
    """How to reproduce: `command_line` (made to be shown to others, without `--python` or
    `--find-links`), with those again where the run had them: the command that reruns it
    on this machine, where `reprospec run flaky.yaml` alone ran the command in reprospec's
    own interpreter, an infra-error without the packages PATH's has, and a venv run from a
    wheel folder installed from the index, which may lack them (`machine_note` says why).

    A run made with no command line (`reprospec.run` from Python, a search's probe) is
    given the command its options make, as it ran: `reprospec run t.yaml` alone reran an
    API run of `RunOptions(runner="venv", matrix_filters=("mode=segv",), repeat=5)` on the
    local runner, every cell once, without its `overrides`."""
    line = run.command_line or rerun_command(
        run.options, run.spec_path or run.spec_name + ".yaml", as_ran=True
    )
    return _before_end_of_options(line, _this_machine(run, pytest=_by_pytest(run)))


def _before_end_of_options(line: str, extra: str) -> str:
    """`line` with the words `extra` adds: at its end, or before its lone `--` (`pytest
    --reprospec s.yaml -- tests/x`), after which pytest (and argparse) read every word as
    a path: `--reprospec-python PATH` appended there was 'file or directory not found'."""
    from reprospec.core.logtext import shell_split, words_before

    if not extra:
        return line
    try:
        shell_split(line)
    except ValueError:  # a quotation not closed: no word of it is read
        return line + extra
    # Put in as text before the first `--` that is a word of its own (not quoted, not in
    # another word): the line split and joined again wrote the user's own quoting anew
    # (`-k "a b"` became `-k 'a b'`), and only where a `--` was there.
    for found in re.finditer(r"(?<![^ \t])--(?![^ \t])", line):
        try:
            _, alone = words_before(line, found.start())  # `a\ --`: one word
        except ValueError:  # inside a quotation
            continue
        if alone:
            return f"{line[: found.start()]}{extra.strip()} {line[found.start() :]}"
    return line + extra


def _by_pytest(run: RunResult) -> bool:
    """Whether the run's command line is the pytest plugin's (`pytest --reprospec ...`),
    whose options are its own: `--reprospec-python`, where `reprospec run` has `--python`."""
    return run.command_line.startswith("pytest")


def _this_machine(run: RunResult, *, pytest: bool = False) -> str:
    """` --python PATH --find-links DIR`: the run's options that name this machine's paths;
    `pytest`: as the plugin takes them (` --reprospec-python PATH`: `pytest ... --python
    PATH` is refused, `unrecognized arguments`; the plugin has no `--find-links`, and a run
    it made has none)."""
    python = "--reprospec-python" if pytest else "--python"
    words = []
    for flag, value in ((python, _python(run)), ("--find-links", _wheels(run))):
        if value:
            words += [flag, shlex.quote(value)]
    return "".join(f" {word}" for word in words)


def _python(run: RunResult) -> str:
    """The run's `--python PATH` ("" without one)."""
    python = run.options.get("python")
    return python if isinstance(python, str) else ""


def _wheels(run: RunResult) -> str:
    """The run's `--find-links` folder where its runner installed from it (venv, docker);
    the local runner installs nothing, and took it for nothing."""
    wheels = run.options.get("find_links")
    return wheels if isinstance(wheels, str) and run.runner in ("venv", "docker") else ""


def machine_note(run: RunResult) -> str:
    """What the report says under How to reproduce of a run made with `--python PATH` or
    `--find-links DIR`: paths of this machine, which another machine gives its own of; and
    of a minimize candidate's run, the workdir its attempts read its links through."""
    notes = []
    # A --set's secret, read back as `${{ env.NAME }}` (redact.Redactor.command_line): in
    # the command shown, which a run made from Python (no command line) is given too.
    shown = reproduce_command(run)
    secrets = [
        name for name in Redactor.masked_names(run.spec_text) if "${{ env." + name + " }}" in shown
    ]
    if secrets:
        said = ", ".join(inline_code(name) for name in secrets)
        one = len(secrets) == 1
        notes.append(
            f"Export {said} first: the command reads {'it' if one else 'them'} from your "
            f"environment (the run's {'value' if one else 'values'} looked secret, and no "
            f"report holds {'it' if one else 'them'})"
        )
    python = _python(run)
    if python:
        # The command above is pytest's; the report.md rerun below it is `reprospec run`'s.
        pytest = _by_pytest(run)
        flag = (
            f"`--reprospec-python {python}` (`--python` to `reprospec run`)"
            if pytest
            else f"`--python {python}`"
        )
        if run.runner == "venv":
            # uv installed the packages: PATH was the base of the venvs, not where they are.
            said = (
                "the base interpreter its venvs were built on; on another machine give its "
                "own, or leave it out (the spec's environment.python, else reprospec's own)"
            )
        else:
            runner = "`--reprospec-runner venv`" if pytest else "`--runner venv`"
            said = (
                "the interpreter this run's attempts ran in, whose packages the spec needs; on "
                f"another machine give its own interpreter, or {runner}"
            )
        notes.append(f"{flag}: {said}")
    wheels = _wheels(run)
    if wheels:
        # uv installs from the folder and the index; docker's image builds from it alone.
        source = "beside the index" if run.runner == "venv" else "with no package index"
        notes.append(
            f"`--find-links {wheels}`: the folder of wheels this run's {run.runner} "
            f"environments installed from, {source}; on another machine give its own"
        )
    read_only = run.options.get("read_only")
    if isinstance(read_only, str) and read_only:
        # RunOptions.read_only, no flag of `run` (minimize's candidates' runs, whose folders
        # link the workdir's files, or a Python caller's): a rerun gave no sign why links
        # into it dangled in its container, or why a write through one was refused (EROFS).
        # Said by what it is, not as a candidate's (a plain API run has it too), and of a
        # write as what would be, where none may have happened.
        said = (
            "mounted read-only at its own path in each container (a write to its files is "
            "refused); `reprospec run` has no option for it, and a rerun under docker sees "
            "links into it dangle"
            if run.runner == "docker"
            else f"as it is on this host: the {run.runner} runner mounts nothing, so a write "
            "through a link into it would reach its files"
        )
        notes.append(
            f"`{read_only}`: a folder whose files this run's attempts read (the Python API's "
            f"`RunOptions.read_only`, which minimize gives its candidates' runs, their folders "
            f"linking the workdir's files), {said}"
        )
    return "; ".join(notes)


def _differs_note(differs: CellEnvironments) -> tuple[str, str]:
    """`` `OMP_NUM_THREADS`, `torch` differ`` and `them`: the settings the cells did not
    share, for the note, with its verb and the pronoun the note's "leave ... out" takes (one
    read "`packaging` differ from cell to cell, so the tables above leave them out")."""
    names = sorted(key.partition(":")[2] or key for key in differs.varying)
    if not names:
        return "", ""
    said = ", ".join(inline_code(name) for name in names)
    return f"{said} {agree(len(names), 'differs', 'differ')}", agree(len(names), "it", "them")


def _secrets_to_set(spec_text: str) -> str:
    """` once `API_TOKEN` is set in your environment: ...`: what a rerun from the report
    must set first, said beside the spec, not only in its closing comment: a literal under
    a secret-looking name is written as an expression (redact.py), and a reader who misses
    that reruns it without it."""
    names = [inline_code(name) for name in Redactor.masked_names(spec_text)]
    if not names:
        return ""
    if len(names) == 1:
        return (
            f" once {names[0]} is set in your environment: the run's value of it looked "
            "secret, and no report holds it"
        )
    return (
        f" once {', '.join(names)} are set in your environment: the run's values of them "
        "looked secret, and no report holds them"
    )


def context(run: RunResult) -> dict[str, object]:
    """Everything the template shows, computed here so the template only lays it out."""
    paths = PathNames(run.paths)
    short = paths.shorten
    axes = axes_of(run.cells)
    differs = cell_environments(run.cells)
    differs_note, differs_them = _differs_note(differs)
    large = len(run.cells) > LARGE_RUN_CELLS
    cells = [] if large else result_rows(run, axes, differs, short)
    spec_text = run.spec_text.rstrip("\n")
    rows = _warning_rows(run)
    grid = _grid(run.cells, axes)
    several = any(len(c.attempts) > 1 for c, _ in alike(run.cells))
    attempts = attempt_rows(run, short) if several else []
    # A flaky cell's loop: read once, for the standalone section and the line under the
    # headline both.
    looped = flaky_loop(run)
    # Observe runs explain every outcome (both ways); others what separates the failure.
    separated = None if run.observes else _separators(run)
    return {
        "title": " ".join((run.title or run.spec_name).split()),  # a heading is one line
        "summary": short(summary_line(run)),
        "perturbed": perturbed_cells(run),
        # Shown as markdown, but unable to open a fence or a comment (markup.plain_markdown).
        "description": plain_markdown(run.description.strip()),
        "run": run,
        "resumed": resumed_phrase(run.resumed) if run.resumed else "",
        # With its --out where the store is not the default one: pasted, it finds the run.
        "resume_command": resume_command(run.run_id, run.store),
        "warnings": [short(w) for w in run.warnings],
        "environment": [
            (label, short(value)) for label, value in environment_rows(run.environment, differs)
        ],
        "env_vars": [(name, short(value)) for name, value in env_vars(run.environment, differs)],
        "env_differs": differs_note,
        "env_differs_them": differs_them,
        "env_mismatch": mismatches(run.environment),
        "env_unjudged": unjudged_said(unjudged(run.environment)),
        "command": reproduce_command(run),
        "machine_note": machine_note(run),
        "spec_name": Path(run.spec_path).name if run.spec_path else f"{run.spec_name}.yaml",
        "spec_text": spec_text,
        "spec_marker": marker_line(spec_text, run.spec_path),
        "spec_fence": fence_for(spec_text),
        "spec_secrets": _secrets_to_set(spec_text),
        "spec_rerun": rerun_command(run.options) + _this_machine(run),
        "axes": axes,
        "cells": cells,
        "fold_cells": len(cells) > FOLD_ROWS,
        "cell_groups": result_groups(run, differs, short) if large else [],
        "large": large,
        "legend": OBSERVE_LEGEND
        if run.observes
        else verdict_legend(c.verdict for c, _ in alike(run.cells)),
        "grid": grid,
        "outcomes": outcome_rows(run, rows),
        "separators": _noted_separators(separated, rows),
        "separators_heading": _separators_heading(run) if separated is not None else "",
        "failure": failure_section(run, paths),
        "attempts": attempts,
        "attempt_count": sum(n * len(c.attempts) for c, n in alike(run.cells)),
        "fold_attempts": len(attempts) > FOLD_ROWS,
        "attempts_per_cell": bool(attempts) and bool(attempts[0]["attempts"]),
        "show_gpu": any(a.gpu_slot for c, _ in alike(run.cells) for a in c.attempts),
        "slots": _slot_rows(run),
        "slot_noun": _slot_noun(run),
        "instances": _instances(run),
        "attempt_warnings": attempt_warnings(run, short),
        "child_warnings": _child_warnings(run, rows, short),
        "launch": _launch(run),
        "stacks": stack_sections(run, paths),
        # Sections worded whole elsewhere (report/standalone.py), placed by the template.
        "versions": versions_markdown(run),
        "standalone": standalone_markdown(run, looped),
        "repro_line": repro_line(run, looped),
    }


@functools.cache
def template() -> Template:
    """The report template, loaded once per process (templating.py)."""
    # Markdown, not HTML: escaping is per table cell, by the `cell` filter.
    return load_template(
        "report.md.j2",
        autoescape=False,
        filters={"cell": table_cell, "code": inline_code, "plural": plural},
    )


def render_markdown(run: RunResult) -> str:
    """The filled bug report; spec strings reach the template only as data."""
    text = template().render(**context(run))
    return text.strip("\n") + "\n"
