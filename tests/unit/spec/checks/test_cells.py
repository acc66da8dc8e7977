"""Cell checks: every `${{ }}` value of every cell checked when a spec loads, in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.inputs import Cell, Spec
from reprospec.core.runoptions import RunOptions
from reprospec.errors import SpecError
from reprospec.spec.checks.cells import cell_problems, find_sites
from reprospec.spec.load import load_spec
from reprospec.spec.matrix import expand

HEAD = "reprospec: 1\nname: s\ncommand: [python3, -c, \"open('EXECUTED', 'w')\"]\n"


def problems_of(tmp_path: Path, body: str, env: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + body + "expect: {outcome: pass}\n")
    if env is not None:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            return problems_of(tmp_path, body)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return [line.removeprefix(f"{path}:") for line in caught.value.problems]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "matrix: {t: [.nan, 5]}\nrun: {timeout: '${{ matrix.t }}'}\n",
            "5:16: run.timeout: expected a finite duration > 0, got nan (in cell t=nan)",
        ),
        (
            "matrix: {t: [-5, 5]}\nrun: {timeout: '${{ matrix.t }}'}\n",
            "5:16: run.timeout: expected a number of seconds > 0, got -5 (in cell t=-5)",
        ),
        (
            "matrix: {t: [0s, 5s]}\nrun: {timeout: '${{ matrix.t }}'}\n",
            "5:16: run.timeout: expected a finite duration > 0, got '0s' (in cell t=0s)",
        ),
        (
            "matrix: {m: [4g, lots]}\nenvironment: {memory: '${{ matrix.m }}'}\n",
            "5:23: environment.memory: expected a size like 64m or 4g, got 'lots' (in cell m=lots)",
        ),
        (
            "environment: {shm_size: \"${{ 'huge' }}\"}\n",
            "4:25: environment.shm_size: expected a size like 64m or 4g, got 'huge'"
            " (in cell default)",
        ),
        (
            "matrix: {g: [two, 1]}\nenvironment: {gpus: '${{ matrix.g }}'}\n",
            "5:21: environment.gpus: expected an integer >= 0, got 'two' (in cell g=two)",
        ),
        (
            "matrix: {p: [ok, '(']}\nmarkers: [{pattern: '${{ matrix.p }}', phase: x}]\n",
            "5:21: markers[0].pattern: bad regular expression: missing ), unterminated"
            " subpattern at position 0 (in cell p=()",
        ),
        (
            "matrix: {n: [1, x]}\nenvironment: {env: {X: '${{ matrix.n > 0 }}'}}\n",
            "5:24: environment.env.X: cannot evaluate 'matrix.n > 0' at column 10: cannot"
            " compare 'x' > 0 (a string and a number; only two numbers or two strings)"
            " (in cell n=x)",
        ),
        (
            # Not PEP 508: the local runner could name nothing to check, and passed the cell.
            "matrix: {r: [six==1.2, six=1.2]}\nenvironment: {packages: ['${{ matrix.r }}']}\n",
            "5:26: environment.packages[0]: 'six=1.2' is not a valid requirement"
            " (did you mean 'six==1.2'?) (in cell r=six=1.2)",
        ),
        (
            "run: {repeat: 3, timeout: '${{ attempt == 3 and -1 or 10 }}'}\n",
            "4:27: run.timeout: expected a number of seconds > 0, got -1"
            " (in cell default, attempt 3)",
        ),
    ],
)
def test_bad_evaluated_values_are_refused_naming_the_cell(
    tmp_path: Path, body: str, expected: str
) -> None:
    assert problems_of(tmp_path, body) == [expected]


def test_one_problem_in_many_cells_is_one_line(tmp_path: Path) -> None:
    body = "matrix: {a: [1, 2, 3, 4, 5], b: [x, 1]}\nenvironment: {gpus: '${{ matrix.b }}'}\n"
    (line,) = problems_of(tmp_path, body)
    assert line.startswith("5:21: environment.gpus: expected an integer >= 0, got 'x'")
    assert line.endswith("(in cells a=1,b=x; a=2,b=x; a=3,b=x and 2 more)")


def test_values_from_the_engine_environment_are_not_printed(tmp_path: Path) -> None:
    body = "environment: {memory: '${{ env.REPROSPEC_TEST_SECRET }}'}\n"
    (line,) = problems_of(tmp_path, body, env={"REPROSPEC_TEST_SECRET": "hunter2"})
    assert "hunter2" not in line
    assert "got the value of env.REPROSPEC_TEST_SECRET (in cell default)" in line


def test_control_characters_of_a_cell_id_are_escaped(tmp_path: Path) -> None:
    body = 'matrix: {f: ["a\\x1b[2Jb"]}\nenvironment: {gpus: "${{ matrix.f }}"}\n'
    (line,) = problems_of(tmp_path, body)
    assert "\x1b" not in line
    assert "(in cell f=a\\x1b[2Jb)" in line


def test_good_values_pass_and_sites_are_found(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        HEAD + "matrix: {t: [5s, 1m], g: [0, 1]}\n"
        "environment:\n  gpus: '${{ matrix.g }}'\n"
        "  memory: \"${{ matrix.g == 0 and '2g' or '4g' }}\"\n"
        "run: {timeout: '${{ matrix.t }}'}\nexpect: {outcome: error, message: '${{ matrix.t }}'}\n"
    )
    spec = load_spec(path)
    assert [s.path for s in find_sites(spec.document)] == [
        ("environment", "gpus"),
        ("environment", "memory"),
        ("run", "timeout"),
        ("expect", "message"),
    ]
    assert all(cell_problems(spec.document, spec.locations, [cell]) == [] for cell in expand(spec))


def test_a_stall_an_include_only_axis_leaves_null_is_no_stall(tmp_path: Path) -> None:
    # `stall: null` is the default (the timeout only); from an axis only `include` sets it
    # was refused in the other cells: "expected a duration like 90s, got null".
    from reprospec.plan.run import plan_run

    path = tmp_path / "s.yaml"
    path.write_text(
        HEAD + "matrix: {a: [1], include: [{a: 2, t: 2s}]}\n"
        "run: {timeout: 10s, stall: '${{ matrix.t }}'}\nexpect: {outcome: pass}\n"
    )
    plan = plan_run(load_spec(path), RunOptions(out=tmp_path))
    assert [(a.cell.id, a.stall_s) for a in plan.first_attempts()] == [
        ("a=1", None),
        ("a=2,t=2s", 2.0),
    ]
    # Another value is still refused in its cell.
    body = "matrix: {a: [1], include: [{a: 2, t: soon}]}\nrun: {stall: '${{ matrix.t }}'}\n"
    (line,) = problems_of(tmp_path, body)
    assert "run.stall: expected a duration like 90s, 5m or 1h, got 'soon' (in cell a=2,t=soon)" in (
        line
    )


def test_check_cell_values_of_one_cell_of_a_loaded_spec(tmp_path: Path) -> None:
    spec = Spec(
        path=tmp_path / "s.yaml",
        name="s",
        document={"name": "s", "environment": {"gpus": "${{ matrix.g }}"}},
        source_text="",
        locations={("environment", "gpus"): (7, 9)},
    )
    (problem,) = cell_problems(spec.document, spec.locations, [Cell("g=-2", 0, {"g": -2})])
    assert problem.format("s.yaml") == (
        "s.yaml:7:9: environment.gpus: expected an integer >= 0, got -2 (in cell g=-2)"
    )
    assert cell_problems(spec.document, spec.locations, [Cell("g=2", 1, {"g": 2})]) == []
    assert cell_problems(spec.document, spec.locations, []) == []


def test_a_field_of_set_words_takes_one_whole_expression_checked_per_cell(tmp_path: Path) -> None:
    # spec-format.md's own example: `and`/`or` pick the outcome a cell expects.
    from reprospec.plan.attempt import expectation_for

    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\nmatrix: {n: [0, 3], sig: [SIGSEGV]}\n"
        "command: \"sh -c 'exit ${{ matrix.n }}'\"\n"
        "markers: [{preset: \"${{ matrix.n == 0 and 'steps' or 'pytest' }}\"}]\n"
        "expect:\n  outcome: ${{ matrix.n == 0 and 'pass' or 'crash' }}\n"
        "  signal: ${{ matrix.n == 0 and [] or [matrix.sig] }}\n"
    )
    spec = load_spec(path)
    outcomes = {c.id: expectation_for(spec, c).outcome for c in expand(spec)}
    assert outcomes == {"n=0,sig=SIGSEGV": "pass", "n=3,sig=SIGSEGV": "crash"}
    path.write_text(path.read_text().replace("'crash'", "'crashed'"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert [line.removeprefix(f"{path}:") for line in caught.value.problems] == [
        "7:12: expect.outcome: expected one of pass, error, crash, hang, fail, got 'crashed'"
        " (did you mean 'crash'?) (in cell n=3,sig=SIGSEGV)"
    ]


def test_entrypoints_steps_and_rates_take_one_whole_expression_checked_per_cell(
    tmp_path: Path,
) -> None:
    # A matrix over datasets or models (`entrypoint: ${{ matrix.ds }}`) and an expect whose
    # step or rate differs per cell were refused as text, against spec-format.md's rule
    # that a patterned field takes one whole `${{ }}`, its value checked per cell.
    from reprospec.plan.attempt import expectation_for

    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\nmatrix: {ds: ['ds:A', 'ds:B'], n: [1, 2]}\n"
        "workload:\n  model: {entrypoint: '${{ matrix.ds }}', loss: '${{ matrix.ds }}'}\n"
        "  data: {dataset: {entrypoint: '${{ matrix.ds }}', shape: [4]}}\n"
        "  phases: [{name: train, steps: 3}]\n"
        "expect:\n  outcome: error\n  step: ${{ matrix.n == 1 and 1 or '2..3' }}\n"
        "  rate: ${{ matrix.n == 1 and '>0' or '>=0.5' }}\n"
    )
    spec = load_spec(path)
    got = {c.id: expectation_for(spec, c) for c in expand(spec)}
    steps = {k: (s.low, s.high) for k, e in got.items() if (s := e.step) is not None}
    rates = {k: (r.op, r.value) for k, e in got.items() if (r := e.rate) is not None}
    assert steps == {
        "ds=ds:A,n=1": (1, 1),
        "ds=ds:A,n=2": (2, 3),
        "ds=ds:B,n=1": (1, 1),
        "ds=ds:B,n=2": (2, 3),
    }
    assert rates["ds=ds:A,n=1"] == (">", 0.0)
    assert rates["ds=ds:B,n=2"] == (">=", 0.5)
    path.write_text(
        path.read_text()
        .replace("['ds:A', 'ds:B']", "['ds:A', 'ds B']")
        .replace("'2..3'", "'3..2'")
        .replace("'>=0.5'", "'>=1'")
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    problems = [line.removeprefix(f"{path}:") for line in caught.value.problems]
    assert any(
        "workload.model.entrypoint: expected an entrypoint like" in p and "ds=ds B" in p
        for p in problems
    ), problems
    assert any("expect.step:" in p and "n=2" in p for p in problems), problems
    assert any("expect.rate: rate '>=1' can never be reproduced" in p for p in problems), problems


def test_exit_codes_and_marker_steps_take_one_whole_expression_checked_per_cell(
    tmp_path: Path,
) -> None:
    # spec-format.md "Where.": a number field accepts one whole `${{ }}`; expect.exit_code
    # (a case's too) and a marker's step were refused as text.
    from reprospec.plan.attempt import expectation_for, plan_attempt

    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\nmatrix:\n  code: [0, 3]\n  include: [{code: 5}]\n"
        "command: \"sh -c 'exit ${{ matrix.code }}'\"\n"
        "markers: [{pattern: go, phase: t, step: '${{ matrix.code == 5 and 6 or 2 }}'}]\n"
        "expect:\n  outcome: error\n  exit_code: ${{ matrix.code }}\n"
        "  cases: [{when: {code: 5}, exit_code: '${{ matrix.code == 5 and 4 or 1 }}'}]\n"
    )
    spec = load_spec(path)
    codes = {c.id: expectation_for(spec, c).exit_code for c in expand(spec)}
    assert codes == {"code=0": 0, "code=3": 3, "code=5": 4}
    steps = {c.id: plan_attempt(spec, c, 1).markers[0].step for c in expand(spec)}
    assert steps == {"code=0": 2, "code=3": 2, "code=5": 6}
    path.write_text(
        path.read_text()
        .replace("[0, 3]", "[0, 300]")
        .replace("and 6 or 2", "and 6 or -1")
        .replace("and 4 or", "and ''x'' or")
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert [line.removeprefix(f"{path}:") for line in caught.value.problems] == [
        "7:41: markers[0].step: expected an integer >= 0, got -1 (in cells code=0; code=300)",
        "10:14: expect.exit_code: expected an integer from 0 to 255, got 300 (in cell code=300)",
        "11:40: expect.cases[0].exit_code: expected an integer from 0 to 255, got 'x'"
        " (in cell code=5)",
    ]


def test_an_expect_field_is_checked_only_in_the_cells_whose_expectation_reads_it(
    tmp_path: Path,
) -> None:
    # A case's `${{ }}` field was evaluated in every cell, also those its `when` does not
    # match: `${{ matrix.code == 5 and 4 }}` (false for code=0) was refused there, and a
    # base field a case replaces was checked in the case's cells (it is never read there).
    from reprospec.plan.attempt import expectation_for

    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\nmatrix:\n  code: [0, 3, 5, 7, 9]\n"
        "command: \"sh -c 'exit ${{ matrix.code }}'\"\n"
        "expect:\n  outcome: error\n  exit_code: ${{ matrix.code == 9 and 9 }}\n"
        "  cases:\n"
        "    - {when: {code: 0}, outcome: pass}\n"
        "    - {when: {code: 3}, exit_code: '${{ matrix.code == 3 and 3 }}'}\n"
        "    - {when: {code: 5}, outcome: error, exit_code: '${{ matrix.code == 5 and 5 }}'}\n"
        "    - {when: {code: 7}, exit_code: 7}\n"
    )
    spec = load_spec(path)
    codes = {c.id: expectation_for(spec, c).exit_code for c in expand(spec)}
    assert codes == {"code=0": None, "code=3": 3, "code=5": 5, "code=7": 7, "code=9": 9}
    # A type error in a cell that reads the field is still refused there, located.
    path.write_text(path.read_text().replace("code == 5 and 5", "code == 5 and ''x''"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert [line.removeprefix(f"{path}:") for line in caught.value.problems] == [
        "12:52: expect.cases[2].exit_code: expected an integer from 0 to 255, got 'x'"
        " (in cell code=5)",
    ]


def test_a_pass_with_a_never_rate_is_refused_in_the_cells_an_expression_makes_it(
    tmp_path: Path,
) -> None:
    # `outcome: pass` with `rate: '==0'` is refused written literally (it says
    # the cell never passes), but an expression outcome giving pass validated and judged
    # `pass 3/3 ... not-reproduced` in that cell.
    path = tmp_path / "s.yaml"
    path.write_text(
        "reprospec: 1\nname: s\nmatrix:\n  n: [0, 1]\n"
        "command: \"sh -c 'exit ${{ matrix.n }}'\"\nrun: {repeat: 3}\n"
        "expect:\n  outcome: \"${{ matrix.n == 0 and 'pass' or 'error' }}\"\n  rate: '==0'\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}:9:9: expect.rate: rate '==0' counts the attempts that pass")
    assert problem.endswith("(in cell n=0)")
    # An error that never happens (the other cell) is a rate to say: valid.
    path.write_text(path.read_text().replace("'pass' or 'error'", "'error' or 'crash'"))
    load_spec(path)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "matrix: {k: [abort, segfalt]}\nworkload:\n  phases: [{name: t, steps: 1}]\n"
            "  faults: [{kind: '${{ matrix.k }}'}]\n",
            "6:19: workload.faults[0].kind: expected one of segfault, abort, bus_error,"
            " illegal_instruction, fpe, hang, raise, oom, exit, skip_allreduce, got 'segfalt'"
            " (did you mean 'segfault'?) (in cell k=segfalt)",
        ),
        (
            "markers: [{preset: \"${{ 'stepz' }}\"}]\n",
            "4:20: markers[0].preset: expected one of tqdm, lightning, hf-trainer, gtest, pytest,"
            " steps, got 'stepz' (did you mean 'steps'?) (in cell default)",
        ),
    ],
)
def test_a_word_an_expression_gives_is_one_of_the_fields_words(
    tmp_path: Path, body: str, expected: str
) -> None:
    if "workload" in body:
        path = tmp_path / "s.yaml"
        path.write_text("reprospec: 1\nname: s\n" + body + "expect: {outcome: crash}\n")
        with pytest.raises(SpecError) as caught:
            load_spec(path)
        got = [line.removeprefix(f"{path}:") for line in caught.value.problems]
        assert got == [expected]
        return
    assert problems_of(tmp_path, body) == [expected]


def test_run_wide_fields_take_no_expression(tmp_path: Path) -> None:
    # repeat, parallel and stop_on hold for the whole run: a cell cannot choose them.
    (line,) = problems_of(tmp_path, "matrix: {s: [never]}\nrun: {stop_on: '${{ matrix.s }}'}\n")
    assert line.startswith("5:16: run.stop_on: expected one of never, first-reproduction")


def test_literal_packages_that_are_not_requirements_are_located(tmp_path: Path) -> None:
    body = (
        "environment:\n"
        "  packages: [six=1.2, 'torch>>2', 'foo bar', six==1.2, \"six; python_version<'3'\",\n"
        "             ./w/numpy-2.1.0-cp311-cp311-linux_x86_64.whl, git+https://h/x.git]\n"
    )
    assert problems_of(tmp_path, body) == [
        "5:14: environment.packages[0]: 'six=1.2' is not a valid requirement"
        " (did you mean 'six==1.2'?)",
        "5:23: environment.packages[1]: 'torch>>2' is not a valid requirement"
        " (did you mean 'torch>2'?)",
        "5:35: environment.packages[2]: 'foo bar' is not a valid requirement: expected a"
        " PEP 508 requirement such as 'six==1.2' or 'torch>=2'",
    ]


@pytest.mark.parametrize(
    ("memory", "shown"),
    [
        ("4096", "4.0 KiB"),  # meant as MiB: the exec of the shell died of SIGSEGV
        ("'2m'", "2.0 MiB"),  # the shell could not map libc: exit 127
        ("5m", "5.0 MiB"),
        ("'${{ 1024 }}'", "1.0 KiB"),
    ],
)
def test_a_memory_limit_no_program_can_start_under_is_refused(
    tmp_path: Path, memory: str, shown: str
) -> None:
    """Under about 1 MiB of address space the attempt's `/bin/sh` died of SIGSEGV in its
    exec, and the cell was judged a reproduced `crash SIGSEGV` of a program that never ran."""
    (line,) = problems_of(tmp_path, f"environment: {{memory: {memory}}}\n")
    assert line.startswith(
        f"4:23: environment.memory: a memory limit of {shown} is below the 6.0 MiB an attempt"
        " needs to start a program"
    ), line
    assert "4096m is 4 GiB (docs/limits.md)" in line


def test_a_memory_limit_at_the_floor_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "environment: {memory: 6m}\nexpect: {outcome: pass}\n")
    assert load_spec(path).document["environment"] == {"memory": "6m"}
