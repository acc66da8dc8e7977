"""Which cells `bundle --verify` reruns, how often, and how it words what came back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprospec.capture.bundleverify import (
    BundleCheck,
    CellCheck,
    Missing,
    checked_cells,
    flaky,
    outside_warnings,
    report_lines,
)
from reprospec.core.inputs import Cell
from reprospec.core.results import CellResult, Outcome
from reprospec.core.units import RateBound
from tests.support.runs import infra_run, segfault_matrix


def _cells(ids: list[str]) -> dict[str, Cell]:
    return {cell_id: Cell(cell_id, index, {}) for index, cell_id in enumerate(ids)}


def test_only_the_cells_that_failed_are_rerun() -> None:
    run = segfault_matrix()  # one crashing corner of four cells
    bundle = _cells([c.cell.id for c in run.cells])
    chosen, skipped = checked_cells(run, bundle)
    assert [c.cell.id for c, _ in chosen] == ["num_workers=2,pin_memory=true"]
    assert skipped == ()


def test_where_no_cell_failed_every_cell_that_ran_is_rerun() -> None:
    run = segfault_matrix()
    passed = [c for c in run.cells if c.attempts[0].ran and c.attempts[0].ran.kind == "pass"]
    run = replace(run, cells=tuple(passed))
    chosen, _ = checked_cells(run, _cells([c.cell.id for c in passed]))
    assert len(chosen) == 3


def test_a_cell_none_of_whose_attempts_ran_is_named_not_checked() -> None:
    chosen, skipped = checked_cells(infra_run(), _cells(["default"]))
    assert chosen == []
    assert skipped == ("default (no attempt of the run ran: infra-error)",)


def test_a_cell_the_bundles_spec_lacks_is_named_not_checked() -> None:
    chosen, skipped = checked_cells(segfault_matrix(), _cells([]))
    assert chosen == []
    assert skipped == ("num_workers=2,pin_memory=true (no such cell in the bundle's spec)",)


def test_a_cell_is_flaky_where_its_attempts_differed_or_it_expects_a_rate() -> None:
    crashed = next(c for c in segfault_matrix().cells if c.verdict == "reproduced")
    assert not flaky(crashed)
    passed = Outcome("pass", exit_code=0, signature="pass")
    twice = replace(crashed.attempts[0], attempt=2, outcome=passed)
    assert flaky(replace(crashed, attempts=(*crashed.attempts, twice)))
    rated = replace(crashed.expected, rate=RateBound(">=", 0.3))
    assert flaky(replace(crashed, expected=rated))


def _ended(cell: CellResult, *outcomes: Outcome, verdict: str = "reproduced") -> CellResult:
    """`cell` with one attempt that ended in each of `outcomes`, and `verdict`."""
    first = cell.attempts[0]
    attempts = tuple(replace(first, attempt=n, outcome=o) for n, o in enumerate(outcomes, 1))
    return replace(cell, attempts=attempts, verdict=verdict)  # type: ignore[arg-type]


_RUNTIME = Outcome("error", exit_code=1, exception="RuntimeError", signature="error:RuntimeError")
_LOST = Outcome(
    "error", exit_code=1, exception="FileNotFoundError", signature="error:FileNotFoundError"
)
_PASSED = Outcome("pass", exit_code=0, signature="pass")


def _compared(original: CellResult, again: CellResult) -> CellCheck:
    from reprospec.capture.bundleverify import _compare, _Places

    # No source tree: no missing file is looked for (another test reads the logs).
    nowhere = Path("/nonexistent")
    return _compare(original, again, nowhere, _Places(nowhere, None, {}, nowhere))


def test_a_rerun_that_fails_otherwise_is_not_the_runs_though_its_verdict_is() -> None:
    # `expect: {outcome: error}` is `reproduced` by the rerun's FileNotFoundError
    # (the bundle lacks data/cfg.json) as by the run's RuntimeError.
    cell = next(c for c in segfault_matrix().cells if c.verdict == "reproduced")
    run = _ended(cell, _RUNTIME)
    check = _compared(run, _ended(cell, _LOST))
    assert (check.verdict, check.rerun_verdict) == ("reproduced", "reproduced")
    assert not check.reproduced
    assert check.unlike == ("error:FileNotFoundError",)
    assert _compared(run, _ended(cell, _RUNTIME)).reproduced


def test_a_flaky_cells_rerun_may_end_in_any_of_the_runs_ways_and_in_no_other() -> None:
    cell = next(c for c in segfault_matrix().cells if c.verdict == "reproduced")
    crash = cell.attempts[0].outcome
    assert isinstance(crash, Outcome)
    run = _ended(cell, crash, crash, _PASSED)
    # Fewer crashes, or none of the run's passes: each way the run ended, same verdict.
    assert _compared(run, _ended(cell, crash, _PASSED, _PASSED)).reproduced
    assert _compared(run, _ended(cell, crash, crash, crash)).reproduced
    # A pass where every attempt of the run crashed is no other failure: the verdict says
    # whether the rate came back (a 90% crash's rerun failed verify half the time).
    always = _ended(cell, crash, crash, crash)
    assert _compared(always, _ended(cell, crash, crash, _PASSED)).reproduced
    assert _compared(always, _ended(cell, crash, crash, _PASSED)).unlike == ()
    # A way no attempt of the run ended is another failure, though the crash came back.
    mixed = _compared(run, _ended(cell, crash, crash, _LOST))
    assert not mixed.reproduced
    assert mixed.unlike == ("error:FileNotFoundError",)
    # Where the verdict says nothing of what happened, the run's most common way must be
    # among the rerun's.
    seen = _ended(cell, crash, crash, _PASSED, verdict="observed")
    assert _compared(seen, _ended(cell, _PASSED, crash, _PASSED, verdict="observed")).reproduced
    assert not _compared(
        seen, _ended(cell, _PASSED, _PASSED, _PASSED, verdict="observed")
    ).reproduced


def test_a_rate_cells_failure_that_came_back_too_rarely_to_decide_is_the_runs() -> None:
    # `rate: ">=0.2"` reproduced at 3/4 in the run, undecided at 2/4 in the rerun:
    # verify said "not as in the run" and exited 1, where the failure came back.
    cell = next(c for c in segfault_matrix().cells if c.verdict == "reproduced")
    crash = cell.attempts[0].outcome
    assert isinstance(crash, Outcome)
    rated = replace(cell, expected=replace(cell.expected, rate=RateBound(">=", 0.2)))
    run = _ended(rated, crash, crash, crash, _PASSED)
    check = _compared(run, _ended(rated, crash, crash, _PASSED, _PASSED, verdict="undecided"))
    assert check.reproduced
    assert check.rate_undecided
    lines = report_lines(BundleCheck((check,), (), (), Path("/tmp/v"), ()), Path("b.tgz"), "r")
    assert "too few times to decide its rate in 4 attempts" in lines[0], lines
    # Not where the failure did not come back, nor where another one did.
    none = _ended(rated, _PASSED, _PASSED, _PASSED, _PASSED, verdict="undecided")
    assert not _compared(run, none).reproduced
    other = _ended(rated, crash, _LOST, _PASSED, _PASSED, verdict="undecided")
    assert not _compared(run, other).reproduced


def _check(**changes: object) -> CellCheck:
    cell = CellCheck(
        cell="default",
        verdict="reproduced",
        ran="error exit 1 KeyError",
        rerun_verdict="not-reproduced",
        rerun="error exit 1 FileNotFoundError",
        attempts=1,
        reproduced=False,
        missing=(Missing(Path("/proj/app/data.txt"), "data.txt"),),
        unlike=("error:FileNotFoundError",),
    )
    return replace(cell, **changes)  # type: ignore[arg-type]


def test_what_a_missing_file_needs_depends_on_whether_the_workdir_holds_it() -> None:
    inside = Missing(Path("/proj/app/data.txt"), "data.txt")
    outside = Missing(Path("/proj/common/cfg.json"), "../common/cfg.json")
    assert inside.advice() == "list data.txt in the spec's `files`"
    assert outside.advice().startswith("`files` holds only the workdir's files: move ../common")


def test_a_cell_that_did_not_come_back_is_not_verified_and_names_its_file() -> None:
    check = BundleCheck((_check(),), (), (), Path("/tmp/v"), (Path("/tmp/v/report.md"),))
    assert not check.reproduced
    lines = report_lines(check, Path("b.tgz"), "RUN")
    assert lines == [
        "verify: default: not as in the run: the run was reproduced (error exit 1 KeyError), "
        "the bundle's rerun not-reproduced (error exit 1 FileNotFoundError); it ended in "
        "error:FileNotFoundError, as no attempt of the run did",
        "verify: default: the bundle lacks data.txt (/proj/app/data.txt), which the program "
        "looked for: list data.txt in the spec's `files`",
        "not verified: b.tgz: 0/1 cell of run RUN came back as in the run; the bundle lacks "
        "1 file the program looked for; the archive is kept as written",
        "verify: its run: /tmp/v/report.md",
    ]


def test_a_file_several_cells_looked_for_is_counted_once() -> None:
    """Three cells missing one data.txt: the bundle lacks 1 file, not 3."""
    cells = tuple(_check(cell=f"n={n}") for n in (1, 2, 3))
    other = _check(cell="n=4", missing=(Missing(Path("/proj/app/cfg.json"), "cfg.json"),))
    check = BundleCheck((*cells, other), (), (), Path("/tmp/v"), ())
    lines = report_lines(check, Path("b.tgz"), "RUN")
    assert sum("the bundle lacks data.txt" in line for line in lines) == 3  # a line a cell
    assert lines[-1] == (
        "not verified: b.tgz: 0/4 cells of run RUN came back as in the run; the bundle lacks "
        "2 files the program looked for; the archive is kept as written"
    )


def test_a_cell_that_came_back_but_looked_for_a_file_the_bundle_lacks_is_not_verified() -> None:
    came = _check(
        reproduced=True, unlike=(), rerun_verdict="reproduced", rerun="error exit 1 KeyError"
    )
    check = BundleCheck((came,), (), (), Path("/tmp/v"), (Path("/tmp/v/report.md"),))
    assert not check.reproduced
    assert report_lines(check, Path("b.tgz"), "RUN") == [
        "verify: default: as in the run: reproduced (error exit 1 KeyError)",
        "verify: default: the bundle lacks data.txt (/proj/app/data.txt), which the program "
        "looked for: list data.txt in the spec's `files`",
        "not verified: b.tgz: 1/1 cell of run RUN came back as in the run; the bundle lacks "
        "1 file the program looked for; the archive is kept as written",
        "verify: its run: /tmp/v/report.md",
    ]


def test_a_check_of_no_cell_or_an_interrupted_one_is_no_verification() -> None:
    none = BundleCheck(
        (), ("default (no attempt of the run ran: infra-error)",), (), Path("/v"), ()
    )
    assert not none.reproduced
    assert (
        "no cell of run RUN ran, so none could be compared"
        in report_lines(none, Path("b.tgz"), "RUN")[-1]
    )
    came = _check(reproduced=True, missing=(), unlike=())
    stopped = BundleCheck((came,), (), (), Path("/v"), (), interrupted=True)
    assert not stopped.reproduced
    assert "the verify was interrupted" in report_lines(stopped, Path("b.tgz"), "RUN")[-1]


def test_a_read_outside_the_bundle_is_a_warning_not_a_failure() -> None:
    came = _check(reproduced=True, missing=(), unlike=(), rerun_verdict="reproduced", rerun="error")
    check = BundleCheck((came,), (), ("/tmp/settings.json",), Path("/v"), ())
    assert check.reproduced
    assert report_lines(check, Path("b.tgz"), "RUN") == [
        "verify: default: as in the run: reproduced (error)",
        "verified b.tgz: 1/1 cell of run RUN came back as in the run, unpacked and rerun away "
        "from this tree; it read 1 file outside it (named in a warning)",
    ]
    (warning,) = outside_warnings(check)
    assert warning.startswith("bundle --verify: the program read /tmp/settings.json by its path")


def _lost_file_cell(tmp_path: Path, lost: str, stderr: str) -> CellResult:
    """A reproduced cell whose one attempt (logs in tmp_path/run/cells/default/1, its
    stderr.log `stderr`) ended in the FileNotFoundError of `lost`: a bundle's rerun."""
    logs = tmp_path / "run" / "cells" / "default" / "1"
    logs.mkdir(parents=True)
    (logs / "stderr.log").write_text(stderr)
    crashed = next(c for c in segfault_matrix().cells if c.verdict == "reproduced")
    outcome = Outcome(
        "error",
        exit_code=1,
        exception="FileNotFoundError",
        message=f"[Errno 2] No such file or directory: {lost!r}",
        signature="error:FileNotFoundError",
    )
    attempt = replace(crashed.attempts[0], outcome=outcome, logs="cells/default/1")
    return replace(crashed, attempts=(attempt,))


def test_only_what_a_line_says_was_missing_and_the_tree_holds_is_named(tmp_path: Path) -> None:
    from reprospec.capture.bundleverify import _missing, _Places

    source, tree = tmp_path / "proj", tmp_path / "unpacked" / "tree"
    for name in ("app/data.txt", "app/notes.txt", "common/cfg.json"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text("x\n")
    (tree / "app").mkdir(parents=True)
    (tree / "app" / "notes.txt").write_text("x\n")  # carried
    # notes.txt is named, but on no line that says a file was missing; out.txt was never
    # in the tree (the program's own output): neither is the bundle's lack.
    crashed = _lost_file_cell(
        tmp_path,
        "../common/cfg.json",
        "reading notes.txt\ncat: data.txt: No such file or directory\n"
        "tee: out.txt: No such file or directory\n",
    )
    places = _Places(tree, source, {crashed.cell.id: tree / "app"}, tmp_path / "unpacked")
    found = _missing(crashed, tmp_path / "run", places)
    assert [(m.named, m.path) for m in found] == [
        ("../common/cfg.json", source / "common" / "cfg.json"),
        ("data.txt", source / "app" / "data.txt"),
    ]


def test_a_missing_file_outside_the_packed_tree_is_named_by_the_workdir_it_was_made_from(
    tmp_path: Path,
) -> None:
    # The spec beside the program (the workdir is the packed tree's root) and the
    # program reading ../shared/cfg.json: the rerun's FileNotFoundError names a path out of
    # the unpacked tree, which was never looked for where the run found it.
    from reprospec.capture.bundleverify import _missing, _Places

    source = tmp_path / "work" / "proj"
    (tmp_path / "work" / "shared").mkdir(parents=True)
    (tmp_path / "work" / "shared" / "cfg.json").write_text("{}\n")
    source.mkdir()
    verify = tmp_path / "verify"
    tree = verify / "bundles" / "ab12" / "RUN" / "tree"
    tree.mkdir(parents=True)
    # A name outside the verify's folder (the machine's own path) is not the bundle's lack.
    crashed = _lost_file_cell(
        tmp_path,
        "../shared/cfg.json",
        "cat: /nonexistent/x.json: No such file or directory\n"
        "cat: ../../../../../../nowhere.json: No such file or directory\n",
    )
    places = _Places(tree, source, {crashed.cell.id: tree}, verify)
    found = _missing(crashed, tmp_path / "run", places)
    assert [(m.named, m.path) for m in found] == [
        ("../shared/cfg.json", tmp_path / "work" / "shared" / "cfg.json"),
    ]
    assert "move ../shared/cfg.json into the workdir" in found[0].advice()
