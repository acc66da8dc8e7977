"""The report's "Standalone repro" section and its folded "Versions" block, as markdown.

The section is computed here whole (the template only places it), so the
markdown and HTML reports word it alike: `standalone_markdown(run, looped)` and
`versions_markdown(run)` return a section or "" when there is nothing to show; `looped`,
`flaky_loop(run)`, is read once per report and given to the section and the line under the
headline both.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from reprospec.core.rates import rate_floor
from reprospec.core.results import CellResult, RunResult, Standalone
from reprospec.core.words import attempts_phrase
from reprospec.environment.facts import run_one_cell_fields
from reprospec.report.environment import perturbed_cells
from reprospec.report.markup import fence_for, html_text, inline_code
from reprospec.report.versions import captured_where, versions_text
from reprospec.store.runfolder import REPRO_PY


def _cell_of(run: RunResult, cell_id: str) -> CellResult | None:
    """The result of the repro's cell (`Standalone.cell`), None where the run has none."""
    return next((c for c in run.cells if c.cell.id == cell_id), None)


def _cell_phrase(run: RunResult, standalone: Standalone) -> str:
    cell = _cell_of(run, standalone.cell)
    name = inline_code(standalone.cell) if standalone.cell else "the only cell"
    if cell is None or not cell.attempts:
        return f"cell {name}"
    return f"cell {name} ({inline_code(attempts_phrase(cell.attempts))})"


def _fenced(text: str, language: str) -> list[str]:
    fence = fence_for(text)
    return [f"{fence}{language}", text.rstrip("\n"), fence]


def _checklist(standalone: Standalone) -> list[str]:
    if not standalone.files:
        return []
    lines = ["", f"Files it needs, {files_from(standalone, inline_code)}:", ""]
    lines += [f"- [ ] {inline_code(name)}" for name in standalone.files]
    return [*lines, "", found_files(inline_code)]


# What the checklist is made from, said under it: the files are found from the
# command's words and the imports (never by running it), so a data file the program opens by
# a name in its code is not there, and a reader who copies the list should know to look.
FOUND_FILES = (
    "These are the files the job names, the local modules they import and the spec's "
    "{files}: a file the program opens by a name in its code ({open}) is listed only where "
    "the spec's {files} names it ({verify} finds one missing)."
)
_FOUND_CODE = {
    "files": "files",
    "open": 'open("data/cfg.json")',
    "verify": "reprospec bundle --verify",
}


def found_files(code: Callable[[str], str]) -> str:
    """FOUND_FILES with its code words written by `code` (markdown's or HTML's)."""
    return FOUND_FILES.format(**{key: code(word) for key, word in _FOUND_CODE.items()})


def files_from(standalone: Standalone, code: Callable[[str], str]) -> str:
    """Where the repro's files are: `from the spec's folder` (the workdir `.`), or `from
    the spec's workdir (WORKDIR)`; the same words in every format."""
    if standalone.workdir in ("", "."):
        return "from the spec's folder"
    return f"from the spec's workdir ({code(standalone.workdir)})"


def standalone_markdown(run: RunResult, looped: tuple[str, str] | None) -> str:
    """The "Standalone repro" section (a `##` heading and its body), or ""; `looped`: the
    run's `flaky_loop`."""
    standalone = run.standalone
    if standalone is None:
        return ""
    lines = ["## Standalone repro", ""]
    if standalone.unavailable:
        lines.append(
            f"No standalone repro for {_cell_phrase(run, standalone)}: {standalone.unavailable}."
        )
        return "\n".join(lines)
    if standalone.kind == "command":
        lines += [
            f"Without reprospec, {_cell_phrase(run, standalone)}, from the spec's folder:",
            "",
        ]
        lines += _fenced(standalone.run, "sh")
        lines += _looped(looped)
        lines += _checklist(standalone)
    else:
        self_contained = (
            "it needs only torch"
            if not standalone.files
            else ("it needs torch and the files below, in the folder it runs in")
        )
        lines += [
            f"Without reprospec, {_cell_phrase(run, standalone)}: {inline_code(REPRO_PY)} "
            f"(in the run folder) is the spec's training loop with this cell's values "
            f"written in; {self_contained}.",
            "",
        ]
        lines += _fenced(standalone.run, "sh")
        lines += _looped(looped)
        lines += _checklist(standalone)
        lines += ["", f"<details><summary>{REPRO_PY}</summary>", ""]
        lines += _fenced(standalone.script, "python")
        lines += ["", "</details>"]
    if standalone.notes:
        lines.append("")
        lines += [f"> {note}" for note in standalone.notes]
    return "\n".join(lines)


# The odds a loop of the repro sees the failure at the rate it was seen at, and its bounds.
LOOP_ODDS = 0.95
LOOP_RUNS = (10, 1000)
# The rate a declared `>0` bound is looped at (isolate's and minimize's default minimum).
ASSUMED_RATE = 0.3


def flaky_loop(run: RunResult, code: Callable[[str], str] = inline_code) -> tuple[str, str] | None:
    """(why, the loop) for the run's standalone repro of a cell that fails in only some
    attempts: some of its attempts passed, or its `expect.rate` bound says so. One plain run
    of its repro usually passed, and the section gave the command bare, as if it failed every
    time. None otherwise (no standalone repro; a cell that failed in every attempt and
    declares no rate; one that never failed). `code` writes a code word (markdown's, or
    HTML's)."""
    standalone = run.standalone
    if standalone is None:
        return None
    cell = _cell_of(run, standalone.cell)
    if cell is None or not standalone.run.strip():
        return None
    ran = [a for a in cell.attempts if a.ran is not None]
    failed = sum(1 for a in ran if a.failed)
    bound = cell.expected.rate if cell.expected.outcome != "pass" else None
    declared = bound if bound is not None and bound.op in (">=", ">") and bound.value < 1 else None
    if not failed or (failed == len(ran) and declared is None):
        return None
    if failed < len(ran) or declared is None:
        rate = failed / len(ran)
        why = f"It failed in {failed} of {len(ran)} attempts here"
    else:
        rate = rate_floor(declared) or ASSUMED_RATE
        why = f"Its {code('expect.rate')} ({code(str(declared))}) says it fails in some attempts"
    runs = math.ceil(math.log(1 - LOOP_ODDS) / math.log(1 - rate)) if rate < 1 else 1
    runs = min(max(runs, LOOP_RUNS[0]), LOOP_RUNS[1])
    stop = '{ echo "failed on run $i"; break; }'
    body = standalone.run.strip()
    if "\n" in body:
        loop = f"for i in $(seq {runs}); do\n(\n{body}\n) || {stop}\ndone"
    else:
        loop = f"for i in $(seq {runs}); do ( {body} ) || {stop}; done"
    return (
        f"{why}, so one plain run may well pass: run it until it fails, at most {runs} "
        f"times ({LOOP_ODDS:.0%} odds of a failure at that rate)",
        loop,
    )


def _looped(looped: tuple[str, str] | None) -> list[str]:
    if looped is None:
        return []
    why, loop = looped
    return ["", f"{why}:", "", *_fenced(loop, "sh")]


def repro_line(run: RunResult, looped: tuple[str, str] | None) -> str:
    """The one-line repro the report offers under its headline, or ""; `looped`: the run's
    `flaky_loop`.

    A maintainer's first question is "how do I see it myself": when the failing cell's
    standalone repro is one command line (a minimized spec's is), it comes first; a
    longer one (a workload's repro.py) stays in its section, linked from the failure.
    A run where no cell failed has no failure to reproduce: its headline says "No failure",
    and a "Repro without reprospec" under it read as if there were one (the section still
    shows how the cell ran, with its outcome).
    """
    standalone = run.standalone
    cell_result = _cell_of(run, standalone.cell) if standalone is not None else None
    if (
        standalone is None
        or _never_failed(cell_result)
        or perturbed_cells(run)  # the plain command runs without the perturbation
        or standalone.unavailable
        or standalone.notes  # a caveat goes with it: the section, not a bare line
        or standalone.kind != "command"
        or _under_diagnostics(cell_result)
        or "\n" in standalone.run.strip()
        or len(standalone.run) > 200
    ):
        return ""
    cell = f"cell {inline_code(standalone.cell)}" if standalone.cell else "the only cell"
    # A cell that fails in only some runs: the loop, one plain run usually passed.
    line = looped[1] if looped is not None else standalone.run.strip()
    flaky = "; it fails in some runs only: looped until it fails" if looped else ""
    return (
        f"**Repro without reprospec** ({cell}, from the spec's folder{flaky}; "
        f"[more](#standalone-repro)): {inline_code(line)}"
    )


def _never_failed(cell: CellResult | None) -> bool:
    """Whether the repro's cell ran and no attempt of it failed: it is the first that ran
    because none failed (plan/standalone.choose_cell), so there is nothing to reproduce."""
    return cell is not None and bool(cell.attempts) and not any(a.failed for a in cell.attempts)


def _under_diagnostics(cell: CellResult | None) -> bool:
    """Whether the cell ran under `environment.debug` (compute-sanitizer, a CUDA core dump,
    ...): its plain command fails another way (no sanitizer's exit code, no core)."""
    debug = cell.environment.get("debug") if cell is not None else None
    if not isinstance(debug, dict):
        return False
    return any(value not in (None, False, "off", "", 0) for value in debug.values())


def versions_markdown(run: RunResult) -> str:
    """The folded "Versions" block (collect_env's facts), or "" when they were not captured."""
    one_cell = run_one_cell_fields(run)
    text = versions_text(run.environment, one_cell)
    if text is None:
        return ""
    where = html_text(captured_where(run, one_cell))
    lines = [
        "<details><summary>Versions (as <code>python -m torch.utils.collect_env</code> "
        f"reports them; {where})</summary>",
        "",
        *_fenced(text, "text"),
        "",
        "</details>",
    ]
    return "\n".join(lines)
