"""What minimize says of its answer: the console's sentence and minimize.md's figures.

The results are the search's own (`Minimization`, run in-process as in test_search.py):
stopped at once, as a Ctrl-C early in `reprospec minimize SPEC` stops it, or finished on a
spec without a passing cell, as `capture` writes one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.results import Rate
from reprospec.minimize.program import Program
from reprospec.minimize.report import Minimized, markdown, text
from reprospec.minimize.search import Minimization, MinimizeResult, Settings, minimize
from reprospec.spec.comments import AXES_NOTE, observe_line
from tests.unit.minimize.test_search import InProcess, program

SIGNATURE = "crash:SIGSEGV:main:strlen@libc"


def answer(
    result: MinimizeResult, *, signature: str = SIGNATURE, passing: int = 0, stopped: bool
) -> Minimized:
    """The answer `reprospec minimize` renders, around the search's result."""
    return Minimized(
        id="crash-1234",
        folder=Path("/out/minimize/crash-1234"),
        output=Path("/out/minimize/crash-1234/result"),
        spec_name="crash",
        spec_path="crash.yaml",
        cell=Cell(id="default", index=0, matrix={}),
        passing=tuple(Cell(id=f"p{i}", index=i + 1, matrix={}) for i in range(passing)),
        expectation=Expectation(outcome="crash", signal="SIGSEGV"),
        signature=signature,
        result=result,
        seconds=1.0,
        reused=0,
        interrupted=stopped,
        repro="sh repro.sh",
        budget=result.attempts + 100,
    )


def interrupted_at_once(original: Program, passing: int) -> MinimizeResult:
    search = Minimization(original, Settings(passing=passing))
    search.interrupt()
    assert search.result is not None
    return search.result


def test_a_search_interrupted_before_it_measured_anything_says_so_not_0_of_0() -> None:
    # A new user's Ctrl-C early in `reprospec minimize SPEC`: `fails as crash:... in 0/0
    # (0%-100%), passing cells pass 0/0`, read as a rate and as a check that passed.
    for signature, passing in ((SIGNATURE, 0), ("", 2)):
        found = answer(
            interrupted_at_once(program(), passing),
            signature=signature,
            passing=passing,
            stopped=True,
        )
        said = text(found) + markdown(found)
        assert "0/0" not in said, said
        assert "(0%-100%" not in said, said
    assert (
        " lines in 0 attempts (interrupted); no failure seen and no rate measured before "
        "the interruption, passing cells not checked before the interruption; interrupted;"
    ) in text(found)
    known = answer(interrupted_at_once(program(), 0), stopped=True)
    assert (
        f"fails as {SIGNATURE}, its rate not measured before the interruption, "
        "no passing cell to check; interrupted"
    ) in text(known)
    md = markdown(known)
    assert (
        "- **Rate of the result**: not measured before the interruption; the original: "
        "not measured before the interruption"
    ) in md
    assert "- **Passing cells with the result**: no passing cell to check" in md


def test_a_spec_without_a_passing_cell_says_so_where_it_said_passing_cells_pass_0_of_0() -> None:
    result = minimize(program(), InProcess(1.0, seed=0), Settings(passing=0))
    found = answer(result, stopped=False)
    assert result.rate.attempts > 0
    said = text(found)
    assert "0/0" not in said + markdown(found), said
    assert f"fails as {SIGNATURE} in {result.rate.matched}/{result.rate.attempts} (" in said
    assert ", no passing cell to check" in said
    assert f"in {result.attempts} attempts (" in said


def test_an_original_rate_sought_to_its_first_failure_says_it_reads_high() -> None:
    # A 1% failure first seen at the 25th attempt (--min-rate 0.04) read "the original: 1/25
    # (1%-20%)" with no note, where a rate stopped at its 5th failure says it reads high.
    sought = replace(
        interrupted_at_once(program(), 0),
        original_rate=Rate(1, 25, 0.01, 0.2),
        original_sought=True,
    )
    md = markdown(answer(sought, stopped=True))
    assert "; the original: 1/25 (" in md
    assert "(ran until its first failure, which reads a rate high)" in md
    plain = replace(sought, original_sought=False)
    assert "reads a rate high" not in markdown(answer(plain, stopped=True))


def test_one_attempt_is_one_attempt() -> None:
    one = answer(replace(interrupted_at_once(program(), 0), attempts=1), stopped=True)
    assert " in 1 attempt (interrupted)" in text(one)


def _minimized_yaml(specs: Path, spec_text: str, out: Path) -> str:
    """minimized.yaml as `write` makes it into `out`, of the spec `spec_text` (crash.yaml in
    `specs`, beside loop.py) and a minimize of loop.py that always fails."""
    from reprospec.minimize.report import write
    from reprospec.spec.load import load_spec

    specs.mkdir(exist_ok=True)
    (specs / "loop.py").write_text(program().source("loop.py"))
    (specs / "crash.yaml").write_text(spec_text)
    spec = load_spec(specs / "crash.yaml")
    result = minimize(program(), InProcess(1.0, seed=0), Settings(passing=0))
    found = replace(answer(result, stopped=False), folder=specs.parent / "state", output=out)
    write(found, spec, specs)
    return (out / "minimized.yaml").read_text()


def test_the_minimized_spec_keeps_the_source_spec_s_comments_and_its_schema_line(
    tmp_path: Path,
) -> None:
    # A new user's minimized.yaml of a captured spec lost capture's header, the
    # reasons beside `expect` and the editor's `$schema=` line (dumped from the data
    # alone), where amplified.yaml keeps them.
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "reprospec.schema.json").write_text("{}")
    text = _minimized_yaml(
        tmp_path / "specs",
        "# yaml-language-server: $schema=../schemas/reprospec.schema.json\n"
        "# Written by `reprospec capture -- python loop.py`.\n"
        "reprospec: 1\nname: crash\ncommand: python loop.py\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV  # in a DataLoader worker\n",
        tmp_path / "out" / "min",
    )
    lines = text.splitlines()
    assert lines[:2] == [
        "# yaml-language-server: $schema=../../schemas/reprospec.schema.json",
        "# Written by `reprospec capture -- python loop.py`.",
    ]
    assert "  signal: SIGSEGV  # in a DataLoader worker" in lines


def test_the_minimized_spec_keeps_capture_s_note_on_axes_only_where_it_is_true(
    tmp_path: Path,
) -> None:
    # A new user's minimized hang, its command without the captured `--batch 4`, kept
    # capture's "Each matrix axis is one of the command's own settings ... reprospec run
    # hang.yaml --observe" over a spec with no matrix, naming the original's file.
    # The header as capture writes it (its lines, from the one text capture's _header uses).
    note = (*AXES_NOTE, observe_line("crash.yaml"))
    header = "# Written by `reprospec capture -- python loop.py --batch 4`.\n" + "".join(
        f"# {line}\n" for line in note
    )
    text = _minimized_yaml(
        tmp_path / "specs",
        header + "reprospec: 1\nname: crash\ncommand: python loop.py\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n",
        tmp_path / "min",
    )
    assert text.startswith("# Written by `reprospec capture -- python loop.py --batch 4`.\n")
    assert "matrix axis" not in text
    assert "--observe" not in text
    # Where axes remain (one an `exclude` names stays), the command names the minimized spec
    # by its name, run from DIR as DIR's other commands are: a path from where minimize
    # ran (`min2/minimized.yaml`) named nothing from DIR, or a copy of it.
    kept = _minimized_yaml(
        tmp_path / "kept",
        header + "reprospec: 1\nname: crash\ncommand: python loop.py\n"
        "matrix:\n  batch: [4, 8]\n  exclude:\n    - batch: 8\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n",
        tmp_path / "min2",
    )
    assert "\nmatrix:\n" in kept
    assert "\n#   reprospec run minimized.yaml --observe --set" in kept
    assert "Each matrix axis is one of" in kept


def test_the_minimized_spec_of_a_filled_skeleton_drops_capture_s_todo_block(
    tmp_path: Path,
) -> None:
    # The --from-log skeleton's TODO block, its keys long filled, came into
    # minimized.yaml, which sets `workdir` itself: a stale "left to fill in".
    text = _minimized_yaml(
        tmp_path / "specs",
        "# A skeleton written by `reprospec capture --from-log issue.md`.\n"
        "#\n# TODO (left to fill in):\n"
        "#   - environment.workdir: where the command runs, relative to this spec\n"
        "#   - files: the program's data and the modules it imports (the log cannot carry\n"
        "#     them): put them in the workdir\n"
        "reprospec: 1\nname: crash\nenvironment:\n  workdir: .\nfiles: [loop.py]\n"
        "command: python loop.py\nexpect:\n  outcome: crash\n  signal: SIGSEGV\n",
        tmp_path / "min",
    )
    assert text.startswith("# A skeleton written by `reprospec capture --from-log issue.md`.\n")
    assert "TODO" not in text


def test_the_lines_as_they_were_say_what_shrank() -> None:
    # `7 -> 7 lines in 40 attempts (minimized)` where the command's arguments were
    # cut: read as nothing done.
    result = interrupted_at_once(program(), 0)
    original = replace(result.original, args=("5", "--verbose", "--extra", "3"))
    shrunk = replace(original, args=("5",))
    found = answer(replace(result, original=original, program=shrunk), stopped=False)
    lines = result.original.lines
    # Under the warning of a spec with no passing cell, which a stopped search says too.
    said = text(found).split("\n", 1)
    assert said[0].startswith("warning: the spec has no passing cell: "), said[0]
    assert said[1].startswith(f"{lines} -> {lines} lines, the command's arguments 4 -> 1 in ")
    assert f"\n{lines} -> {lines} lines, the command's arguments 4 -> 1 in " in markdown(found)
    # Nothing shrank: the lines alone, as before.
    same = answer(replace(result, original=original, program=original), stopped=False)
    assert text(same).split("\n", 1)[1].startswith(f"{lines} -> {lines} lines in "), text(same)


def test_a_refused_search_names_no_minimized_program_nor_repro() -> None:
    # nu-a: "not minimized (refused): the original program did not fail ..." then
    # "minimized: DIR" and "repro: DIR/repro.sh", a repro.sh of a program that passed.
    found = answer(interrupted_at_once(program(), 0), stopped=False)
    for status in ("refused", "infra-error"):
        said = text(replace(found, result=replace(found.result, status=status)))
        assert "\nminimized: " not in said
        assert "\nrepro: " not in said
        assert said.endswith(
            "\nnot minimized: /out/minimize/crash-1234/result holds the original program as it "
            "ran\nreport: /out/minimize/crash-1234/result/minimize.md"
        )
    budget = text(replace(found, result=replace(found.result, status="budget")))
    assert budget.endswith(
        "repro: /out/minimize/crash-1234/result/repro.sh\n"
        "report: /out/minimize/crash-1234/result/minimize.md"
    )


def test_the_repro_sh_of_a_search_that_cut_nothing_does_not_call_it_minimized(
    tmp_path: Path,
) -> None:
    # Ctrl-C in step 1 said "not minimized (interrupted before anything was cut): DIR holds
    # the original program as it ran", and DIR's repro.sh began `# default of crash, minimized`.
    from reprospec.minimize.report import write
    from reprospec.spec.load import load_spec

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "loop.py").write_text(program().source("loop.py"))
    (specs / "crash.yaml").write_text(
        "reprospec: 1\nname: crash\ncommand: python loop.py\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n"
    )
    spec = load_spec(specs / "crash.yaml")
    stopped = answer(interrupted_at_once(program(), 0), stopped=True)
    done = answer(minimize(program(), InProcess(1.0, seed=0), Settings(passing=0)), stopped=False)
    headers = []
    for found, out in ((stopped, tmp_path / "stopped"), (done, tmp_path / "done")):
        write(replace(found, folder=tmp_path / "state", output=out), spec, specs)
        headers.append((out / "repro.sh").read_text().splitlines()[1])

    assert headers == [
        "# default of crash, not minimized, the original program as it ran",
        "# default of crash, minimized",
    ]


def test_stopped_in_step_1_it_does_not_say_no_failure_was_seen() -> None:
    # Ctrl-C in step 1, after isolate's attempts of the failing cell had failed, said "no
    # failure seen and no rate measured before the interruption".
    from reprospec.minimize.settings import Reduced

    cell = Cell(id="mode=fast", index=1, matrix={"mode": "fast"})
    reduced = Reduced(cell=cell, original=cell, passing=None, interrupted=True, attempts=7)
    found = replace(
        answer(interrupted_at_once(program(), 1), signature="", passing=1, stopped=True),
        settings=reduced,
    )

    said = text(found)
    assert "no failure seen" not in said
    assert "its failure not read: interrupted in step 1 (isolate), before the program ran" in said


def test_an_answer_whose_report_could_not_be_written_names_the_file_not_saved(
    tmp_path: Path,
) -> None:
    # minimize.json written in the minimize folder and minimize.md not (a full disk between
    # them): the warning said both were not this run's.
    from reprospec.minimize.report import write_reports

    done = answer(minimize(program(), InProcess(1.0, seed=0), Settings(passing=0)), stopped=False)
    state, out = tmp_path / "state", tmp_path / "out"
    (state / "minimize.md").mkdir(parents=True)  # a rename onto it fails
    saved = write_reports(replace(done, folder=state, output=out))
    assert saved.unsaved.startswith(f"the answer could not be saved in {state} (")
    assert saved.unsaved.endswith(f"): its minimize.md is not this run's; those in {out} are")
    assert (state / "minimize.json").is_file()
    assert (out / "minimize.md").is_file()


def test_a_reset_axis_takes_the_cases_and_excludes_naming_its_other_values_with_it(
    tmp_path: Path,
) -> None:
    # Step 1 reset `twice` to its passing value "0": a case `when: {twice: "1"}` kept named
    # a value the axis no longer has, and minimized.yaml failed its own validation
    # (`'1' is not a value of axis 'twice'`): minimize stopped before its search.
    from reprospec.isolation.differences import Difference
    from reprospec.minimize.report import _spec_text
    from reprospec.spec.load import load_spec

    (tmp_path / "stuck.py").write_text("print(1)\n")
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: s\ncommand: python stuck.py\n"
        "environment: {env: {TWICE: '${{ matrix.twice }}', WAIT: '${{ matrix.wait }}'}}\n"
        "matrix:\n  twice: ['1', '0']\n  wait: ['1', '0']\n"
        "  exclude: [{twice: '1', wait: '0'}, {wait: '0', twice: '0'}]\n"
        "expect:\n  outcome: hang\n  cases:\n"
        "    - {when: {twice: '0', wait: '0'}, outcome: pass}\n"
        "    - {when: {twice: '1', wait: '0'}, outcome: pass}\n"
    )
    spec = load_spec(tmp_path / "spec.yaml")
    original = Program(head=("python", "stuck.py"), args=(), files=(("stuck.py", "print(1)\n"),))
    reset = (Difference("matrix.twice", "0", "1"),)
    (tmp_path / "minimized.yaml").write_text(_spec_text(spec, original, reset, tmp_path))
    written = yaml.safe_load((tmp_path / "minimized.yaml").read_text())
    load_spec(tmp_path / "minimized.yaml")  # valid
    assert written["matrix"]["twice"] == ["0"]
    assert written["matrix"]["exclude"] == [{"wait": "0", "twice": "0"}]
    assert written["expect"]["cases"] == [{"when": {"twice": "0", "wait": "0"}, "outcome": "pass"}]
    # A reset that leaves no case: `cases` goes.
    only = (Difference("matrix.wait", "1", "0"),)
    (tmp_path / "minimized.yaml").write_text(_spec_text(spec, original, only, tmp_path))
    load_spec(tmp_path / "minimized.yaml")
    assert "cases" not in yaml.safe_load((tmp_path / "minimized.yaml").read_text())["expect"]
    # An include entry of the old value: kept, it was a cell of twice=1 alone, expected to
    # hang where the dropped case had it pass.
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: s\ncommand: python stuck.py\n"
        "environment: {env: {TWICE: '${{ matrix.twice }}', WAIT: '${{ matrix.wait }}'}}\n"
        "matrix:\n  twice: ['1', '0']\n  wait: ['1']\n"
        "  include: [{twice: '1', wait: '0'}, {twice: '0', wait: '0'}]\n"
        "expect:\n  outcome: hang\n  cases:\n"
        "    - {when: {twice: '1', wait: '0'}, outcome: pass}\n"
        "    - {when: {twice: '0', wait: '0'}, outcome: pass}\n"
    )
    spec = load_spec(tmp_path / "spec.yaml")
    (tmp_path / "minimized.yaml").write_text(_spec_text(spec, original, reset, tmp_path))
    written = yaml.safe_load((tmp_path / "minimized.yaml").read_text())
    assert written["matrix"]["include"] == [{"twice": "0", "wait": "0"}]
    assert written["expect"]["cases"] == [{"when": {"twice": "0", "wait": "0"}, "outcome": "pass"}]


def test_only_a_title_naming_a_line_of_the_program_is_left_to_the_description(
    tmp_path: Path,
) -> None:
    # Every minimized.yaml lost its title, where only one naming the original's line (a
    # captured hang's `stuck.py: hang in stuck (stuck.py:11)`) no longer says the truth.
    from reprospec.minimize.report import _spec_text
    from reprospec.spec.load import load_spec

    (tmp_path / "x.py").write_text("print(1)\n")
    original = Program(head=("python", "x.py"), args=(), files=(("x.py", "print(1)\n"),))
    for title, kept in (
        ("flaky KeyError in loader", True),
        ("x.py: hang in stuck (x.py:11)", False),
    ):
        (tmp_path / "spec.yaml").write_text(
            f"reprospec: 1\nname: s\ntitle: '{title}'\ncommand: python x.py\n"
            "expect: {outcome: pass}\n"
        )
        spec = load_spec(tmp_path / "spec.yaml")
        written = yaml.safe_load(_spec_text(spec, original, (), tmp_path))
        assert written.get("title") == (title if kept else None)
        assert (f"The original's title: {title}." in written["description"]) is not kept


def test_a_reset_that_drops_the_failing_cells_own_case_is_not_used(tmp_path: Path) -> None:
    # The failing cell's expect is a `when: {twice: "1"}` case over a top-level `pass`:
    # reset to twice=0, that case goes, and minimized.yaml would expect the reduced cell
    # to pass. Refused before the search (the program is minimized in the failing cell),
    # as a real minimize of this spec says; a reset that keeps its expect is used.
    from reprospec import api
    from reprospec.core.runoptions import RunOptions
    from reprospec.isolation.differences import Difference
    from reprospec.minimize.report import not_the_reduced_cell
    from reprospec.minimize.settings import Reduced
    from reprospec.spec.load import load_spec

    (tmp_path / "h.py").write_text("print(1)\n")
    original = Program(head=("python", "h.py"), args=(), files=(("h.py", "print(1)\n"),))
    for top, case, used in (("pass", "hang", False), ("hang", "hang", True)):
        (tmp_path / "spec.yaml").write_text(
            "reprospec: 1\nname: s\ncommand: python h.py\n"
            "environment: {env: {TWICE: '${{ matrix.twice }}', WAIT: '${{ matrix.wait }}'}}\n"
            "matrix:\n  twice: ['1', '0']\n  wait: ['1', '0']\n"
            f"expect:\n  outcome: {top}\n  cases:\n"
            f"    - {{when: {{twice: '1', wait: '1'}}, outcome: {case}}}\n"
            "    - {when: {wait: '0'}, outcome: pass}\n"
        )
        spec = load_spec(tmp_path / "spec.yaml")
        plan = api.plan_run(spec, RunOptions())
        cells = {cell.id: cell for cell in plan.cells}
        failing, reduced_cell = cells["twice=1,wait=1"], cells["twice=0,wait=1"]
        reset = (Difference("matrix.twice", "0", "1"),)
        reduced = Reduced(reduced_cell, failing, cells["twice=0,wait=0"], reset=reset)
        why = not_the_reduced_cell(spec, original, reduced, plan.expectation(failing), tmp_path)
        expected = (
            "" if used else "the spec expects twice=0,wait=1, where it fails too, to do otherwise"
        )
        assert why == expected


def test_a_loop_kept_because_its_body_reads_its_variable_is_told() -> None:
    # A race's `for t in threads: t.join()` was cut to `t.join()` (only the last thread
    # joined), which fails as often as the original, with its signature: the passes never
    # unwrap such a loop, and minimize.md says which loops they kept whole and why.
    result = minimize(program(), InProcess(1.0, seed=0), Settings(passing=0))
    assert result.same_failure is not None
    race = "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
    raced = replace(result, program=program(race))
    md = markdown(answer(raced, stopped=False))
    assert (
        "; 2 loops left whole, each never replaced by its body, which reads its variable "
        "(`for t in threads`, `for t in threads`): the body alone runs once"
    ) in md, md
    assert "`for t in threads`" not in markdown(answer(result, stopped=False))
