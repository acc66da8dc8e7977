"""Loading specs: overrides, markdown reports, semantic checks, bounded reads, exact bad-spec
messages."""

from __future__ import annotations

import gzip
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from reprospec.core.reportspec import marker_line
from reprospec.core.sections import Environment, RunPolicy
from reprospec.errors import SpecError, UsageError
from reprospec.plan.attempt import plan_attempt, run_policy
from reprospec.spec.files import extract_markdown_spec, spec_files
from reprospec.spec.load import load_spec
from reprospec.spec.matrix import expand
from reprospec.spec.overrides import apply_override
from reprospec.spec.validate import validate
from tests.support.data import at
from tests.support.paths import DATA

BAD = DATA / "bad_specs"


EXAMPLE = DATA / "spec_format_example.yaml"


# Each bad spec ends with the exact problems it must report, as `# expect:` comments.
BAD_SPECS = sorted(p.name for p in BAD.iterdir())


def expected_problems(path: Path) -> list[str]:
    """The fixture's own `# expect: LINE:COL: PATH: MESSAGE` lines, prefixed with its path.

    `{here}` stands for the fixture's folder as an absolute path.
    """
    found = re.findall(r"^(?:# |<!-- )expect: (.*?)(?: -->)?$", path.read_text(), re.MULTILINE)
    here = str(path.parent.absolute())
    return [f"{path}:{line}".replace("{here}", here) for line in found]


@pytest.mark.parametrize("name", BAD_SPECS)
def test_bad_spec_reports_exact_located_problems(name: str) -> None:
    path = BAD / name
    expected = expected_problems(path)
    assert expected, f"{name} has no '# expect:' lines"
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == expected


def test_there_are_enough_bad_specs() -> None:
    assert len(BAD_SPECS) >= 20


def test_file_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(BAD / "repeat_zero.yaml", tmp_path / "r.yaml")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        load_spec("r.yaml")
    assert caught.value.problems == ["r.yaml:5:11: run.repeat: expected an integer >= 1, got 0"]


def test_spec_format_example_loads_with_defaults() -> None:
    spec = load_spec(EXAMPLE)
    assert spec.name == "val-segfault-pinned-workers"
    assert spec.document["run"] == {"timeout": "60s", "repeat": 1}
    assert spec.locations[("matrix", "pin_memory")] == (23, 15)
    assert spec.source_text == EXAMPLE.read_text()


def test_defaults_fill_missing_sections(tmp_path: Path) -> None:
    # The document stays as written; the typed sections carry the defaults (sections.py).
    path = tmp_path / "s.yaml"
    path.write_text("reprospec: 1\nname: s\ncommand: [echo, hi]\nexpect: {outcome: pass}\n")
    spec = load_spec(path)
    assert "run" not in spec.document
    plan = plan_attempt(spec, expand(spec)[0], 1)
    assert plan.timeout_s == 600.0
    assert plan.environment == Environment(workdir=tmp_path.resolve())
    assert run_policy(spec) == RunPolicy(timeout_s=600.0, repeat=1, stop_on="never", parallel=1)


def test_overrides_apply_before_validation() -> None:
    spec = load_spec(
        EXAMPLE,
        [
            "workload.phases.1.steps=8",
            "workload.data.loader.batch_size=2",
            "run.timeout=5s",
            "labels=[a, b]",
            "environment.env.NEW=x",
        ],
    )
    document = dict(spec.document)
    assert at(document, "workload", "phases", 1) == {"name": "validation", "steps": 8}
    assert at(document, "workload", "data", "loader", "batch_size") == 2
    assert at(document, "run", "timeout") == "5s"
    assert document["labels"] == ["a", "b"]
    assert at(document, "environment", "env") == {"CUDA_LAUNCH_BLOCKING": "1", "NEW": "x"}


def test_override_that_breaks_the_spec_is_reported_as_from_set() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(EXAMPLE, ["run.repeat=0"])
    assert caught.value.problems == [
        f"{EXAMPLE}:47:11: run.repeat: expected an integer >= 1, got 0 (from --set run.repeat=0)"
    ]


def test_tilde_override_removes_a_key() -> None:
    spec = load_spec(EXAMPLE, ["~workload", "command=[python, -c, 'print(1)']", "~expect.cases.0"])
    assert "workload" not in spec.document
    assert spec.document["command"] == ["python", "-c", "print(1)"]
    assert at(dict(spec.document), "expect", "cases") == [
        {"when": {"pin_memory": False}, "outcome": "pass"}
    ]
    with pytest.raises(UsageError, match=r"'run\.nope' is not in the spec"):
        load_spec(EXAMPLE, ["~run.nope"])


def test_override_creates_missing_mappings() -> None:
    assert apply_override({"a": 1}, "run.timeout=5m") == {"a": 1, "run": {"timeout": "5m"}}


# -- accepted but wrong -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("run.timeout", "expected PATH=VALUE"),
        ("=3", "expected PATH=VALUE"),
        ("run..timeout=3", "expected PATH=VALUE"),
        ("workload.phases.7.steps=3", "'workload.phases.7': expected a list index below 2"),
        ("workload.phases.x=3", "'workload.phases.x': expected a list index below 2"),
        ("name.first=x", "'name' is a value, not a mapping or list"),
        ("labels=[a", "the value is not valid YAML"),
        ("title=!!python/object/apply:os.system [ls]", "the value is not valid YAML"),
    ],
)
def test_bad_override_is_a_usage_error(override: str, message: str) -> None:
    with pytest.raises(UsageError, match=r"^--set ") as caught:
        load_spec(EXAMPLE, [override])
    assert message in str(caught.value)


def test_a_value_that_starts_with_yamls_own_syntax_is_told_how_to_quote_it() -> None:
    # A rate's `>` is a folded block scalar's indicator to YAML (new user).
    with pytest.raises(UsageError) as caught:
        load_spec(EXAMPLE, ["expect.rate=>=0.3"])
    assert str(caught.value).endswith(
        """; quote it to mean the text: --set 'expect.rate=">=0.3"'"""
    ), caught.value
    # As it advises: quoted, the rate is read as the text.
    expect = load_spec(EXAMPLE, ['expect.rate=">=0.3"']).document["expect"]
    assert isinstance(expect, dict)
    assert expect["rate"] == ">=0.3"
    # A value YAML cannot read for another reason gets no quoting advice.
    with pytest.raises(UsageError) as caught:
        load_spec(EXAMPLE, ["labels=[a"])
    assert "quote it" not in str(caught.value)


def test_markdown_report_spec_is_extracted_with_md_line_numbers(tmp_path: Path) -> None:
    body = EXAMPLE.read_text()
    report = tmp_path / "report.md"
    report.write_text(
        "# Title\n\n```yaml\nnot: the spec\n```\n\n<details>\n\n````yaml\n" + body + "````\n"
    )
    spec = load_spec(report)
    assert spec.name == "val-segfault-pinned-workers"
    assert spec.source_text == body
    # The example's line 23 sits 9 lines down in the report.
    assert spec.locations[("matrix", "pin_memory")] == (32, 15)


def test_markdown_without_spec_block(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    report.write_text("# nothing\n\n```yaml\nfoo: 1\n```\n")
    with pytest.raises(SpecError) as caught:
        load_spec(report)
    assert caught.value.problems == [
        f"{report}: no ```yaml block with a top-level 'reprospec:' key"
    ]


def test_extract_markdown_ignores_non_yaml_fences() -> None:
    text = "```python\nreprospec: 1\n```\n~~~yml\nreprospec: 1\n~~~\n"
    assert extract_markdown_spec(text) == ("reprospec: 1\n", 4)


def test_a_spec_block_indented_in_a_list_item_is_found_and_located(tmp_path: Path) -> None:
    # A ticket's steps: the fence and the spec indented under "1." (past CommonMark's
    # 3 spaces for a fence outside a list): no spec was found in it.
    ticket = tmp_path / "ticket.md"
    ticket.write_text(
        "Steps:\n\n1. Save this spec:\n\n    ```yaml\n    reprospec: 1\n    name: listed\n"
        "    command: exit 3\n    run: {timeoutt: 5s}\n    ```\n\n2. Run it.\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(ticket)
    # Line and column as the file has them, indentation and all.
    assert caught.value.problems[0].startswith(f"{ticket}:9:11: run: unknown key 'timeoutt'")
    ticket.write_text(ticket.read_text().replace("timeoutt", "timeout"))
    spec = load_spec(ticket)
    assert (spec.name, spec.document["command"]) == ("listed", "exit 3")
    assert spec.locations[("command",)] == (8, 14)
    # A block whose `reprospec:` is nested under another key is not a spec.
    assert extract_markdown_spec("  ```yaml\n  x:\n    reprospec: 1\n  ```\n") is None


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "nope.yaml")
    assert caught.value.problems == [f"{tmp_path / 'nope.yaml'}: no such file"]


def test_validate_paths_collects_problems_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "good.yaml")
    shutil.copy(BAD / "repeat_zero.yaml", tmp_path / "sub" / "a.yml")
    shutil.copy(BAD / "bad_signal.yaml", tmp_path / "b.yaml")
    (tmp_path / "notes.txt").write_text("ignored")
    problems = validate([tmp_path, tmp_path / "missing.yaml"]).problems
    assert problems == [
        f"{tmp_path / 'b.yaml'}:6:11: expect.signal: expected a signal name like SIGSEGV or "
        "SIGABRT, got 'SEGV' (did you mean 'SIGSEGV'?)",
        f"{tmp_path / 'sub' / 'a.yml'}:5:11: run.repeat: expected an integer >= 1, got 0",
        f"{tmp_path / 'missing.yaml'}: no such file",
    ]
    assert validate([EXAMPLE]).problems == []
    assert spec_files([tmp_path, EXAMPLE]) == [
        str(tmp_path / "b.yaml"),
        str(tmp_path / "good.yaml"),
        str(tmp_path / "sub" / "a.yml"),
        str(EXAMPLE),
    ]


def test_validate_paths_empty_folder(tmp_path: Path) -> None:
    assert validate([tmp_path]).problems == [f"{tmp_path}: no *.yaml or *.yml files in this folder"]


def test_include_keys_count_as_axes_and_expressions_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\n"
        "matrix:\n  a: [1]\n  include:\n    - {a: 1, extra: x}\n"
        "command: echo ${{ matrix.extra }} ${{ env.HOME }} ${{ cell.id }} ${{ attempt }}\n"
        "run: {timeout: '${{ matrix.a }}'}\n"
        "description: 'literal ${{ not checked'\n"
        "expect:\n  outcome: pass\n  cases:\n    - when: {extra: x}\n      outcome: crash\n"
    )
    assert load_spec(path).name == "s"


def test_no_matrix_axis_reference_without_matrix(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\ncommand: echo ${{ matrix.x }}\nexpect: {outcome: pass}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == [
        f"{path}:3:10: command: unknown matrix axis 'x' (the spec has no matrix axes)"
        " in '${{ matrix.x }}'"
    ]
    # A matrix of an `exclude` alone has no axes, where "the spec has no matrix" denied it.
    path.write_text(path.read_text().replace("name: s\n", "name: s\nmatrix: {exclude: []}\n"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert any("(the spec has no matrix axes)" in p for p in caught.value.problems), caught


# ---------------------------------------------------------------- semantic checks


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def problems_of(path: Path, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec(path, overrides or [])
    return caught.value.problems


def test_case_when_values_compare_as_the_matrix_does(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: s\n"
        "matrix:\n  n: [1, 2]\n  v: ['1', '2']\n  f: [1.0]\n  include:\n    - {n: 3, tag: x}\n"
        "command: echo hi\n"
        "expect:\n  outcome: pass\n  cases:\n"
        "    - {when: {n: 3}, outcome: crash}\n"  # from include: fine
        "    - {when: {tag: x}, outcome: crash}\n"
        "    - {when: {f: 1}, outcome: crash}\n"  # 1 and 1.0 are the same number
        "    - {when: {v: 1}, outcome: crash}\n"
        "    - {when: {tag: y}, outcome: crash}\n"
        "    - {when: {tag: null}, outcome: crash}\n",  # the cells include gives no tag
    )
    assert problems_of(path) == [
        f"{path}:16:18: expect.cases[3].when.v: 1 is a number, but axis 'v' holds '1', '2'"
        " (quote it: '1')",
        f"{path}:17:20: expect.cases[4].when.tag: 'y' is not a value of axis 'tag' "
        "(values: 'x', null)",
    ]


def test_a_case_with_an_outcome_drops_the_base_details(tmp_path: Path) -> None:
    # As plan.expectation_for merges: the pass case does not inherit the base's signal.
    path = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: s\nmatrix: {m: [a, b]}\ncommand: echo hi\n"
        "expect:\n  outcome: fail\n  signal: SIGSEGV\n  exit_code: 1\n  message: x\n"
        "  cases:\n    - {when: {m: a}, outcome: pass}\n"
        "    - {when: {m: b}, outcome: hang, message: stuck}\n",
    )
    assert load_spec(path).name == "s"


def test_expect_phase_of_a_workload_may_be_a_harness_or_marker_phase(tmp_path: Path) -> None:
    base = "reprospec: 1\nname: s\nworkload: {phases: [{name: train, steps: 2}]}\n"
    for phase in ("train", "import", "setup", "${{ 'x' }}"):
        path = write(tmp_path / "s.yaml", base + f'expect: {{outcome: crash, phase: "{phase}"}}\n')
        assert load_spec(path).name == "s", phase
    path = write(
        tmp_path / "s.yaml",
        base + "markers: [{pattern: 'x', phase: warmup}]\n"
        "expect: {outcome: crash, phase: warmup}\n",
    )
    assert load_spec(path).name == "s"
    path = write(
        tmp_path / "s.yaml",
        base + "markers: [{pattern: '(?P<phase>\\w+)'}]\nexpect: {outcome: crash, phase: any}\n",
    )
    assert load_spec(path).name == "s"
    # Without `phases` the harness runs its default: one `train` phase of 10 steps.
    path = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: s\nworkload: {faults: [{kind: abort, at: {phase: train, step: 11}}]}\n"
        "expect: {outcome: crash, phase: validation}\n",
    )
    assert problems_of(path) == [
        f"{path}:3:60: workload.faults[0].at.step: step 11 never comes: phase 'train' has 10 steps",
        f"{path}:4:33: expect.phase: unknown phase 'validation' "
        "(phases: train, import, setup, exit)",
    ]


def test_command_spec_phase_is_not_checked(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: s\ncommand: echo hi\nexpect: {outcome: crash, phase: anything}\n",
    )
    assert load_spec(path).name == "s"


def test_workdir_resolves_against_the_spec_folder(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "file").write_text("")
    text = "reprospec: 1\nname: s\ncommand: echo hi\nexpect: {outcome: pass}\n"
    good = write(tmp_path / "good.yaml", text + "environment: {workdir: fixtures}\n")
    assert load_spec(good).name == "s"
    templated = write(tmp_path / "t.yaml", text + "environment: {workdir: '${{ env.HOME }}'}\n")
    assert load_spec(templated).name == "s"
    afile = write(tmp_path / "f.yaml", text + "environment: {workdir: file}\n")
    assert problems_of(afile) == [
        f"{afile}:5:24: environment.workdir: not a folder: {tmp_path / 'file'}"
    ]


def test_workdir_of_a_report_resolves_against_its_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs" / "fixtures").mkdir(parents=True)
    body = (
        "reprospec: 1\nname: s\ncommand: echo hi\nexpect: {outcome: pass}\n"
        "environment: {workdir: fixtures}\n"
    )
    write(tmp_path / "specs" / "s.yaml", body)
    (tmp_path / "runs").mkdir()
    report = tmp_path / "runs" / "report.md"
    fenced = "# s\n\n```yaml\n" + body + "```\n"
    report.write_text(marker_line(body, "specs/s.yaml") + "\n" + fenced)
    assert load_spec(report).base_dir == Path("specs")
    # Without its origin, relative paths resolve against the report's own folder, and are
    # checked there (unchecked, a missing workdir validated and every cell was infra-error,
    # where the same spec as .yaml was refused).
    report.write_text(marker_line(body, "gone.yaml") + "\n" + fenced)
    assert problems_of(report) == [
        f"{report}:9:24: environment.workdir: folder not found: {report.parent / 'fixtures'}"
    ]
    (report.parent / "fixtures").mkdir()
    assert load_spec(report).origin is None
    assert load_spec(report).base_dir == report.parent
    # With an origin whose folder lacks the workdir, the problem is reported.
    write(tmp_path / "other.yaml", body)
    report.write_text(marker_line(body, "other.yaml") + "\n" + fenced)
    assert problems_of(report) == [
        f"{report}:9:24: environment.workdir: folder not found: {tmp_path / 'fixtures'}"
    ]
    # A path outside the folder run starts in and the report's own is never used.
    (tmp_path / "elsewhere").mkdir()
    outside = write(tmp_path / "elsewhere" / "s.yaml", body)
    monkeypatch.chdir(tmp_path / "specs")
    for named in (str(outside), "../elsewhere/s.yaml"):
        report.write_text(marker_line(body, named) + "\n" + fenced)
        assert load_spec(report).origin is None, named
        assert load_spec(report).base_dir == report.parent


def test_a_reports_origin_is_found_from_its_own_folder_as_a_bundle_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bundle unpacked anywhere: RUN/report.md names its packed spec `tree/s.yaml`, from
    # the report's folder. Read from the folder `run` starts in alone, it was not found,
    # the workdir was looked for beside report.md, and the report did not rerun.
    body = (
        "reprospec: 1\nname: s\ncommand: echo hi\nexpect: {outcome: pass}\n"
        "environment: {workdir: fixtures}\n"
    )
    run = tmp_path / "unpacked" / "RUN"
    (run / "tree" / "fixtures").mkdir(parents=True)
    write(run / "tree" / "s.yaml", body)
    report = run / "report.md"
    report.write_text(marker_line(body, "tree/s.yaml") + "\n# s\n\n```yaml\n" + body + "```\n")
    monkeypatch.chdir(tmp_path)
    assert load_spec(report).base_dir == run / "tree"


def test_a_report_runs_the_block_its_marker_names(tmp_path: Path) -> None:
    body = "reprospec: 1\nname: real\ncommand: echo real\nexpect: {outcome: pass}\n"
    forged = "reprospec: 1\nname: forged\ncommand: echo forged\nexpect: {outcome: pass}\n"
    report = tmp_path / "report.md"
    report.write_text(
        marker_line(body, "s.yaml") + "\n# t\n\n```yaml\n" + forged + "```\n\n"
        "~~~~\n\n````yaml\n" + body + "````\n"
    )
    assert load_spec(report).name == "real"
    assert extract_markdown_spec(report.read_text()) == (body, 13)
    # Edited after it was rendered: the marker names no block, and nothing runs.
    report.write_text(report.read_text().replace("echo real", "echo edited"))
    assert problems_of(report) == [
        f"{report}: no ```yaml block of 4 lines matches the report's "
        "'<!-- reprospec:spec sha256=... -->' line: the spec block was edited or cut"
    ]


def test_problem_at_a_key_an_override_created_names_the_override_and_where_it_landed() -> None:
    # The key has no line in the file; the mapping it landed in has (`run:` is line 45,
    # its mapping 46:3, where a problem of `run` is): it was `FILE: run: ...`.
    assert problems_of(EXAMPLE, ["runn.timeout=3s"]) == [
        f"{EXAMPLE}:2:1: (top level): unknown key 'runn' (did you mean 'run'?)"
        " (from --set runn.timeout=3s)"
    ]
    assert problems_of(EXAMPLE, ["run.timeout=5s", "run.timout=3s"]) == [
        f"{EXAMPLE}:46:3: run: unknown key 'timout' (did you mean 'timeout'?)"
        " (from --set run.timout=3s)"
    ]
    assert problems_of(EXAMPLE, ["expect.phase=valdation"]) == [
        f"{EXAMPLE}:52:10: expect.phase: unknown phase 'valdation' (did you mean 'validation'?)"
        " (from --set expect.phase=valdation)"
    ]


MATRIX = (
    "reprospec: 1\nname: m\ncommand: [python3, -c, 'print(1)']\n"
    "matrix:\n  a: {a}\n  b: [x]\nexpect: {{outcome: pass}}\n"
)
SAME_ID = "(a repeated value, or values that render alike such as 1 and '1')"


def test_a_problem_above_an_override_names_it_when_the_override_caused_it(
    tmp_path: Path,
) -> None:
    """`--set 'matrix.a=[1, 1]'` makes a problem at `matrix`, above the path it wrote: it was
    located at the file's line and did not say it came from the override."""
    spec = write(tmp_path / "matrix.yaml", MATRIX.format(a="[1, 2]"))
    assert problems_of(spec, ["matrix.a=[1, 1]"]) == [
        f"{spec}:5:3: matrix: cells 1 and 2 have the same id 'a=1,b=x' {SAME_ID}"
        " (from --set matrix.a=[1, 1])"
    ]
    # A removal too: without `~command` the spec had a command.
    assert problems_of(spec, ["~command"]) == [
        f"{spec}:1:1: (top level): missing 'workload' or 'command' (exactly one is required)"
        " (from --set ~command)"
    ]
    # The file had the duplicate anyway: an override beside it is not blamed, though the
    # message, which quotes the cell id, changed with it.
    had = write(tmp_path / "had.yaml", MATRIX.format(a="[1, 1]"))
    assert problems_of(had, ["matrix.b=[y]"]) == [
        f"{had}:5:3: matrix: cells 1 and 2 have the same id 'a=1,b=y' {SAME_ID}"
    ]


def test_a_problem_elsewhere_an_override_caused_names_it(tmp_path: Path) -> None:
    """`--set 'matrix.python=["3.11"]'` leaves the exclude entry and the `when` that name
    3.10 with no such value: located at the file's lines, which validate as written, they
    did not say the override made them problems."""
    spec = write(
        tmp_path / "narrowed.yaml",
        "reprospec: 1\nname: n\n"
        'matrix:\n  python: ["3.10", "3.11"]\n  workers: [0, 2]\n'
        '  exclude:\n    - {python: "3.10", workers: 2}\n'
        "command: echo ${{ matrix.python }} ${{ matrix.workers }}\n"
        'expect:\n  outcome: pass\n  cases:\n    - when: {python: "3.10"}\n'
        "      outcome: pass\n",
    )
    load_spec(spec, [])  # valid as written
    narrowed = 'matrix.python=["3.11"]'
    found = problems_of(spec, [narrowed])
    assert [p.split(": ", 2)[1] for p in found] == [
        "matrix.exclude[0].python",
        "expect.cases[0].when.python",
    ], found
    assert all(p.endswith(f"(from --set {narrowed})") for p in found), found
    # A value the file itself gets wrong is the file's, an override beside it not blamed.
    typo = write(
        tmp_path / "typo.yaml", spec.read_text().replace('{python: "3.10"}', "{python: 3.1}")
    )
    assert not any("(from --set" in p for p in problems_of(typo, ["run.repeat=2"]))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "matrix.mode[9]=x",
            "--set matrix.mode[9]=x: use dots for list indexes, like matrix.mode.9=x",
        ),
        (
            "workload.phases[1].steps=3",
            "--set workload.phases[1].steps=3: use dots for list indexes,"
            " like workload.phases.1.steps=3",
        ),
        (
            "~expect.cases[0]",
            "--set ~expect.cases[0]: use dots for list indexes, like ~expect.cases.0",
        ),
        # A dot before the bracket too: one dot in the fix, not `matrix.mode..0`.
        (
            "matrix.mode.[0]=x",
            "--set matrix.mode.[0]=x: use dots for list indexes, like matrix.mode.0=x",
        ),
    ],
)
def test_brackets_in_set_paths_are_a_usage_error(override: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_spec(EXAMPLE, [override])
    assert str(caught.value) == message


def test_validation_summary_counts_files_and_empty_folders(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    found = validate([empty])
    assert found.problems == [f"{empty}: no *.yaml or *.yml files in this folder"]
    assert found.summary() == "1 problem: no spec files found"
    shutil.copy(EXAMPLE, tmp_path / "good.yaml")
    shutil.copy(BAD / "repeat_zero.yaml", tmp_path / "bad.yaml")
    found = validate([tmp_path / "good.yaml", tmp_path / "bad.yaml", empty])
    assert found.summary() == ("2 problems in 1 of 2 files, and 1 folder without spec files")
    assert validate([tmp_path / "good.yaml"]).summary() == "1 spec file valid"


# -- reading a spec file, bounded ---------------------------------------------------------

SMALL = "reprospec: 1\nname: s\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f.yaml")
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "f.yaml")
    assert caught.value.problems == [f"{tmp_path / 'f.yaml'}: is a FIFO, not a spec file"]


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: p.symlink_to("/dev/zero"), "is a character device, not a spec file"),
        (lambda p: p.mkdir(), "is a folder, not a spec file"),
        (lambda p: p.write_text(SMALL + "#" * (9 << 20)), "larger than 8 MiB; not read"),
    ],
)
def test_devices_folders_and_huge_files_are_refused_unread(
    tmp_path: Path, make: Callable[[Path], object], what: str
) -> None:
    path = tmp_path / "s.yaml"
    make(path)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems[0].startswith(f"{path}: {what}")


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"a: 1\nb: caf\xe9\n", "2:7: not UTF-8 text: byte 0xe9 (invalid continuation byte)"),
        ("a: 1\nb: \u00e9\u00e9".encode() + b"\xff\n", "2:6: not UTF-8 text: byte 0xff"),
        (b"\n\n\xc0\x80", "3:1: not UTF-8 text: byte 0xc0 (invalid start byte)"),
        (b"a: \xf0\x9f\x98", "1:4: not UTF-8 text: byte 0xf0 (unexpected end of data)"),
    ],
)
def test_non_utf8_is_located_at_the_first_bad_byte(tmp_path: Path, data: bytes, where: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(data)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems[0].startswith(f"{path}:{where}")


def test_a_bundle_is_refused_as_one_with_what_to_give_instead(tmp_path: Path) -> None:
    # isolate, bisect, validate ... of a bundle said "x.tar.gz:1:2: not UTF-8 text: byte
    # 0x8b", its gzip header, and nothing of `reprospec run` or the spec it holds.
    path = tmp_path / "crash.tar.gz"
    path.write_bytes(gzip.compress(b"reprospec: 1\n"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}: a .tar.gz archive (a bundle of `reprospec bundle`?)")
    assert f"`reprospec run {path}` reruns a bundle" in problem
    assert "not UTF-8" not in problem


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("run: {timeout: .nan}\n", "5:16: run.timeout: expected a finite duration > 0, got nan"),
        ("run: {timeout: .inf}\n", "5:16: run.timeout: expected a finite duration > 0, got inf"),
        (
            "matrix: {a: [1], include: [{'a b': 2}]}\n",
            "5:29: matrix.include[0]: expected an axis name (letters, digits, '_' and '-';"
            " not include or exclude), got 'a b'",
        ),
        (
            "run: {repeat: 10001}\n",
            "5:15: run.repeat: 10001 attempts per cell; at most 10000 are allowed (docs/limits.md)",
        ),
        (
            "run: {parallel: 100000}\n",
            "5:17: run.parallel: 100000 parallel attempts; at most 256 are allowed"
            " (docs/limits.md)",
        ),
        (
            "matrix: {a: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], b: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"
            "run: {repeat: 1001}\n",
            "6:15: run.repeat: the run asks for 100100 attempts (100 cells x 1001); at most"
            " 100000 are allowed (docs/limits.md)",
        ),
        (
            'environment: {env: {X: "a\\0b"}}\n',
            "5:24: environment.env.X: contains a NUL character, which no argv, variable or"
            " path can hold",
        ),
    ],
)
def test_values_that_would_run_wrongly_are_refused(
    tmp_path: Path, extra: str, expected: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SMALL + extra)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == [f"{path}:{expected}"]


def test_expect_message_must_be_a_regex(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\ncommand: 'false'\nmatrix: {a: [1]}\n"
        "expect:\n  outcome: error\n  message: 'cuda error: ('\n"
        "  cases:\n    - {when: {a: 1}, message: '\\p{L}'}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == [
        f"{path}:7:12: expect.message: bad regular expression: missing ), unterminated"
        " subpattern at position 12",
        f"{path}:9:31: expect.cases[0].message: bad regular expression: bad escape \\p at"
        " position 0",
    ]


def test_a_faults_when_takes_the_words_the_harness_reads_as_a_boolean(tmp_path: Path) -> None:
    # `when: no` is the text 'no' in YAML 1.2, and `${{ env.X }}` or a matrix value is text:
    # the words spec-format.md lists count, literal or evaluated per cell; a typo is refused.
    base = "reprospec: 1\nname: s\nmatrix: {inject: ['no', 'YES', 'Off', '']}\nworkload:\n"
    for when in ("no", "'0'", '""', "0", "1", "' off '", "True", '"${{ matrix.inject }}"'):
        path = write(tmp_path / "s.yaml", base + f"  faults: [{{kind: abort, when: {when}}}]\n")
        assert load_spec(path).name == "s", when
    path = write(
        tmp_path / "s.yaml",
        base + "  faults:\n    - {kind: abort, when: flase}\n    - {kind: abort, when: 2}\n",
    )
    words = 'true or false (or 0, 1, "", false, true, no, yes, off, on as text)'
    assert problems_of(path) == [
        f"{path}:6:27: workload.faults[0].when: expected {words}, got 'flase'",
        f"{path}:7:27: workload.faults[1].when: expected {words}, got 2",
    ]
    path = write(
        tmp_path / "s.yaml",
        base + "  faults: [{kind: abort, when: \"${{ matrix.inject == 'no' and 'nope' }}\"}]\n",
    )
    assert problems_of(path) == [
        f"{path}:5:32: workload.faults[0].when: expected {words}, got 'nope' (in cell inject=no)"
    ]


def test_files_are_files_of_the_workdir(tmp_path: Path) -> None:
    # `files: [nosuch.txt, ../../etc/passwd]` was valid; only `bundle` said, later,
    # that it carried nothing of them. spec-format.md: files of the workdir, relative to it.
    work = tmp_path / "app"
    (work / "conf").mkdir(parents=True)
    (work / "data.csv").write_text("a\n")
    (work / "conf" / "c.yaml").write_text("a: 1\n")
    (tmp_path / "outside.txt").write_text("x\n")
    (work / "linked.csv").symlink_to(tmp_path / "outside.txt")  # a link in it is its file
    spec = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: f\nenvironment: {workdir: app}\ncommand: [python, x.py]\n"
        "files: [data.csv, conf/c.yaml, linked.csv, nosuch.txt, ../../etc/passwd,\n"
        "  ../outside.txt, conf]\n",
    )
    assert problems_of(spec) == [
        f"{spec}:5:44: files[3]: 'nosuch.txt' not found in the workdir ({work})",
        f"{spec}:5:56: files[4]: '../../etc/passwd' is outside the workdir ({work}): "
        "`files` names the workdir's files, relative to it",
        f"{spec}:6:3: files[5]: '../outside.txt' is outside the workdir ({work}): "
        "`files` names the workdir's files, relative to it",
        f"{spec}:6:19: files[6]: 'conf' is not a file (in {work}): `files` names files, "
        "not folders",
    ]
    # A reader that only names or plans the spec (`history SPEC`, minimize's own DIR, a
    # bundle that refuses a gone file by name) does not look for them.
    assert load_spec(spec, files=False).document["files"] == [
        "data.csv", "conf/c.yaml", "linked.csv", "nosuch.txt", "../../etc/passwd",
        "../outside.txt", "conf",
    ]  # fmt: skip


def test_an_expression_workdir_and_its_files_are_checked_per_cell(tmp_path: Path) -> None:
    # `workdir: ${{ matrix.w }}` went unchecked: a cell naming no folder ended an
    # infra-error mid-run (exit 3) and `files` missing from every cell's folder validated.
    for name in ("w1", "w2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.txt").write_text("a\n")
    spec = write(
        tmp_path / "s.yaml",
        "reprospec: 1\nname: f\nmatrix: {w: [w1, w2, w3]}\n"
        "environment: {workdir: '${{ matrix.w }}'}\ncommand: [ls]\n"
        "files: [data.txt, nosuch.txt]\n",
    )
    assert problems_of(spec) == [
        f"{spec}:4:24: environment.workdir: folder not found: {tmp_path / 'w3'} (in cell w=w3)",
        f"{spec}:6:19: files[1]: 'nosuch.txt' not found in the workdir ({tmp_path / 'w1'})"
        " (in cell w=w1)",
        f"{spec}:6:19: files[1]: 'nosuch.txt' not found in the workdir ({tmp_path / 'w2'})"
        " (in cell w=w2)",
    ]
    spec.write_text(spec.read_text().replace("w2, w3", "w2").replace(", nosuch.txt", ""))
    assert load_spec(spec).document["files"] == ["data.txt"]  # every cell's folder holds it


def test_a_set_runs_spec_stored_before_literal_blocks_is_the_same_spec() -> None:
    """dump_yaml writes a multi-line string as `|` now (lo37): a `--set` run stored before
    kept it double-quoted, and `--resume`, `bundle` and `merge` compared the texts as
    written: the same spec read as changed."""
    from reprospec.spec.load import same_spec_text

    header = "# resolved from s.yaml with: --set run.repeat=2\n"
    old = header + 'name: s\ndescription: "a\\nb\\n"\nrun:\n  repeat: 2\n'
    new = header + "name: s\ndescription: |\n  a\n  b\nrun:\n  repeat: 2\n"
    assert same_spec_text(old, new)
    assert not same_spec_text(old, new.replace("  b\n", "  c\n"))
    assert not same_spec_text(old, new.replace("--set run.repeat=2", "--set run.repeat=3"))
    # A spec's own text (no `--set`) is compared as written: its comments are the spec's.
    assert not same_spec_text('name: s\nd: "a\\nb"\n', "name: s\nd: |-\n  a\n  b\n")


def test_a_docker_image_and_dockerfile_are_checked_when_the_spec_is_read(tmp_path: Path) -> None:
    # `image: ""` ran the default image without a word, and an image that is no
    # reference or a dockerfile that is not there validated: each docker cell was then an
    # infra-error mid-run, exit 3, where every other spec mistake is exit 2, located.
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("FROM reprospec-runner:latest\n")
    head = "reprospec: 1\nname: d\ncommand: [ls]\n"
    spec = write(
        tmp_path / "s.yaml", head + "environment: {image: '', dockerfile: nope/Dockerfile}\n"
    )
    assert problems_of(spec) == [
        f"{spec}:4:22: environment.image: expected a non-empty string, got ''",
        f"{spec}:4:38: environment.dockerfile: file not found: {tmp_path / 'nope' / 'Dockerfile'}",
    ]
    spec.write_text(head + "environment: {image: 'my image!', dockerfile: docker}\n")
    assert problems_of(spec) == [
        f"{spec}:4:22: environment.image: 'my image!' is not a docker image reference "
        "(like pytorch/pytorch:2.4.0)",
        f"{spec}:4:47: environment.dockerfile: not a file: {tmp_path / 'docker'}",
    ]
    spec.write_text(
        head + "matrix: {img: ['reprospec-runner:latest', 'a b']}\n"
        "environment: {image: '${{ matrix.img }}'}\n"
    )
    assert problems_of(spec) == [
        f"{spec}:5:22: environment.image: 'a b' is not a docker image reference "
        "(like pytorch/pytorch:2.4.0) (in cell img=a b)",
    ]
    spec.write_text(
        head + "environment: {image: 'pytorch/pytorch:2.4.0', dockerfile: docker/Dockerfile}\n"
    )
    assert load_spec(spec).document["environment"] == {
        "image": "pytorch/pytorch:2.4.0",
        "dockerfile": "docker/Dockerfile",
    }


def test_an_image_reference_docker_refuses_is_a_validation_error(tmp_path: Path) -> None:
    # An uppercase repository, a second tag or a short digest passed a looser pattern: the
    # engine then refused it mid-run with a raw "400 Client Error for http+docker://..."
    # naming no spec line.
    head = "reprospec: 1\nname: d\ncommand: [ls]\n"
    spec = write(tmp_path / "s.yaml", head + "environment: {image: 'Reprospec-Base:bookworm'}\n")
    assert problems_of(spec) == [
        f"{spec}:4:22: environment.image: 'Reprospec-Base:bookworm' is not a docker image "
        "reference (like pytorch/pytorch:2.4.0): a repository name is lowercase",
    ]
    for bad in ("img:a:b", "img@sha256:zz", "a//b", "img:"):
        spec.write_text(head + f"environment: {{image: '{bad}'}}\n")
        assert len(problems_of(spec)) == 1, bad
    for good in (
        "localhost:5000/team/img:v1",
        "MyRegistry.io:443/a/b_c__d:1.0-rc",
        "python:3.11-slim",
        "img:v1@sha256:" + "0" * 64,
    ):
        spec.write_text(head + f"environment: {{image: '{good}'}}\n")
        assert load_spec(spec).document["environment"] == {"image": good}


def test_a_key_given_twice_is_said_with_the_files_other_problems(tmp_path: Path) -> None:
    """A duplicate key was reported alone, hiding the file's other problems, where
    spec-format.md says every problem of a file is reported at once. Nothing is judged
    under the key given twice (the value the user meant is not known); with `--set`, the
    YAML's problems stay alone (which override made a problem is read on a whole file)."""
    spec = write(
        tmp_path / "twice.yaml",
        "reprospec: 1\nname: e\nenvironment:\n  shm_size: 64q\n  env: {a: 1, a: [x]}\n"
        "command: echo\nexpect: {outcome: pass}\nrun: {timeout: -1}\n",
    )
    assert problems_of(spec) == [
        f"{spec}:4:13: environment.shm_size: expected a size like 64m or 4g, got '64q'",
        f"{spec}:5:15: environment.env: duplicate key 'a' (first given on line 5)",
        f"{spec}:8:16: run.timeout: expected a number of seconds > 0, got -1",
    ]
    assert problems_of(spec, ["run.repeat=2"]) == [
        f"{spec}:5:15: environment.env: duplicate key 'a' (first given on line 5)"
    ]


def test_a_problem_that_holds_of_one_value_of_a_key_given_twice_is_not_said(
    tmp_path: Path,
) -> None:
    """A check beside a key given twice judged its last value: `run.stall` was "not below
    run.timeout (10m)" of a timeout given as 5m then 10m, and a marker whose `pattern` was
    given twice "does nothing" for the last one. Neither is said now (the user has yet to
    choose the value); a problem of both readings still is."""
    spec = write(
        tmp_path / "twice.yaml",
        "reprospec: 1\nname: e\ncommand: echo\nexpect: {outcome: pass}\n"
        "run:\n  timeout: 5m\n  timeout: 10m\n  stall: 6m\n  repeat: 0\n"
        "markers:\n  - {pattern: 'x (?P<step>\\d+)', pattern: 'y'}\n",
    )
    assert problems_of(spec) == [
        f"{spec}:7:3: run: duplicate key 'timeout' (first given on line 6)",
        f"{spec}:9:11: run.repeat: expected an integer >= 1, got 0",
        f"{spec}:11:34: markers[0]: duplicate key 'pattern' (first given on line 11)",
    ]


def test_a_key_that_is_no_string_is_said_with_the_files_other_problems(
    tmp_path: Path,
) -> None:
    """`env: {A: [1, 2], 1: x}` said only that 1 is no string: the schema pass never ran,
    and the list under A (and the file's other problems) came one fix later (note65)."""
    spec = write(
        tmp_path / "keys.yaml",
        "reprospec: 1\nname: e\nenvironment:\n  env: {A: [1, 2], 1: x, true: 2}\n"
        "command: echo\nexpect: {outcome: pass}\nrun: {timeout: -1}\n",
    )
    assert problems_of(spec) == [
        f"{spec}:4:12: environment.env.A: expected a string or a number or true or false or "
        "null, got a list",
        f"{spec}:4:20: environment.env: key 1 is not a string; quote it: '1'",
        f"{spec}:4:26: environment.env: key true is read as the boolean true; quote it: 'true'",
        f"{spec}:7:16: run.timeout: expected a number of seconds > 0, got -1",
    ]
    # A mapping that held only such keys is not also "empty" (review).
    for section, where in (
        ("matrix: {1: [x, y]}", "matrix"),
        ("matrix: {a: [1], exclude: [{1: x}]}", "matrix.exclude[0]"),
    ):
        write(spec, f"reprospec: 1\nname: e\ncommand: echo\n{section}\n")
        (problem,) = problems_of(spec)
        assert problem.endswith(f": {where}: key 1 is not a string; quote it: '1'")


def test_cells_of_one_id_are_said_with_the_files_other_problems(tmp_path: Path) -> None:
    """The matrix was expanded only in a file without any other problem: a bad
    `run.timeout` hid the two cells of one id until it was fixed."""
    spec = write(
        tmp_path / "ids.yaml",
        "reprospec: 1\nname: x\ncommand: python a.py ${{ matrix.n }}\n"
        "expect: {outcome: pass}\nmatrix: {n: [1, '1']}\nrun: {timeout: abc}\n",
    )
    assert problems_of(spec) == [
        f"{spec}:5:9: matrix: cells 1 and 2 have the same id 'n=1' (a repeated value, or "
        "values that render alike such as 1 and '1')",
        f"{spec}:6:16: run.timeout: expected a duration like 90s, 5m or 1h, got 'abc'",
    ]
