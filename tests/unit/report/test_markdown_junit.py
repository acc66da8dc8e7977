"""Reports: golden markdown and JUnit for hand-built runs, sandbox safety, log cleaning."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from array import array
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonValue
from reprospec.core.logtext import clean_log, excerpt
from reprospec.core.redact import Redactor
from reprospec.core.results import CellResult, NotRun, Outcome, RunResult, alike
from reprospec.core.results import PythonFrame as Frame
from reprospec.core.runoptions import RunOptions
from reprospec.errors import UsageError
from reprospec.outcome.judge import judge_attempt, judge_cell
from reprospec.outcome.judgedcells import JudgedCells, JudgedRun
from reprospec.plan.run import plan_run
from reprospec.report import render
from reprospec.report.failure import MAX_OTHER_FAILURES, summary_line
from reprospec.report.markup import fence_for, inline_code, table_cell
from reprospec.report.paths import with_short_commands
from reprospec.report.progress import results_table
from reprospec.report.separation import separators
from reprospec.report.signatures import outcome_groups
from reprospec.spec.load import load_spec
from reprospec.store.resultsjson import run_to_dict
from tests.support.paths import DATA, GOLDEN
from tests.support.runs import (
    ENV,
    ERROR_SPEC,
    SEGFAULT_SPEC,
    environment_cell,
    error_run,
    hang_run,
    infra_run,
    large_matrix,
    pool_hang_run,
    segfault_matrix,
)

UPDATE = os.environ.get("REPROSPEC_UPDATE_GOLDEN") == "1"


CASES = {
    "segfault-matrix": segfault_matrix,
    "hang": hang_run,
    "error": error_run,
    "infra-error": infra_run,
}


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}: run with REPROSPEC_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.mark.parametrize("name", sorted(CASES))
def test_markdown_matches_golden(name: str) -> None:
    _check_golden(f"{name}.md", render(CASES[name](), "md"))


@pytest.mark.parametrize("name", [*sorted(CASES), "large"])
def test_the_report_reads_nothing_a_spooled_cell_is_held_without(name: str, tmp_path: Path) -> None:
    # A large run's finished cells are held as JudgedCells.for_report keeps them
    # (results.json has them whole): report.md and the console table must not change.
    run = {**CASES, "large": large_matrix}[name]()
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: any\ncommand: [true]\nexpect: {outcome: pass}\n")
    held = JudgedCells(plan_run(load_spec(spec), RunOptions(out=tmp_path)))
    light = replace(run, cells=tuple(held.for_report(c) for c in run.cells))
    # (the passing attempts' times and logs are left out: the infra-error run has none)
    assert (light.cells != run.cells) is (name != "infra-error")
    assert render(light, "md") == render(run, "md")
    tables = [Console(width=200, record=True) for _ in range(2)]
    for console, shown in zip(tables, (light, run), strict=True):
        console.print(results_table(shown))
    assert tables[0].export_text() == tables[1].export_text()


def as_made(cells: Sequence[CellResult], held: int | None = None) -> JudgedRun:
    """`cells` as a large run holds them: each alike result once, each cell made from its
    `Cell` and its result when read; cell `held` (if any) held whole, as a cell the spool
    could not take."""
    bodies: dict[str, int] = {}
    parts: list[tuple[Any, ...]] = []
    which = array("I", [0]) * len(cells)
    whole: dict[int, CellResult] = {}
    for position, c in enumerate(cells):
        if position == held:
            whole[position] = c
            continue
        body = (c.expected, c.verdict, c.reason, c.rate, c.attempts, c.command, c.environment)
        key = repr(body)  # (alike by value: the hand-built cells share no parts)
        if key not in bodies:
            bodies[key] = len(parts) + 1
            parts.append(body)
        which[position] = bodies[key]
    return JudgedRun([c.cell for c in cells], which, tuple(parts), whole, Redactor())


@pytest.mark.parametrize("name", [*sorted(CASES), "large"])
@pytest.mark.parametrize("held", [None, 0])
def test_the_report_reads_cells_made_as_they_are_read_as_it_reads_a_tuple(
    name: str, held: int | None, tmp_path: Path
) -> None:
    # A large run's cells are made as they are read, and the report reads each alike
    # result once where it only counts (core.results.alike): the same report.md, console
    # table and summary as from the cells in a tuple.
    run = {**CASES, "large": large_matrix}[name]()
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: any\ncommand: [true]\nexpect: {outcome: pass}\n")
    judged = JudgedCells(plan_run(load_spec(spec), RunOptions(out=tmp_path)))
    light = replace(run, cells=tuple(judged.for_report(c) for c in run.cells))
    made = replace(light, cells=as_made(light.cells, held))
    assert list(made.cells) == list(light.cells)
    assert made.summary == light.summary
    assert render(made, "md") == render(light, "md")
    tables = [Console(width=200, record=True) for _ in range(2)]
    for console, shown in zip(tables, (made, light), strict=True):
        console.print(results_table(shown))
    assert tables[0].export_text() == tables[1].export_text()
    # Alike cells are read once: fewer results than cells where cells are alike.
    assert sum(n for _, n in alike(made.cells)) == len(run.cells)
    if name == "large":
        assert len(list(alike(made.cells))) < len(run.cells)


@pytest.mark.parametrize("name", ["segfault-matrix", "hang", "infra-error"])
def test_junit_matches_golden(name: str) -> None:
    _check_golden(f"{name}.junit.xml", render(CASES[name](), "junit"))


def test_summary_line_names_failure_and_counts() -> None:
    assert summary_line(segfault_matrix()) == (
        "crash SIGSEGV (worker) @ validation:7 in 1 of 4 cells; "
        "as expected in 1 of 4 cells (1/4 attempts)"
    )
    # The results table reads 0/0 for the cell: an attempt that could not run was not judged
    # (the headline read "0/1 attempts").
    assert summary_line(infra_run()) == (
        "Could not run; as expected in 0 of 1 cell (0/0 attempts, 1 could not run), 1 infra-error"
    )


def test_a_search_probes_headline_says_its_attempts_and_who_judges_them() -> None:
    # A minimize probe's report.md read "as expected in 0 of 1 cell (1/2 attempts)": the
    # cell's verdict is the engine's rule (every attempt), which the search does not ask;
    # it accepted the candidate, failing at its first matching attempt.
    run = segfault_matrix()
    probe = replace(run, options={**run.options, "purpose": "minimize"})
    line = summary_line(probe)
    assert line == (
        "crash SIGSEGV (worker) @ validation:7 in 1 of 4 cells; a probe of minimize: 1/4 "
        "attempts as expected, which the minimize search judges by its own rule (its "
        "report), not cell by cell"
    )
    assert "as expected in" not in line
    assert summary_line(run).endswith("as expected in 1 of 4 cells (1/4 attempts)")


def test_the_headline_names_no_step_that_only_some_cells_of_a_signature_reached() -> None:
    # The signature leaves the step out (`error:RuntimeError:train`): the lr=0.1 cell raising
    # at train:2 is in lr=1.0's group (train:3), and the headline read `@ train:3 in 2 of 2
    # cells`, a step the lr=0.1 cell never reached. Its phase, which both share, stays.
    run = error_run()
    first, second = run.cells
    attempt = second.attempts[0]
    assert isinstance(attempt.outcome, Outcome)
    earlier = replace(first, attempts=(replace(attempt, outcome=replace(attempt.outcome, step=2)),))
    both = replace(run, cells=(earlier, second))
    assert summary_line(both).startswith(
        "error exit 1 RuntimeError @ train in 2 of 2 cells; as expected in 1 of 2 cells"
    )
    # So does an observe run's Outcomes section, which groups attempts the same way.
    failed = outcome_groups(both)[0]
    assert failed.headline() == "`error exit 1 RuntimeError @ train` in every cell (2 attempts)"
    # One step shared by every attempt is still named.
    assert summary_line(run).startswith("error exit 1 RuntimeError @ train:3 in 1 of 2 cells")


def test_summary_line_counts_the_attempts_that_ran_as_the_results_table_does() -> None:
    run = infra_run()
    expectation = run.cells[0].expected
    outcome = Outcome("pass", exit_code=0, signature="pass")
    matched = judge_attempt(outcome, expectation).matched
    ran = replace(run.cells[0].attempts[0], attempt=2, outcome=outcome, matched=matched)
    attempts = (run.cells[0].attempts[0], ran)
    verdict = judge_cell(expectation, attempts)
    cell = CellResult.judged(run.cells[0].cell, expectation, verdict, attempts)
    mixed = replace(run, cells=(cell,))
    assert (cell.rate.matched, cell.rate.attempts) == (1, 1)
    assert (
        summary_line(mixed)
        == "No failure; as expected in every cell (1/1 attempts, 1 could not run)"
    )
    assert "| 1/1 |" in render(mixed, "md")


def test_markdown_sections() -> None:
    text = render(segfault_matrix(), "md")
    # The first line names the embedded spec block (reportspec.py), then the heading.
    marker, heading = text.split("\n", 2)[:2]
    assert marker.startswith("<!-- reprospec:spec sha256=")
    assert marker.endswith(' path="specs/segfault.yaml" -->')
    assert heading == "# Segfault in validation when DataLoader workers pin memory"
    assert "| num_workers \\ pin_memory | false | true |" in text
    assert "| 2 | pass ❌ | crash SIGSEGV (worker) ✅ |" in text
    assert "`crash SIGSEGV (worker) @ validation:7`" in text
    assert "`num_workers=2` and `pin_memory=true` together" in text
    assert "python: spec says 3.10, ran 3.11.7" in text
    assert "| Memory | 31.2 GiB (available: 27.9 GiB, cgroup limit 4.0 GiB) |" in text
    assert "| CUDA | none (CPU-only torch build) |" in text
    assert "| Packages | torch 2.13.0+cpu, numpy 2.1.0, wandb not installed |" in text
    assert "Not specified" not in text
    assert "None" not in text
    # The log excerpt: colours gone, the progress bar at its final state, no NUL.
    assert "\x1b" not in text
    assert "\x00" not in text
    assert "\r" not in text
    assert "100%|##########|" in text
    assert " 50%|" not in text
    assert "```sh\nreprospec run specs/segfault.yaml\n```" in text
    assert f"```yaml\n{SEGFAULT_SPEC}```" in text


def test_the_note_of_what_differs_from_cell_to_cell_agrees_with_its_count() -> None:
    # One varying setting read "`packaging` differ from cell to cell, so the tables above
    # leave them out".
    def note(*cells: CellResult) -> str:
        text = render(replace(error_run(), environment=ENV, cells=cells), "md")
        return next(line for line in text.splitlines() if line.startswith("Not every cell"))

    one = note(
        environment_cell(0, packages=["packaging==21.3"]),
        environment_cell(1, packages=["packaging==26.4"]),
    )
    assert "`packaging` differs from cell to cell, so the tables above leave it out and" in one
    two = note(
        environment_cell(0, packages=["packaging==21.3"], env={"OMP_NUM_THREADS": "1"}),
        environment_cell(1, packages=["packaging==26.4"], env={"OMP_NUM_THREADS": "2"}),
    )
    assert (
        "`OMP_NUM_THREADS`, `packaging` differ from cell to cell, so the tables above leave them"
        " out and"
    ) in two
    same = (environment_cell(0), environment_cell(1))
    assert "Not every cell" not in render(replace(error_run(), environment=ENV, cells=same), "md")


def test_report_embeds_the_whole_spec_behind_a_fence_it_cannot_close() -> None:
    text = render(error_run(), "md")
    assert f"````yaml\n{ERROR_SPEC}````\n" in text
    assert "reprospec run 'specs/nan loss.yaml'" in text
    # A pipe in a message stays inside its table cell.
    assert table_cell("a | b\nc") == "a \\| b<br>c"


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_gives_back_the_spec_it_embeds(name: str) -> None:
    from reprospec.spec.files import extract_markdown_spec

    run = CASES[name]()
    block = extract_markdown_spec(render(run, "md"))
    assert block is not None
    assert block[0] == run.spec_text


def test_spec_strings_are_data_never_template_source() -> None:
    hostile = "{{ 7*7 }} {% raw %}{{ config }}{% for x in y %}"
    run = replace(
        error_run(),
        title=f"Title {hostile}",
        description=f"Description {hostile}",
        spec_text=f"# {hostile}\n" + ERROR_SPEC,
    )
    text = render(run, "md")
    assert f"# Title {hostile}\n" in text
    assert f"Description {hostile}" in text
    assert f"# {hostile}\n" in text
    assert "49" not in text


def test_hang_stacks_come_from_the_attempt() -> None:
    text = render(hang_run(), "md")
    # The first hang's stacks lead the Failure section (not folded at the end).
    failure = text.split("## Failure", 1)[1].split("\n## ", 1)[0]
    assert "The Python stacks of the hung processes" in failure
    assert "sock_client.py" in failure  # attempt 1's stacks: the first hang of the cell
    assert 'File "wandb/__init__.py", line 3 in <module>' in text
    assert "2/3 (95% CI 0.21–0.94)" in text
    assert "| 0 | 2 | 2 | 2 |\n| 1 | 1 | 0 | 0 |" in text


def test_a_hangs_where_names_the_thread_stored_not_todays_files(tmp_path: Path) -> None:
    """The classifier ranked a join's threads by the attempt's lines (`w` on a lock before
    a heartbeat that sleeps) and stored `hung_in`; the report read the dump again ranked by
    today's files (here gone: the dump's order, the heartbeat first), and its where-line
    named another thread than the title's."""
    job = tmp_path / "gone" / "job.py"
    dump = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{job}", line 6 in beat\n'
        '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{job}", line 9 in work\n'
        '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 1139 in _wait_for_tstate_lock\n'
        '  File "/usr/lib/python3.11/threading.py", line 1119 in join\n'
        f'  File "{job}", line 13 in <module>\n'
    )
    base = hang_run()
    cell = base.cells[0]
    attempt = cell.attempts[0]
    assert attempt.ran is not None
    stored = replace(attempt.ran, hung_in=Frame(str(job), 9, "work"))
    first = replace(attempt, stack=dump, outcome=stored)
    text = render(replace(base, cells=(replace(cell, attempts=(first, *cell.attempts[1:])),)), "md")
    where = next(line for line in text.split("\n") if "'s threads were in " in line)
    assert where.index("in work") < where.index("in beat"), where


def test_a_hang_says_where_it_sits_and_labels_the_dataloader_workers() -> None:
    """A command's DataLoader worker deadlocked in __getitem__ (a real dump): each hang
    signature says where it sits, and the workers' stacks, under their parent's command
    line, are labelled, in the Failure section and in the Stacks section of a later hang
    (a bare `hang`, three alike headers, the frame only in the folded block)."""
    dump = (DATA / "stacks" / "dataloader-worker-hang.stack.txt").read_text()
    base = hang_run()
    cell = base.cells[0]
    first = replace(cell, attempts=(replace(cell.attempts[0], stack=dump), *cell.attempts[1:]))
    again = replace(first, cell=Cell(id="again", index=1, matrix={}))
    for kind in ("md", "html"):
        text = render(replace(base, cells=(first, again)), kind).replace("&#34;", '"')
        code = "`{}`" if kind == "md" else "<code>{}</code>"
        where = (
            "the DataLoader worker pid 6264 was fetching an item, in "
            + code.format("/work/proj/train.py:19 in __getitem__")
            + " (cell "
            + code.format("default")
            + ", attempt 1)"
        )
        assert f"(4 attempts): {where}" in text
        headers = re.findall(r"--- pid \d+ .*? ---", text)
        command = "/venv/bin/python train.py --workers 2 --mode hang"
        assert (
            headers
            == [
                f"--- pid 6053 ({command}) ---",
                f"--- pid 6257 ({command}) [DataLoader worker] ---",
                f"--- pid 6264 ({command}) [DataLoader worker] ---",
            ]
            * 2
        )


def test_a_hang_after_a_childs_death_leads_with_the_dead_child() -> None:
    """The Pool's hang: the headline, the first failure and its first stack are the dead
    worker's; the hung parent's stacks follow (before, a bare `hang` and the parent's)."""
    text = render(pool_hang_run(), "md")
    assert "\n**hang after a child died of SIGSEGV (python pool.py) in 1 of 1 cell;" in text
    failure = text.split("## Failure", 1)[1].split("\n## ", 1)[0]
    assert "- `hang:after-child-SIGSEGV` (1 attempt)" in failure
    assert "attempt 1: `hang after a child died of SIGSEGV (pid 4242: python pool.py)`." in failure
    said = (
        "The stack of the process that died (the child pid 4242 (`python pool.py`), of "
        "SIGSEGV before the hang), as it printed it:"
    )
    dead_at = failure.index(said)
    hung_at = failure.index("The Python stacks of the hung processes")
    assert failure.index("child pid 4242 (python pool.py) died of SIGSEGV") < dead_at < hung_at
    dead, hung = failure[dead_at:hung_at], failure[hung_at:]
    assert 'File "pool.py", line 9 in work' in dead
    assert "--- pid 4200" not in dead
    assert "--- pid 4200 (python pool.py) ---" in hung
    assert "in work" not in hung
    # No "main process's view" heading between them: the hung stacks are that view.
    assert "The main process's view" not in failure
    html = render(pool_hang_run(), "html")
    assert html.index("The stack of the process that died") < html.index(
        "The Python stacks of the hung processes"
    )


# A dead child's stack holding what separates the hung processes' stacks: a blank line,
# then a `--- ` line (here a native dump's header after its faulthandler report).
NATIVE_DEAD_STACK = (
    "Fatal Python error: Segmentation fault\n\n"
    "Stack (most recent call first):\n"
    '  File "pool.py", line 9 in work\n'
    "\n"
    "--- native frames of pid 4242, from its core ---\n"
    "#0  0x00007f3b1c2d in __strlen_avx2 () from libc.so.6\n"
    "#1  0x00007f3b1d04 in string_at () from _ctypes.cpython-311-x86_64-linux-gnu.so"
)


@pytest.mark.parametrize("kind", ["md", "html"])
def test_a_dead_childs_stack_is_shown_whole_whatever_lines_it_holds(kind: str) -> None:
    """The dead child's stack is a value of its own: a blank line and a `--- ` line in it
    end nothing. It was one text with the hung stacks that the report split again at the
    first blank line before a `--- `: the child's native frames were shown as a hung
    process's, under "The Python stacks of the hung processes"."""
    text = render(pool_hang_run(NATIVE_DEAD_STACK), kind)
    dead_at = text.index("The stack of the process that died")
    hung_at = text.index("The Python stacks of the hung processes")
    dead, hung = text[dead_at:hung_at], text[hung_at:]
    assert "native frames of pid 4242, from its core" in dead
    assert "#1  0x00007f3b1d04 in string_at ()" in dead
    assert "native frames" not in hung
    assert "--- pid 4200 (python pool.py) ---" in hung


@pytest.mark.parametrize("kind", ["md", "html"])
def test_a_dead_childs_stack_is_shown_however_its_command_was_masked(kind: str) -> None:
    """Secrets are masked in each text of a result: the dead child's command (a token in
    its arguments), and here a password of digits, which is masked wherever its digits are
    written, a pid's in a text included, but not in the pid, a number. The report found
    the dead child's stack by the line over it, made again from the masked outcome
    (`--- pid 4242 (...)`), which the masked text (`--- pid *** (...)`) no longer was: the
    section went missing, and nothing said so."""
    token = "sk-live-5f2a9c0e7d41"
    run = pool_hang_run(command=f"python pool.py --api-key {token}")
    text = render(Redactor([token, "4242"]).value(run), kind)
    assert token not in text
    who = "the child pid 4242 (`python pool.py --api-key ***`), of SIGSEGV before the hang"
    if kind == "html":
        who = who.replace(
            "`python pool.py --api-key ***`", "<code>python pool.py --api-key ***</code>"
        )
    dead_at = text.index(f"The stack of the process that died ({who}), as it printed it:")
    hung_at = text.index("The Python stacks of the hung processes")
    assert 'File "pool.py", line 9 in work' in text[dead_at:hung_at].replace("&#34;", '"')
    assert "--- pid 4200 (python pool.py --api-key ***) ---" in text[hung_at:]


def test_another_cells_hang_after_a_childs_death_shows_the_dead_child_first() -> None:
    """The Stacks section of the hangs after the first: the dead child's stack, under the
    line that names it, then the hung processes' stacks."""
    run = pool_hang_run(NATIVE_DEAD_STACK)
    first = run.cells[0]
    second = replace(first, cell=Cell(id="again", index=1, matrix={}))
    text = render(replace(run, cells=(first, second)), "md")
    stacks = text.split("<summary>Stacks</summary>", 1)[1]
    assert "Cell `again`, attempt 1:" in stacks
    dead_at = stacks.index("--- pid 4242 (python pool.py): died of SIGSEGV before the hang ---")
    hung_at = stacks.index("--- pid 4200 (python pool.py) ---")
    assert dead_at < stacks.index("#1  0x00007f3b1d04 in string_at ()") < hung_at


def _lines(run: RunResult) -> list[str]:
    """The lines of a run that failed one way: one entry, without a headline."""
    found = separators(run)
    assert found is not None
    assert all(not group.headline for group in found), found
    return [line for group in found for line in group.lines]


def test_separators_single_axis() -> None:
    assert _lines(error_run()) == [
        "`lr=1.0`: in every failing cell, in no passing cell",
        "`lr=0.1`: in every passing cell, in no failing cell",
    ]
    # One cell, no toggle: only the GPU slot can separate its attempts.
    assert _lines(hang_run()) == [
        "fails on GPU slot 0 (2 of 2 attempts), never on slot 1 (0 of 1 attempt)"
    ]


def test_separators_of_an_interrupted_run_name_the_cells_it_never_ran() -> None:
    """Stopped after `lr=0.1` passed and `lr=1.0` failed: "`lr=0.1`: in every passing cell"
    read as "only lr=0.1 passes", where `lr=10` and `lr=100` had not run at all."""
    base = error_run()
    failing = next(c for c in base.cells if c.verdict == "reproduced")
    passing = next(c for c in base.cells if c is not failing)

    def unrun(lr: float, index: int) -> CellResult:
        cell = Cell(id=f"lr={lr}", index=index, matrix={"lr": lr})
        return replace(passing, cell=cell, verdict="not-run", attempts=())

    run = replace(base, cells=(*base.cells, unrun(10.0, 2), unrun(100.0, 3)), interrupted=True)
    assert _lines(run) == [
        "`lr=1.0`: in every failing cell, in no passing cell",
        "`lr=0.1`: in every passing cell, in no failing cell",
        "these are of the 2 cells that ran; 2 cells were not run (interrupted): `lr=10.0|100.0`",
    ]
    assert "were not run (interrupted)" in render(run, "md")
    # A run that ran every cell says nothing of the kind.
    assert not any("not run" in line for line in _lines(base))
    # A cell that could not run (infra-error: no attempt ran) is named alike.
    infra = next(c for c in infra_run().cells)
    broken = replace(infra, cell=Cell(id="lr=10.0", index=2, matrix={"lr": 10.0}))
    assert _lines(replace(base, cells=(*base.cells, broken)))[-1] == (
        "these are of the 2 cells that ran; 1 cell could not run (infra-error): `lr=10.0`"
    )


def test_separators_name_the_one_passing_value_and_pairs() -> None:
    """`gpu=0` is the only passing cell: nothing is in every failing cell, its complement is."""
    base = error_run()
    failing, passing = (c for c in base.cells if c.verdict == "reproduced"), None
    crashed = next(failing)
    passing = next(c for c in base.cells if c is not crashed)

    def cell(template: CellResult, **matrix: JsonValue) -> CellResult:
        cell_id = ",".join(f"{k}={v}" for k, v in matrix.items())
        return replace(template, cell=Cell(id=cell_id, index=0, matrix=matrix))

    run = replace(
        base,
        cells=(
            cell(passing, gpu=0, amp=True),
            cell(crashed, gpu=1, amp=True),
            cell(crashed, gpu=2, amp=False),
            cell(crashed, gpu=3, amp=True),
        ),
    )
    assert _lines(run) == ["`gpu=0`: in every passing cell, in no failing cell"]
    # Two toggles that fail only together: the pair, in every failing cell.
    pair = replace(
        base,
        cells=(
            cell(passing, workers=0, pin=False),
            cell(passing, workers=0, pin=True),
            cell(passing, workers=2, pin=False),
            cell(crashed, workers=2, pin=True),
        ),
    )
    assert _lines(pair) == [
        "`workers=2` and `pin=true` together: in every failing cell, together in no passing cell"
    ]


def test_separators_word_two_patterns_as_one_statement() -> None:
    """A crash of `a=1 and (b=1 or c=1)`: no value nor pair holds its cells, two patterns
    do together. One line says so; each pattern on its own line read as holding every
    failing cell alone, which neither does."""
    base = error_run()
    crashed = next(c for c in base.cells if c.verdict == "reproduced")
    passing = next(c for c in base.cells if c is not crashed)
    cells: list[CellResult] = []
    for a in (0, 1):
        for b in (0, 1):
            for c in (0, 1):
                fails = a == 1 and (b == 1 or c == 1)
                cells.append(
                    replace(
                        crashed if fails else passing,
                        cell=Cell(
                            id=f"a={a},b={b},c={c}", index=len(cells), matrix=dict(a=a, b=b, c=c)
                        ),
                    )
                )
    assert _lines(replace(base, cells=tuple(cells))) == [
        "`a=1, b=1` or `a=1, c=1`: every failing cell is one or the other, "
        "no passing cell is either"
    ]


def test_separators_of_an_interrupted_run_agree_with_the_line_of_its_cells_that_ran() -> None:
    """The line "these are of the N cells that ran" under a headline "in 1 of M cells" that
    counted the cells never run in M, or under patterns against "no other cell" (the cells
    never run among them), contradicted them."""
    base = error_run()
    crashed = next(c for c in base.cells if c.verdict == "reproduced")
    passing = next(c for c in base.cells if c is not crashed)

    def at(template: CellResult, index: int, **matrix: JsonValue) -> CellResult:
        cell_id = ",".join(f"{k}={v}" for k, v in matrix.items())
        return replace(template, cell=Cell(id=cell_id, index=index, matrix=matrix))

    never = replace(at(passing, 9, a=2, b=0, c=0), verdict="not-run", attempts=())
    # Several ways: each failure is counted of the 3 cells that ran, not of 4.
    several = replace(
        base,
        cells=(
            _error_cell(crashed, "KeyError", 0, matched=True, excerpt="x"),
            _error_cell(crashed, "ValueError", 1, matched=False, excerpt="y"),
            at(passing, 3, k=2),
            replace(at(passing, 4, k=3), verdict="not-run", attempts=()),
        ),
        interrupted=True,
    )
    groups = separators(several)
    assert groups is not None
    assert all(" in 1 of 3 cells" in g.headline for g in groups if g.headline), groups
    assert groups[-1].lines == (
        "these are of the 3 cells that ran; 1 cell was not run (interrupted): `k=3`",
    )
    # One way, patterns against every other cell: the cell never run is named, not
    # "these are of the 8 cells that ran".
    cells = [
        at(crashed if a == 1 and (b == 1 or c == 1) else passing, 4 * a + 2 * b + c, a=a, b=b, c=c)
        for a in (0, 1)
        for b in (0, 1)
        for c in (0, 1)
    ]
    lines = _lines(replace(base, cells=(*cells, never), interrupted=True))
    assert lines[0].endswith("no other cell is either"), lines
    assert lines[1:] == ["1 cell was not run (interrupted): `a=2,b=0,c=0`"]


def _error_cell(base: CellResult, name: str, n: int, *, matched: bool, excerpt: str) -> CellResult:
    """Cell `k=N` of `base`, one attempt that raised `name` (`boom N`), matched or not."""
    attempt = replace(
        base.attempts[0],
        outcome=Outcome(
            "error", exit_code=1, exception=name, message=f"boom {n}", signature=f"e:{name}"
        ),
        matched=matched,
        excerpt=excerpt,
    )
    return replace(
        base,
        cell=Cell(id=f"k={n}", index=n + 1, matrix={"k": n}),
        verdict="reproduced" if matched else "not-reproduced",
        attempts=(attempt,),
    )


def test_each_unexpected_failure_shows_its_excerpt_up_to_a_bound() -> None:
    """Seven exceptions no attempt expected beside the expected one: five shown, two counted."""
    base = error_run()
    expected_cell = next(c for c in base.cells if c.verdict == "reproduced")
    names = [f"Error{n}" for n in range(7)]
    others = [
        _error_cell(expected_cell, name, n, matched=False, excerpt=f"{name}: boom {n}")
        for n, name in enumerate(names)
    ]
    run = replace(
        base,
        cells=(replace(expected_cell, cell=Cell(id="k=9", index=0, matrix={"k": 9})), *others),
    )
    failure = render(run, "md").split("## Failure", 1)[1].split("\n## ", 1)[0]
    shown = [name for name in names if f"### Not expected: `error exit 1 {name}`" in failure]
    assert len(shown) == MAX_OTHER_FAILURES
    assert all(f"{name}: boom {names.index(name)}" in failure for name in shown)
    assert f"… and {len(names) - MAX_OTHER_FAILURES} more failures (results.json" in failure
    # The expected failure is the first failure, not one of the "not expected".
    assert "Not expected: `error exit 1 RuntimeError" not in failure
    # What separates: one entry per failure, each naming exactly its one cell.
    groups = separators(run)
    assert groups is not None
    assert [g.headline.rsplit(": ", 1)[1] for g in groups] == ["`k=9`"] + [
        f"`k={n}`" for n in range(7)
    ]


def test_a_second_expected_failure_shows_its_excerpt_after_the_unexpected_ones() -> None:
    """A spec expecting a crash in one cell and a ValueError in another: the ValueError's
    message and log follow the first failure, marked expected, after a failure no attempt
    expected (the ValueError got only its signature line)."""
    base = error_run()
    expected_cell = next(c for c in base.cells if c.verdict == "reproduced")

    def failing(name: str, n: int, matched: bool) -> CellResult:
        return _error_cell(
            expected_cell, name, n, matched=matched, excerpt=f"{name}: boom {n} in its log"
        )

    run = replace(
        base,
        cells=(
            replace(expected_cell, cell=Cell(id="k=9", index=0, matrix={"k": 9})),
            failing("KeyError", 1, matched=True),
            failing("KeyError", 2, matched=True),
            failing("TypeError", 3, matched=False),
        ),
    )
    for fmt in ("md", "html"):
        text = render(run, fmt)
        failure = text.split("Failure", 1)[1]
        unexpected = failure.index("Not expected: ")
        expected = failure.index("Expected as well: ")
        assert unexpected < expected, fmt
        assert "TypeError: boom 3 in its log" in failure[unexpected:expected]
        tail = failure[expected:]
        assert "error exit 1 KeyError" in tail.split("\n", 1)[0], fmt
        assert "In 2 cells, first seen in cell" in tail
        assert "KeyError: boom 1 in its log" in tail


def test_junit_is_valid_xml_with_every_attempt() -> None:
    run = segfault_matrix()
    cells = list(run.cells)
    # A NUL in a message must not make the XML invalid.
    cells[0] = replace(cells[0], reason="expected crash\x00, got pass")
    root = ET.fromstring(render(replace(run, cells=tuple(cells)), "junit"))
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "4"
    assert suite.get("failures") == "3"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c.cell.id for c in run.cells]
    assert {c.get("classname") for c in cases} == {"val-segfault"}
    assert cases[0].find("failure").get("message") == "expected crash, got pass"  # type: ignore[union-attr]
    assert cases[3].find("failure") is None
    assert "attempt 1: crash SIGSEGV" in (cases[3].findtext("system-out") or "")


def test_junit_marks_flaky_cells_and_infra_errors() -> None:
    hang = ET.fromstring(render(hang_run(), "junit")).find("testsuite/testcase")
    assert hang is not None
    props = {p.get("name"): p.get("value") for p in hang.iter("property")}
    assert props["flaky"] == "true"
    assert props["attempt.2"] == "pass"
    infra = ET.fromstring(render(infra_run(), "junit")).find("testsuite/testcase")
    assert infra is not None
    error = infra.find("error")
    assert error is not None
    assert error.get("message") == "docker engine not reachable"
    assert infra.find("failure") is None


def test_json_format_is_results_json() -> None:
    run = segfault_matrix()
    assert json.loads(render(run, "json")) == json.loads(json.dumps(run_to_dict(run)))


def test_unknown_format_is_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown report format 'pdf'"):
        render(infra_run(), "pdf")


def test_clean_log_removes_ansi_carriage_returns_and_nul() -> None:
    raw = "\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok\x00\n10%\r50%\r100%\r\nnext\r\n"
    assert clean_log(raw) == "red ok\n100%\nnext\n"


def test_excerpt_keeps_the_tail_and_the_traceback() -> None:
    noise = "\n".join(f"line {i}" for i in range(100))
    assert excerpt(noise, max_lines=5).split("\n") == [
        "… (95 earlier lines omitted)",
        "line 95",
        "line 96",
        "line 97",
        "line 98",
        "line 99",
    ]
    frames = "\n".join(f'  File "m{i}.py", line {i}' for i in range(60))
    text = f"setup\nTraceback (most recent call last):\n{frames}\nValueError: bad\n"
    lines = excerpt(text, max_lines=10).split("\n")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: bad"
    assert any("lines omitted" in line for line in lines)
    assert excerpt("x" * 1000, width=10) == "xxxxxxxxxx… (+990 chars)"
    assert excerpt("same\n" * 500) == "same\n[previous line repeated 499 more times]"


def test_fences_outgrow_backticks() -> None:
    assert fence_for("plain") == "```"
    assert fence_for("a ````` b") == "``````"
    assert inline_code("a`b") == "``a`b``"
    assert inline_code("`x`") == "`` `x` ``"
    assert inline_code("plain") == "`plain`"


def test_excerpt_keeps_the_dying_workers_line_far_above_the_window() -> None:
    from reprospec.core.logtext import excerpt

    text = "\n".join(
        ["epoch 1", "ERROR: Unexpected segmentation fault encountered in worker.\0"]
        + [f"noise line {i}" for i in range(100)]
        + ["Traceback (most recent call last):", '  File "x.py", line 1', "EOFError"]
    )
    lines = excerpt(text, max_lines=10).split("\n")
    # In its place: the one line above it as it is, the noise below it marked left out.
    assert lines[:3] == [
        "epoch 1",
        "ERROR: Unexpected segmentation fault encountered in worker.",
        "… (93 lines omitted)",
    ]
    assert lines[-1] == "EOFError"
    assert "noise line 5" not in lines


def test_every_view_words_an_outcome_and_an_expectation_the_same() -> None:
    import io

    from reprospec.report.console import make_console
    from reprospec.report.progress import Progress, results_table

    run = segfault_matrix()
    crash, expected = "crash SIGSEGV (worker) @ validation:7", "crash SIGSEGV @ validation:6..8"
    stream = io.StringIO()
    make_console(stream).print(results_table(run))
    table = stream.getvalue()
    lines = io.StringIO()
    cell = run.cells[3]
    Progress(4, stream=lines).update("attempt", cell.cell, cell.attempts[0], 4, 4)
    views = {
        "md": render(run, "md"),
        "junit": render(run, "junit"),
        "github": render(run, "github"),
        "table": table,
        "progress": lines.getvalue(),
    }
    for name, text in views.items():
        assert crash in text, name
    for name in ("md", "junit", "table"):
        assert expected in views[name], name
    assert lines.getvalue() == f"[4/4] {cell.cell.id} #1: {crash} (match, 1.50s)\n"


def test_a_missed_attempts_progress_line_names_the_keys_it_missed() -> None:
    import io

    from reprospec.core.inputs import Expectation
    from reprospec.core.results import AttemptResult
    from reprospec.report.progress import Progress

    # A worker's crash is worded without the main process's exception: "miss" alone left
    # the user to guess which of the spec's expect keys the attempt went against.
    crash = Outcome(kind="crash", signal="SIGSEGV", where="worker", exception="OSError")
    verdict = judge_attempt(crash, Expectation("crash", exception="RuntimeError"))
    missed = AttemptResult(1, 1.5, crash, verdict.matched, verdict.mismatches, logs="")
    lines = io.StringIO()
    Progress(1, stream=lines).update("attempt", Cell("default", 0, {}), missed, 1, 1)
    assert lines.getvalue() == (
        "[1/1] default #1: crash SIGSEGV (worker) (miss: exception, 1.50s)\n"
    )


def test_github_summary_is_the_headline_and_a_row_per_cell() -> None:
    text = render(hang_run(), "github")
    assert text.startswith("### reprospec: import wandb hangs\n\n**hang @ import in 1 of 1 cell;")
    assert (
        "| ✅ | `default` | hang @ import rate &gt;=0.2 | 2× hang @ import, 1× pass "
        "| 2/3 (95% CI 0.21–0.94) | reproduced |" in text
    )


def test_cell_environments_of_packages_and_images() -> None:
    from reprospec.report.environment import cell_environments, environment_rows
    from tests.support.runs import ENV
    from tests.support.runs import environment_cell as cell

    same = [cell(0, packages=["numpy==2.1"]), cell(1, packages=["numpy==2.1"])]
    assert cell_environments(same).varying == frozenset()
    torches = [cell(0, packages=["torch==2.13.0"]), cell(1, packages=["torch==2.5.1"])]
    differs = cell_environments(torches)
    assert differs.packages == {"torch"}
    assert differs.per_cell == {"c0": ("torch==2.13.0",), "c1": ("torch==2.5.1",)}
    labels = [label for label, _ in environment_rows(ENV, differs)]
    assert "torch" not in labels
    assert "CUDA" not in labels
    assert "Python" in labels
    docker: dict[str, JsonValue] = {
        **ENV,
        "container": {"runtime": "docker", "image": "reprospec-env:908a3d5b"},
    }
    assert dict(environment_rows(docker, differs))["container"] == "runtime docker"
    assert "908a3d5b" in dict(environment_rows(docker))["container"]
    packages = dict(environment_rows(ENV, differs))["Packages"]
    assert "torch" not in packages
    assert "numpy 2.1.0" in packages
    images = [cell(0, image="python:3.11"), cell(1, image="python:3.12")]
    labels = [label for label, _ in environment_rows(ENV, cell_environments(images))]
    assert "Python" not in labels
    assert "CPU" in labels
    assert "Memory" in labels
    # Results without cell environments (written before they were kept) compare nothing.
    assert cell_environments([cell(0), replace(cell(1), environment={})]).varying == frozenset()


def test_attempt_warnings_are_capped_in_the_report() -> None:
    run = hang_run()
    cell = run.cells[0]
    many = tuple(f"warning {i}" for i in range(25))
    attempts = (replace(cell.attempts[0], warnings=many), *cell.attempts[1:])
    text = render(replace(run, cells=(replace(cell, attempts=attempts),)), "md")
    assert text.count("`default`, attempt 1: warning") == 20
    assert "- … and 5 more (results.json has them all)" in text
    # The HTML page has them too: for a crash before `| tee` they are the only sign of it.
    page = render(replace(run, cells=(replace(cell, attempts=attempts),)), "html")
    assert page.count("<code>default</code>, attempt 1: warning") == 20
    assert "… and 5 more (results.json has them all)" in page


@pytest.mark.parametrize("width", [None, 90])
def test_a_long_cell_id_leaves_the_table_its_other_columns(width: int | None) -> None:
    # A captured command's flags become axes, so a cell id of 150 characters is common:
    # on one line it squeezed what was expected and what happened to nothing.
    import io

    from reprospec.report.console import make_console
    from reprospec.report.progress import results_table

    run = segfault_matrix()
    long_id = "flags=" + " ".join(f"--option-{n} /a/long/path/{n}/train" for n in range(6))
    first = run.cells[3]
    cells = (replace(first, cell=replace(first.cell, id=long_id)), *run.cells[:3])
    stream = io.StringIO()
    console = make_console(stream)  # not a terminal: 160 columns
    if width is not None:
        console.width = width
    console.print(results_table(replace(run, cells=cells)))
    table = stream.getvalue()
    for word in ("SIGSEGV", "validation:6..8", "validation:7", "reproduced"):
        assert word in table, table  # each column has room for what it says
    assert "/a/long/path/5/train" in table.replace("│", "").replace("\n", "").replace(" ", "")
    assert "…" not in table, table


def test_an_interrupted_run_names_the_cells_it_cut_short() -> None:
    """A cell that matched in the 1 attempt of 2 it ran before the stop is `reproduced 1/1`:
    the report says it was cut short (its reason), as results.json does, or it reads complete.
    A run that was not interrupted lists only the cells that did not reproduce, as before."""
    whole = segfault_matrix()
    index, first = next((i, c) for i, c in enumerate(whole.cells) if c.verdict == "reproduced")
    cut = replace(
        first,
        reason=f"{first.reason} (interrupted after 1 of 2 attempts; --resume finishes it)",
    )
    cells = list(whole.cells)
    cells[index] = cut
    run = replace(whole, cells=tuple(cells), interrupted=True)
    results = render(run, "md").split("## Results", 1)[1]
    assert f"`{first.cell.id}`: " in results
    assert "interrupted after 1 of 2 attempts; --resume finishes it" in results
    assert "interrupted after" not in render(replace(run, interrupted=False), "md")
    # The rate columns too, the report's and the terminal's: `1/1` alone read as the whole
    # cell's, where it ran 1 of 2 (nu62b).
    import io

    from reprospec.report.console import make_console
    from reprospec.report.progress import results_table

    assert "| 1/1 (interrupted after 1 of 2 attempts) |" in results
    stream = io.StringIO()
    make_console(stream).print(results_table(run))
    assert "1/1 (interrupted after 1 of 2 attempts)" in stream.getvalue()
    assert stream.getvalue().count("interrupted after") == 1
    # And the GitHub job summary's, and JUnit's test case.
    assert "| 1/1 (interrupted after 1 of 2 attempts) |" in render(run, "github")
    root = ET.fromstring(render(run, "junit"))
    (case,) = [c for c in root.iter("testcase") if c.get("name") == first.cell.id]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert (props["rate"], props["interrupted"]) == ("1/1", "interrupted after 1 of 2 attempts")
    whole_case = ET.fromstring(render(replace(run, interrupted=False), "junit"))
    assert not [p for p in whole_case.iter("property") if p.get("name") == "interrupted"][1:]


def test_an_interrupted_runs_table_leaves_its_cells_room_on_an_80_column_terminal() -> None:
    """Ctrl-C on an 80-column terminal: `1/1 (interrupted after 1 of 2 attempts)` kept on
    one line took 41 columns, and the cell, what was expected and what happened were left 3
    each (`wor`, `ker`, ... down the page; `pa…`, `cr…`). The note wraps under its rate
    there; on a wide one (the 160 columns of a pipe) it stays beside it."""
    import io

    from reprospec.report.console import make_console

    whole = segfault_matrix()
    cells = tuple(
        replace(c, reason=f"{c.reason} (interrupted after 1 of 2 attempts; --resume finishes it)")
        if c.verdict == "reproduced"
        else c
        for c in whole.cells
    )
    run = replace(whole, cells=cells, interrupted=True)
    stream = io.StringIO()
    console = make_console(stream)
    console.width = 80
    console.print(results_table(run, console.width))
    table = stream.getvalue()
    first_lines = [line for line in table.splitlines() if "(interrupted" in line]
    assert first_lines, table
    assert all("1/1 (interrupted" in line for line in first_lines), table
    assert max(map(len, table.splitlines())) <= 80, table
    assert "│ num_worker" in table, table  # the cell's column 10 wide, where it was 3
    assert "│ crash      │" in table, table  # and what was expected: `cr…`
    stream = io.StringIO()
    make_console(stream).print(results_table(run, 160))
    assert "1/1 (interrupted after 1 of 2 attempts)" in stream.getvalue()


def test_a_spec_whose_secrets_were_masked_says_what_to_set_beside_it() -> None:
    # A literal under a secret-looking name is written back as `${{ env.API_TOKEN }}`: the
    # report says so where it offers `reprospec run report.md`, not only in the spec's comment.
    redactor = Redactor({"fixed-not-secret"}, names={"fixed-not-secret": "API_TOKEN"})
    spec = "reprospec: 1\nname: s\nenvironment:\n  env: {API_TOKEN: fixed-not-secret}\n"
    run = replace(error_run(), spec_text=redactor.spec_text(spec))
    text = render(run, "md")
    assert "with `reprospec run report.md` once `API_TOKEN` is set in your environment" in text
    assert "fixed-not-secret" not in text
    assert "once" not in render(error_run(), "md").split("## How to reproduce")[1]


def test_a_resumed_run_says_so_under_its_headline() -> None:
    """fx49a: report.md of a run finished by `run --resume` read as one run that went
    straight through; it says which attempts were carried over and which ran now."""
    from reprospec.core.resumed import Resumed
    from reprospec.report.markdown import render_markdown
    from reprospec.store.resultsjson import run_from_dict, run_to_dict
    from tests.support.runs import error_run

    plain = error_run()
    assert "Resumed" not in render_markdown(plain)
    resumed = replace(plain, resumed=Resumed(3, 5, "interrupted", "2026-12-01T09:28:58+00:00"))
    text = render_markdown(resumed)
    assert (
        f"> **Resumed** (`reprospec run --resume {plain.run_id}`): 3 attempts carried over "
        "from the run interrupted at 2026-12-01 09:28:58 UTC, 5 run now.\n"
    ) in text
    # Under the headline, before the results.
    assert text.index("> **Resumed**") < text.index("## Results")
    # results.json keeps it, and `report` renders it again from there.
    again = run_from_dict(json.loads(json.dumps(run_to_dict(resumed))))
    assert again.resumed == resumed.resumed
    assert run_from_dict(json.loads(json.dumps(run_to_dict(plain)))).resumed is None


def test_how_the_earlier_part_of_a_resumed_run_stopped_is_worded() -> None:
    from reprospec.core.resumed import Resumed
    from reprospec.core.words import resumed_phrase

    assert resumed_phrase(Resumed(0, 2, "killed")) == (
        "0 attempts carried over from the run whose engine was killed, 2 run now"
    )
    # Written again only where its folder was (said of a folder left whole).
    assert resumed_phrase(Resumed(4, 0, "finished", "2026-12-01T09:00:00+00:00")) == (
        "4 attempts carried over from the run finished at 2026-12-01 09:00:00 UTC, 0 run now"
    )
    assert resumed_phrase(
        Resumed(4, 0, "finished", "2026-12-01T09:00:00+00:00", rewritten=True)
    ) == (
        "4 attempts carried over from the run finished at 2026-12-01 09:00:00 UTC "
        "(its folder written again from the store), 0 run now"
    )


def test_a_run_resumed_twice_names_each_earlier_part() -> None:
    """Interrupted, resumed and interrupted again, then resumed: the second resume
    wrote `carried over from the run interrupted at (the second time)`, and that its first
    part was interrupted too was lost."""
    from reprospec.core.resumed import Resumed, ResumedPart
    from reprospec.core.words import resumed_phrase
    from reprospec.store.resultsjson import run_from_dict, run_to_dict
    from tests.support.runs import error_run

    first = ResumedPart(1, "interrupted", "2026-12-01T09:00:00+00:00")
    twice = Resumed(3, 1, "interrupted", "2026-12-01T09:05:00+00:00", before=(first,))
    assert twice.parts == (first, ResumedPart(2, "interrupted", "2026-12-01T09:05:00+00:00"))
    assert resumed_phrase(twice) == (
        "3 attempts carried over: 1 from the run interrupted at 2026-12-01 09:00:00 UTC, "
        "2 from its resume interrupted at 2026-12-01 09:05:00 UTC; 1 run now"
    )
    # A resume that found nothing to run stored no attempt: it carries none over, and is
    # not named (it read `10 from the run interrupted at ..., 0 from its resume finished`).
    empty = Resumed(1, 3, "finished", "2026-12-01T09:05:00+00:00", before=(first,))
    assert resumed_phrase(empty) == (
        "1 attempt carried over from the run interrupted at 2026-12-01 09:00:00 UTC, 3 run now"
    )
    killed = Resumed(3, 1, "killed", before=(first,))
    assert resumed_phrase(killed).endswith(", 2 from its resume whose engine was killed; 1 run now")
    run = replace(error_run(), resumed=twice)
    data = json.loads(json.dumps(run_to_dict(run)))
    assert [part["attempts"] for part in data["resumed"]["parts"]] == [1, 2]
    assert run_from_dict(data).resumed == twice
    # A results.json written before `parts` reads as one earlier part.
    del data["resumed"]["parts"], data["resumed"]["rewritten"]
    assert run_from_dict(data).resumed == replace(twice, before=())


def test_the_html_page_of_a_resumed_run_says_so_as_report_md_does() -> None:
    """report.md said a run was resumed under its headline; the HTML page of the same run
    read as one run that went straight through (fx50b's left item)."""
    from reprospec.core.resumed import Resumed
    from reprospec.report import render
    from tests.support.runs import error_run

    resumed = Resumed(2, 2, "interrupted", "2026-12-01T09:28:58+00:00")
    run = replace(error_run(), resumed=resumed)
    said = "2 attempts carried over from the run interrupted at 2026-12-01 09:28:58 UTC, 2 run now"
    page = render(run, "html")
    assert (
        f"<p><strong>Resumed</strong> (<code>reprospec run --resume {run.run_id}</code>): "
        f"{said}.</p>"
    ) in page
    assert said in render(run, "md")
    assert "Resumed" not in render(error_run(), "html")


def test_the_junit_report_of_a_resumed_run_says_so_as_report_md_does() -> None:
    """report.md, the HTML page and results.json said a run was resumed; its JUnit report,
    what a CI reads, had nothing of it: a suite property and the suite's system-out."""
    from reprospec.core.resumed import Resumed
    from tests.support.runs import error_run

    run = replace(error_run(), resumed=Resumed(2, 2, "interrupted", "2026-12-01T09:28:58+00:00"))
    said = "2 attempts carried over from the run interrupted at 2026-12-01 09:28:58 UTC, 2 run now"
    suite = ET.fromstring(render(run, "junit")).find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iterfind("properties/property")}
    assert props["resumed"] == said
    out = suite.find("system-out")
    assert out is not None
    assert out.text == f"Resumed (reprospec run --resume {run.run_id}): {said}."
    assert f"**Resumed** (`reprospec run --resume {run.run_id}`): {said}." in render(run, "md")
    # After its testcases, as the JUnit schema orders a testsuite's children.
    assert [child.tag for child in suite][-1] == "system-out"
    plain = ET.fromstring(render(error_run(), "junit")).find("testsuite")
    assert plain is not None
    assert plain.find("system-out") is None
    assert "resumed" not in {p.get("name") for p in plain.iterfind("properties/property")}


def test_every_report_gives_the_resume_command_with_the_runs_own_store() -> None:
    """lo32 item 1: report.md said `reprospec run --resume ID` of a run whose store was not
    the default one, and the command pasted looked for it in .reprospec ("no results
    store"); each view names the run's `--out`, and none where it is the default one."""
    from reprospec.core.resumed import Resumed
    from reprospec.report import render
    from tests.support.runs import error_run

    resumed = Resumed(2, 2, "interrupted", "2026-12-01T09:28:58+00:00")
    stopped = replace(error_run(), interrupted=True, store=Path("my runs"))
    command = f"reprospec run --resume {stopped.run_id} --out 'my runs'"
    assert f"(`{command}` finishes it)" in render(stopped, "md")
    again = replace(error_run(), resumed=resumed, store=Path("my runs"))
    assert f"**Resumed** (`{command}`)" in render(again, "md")
    assert f"(<code>{command.replace(chr(39), '&#39;')}</code>)" in render(again, "html")
    assert f"Resumed ({command})" in render(again, "junit").replace("&#39;", "'")
    assert f"(`{command}`)" in render(again, "github")
    # The default store (also as the absolute path a store read from disk gives), or one
    # not known: no --out, as before.
    for store in (Path(".reprospec"), Path.cwd() / ".reprospec", None):
        plain = replace(error_run(), interrupted=True, store=store)
        assert f"(`reprospec run --resume {plain.run_id}` finishes it)" in render(plain, "md")


def test_a_grid_corner_whose_attempts_differ_names_the_failure_and_its_count() -> None:
    """A flaky corner that crashed in 4 of 10 attempts read `pass 6/10 ✅` in the grid,
    beside a verdict that said the crash reproduced; the corner names the failure."""
    run = segfault_matrix()
    crashed = next(c for c in run.cells if c.verdict == "reproduced" and c.attempts[0].matched)
    crash = crashed.attempts[0]
    passed = next(c for c in run.cells if c is not crashed).attempts[0]
    attempts = tuple(
        replace(crash if n in (2, 5, 6, 9) else passed, attempt=n) for n in range(1, 11)
    )
    cells = tuple(replace(c, attempts=attempts) if c is crashed else c for c in run.cells)
    text = render(replace(run, cells=cells), "md")
    assert "| 2 | pass ❌ | crash SIGSEGV (worker) 4/10 ✅ |" in text


def test_a_run_made_with_python_path_is_reproduced_with_it_on_this_machine() -> None:
    # A new user's `reprospec run flaky.yaml --python .venv/bin/python`: How to reproduce
    # said `reprospec run flaky.yaml`, an infra-error here (the packages are in PATH's
    # interpreter). results.json's command_line stays without it (shown to others).
    python = "/home/u/my env/bin/python"
    run = replace(
        error_run(),
        command_line="reprospec run flaky.yaml --repeat 2",
        options={**RunOptions(python=python, repeat=2).to_dict()},
    )
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert "reprospec run flaky.yaml --repeat 2 --python '/home/u/my env/bin/python'\n" in (
        reproduce
    )
    assert f"`--python {python}`: the interpreter this run's attempts ran in" in reproduce
    assert "`reprospec run report.md --repeat 2 --python '/home/u/my env/bin/python'`" in (
        reproduce
    )
    assert run_to_dict(run)["command_line"] == "reprospec run flaky.yaml --repeat 2"
    page = render(run, "html")
    assert "--repeat 2 --python &#39;/home/u/my env/bin/python&#39;</pre>" in page
    assert f"<code>--python {python}</code>: the interpreter" in page
    plain = render(error_run(), "md").split("## How to reproduce")[1]
    assert "--python" not in plain


def test_a_pytest_run_with_its_python_is_reproduced_with_the_plugins_option() -> None:
    # `pytest --reprospec specs/b.yaml --reprospec-python .venv/bin/python`: How to
    # reproduce said `pytest --reprospec specs/b.yaml --python ...`, which pytest refuses
    # (unrecognized arguments: --python).
    python = "/home/u/env/bin/python"
    run = replace(
        error_run(),
        command_line="pytest --reprospec specs/b.yaml -q",
        options={**RunOptions(python=python, purpose="pytest").to_dict()},
    )
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert f"pytest --reprospec specs/b.yaml -q --reprospec-python {python}\n" in reproduce
    assert " --python" not in reproduce.split("```")[1]
    assert f"`--reprospec-python {python}` (`--python` to `reprospec run`)" in reproduce
    assert "or `--reprospec-runner venv`" in reproduce
    # The report.md rerun beside it is reprospec's own command, with reprospec's option.
    assert f"`reprospec run report.md --python {python}`" in reproduce
    assert f"-q --reprospec-python {python}</pre>" in render(run, "html")
    # After a lone `--` pytest reads every word as a path: the option goes before it.
    ended = replace(run, command_line="pytest --reprospec specs/b.yaml -- tests/x")
    reproduce = render(ended, "md").split("## How to reproduce")[1]
    assert f"pytest --reprospec specs/b.yaml --reprospec-python {python} -- tests/x\n" in reproduce
    # Put in as typed: the line split and joined again wrote `-k "a b"` as `-k 'a b'`, and
    # a `--` inside a quoted word is none.
    quoted = replace(run, command_line='pytest --reprospec s.yaml -k "a -- b" -- tests/x')
    reproduce = render(quoted, "md").split("## How to reproduce")[1]
    assert f'pytest --reprospec s.yaml -k "a -- b" --reprospec-python {python} -- tests/x\n' in (
        reproduce
    )


def test_a_venv_runs_python_is_called_the_base_of_its_venvs() -> None:
    # `reprospec run s.yaml --runner venv --python P`: the note called P "the interpreter
    # this run's attempts ran in, whose packages the spec needs" and told the reader to use
    # `--runner venv`, the runner the run used; uv installed the packages, on P as base.
    python = "/opt/py/bin/python"
    for command_line, purpose, flag in (
        ("reprospec run s.yaml --runner venv", "", f"`--python {python}`"),
        ("pytest --reprospec s.yaml", "pytest", f"`--reprospec-python {python}`"),
    ):
        run = replace(
            error_run(),
            runner="venv",
            command_line=command_line,
            options={**RunOptions(python=python, runner="venv", purpose=purpose).to_dict()},
        )
        reproduce = render(run, "md").split("## How to reproduce")[1]
        assert f"{flag}" in reproduce
        assert "the base interpreter its venvs were built on" in reproduce
        assert "leave it out (the spec's environment.python" in reproduce
        assert "whose packages the spec needs" not in reproduce
        assert "runner venv`" not in reproduce


def test_a_venv_run_from_a_wheel_folder_is_reproduced_with_it_on_this_machine() -> None:
    # `reprospec run s.yaml --runner venv --find-links ./wheels`: both of the report's
    # commands left the folder out, and a machine with no index (or an index without the
    # wheels) made every cell infra-error on the rerun (note65).
    run = replace(
        error_run(),
        runner="venv",
        command_line="reprospec run s.yaml --runner venv",
        options={**RunOptions(runner="venv", find_links=Path("/srv/wheels")).to_dict()},
    )
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert "reprospec run s.yaml --runner venv --find-links /srv/wheels\n" in reproduce
    assert "`reprospec run report.md --runner venv --find-links /srv/wheels`" in reproduce
    assert (
        "`--find-links /srv/wheels`: the folder of wheels this run's venv environments "
        "installed from, beside the index" in reproduce
    )
    assert "<code>--find-links /srv/wheels</code>: the folder" in render(run, "html")
    # The local runner installs nothing: the folder was taken for nothing, and is not said.
    local = replace(run, runner="local", options={**RunOptions(find_links=Path("/w")).to_dict()})
    assert "--find-links" not in render(local, "md").split("## How to reproduce")[1]


def test_a_run_made_from_python_is_reproduced_with_the_options_it_ran_with() -> None:
    # `reprospec.run("t.yaml", RunOptions(runner="venv", matrix_filters=("mode=segv",),
    # repeat=5, overrides=("run.timeout=2s",)))` records no command line: How to reproduce
    # said `reprospec run t.yaml`, every cell once on the local runner, 3 s timeouts.
    options = RunOptions(
        runner="venv",
        matrix_filters=("mode=segv",),
        repeat=5,
        timeout_s=7.0,
        overrides=("run.timeout=2s",),
    )
    run = replace(error_run(), command_line="", spec_path="my t.yaml", options=options.to_dict())
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert (
        "reprospec run 'my t.yaml' --runner venv -m mode=segv --repeat 5 --timeout 7s "
        "--set run.timeout=2s\n" in reproduce
    )
    assert "--runner venv -m mode=segv --repeat 5 --timeout 7s --set" in render(run, "html")
    # A probe numbered from 37 still says so; a plain run still says the plain command.
    probe = replace(run, options=RunOptions(first_attempt=37).to_dict())
    assert "reprospec run 'my t.yaml' --first-attempt 37\n" in render(probe, "md")
    # -j overrides run.parallel: a race reproduces at another rate without it.
    jobs = replace(run, options=RunOptions(jobs=2).to_dict())
    assert "```sh\nreprospec run 'my t.yaml' -j 2\n```" in render(jobs, "md")
    plain = replace(run, options=RunOptions().to_dict())
    assert "```sh\nreprospec run 'my t.yaml'\n```" in render(plain, "md")


def test_an_api_runs_stop_on_comes_after_its_own_sets_in_how_to_reproduce() -> None:
    # `RunOptions(repeat=3, stop_on="never", overrides=("run.stop_on=first-reproduction",))`
    # ran 3 attempts a cell (the option wins over every --set); the command said
    # `--set run.stop_on=never --set run.stop_on=first-reproduction`, where the last wins,
    # and its rerun stopped each cell at 1 attempt.
    options = RunOptions(repeat=3, stop_on="never", overrides=("run.stop_on=first-reproduction",))
    run = replace(error_run(), command_line="", spec_path="t.yaml", options=options.to_dict())
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert (
        "reprospec run t.yaml --repeat 3 --set run.stop_on=first-reproduction "
        "--set run.stop_on=never\n" in reproduce
    )


def test_an_api_runs_shard_is_in_how_to_reproduce_and_not_in_the_reports_rerun() -> None:
    # `RunOptions(shard="2/2", repeat=2)` ran half the cells; How to reproduce said
    # `reprospec run t.yaml --repeat 2`, which runs them all.
    options = RunOptions(shard="2/2", repeat=2)
    run = replace(error_run(), command_line="", spec_path="t.yaml", options=options.to_dict())
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert "```sh\nreprospec run t.yaml --repeat 2 --shard 2/2\n```" in reproduce
    # The report's own rerun is of its spec, as a CLI run's is.
    assert "from this report with `reprospec run report.md --repeat 2`" in reproduce


@pytest.mark.parametrize(
    ("options", "offered"),
    [
        # A venv run's report offered `reprospec run report.md`: the local runner, every
        # cell infra-error for the packages it does not install.
        (RunOptions(runner="venv"), "reprospec run report.md --runner venv"),
        (
            RunOptions(runner="docker", repeat=3),
            "reprospec run report.md --runner docker --repeat 3",
        ),
        (RunOptions(preload=("torch", "numpy")), "reprospec run report.md --preload torch,numpy"),
        (RunOptions(preload=()), "reprospec run report.md --preload none"),
        (RunOptions(), "reprospec run report.md"),
        # -j overrides the spec's run.parallel, which the embedded spec holds.
        (RunOptions(jobs=2, repeat=3), "reprospec run report.md -j 2 --repeat 3"),
        # The API's stop_on has no flag: the rerun ran every attempt of a stopped cell.
        (
            RunOptions(repeat=4, stop_on="first-reproduction"),
            "reprospec run report.md --repeat 4 --set run.stop_on=first-reproduction",
        ),
    ],
)
def test_the_reports_rerun_keeps_the_runner_and_the_preload(
    options: RunOptions, offered: str
) -> None:
    run = replace(error_run(), options=options.to_dict())
    assert f"also runnable from this report with `{offered}`" in render(run, "md")


def test_a_run_interrupted_before_any_attempt_ended_says_nothing_finished_and_no_count() -> None:
    """Three cells of `sleep 60` under -j 3, SIGTERM after 3 s, read "Nothing ran; as
    expected in 0 of 3 cells (0/0 attempts), 3 not run (interrupted)": counts of what never
    ran."""
    from reprospec.report.failure import summary_line

    whole = error_run()
    cut = tuple(replace(c, verdict="not-run", attempts=()) for c in whole.cells)
    run = replace(whole, cells=cut, interrupted=True)
    count = len(cut)
    # Not "Nothing ran": the attempts in flight ran, and may have run to their end
    # after the stop, their logs whole.
    said = f"Nothing finished before the stop: {count} cells not run (interrupted)"
    assert summary_line(run) == said


def test_a_long_infra_error_the_same_in_several_cells_is_said_once_in_the_table() -> None:
    # A bundle rerun where torch is missing: each of its 4 rows held the same five-line
    # reason with its three ways on.
    import io

    from reprospec.report.console import make_console
    from reprospec.report.progress import results_table

    reason = (
        "environment does not satisfy the cell's packages: torch is not installed (the cell "
        "needs torch==2.13.0); `--runner venv` builds an environment that has them"
    )
    (one,) = infra_run().cells
    attempt = replace(one.attempts[0], outcome=NotRun(reason))
    cells = tuple(
        replace(
            one,
            cell=replace(one.cell, id=f"workers={n}", index=n),
            attempts=(attempt,),
            reason=reason,
        )
        for n in range(3)
    )
    stream = io.StringIO()
    console = make_console(stream)
    console.width = 200
    console.print(results_table(replace(infra_run(), cells=cells)))
    table = stream.getvalue()
    assert table.count("torch is not installed") == 1, table
    assert table.count("infra-error: as for workers=0 above") == 2, table
    # report.md said it twice a cell, in the table and in the list of reasons under it.
    results = render(replace(infra_run(), cells=cells), "md").split("## Results", 1)[1]
    results = results.split("\n## ", 1)[0]
    assert results.count("torch is not installed") == 2, results  # its row and its reason
    assert results.count("`infra-error: as for workers=0 above`") == 2, results
    assert "- ⚠️ `workers=2`: as for `workers=0` above" in results
    # A short one is said in each row: as quick to read again as a name to look up.
    short_attempt = replace(one.attempts[0], outcome=NotRun("docker engine not reachable"))
    two = tuple(replace(c, attempts=(short_attempt,)) for c in cells[:2])
    stream = io.StringIO()
    make_console(stream).print(results_table(replace(infra_run(), cells=two)))
    assert stream.getvalue().count("docker engine not reachable") == 2


def _infra_cells(row: str, reasons: Sequence[str]) -> tuple[CellResult, ...]:
    (one,) = infra_run().cells
    attempt = replace(one.attempts[0], outcome=NotRun(row))
    return tuple(
        replace(
            one,
            cell=replace(one.cell, id=f"w={n}", index=n),
            attempts=(attempt,),
            reason=reason,
        )
        for n, reason in enumerate(reasons)
    )


def test_the_console_and_report_md_tell_a_long_infra_error_by_its_row_alone() -> None:
    # report.md measured the row and the reason together: a short row whose reason made
    # the pair past 60 characters read "as for w=0 above" there, whole in the console.
    import io

    from reprospec.report.console import make_console
    from reprospec.report.tables import SAID_ONCE

    row, reason = "docker engine not reachable", "is the docker daemon running?"
    cells = _infra_cells(row, [reason] * 3)
    run = replace(infra_run(), cells=cells)
    results = render(run, "md").split("## Results", 1)[1].split("\n## ", 1)[0]
    assert "as for" not in results, results
    stream = io.StringIO()
    make_console(stream).print(results_table(run))
    assert "as for" not in stream.getvalue()
    # A long row with another reason: the console (rows only) says it once; report.md,
    # which lists each cell's reason, shows the cell whose reason differs whole.
    long_row = "torch is not installed (the cell needs torch==2.13.0); try --runner venv"
    assert len(long_row) > SAID_ONCE
    cells = _infra_cells(long_row, ["no torch", "no torch", "no torch: another cause"])
    run = replace(infra_run(), cells=cells)
    stream = io.StringIO()
    console = make_console(stream)
    console.width = 200
    console.print(results_table(run))
    assert stream.getvalue().count("infra-error: as for w=0 above") == 2, stream.getvalue()
    results = render(run, "md").split("## Results", 1)[1].split("\n## ", 1)[0]
    assert results.count("`infra-error: as for w=0 above`") == 1, results
    assert "no torch: another cause" in results


def test_a_large_runs_cells_are_not_copied_whole_to_shorten_no_command_line(
    tmp_path: Path,
) -> None:
    # report.md names a crashed child's command line the short way (report/paths.py): every
    # cell was copied into a tuple for it, where no outcome names one. A large run's cells
    # are made as they are read: at 16,384 cells of `true` the copy held them all, 12 MiB of
    # the engine's peak (issue 30's 64 MiB at 65,536 cells read 78.5 MiB).
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: any\ncommand: [true]\nexpect: {outcome: pass}\n")
    judged = JudgedCells(plan_run(load_spec(spec), RunOptions(out=tmp_path)))
    run = large_matrix()
    light = replace(run, cells=tuple(judged.for_report(c) for c in run.cells))
    made = replace(light, cells=as_made(light.cells), paths={str(tmp_path): ""})
    assert with_short_commands(made).cells is made.cells


def test_a_large_interrupted_runs_grouped_table_leaves_its_cells_room_at_80_columns() -> None:
    """Past 32 cells the table groups alike cells, and its `attempts each` column kept the
    note on one line: at 80 columns `cells` was 2 wide and what was expected and what
    happened were cut to `e…`, `a…`. The note wraps under its rate as in the per-cell table."""
    import io

    from reprospec.core.inputs import Cell
    from reprospec.report.console import make_console

    whole = segfault_matrix()
    cells = tuple(
        replace(
            c,
            cell=Cell(id=f"n={n}", index=n, matrix={"n": n}),
            reason=f"{c.reason} (interrupted after 1 of 2 attempts; --resume finishes it)",
        )
        for n, c in enumerate(tuple(whole.cells) * 10)
    )
    run = replace(whole, cells=cells, interrupted=True)
    stream = io.StringIO()
    console = make_console(stream)
    console.width = 80
    console.print(results_table(run, console.width))
    table = stream.getvalue()
    assert "attempts each" in table, table
    assert max(map(len, table.splitlines())) <= 80, table
    assert "│ crash      │" in table, table  # what was expected, not `cr…`
    assert "1/1 (interrupted" in table, table
    stream = io.StringIO()
    make_console(stream).print(results_table(run, 160))
    assert "1/1 (interrupted after 1 of 2 attempts)" in stream.getvalue()


def test_a_run_with_a_read_only_folder_says_so_under_how_to_reproduce(tmp_path: Path) -> None:
    # A minimize candidate's run under docker mounts the original workdir read-only at its
    # own path (RunOptions.read_only, no flag of `run`): its How to reproduce gave no sign
    # of it, and a rerun saw the candidate's links dangle in its container.
    options = RunOptions(runner="docker", read_only=tmp_path).to_dict()
    run = replace(error_run(), runner="docker", command_line="", options=options)
    reproduce = render(run, "md").split("## How to reproduce")[1]
    assert (
        f"`{tmp_path}`: a folder whose files this run's attempts read (the Python API's "
        "`RunOptions.read_only`, which minimize gives its candidates' runs" in reproduce
    )
    assert "mounted read-only at its own path in each container (a write to its files is" in (
        reproduce
    )
    assert f"<code>{tmp_path}</code>: a folder whose files" in render(run, "html")
    # Not as if a write had happened ("reached"), nor every such run a candidate's.
    local = replace(run, runner="local", options={**options, "runner": "local"})
    said = render(local, "md")
    assert (
        "as it is on this host: the local runner mounts nothing, so a write through a link "
        "into it would reach its files" in said
    )
    assert "reached" not in said
    assert "this minimize candidate" not in said
    # A run without one says nothing of it.
    assert "RunOptions.read_only" not in render(error_run(), "md")
