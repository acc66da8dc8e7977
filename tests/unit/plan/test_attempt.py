"""plan.py: interpolated attempt plans, expectations per cell, value parsers, describe()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprospec.core.inputs import Cell
from reprospec.core.units import RateBound, StepRange, parse_duration, parse_rate, parse_step
from reprospec.errors import SpecError
from reprospec.plan.attempt import describe, expectation_for, plan_attempt
from reprospec.spec.load import load_spec
from reprospec.spec.matrix import expand
from tests.support.data import at
from tests.support.paths import DATA

EXAMPLE = DATA / "spec_format_example.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        ("250ms", 0.25),
        ("10", 10.0),
        (7, 7.0),
        (0.5, 0.5),
        (" 2m ", 120.0),
        # A number of seconds as Python writes one: `--timeout 1e9` was refused, and a
        # spec capture wrote of it (`timeout: 1e+09s`, format_duration's) could not load.
        ("1e9", 1e9),
        ("1e+09s", 1e9),
        ("2.5e-1s", 0.25),
        ("1.5e1m", 900.0),
    ],
)
def test_parse_duration(value: str | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "5 minutes", "m", "-1s", "1d", "1e", "e9", True, None])
def test_parse_duration_rejects(value: object) -> None:
    with pytest.raises(ValueError, match="expected a duration like 90s, 5m or 1h"):
        parse_duration(value)


def test_parse_step_and_rate() -> None:
    assert parse_step(7) == StepRange(7, 7)
    assert parse_step("7") == StepRange(7, 7)
    assert parse_step("6..8") == StepRange(6, 8)
    assert 7 in parse_step("6..8")
    assert 9 not in parse_step("6..8")
    with pytest.raises(ValueError, match=r"step range 9\.\.3 is reversed"):
        parse_step("9..3")
    with pytest.raises(ValueError, match=r"expected a step N or a range A\.\.B"):
        parse_step("6-8")
    assert parse_rate(">=0.3") == RateBound(">=", 0.3)
    assert parse_rate("== 1") == RateBound("==", 1.0)
    for bad in ("0.3", ">=1.5", "=>0.3"):
        with pytest.raises(ValueError, match="expected a rate bound"):
            parse_rate(bad)


def test_example_plans_every_cell() -> None:
    spec = load_spec(EXAMPLE)
    cells = expand(spec)
    plans = [plan_attempt(spec, cell, 1, base_env={}) for cell in cells]
    assert [p.cell.id for p in plans] == [
        "num_workers=0,pin_memory=false",
        "num_workers=0,pin_memory=true",
        "num_workers=2,pin_memory=false",
        "num_workers=2,pin_memory=true",
    ]
    last = plans[-1]
    assert last.argv is None
    assert last.workload is not None
    assert at(last.workload, "data", "loader", "num_workers") == 2
    assert at(last.workload, "data", "loader", "pin_memory") is True
    assert at(last.workload, "faults", 0, "when") is True
    assert plans[2].workload is not None
    assert at(plans[2].workload, "faults", 0, "when") is False
    assert last.env == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert last.workdir == EXAMPLE.parent.resolve()
    assert last.timeout_s == 60.0
    assert last.environment.shm_size == 64 * 2**20
    assert [p.expectation.outcome for p in plans] == ["pass", "pass", "pass", "crash"]
    assert last.expectation.signal == "SIGSEGV"
    assert last.expectation.step == StepRange(6, 8)
    # A case that changes the outcome does not inherit the crash's details.
    assert plans[0].expectation.signal is None
    assert plans[0].expectation.step is None


def test_command_string_list_and_context(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "reprospec: 1\nname: cmd\n"
        "matrix:\n  trainer: [ddp]\n  flag: [true]\n"
        "environment:\n  workdir: sub/${{ matrix.trainer }}\n"
        "  env: {N: 3, B: true, T: '${{ matrix.trainer }}-${{ attempt }}', Z: null}\n"
        "command: python run.py trainer=${{ matrix.trainer }} flag=${{ matrix.flag }}"
        " id=${{ cell.id }} spec=${{ spec.name }} home=${{ env.HOME }}\n"
        "markers:\n  - pattern: 'step (?P<step>\\d+) ${{ matrix.trainer }}'\n    phase: train\n"
        "run: {timeout: 1.5s}\n"
        "expect: {outcome: error, exit_code: 3, message: 'bad ${{ matrix.trainer }}'}\n",
    )
    (tmp_path / "sub" / "ddp").mkdir(parents=True)  # a cell's workdir must be there
    spec = load_spec(path)
    (cell,) = expand(spec)
    plan = plan_attempt(spec, cell, 2, base_env={"HOME": "/h"})
    assert plan.argv == (
        "/bin/sh",
        "-c",
        "python run.py trainer=ddp flag=true id=trainer=ddp,flag=true spec=cmd home=/h",
    )
    assert plan.env == {"N": "3", "B": "true", "T": "ddp-2", "Z": ""}
    assert plan.workdir == (tmp_path / "sub" / "ddp").resolve()
    assert plan.timeout_s == 1.5
    assert plan.markers[0].pattern == "step (?P<step>\\d+) ddp"
    assert plan.markers[0].phase == "train"
    assert plan.expectation.to_dict() == {"outcome": "error", "exit_code": 3, "message": "bad ddp"}

    spec_list = load_spec(path, ["command=[python, -c, '${{ attempt }}', 1, true]"])
    plan = plan_attempt(spec_list, cell, 4, base_env={})
    assert plan.argv == ("python", "-c", "4", "1", "true")


def test_case_keys_override_single_base_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "reprospec: 1\nname: c\ncommand: 'true'\n"
        "matrix:\n  a: [1, 2, 3]\n"
        "expect:\n  outcome: crash\n  signal: SIGSEGV\n  rate: '>=0.5'\n  cases:\n"
        "    - when: {a: 2}\n      signal: SIGABRT\n"
        "    - when: {a: 2}\n      outcome: pass\n"
        "    - when: {a: 3}\n      outcome: hang\n",
    )
    spec = load_spec(path)
    expectations = [expectation_for(spec, c).to_dict() for c in expand(spec)]
    assert expectations == [
        {"outcome": "crash", "signal": "SIGSEGV", "rate": ">=0.5"},
        {"outcome": "crash", "signal": "SIGABRT", "rate": ">=0.5"},  # first match wins
        {"outcome": "hang"},  # a new outcome starts afresh: not even the base's rate
    ]


def test_a_case_when_null_matches_the_cells_an_include_only_axis_leaves_out(
    tmp_path: Path,
) -> None:
    # Expressions read `matrix.pin` as null in the cells include gives no pin; so does a case.
    path = write(
        tmp_path,
        "reprospec: 1\nname: c\ncommand: 'true'\n"
        "matrix:\n  w: [0, 2]\n  include:\n    - {w: 4, pin: true}\n"
        "expect:\n  outcome: crash\n  cases:\n    - when: {pin: null}\n      outcome: pass\n",
    )
    spec = load_spec(path)
    outcomes = {c.id: expectation_for(spec, c).outcome for c in expand(spec)}
    assert outcomes == {"w=0": "pass", "w=2": "pass", "w=4,pin=true": "crash"}


def test_case_with_its_own_outcome_judges_every_attempt_unless_it_sets_a_rate(
    tmp_path: Path,
) -> None:
    # "GPU 0 always passes": with the base's rate it passed on 1 attempt in 3.
    path = write(
        tmp_path,
        "reprospec: 1\nname: c\ncommand: 'true'\n"
        "matrix:\n  gpu: [0, 1, 2]\n"
        "expect:\n  outcome: crash\n  signal: [SIGSEGV, SIGBUS]\n  rate: '>=0.3'\n"
        "  stage: backward\n  cases:\n"
        "    - when: {gpu: 0}\n      outcome: pass\n"
        "    - when: {gpu: 2}\n      outcome: pass\n      rate: '>=0.9'\n",
    )
    spec = load_spec(path)
    gpu1, gpu0, gpu2 = (expectation_for(spec, c) for c in sorted(expand(spec), key=_gpu1_first))
    assert gpu0.to_dict() == {"outcome": "pass"}
    assert gpu0.rate is None
    assert gpu2.to_dict() == {"outcome": "pass", "rate": ">=0.9"}
    assert gpu1.to_dict() == {
        "outcome": "crash",
        "signal": ["SIGSEGV", "SIGBUS"],
        "stage": "backward",
        "rate": ">=0.3",
    }
    assert gpu1.signals == ("SIGSEGV", "SIGBUS")


def _gpu1_first(cell: Cell) -> int:
    gpu = cell.matrix["gpu"]
    assert isinstance(gpu, int)
    return {1: 0, 0: 1, 2: 2}[gpu]


def test_bad_interpolated_timeout_is_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "reprospec: 1\nname: t\ncommand: 'true'\nmatrix:\n  t: [soon]\n"
        "run:\n  timeout: ${{ matrix.t }}\nexpect: {outcome: pass}\n",
    )
    # Caught when the spec is loaded (validate, plan, run), before any attempt is planned.
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == [
        f"{path}:7:12: run.timeout: expected a duration like 90s, 5m or 1h, got 'soon'"
        " (in cell t=soon)"
    ]


def test_evaluation_error_is_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "reprospec: 1\nname: t\nmatrix:\n  n: [x]\n"
        "command: echo ${{ matrix.n > 1 }}\nexpect: {outcome: pass}\n",
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems == [
        f"{path}:5:10: command: cannot evaluate 'matrix.n > 1' at column 10: "
        "cannot compare 'x' > 1 (a string and a number; only two numbers or two strings) "
        "(in cell n=x)"
    ]


def test_describe_is_json_and_complete() -> None:
    spec = load_spec(EXAMPLE)
    cell = expand(spec)[3]
    out = describe(plan_attempt(spec, cell, 1, base_env={}))
    assert json.loads(json.dumps(out)) == out
    assert out["id"] == "num_workers=2,pin_memory=true"
    assert out["matrix"] == {"num_workers": 2, "pin_memory": True}
    assert at(out, "workload", "data", "loader", "num_workers") == 2
    assert "command" not in out
    assert out["env"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert out["workdir"] == str(EXAMPLE.parent.resolve())
    assert out["timeout_s"] == 60.0
    assert out["expect"] == {
        "outcome": "crash",
        "signal": "SIGSEGV",
        "phase": "validation",
        "step": "6..8",
    }


def test_describe_command(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "reprospec: 1\nname: d\ncommand: [python, -c, 'print(1)']\nexpect: {outcome: pass}\n",
    )
    spec = load_spec(path)
    out = describe(plan_attempt(spec, expand(spec)[0], 1, base_env={}))
    assert out["command"] == "python -c 'print(1)'"
    assert out["argv"] == ["python", "-c", "print(1)"]
    assert out["id"] == "default"
    assert out["matrix"] == {}
    assert out["timeout_s"] == 600.0
