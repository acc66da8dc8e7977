"""The report's standalone repro: the generated repro.py against its golden, and why a distributed
workload has none."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shlex
from pathlib import Path

import pytest

import reprospec
from reprospec.core.redact import Redactor
from reprospec.core.runoptions import RunOptions
from reprospec.environment.packages import pins
from reprospec.plan.run import plan_run
from reprospec.plan.standalone import standalone_of
from tests.support.paths import GOLDEN
from tests.support.plans import SYNTHETIC_SPEC
from tests.support.secretnames import COUNTS, LOOKALIKES, named_secrets

if importlib.util.find_spec("torch") is None:
    pytest.skip("skipped: torch is not installed in the test interpreter", allow_module_level=True)


pytestmark = pytest.mark.torch


UPDATE = os.environ.get("REPROSPEC_UPDATE_GOLDEN") == "1"


def test_generated_script_matches_its_golden(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        SYNTHETIC_SPEC.replace("{outcome: error}", "{outcome: pass}")
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    text = standalone_of(
        plan, tmp_path, expected="pass @ validation:4", spec_name="synthetic-pass"
    ).script
    path = GOLDEN / "repro-synthetic.py"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), "repro.py differs from its golden file"


def test_distributed_workload_has_no_script_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: ddp\nworkload:\n  distributed: {world_size: 2, backend: gloo}\n"
        "expect: {outcome: pass}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    standalone = standalone_of(plan, tmp_path)
    assert standalone.script == ""
    assert "workload.distributed" in standalone.unavailable


@pytest.mark.parametrize(
    ("run", "limit"),
    [
        ("{timeout: 90s, stall: 10s}", "no progress for 10s (run.stall)"),
        ("{timeout: 90s}", "90s (run.timeout)"),
    ],
)
def test_an_expected_hang_says_what_stopped_it_in_the_run(
    tmp_path: Path, run: str, limit: str
) -> None:
    (tmp_path / "spec.yaml").write_text(
        f"reprospec: 1\nname: stuck\ncommand: sleep 1000\nrun: {run}\nexpect: {{outcome: hang}}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    notes = standalone_of(plan, tmp_path, expected="hang", spec_name="stuck").notes
    assert notes == (
        f"the run called it a hang after {limit} and stopped it; this does not stop by "
        "itself: interrupt it (Ctrl-C) once it has stopped moving",
    )


def test_an_amplified_cell_says_a_plain_command_line_leaves_the_perturbation_out(
    tmp_path: Path,
) -> None:
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: race\ncommand: python race.py\n"
        "environment: {perturb: {switch_interval: 1e-06}}\n"
        "expect: {outcome: error, exception: AssertionError}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    (note,) = standalone_of(plan, tmp_path, expected="error", spec_name="race").notes
    assert note.startswith("the run applied environment.perturb (switch_interval=1e-06)")
    assert "a plain command line does not" in note


def test_a_cell_expected_to_crash_has_no_hang_note(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: boom\ncommand: sleep 1\nrun: {timeout: 90s, stall: 10s}\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    assert standalone_of(plan, tmp_path, expected="crash", spec_name="boom").notes == ()


@pytest.mark.parametrize("when", ["no", '"${{ matrix.inject }}"', "0", "''"])
def test_a_fault_whose_when_is_false_in_words_is_left_out_and_the_script_is_written(
    tmp_path: Path, when: str
) -> None:
    # The harness leaves such a fault out, so the cell's failure is no injected one: a
    # standalone repro exists (it says the spec's faults are left out, as for any).
    spec = SYNTHETIC_SPEC.replace(
        "    - {kind: raise, where: main, at: {phase: train, step: 2}}",
        f"    - {{kind: raise, where: main, at: {{phase: train, step: 2}}, when: {when}}}",
    ).replace("workload:\n", "matrix: {inject: ['no']}\nworkload:\n")
    (tmp_path / "spec.yaml").write_text(spec)
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    standalone = standalone_of(plan, tmp_path, expected="error", spec_name="synthetic-pass")
    assert standalone.unavailable == ""
    assert "python repro.py" in standalone.run


def test_the_repro_is_for_the_cell_the_failure_section_leads_with() -> None:
    """The first cell where the expected failure reproduced, not an earlier cell's unexpected
    error: the headline and the Failure section lead with the expected crash, and a repro of
    the other bug beside them named another failure (helper-j J9)."""
    from reprospec.core.inputs import Cell, Expectation, ExpectedOutcome
    from reprospec.core.results import (
        AttemptResult,
        CellResult,
        Outcome,
        OutcomeKind,
        Rate,
        VerdictKind,
    )
    from reprospec.plan.standalone import choose_cell

    def cell(
        index: int, expected: ExpectedOutcome, verdict: VerdictKind, kind: OutcomeKind | None
    ) -> CellResult:
        attempts = (
            ()
            if kind is None
            else (
                AttemptResult(
                    attempt=1,
                    duration_s=0.1,
                    outcome=Outcome(kind=kind),
                    matched=verdict == "reproduced",
                    mismatches=(),
                    logs="",
                ),
            )
        )
        return CellResult(
            Cell(f"c{index}", index, {"i": index}),
            Expectation(expected),
            verdict,
            "",
            Rate(1, 1, 0.0, 1.0),
            attempts,
        )

    unexpected = cell(0, "pass", "not-reproduced", "error")
    passing = cell(1, "pass", "reproduced", "pass")
    expected = cell(2, "crash", "reproduced", "crash")
    assert choose_cell([unexpected, passing, expected]) is expected
    # No expected failure reproduced: the first that failed, else the first that ran.
    assert choose_cell([passing, unexpected]) is unexpected
    assert choose_cell([cell(3, "pass", "not-run", None), passing]) is passing


def test_a_setting_the_spec_writes_is_in_the_command_line_and_a_secret_is_not(
    tmp_path: Path,
) -> None:
    # A captured `MAX_TOKENS: '2048'` ran as `MAX_TOKENS="$MAX_TOKENS"`, empty in the
    # reader's shell: its name holds a secret's word, but its last word is no secret's.
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: s\nenvironment:\n"
        "  env: {MAX_TOKENS: '2048', WANDB_API_KEY: wk-0123456789}\n"
        "command: python train.py\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    standalone = standalone_of(plan, tmp_path)
    assert standalone.run is not None
    assert "MAX_TOKENS=2048 " in standalone.run
    assert 'WANDB_API_KEY="$WANDB_API_KEY"' in standalone.run
    assert standalone.env["MAX_TOKENS"] == "2048"
    assert standalone.env["WANDB_API_KEY"] == "***"


@pytest.mark.parametrize("length", ["short", "long"])
def test_the_repro_takes_a_secret_from_the_readers_environment_by_the_reports_rule(
    tmp_path: Path, length: str
) -> None:
    # `GITHUB_TOKEN_RO` (last word `ro`) was written in clear in the command line, and
    # `API_TOKEN: tok`, which the report's spec shows, read `API_TOKEN="$API_TOKEN"`: empty.
    secrets = named_secrets(length)
    settings = {**COUNTS, **LOOKALIKES}
    env = {**secrets, **settings}
    lines = "".join(f"    {name}: {json.dumps(value)}\n" for name, value in env.items())
    (tmp_path / "spec.yaml").write_text(
        f"reprospec: 1\nname: s\nenvironment:\n  env:\n{lines}command: python x.py\n"
    )
    spec = reprospec.load_spec(tmp_path / "spec.yaml")
    plan = plan_run(spec, RunOptions()).attempts[0]
    standalone = standalone_of(plan, tmp_path)
    assert standalone.run is not None
    kept = Redactor.for_spec(spec.document, {})
    for name, value in secrets.items():
        assert f'{name}="${name}"' in standalone.run
        assert value not in standalone.run
        assert standalone.env[name] == "***"
        assert value in kept.values  # and the report masks it
    for name, value in settings.items():
        assert f"{name}={shlex.quote(value)} " in standalone.run
    # A workload's repro.py: the secret is named for the reader to set, never written.
    (tmp_path / "spec.yaml").write_text(
        SYNTHETIC_SPEC.replace(
            "HF_TOKEN: hf_not_for_reports", f"GITHUB_TOKEN_RO: {secrets['GITHUB_TOKEN_RO']}"
        )
        .replace('OMP_NUM_THREADS: "1"', 'MAX_TOKENS: "2048"')
        .replace("{outcome: error}", "{outcome: pass}")  # an injected failure has no repro
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    script = standalone_of(plan, tmp_path).script
    assert secrets["GITHUB_TOKEN_RO"] not in script
    assert "# GITHUB_TOKEN_RO: set it yourself (its value is not written)" in script
    assert "os.environ['MAX_TOKENS'] = '2048'" in script


def test_a_value_the_reports_spec_shows_is_written_in_the_repro(tmp_path: Path) -> None:
    # `API_TOKEN: tok`, too short to mask in a text, was kept in the report's spec,
    # while the repro read `API_TOKEN="$API_TOKEN"`: empty in the reader's shell.
    env = {**COUNTS, "API_TOKEN": "tok", "AUTH_ENABLED": "true"}
    lines = "".join(f"    {name}: {json.dumps(value)}\n" for name, value in env.items())
    (tmp_path / "spec.yaml").write_text(
        f"reprospec: 1\nname: s\nenvironment:\n  env:\n{lines}command: python x.py\n"
    )
    spec = reprospec.load_spec(tmp_path / "spec.yaml")
    standalone = standalone_of(plan_run(spec, RunOptions()).attempts[0], tmp_path)
    assert standalone.run is not None
    assert Redactor.for_spec(spec.document, {}).values == ()  # the report shows them all
    for name, value in env.items():
        assert f"{name}={shlex.quote(value)} " in standalone.run
        assert standalone.env[name] == value


ENV_SPEC = (
    "reprospec: 1\nname: env\ncommand: python app.py\nexpect: {outcome: pass}\n"
    "environment:\n  python: '3.10'\n  dockerfile: docker/Dockerfile\n"
    "  packages: [six==1.16.0]\n"
)


@pytest.mark.parametrize(
    ("runner", "ran", "expected"),
    [
        (
            # "the run gave the cell the image nosuch/Dockerfile, packages
            # six==1.16.0, Python 3.10" of a local run on 3.11.7 that only checked them.
            "local",
            "3.11.7",
            (
                "the run checked that its interpreter had packages six==1.16.0 (the local "
                "runner installs none); a plain command line runs with whatever yours has",
                "the spec names Python 3.10; this run had 3.11.7",
            ),
        ),
        (
            "venv",
            "3.10.14",
            (
                "the run gave the cell packages six==1.16.0, Python 3.10; "
                "a plain command line does not",
            ),
        ),
        (
            # A Dockerfile says what the image has: the spec's packages are checked, not given.
            "docker",
            "3.12.1",
            (
                "the run gave the cell the image docker/Dockerfile; a plain command line does not",
                "the run checked that its interpreter had packages six==1.16.0 (the docker "
                "runner installs none); a plain command line runs with whatever yours has",
                "the spec names Python 3.10; this run had 3.12.1",
            ),
        ),
    ],
)
def test_notes_say_given_only_of_what_the_runner_gave(
    tmp_path: Path, runner: str, ran: str, expected: tuple[str, ...]
) -> None:
    (tmp_path / "spec.yaml").write_text(ENV_SPEC)
    (tmp_path / "docker").mkdir()  # a spec's dockerfile must be there
    (tmp_path / "docker" / "Dockerfile").write_text("FROM reprospec-runner:latest\n")
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    notes = standalone_of(plan, tmp_path, runner=runner, ran_python=ran).notes
    assert notes == expected


DEFAULT = "the image reprospec-runner:latest (the default: `reprospec docker setup` builds it)"


@pytest.mark.parametrize(
    ("environment", "given"),
    [
        ("{}", DEFAULT),
        ("{packages: [six==1.16.0]}", f"{DEFAULT}, packages six==1.16.0"),
        ("{image: 'python:3.11-slim'}", "the image python:3.11-slim"),
    ],
)
def test_a_docker_cell_names_the_image_it_ran_in_the_default_too(
    tmp_path: Path, environment: str, given: str
) -> None:
    """A docker run of a spec that names no image ran in reprospec-runner:latest: its repro
    said nothing of an image (no note, so the bare line under the headline read as if it ran
    on the reader's own Python), where a spec's own `image` was named."""
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: img\ncommand: python app.py\nexpect: {outcome: error}\n"
        f"environment: {environment}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    notes = standalone_of(plan, tmp_path, runner="docker").notes
    assert notes == (f"the run gave the cell {given}; a plain command line does not",)
    assert not any("image" in n for n in standalone_of(plan, tmp_path, runner="local").notes)


def test_a_venv_cells_notes_pin_what_its_ranges_resolved_to(tmp_path: Path) -> None:
    """`six<1.17` installed as six 1.16.0: the note says so and the pip line to get it;
    extras are kept and a wheel's entry, whose freeze line is a URL, is pinned by the spec's
    own entry (review: `torch==file:///...` was no requirement, `[socks]` was lost)."""
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: env\ncommand: python app.py\nexpect: {outcome: pass}\n"
        "environment:\n  packages: ['six<1.17', 'requests[socks]<3', ./w/x-1.0-py3-none-any.whl]\n"
    )
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "x-1.0-py3-none-any.whl").write_bytes(b"")
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    installed = {"six": "1.16.0", "requests": "2.32.3", "x": "file:///w/x-1.0-py3-none-any.whl"}
    pinned = pins(plan.environment.packages, installed)
    (note,) = standalone_of(plan, tmp_path, runner="venv", pins=pinned).notes
    line = "six==1.16.0 'requests[socks]==2.32.3'"
    assert note == (
        "the run gave the cell packages six<1.17, requests[socks]<3, ./w/x-1.0-py3-none-any.whl"
        f" (installed as {line}: `pip install {line}`); a plain command line does not"
    )


def test_each_instance_gets_its_variables_in_a_shell_line_it_runs_whole(tmp_path: Path) -> None:
    # `RANK=$i cd sub && python x.py --rank $RANK &` gave RANK to the `cd` alone, and $RANK
    # was expanded by the loop's shell before it: each copy is `sh -c LINE`.
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: ranks\ncommand: cd . && python x.py --rank $RANK\n"
        "run: {instances: 2}\nexpect: {outcome: error}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    line = standalone_of(plan, tmp_path).run
    assert "MASTER_PORT=29500 sh -c 'cd . && python x.py --rank $RANK' &\n" in line
    # One simple command that reads no variable of the loop keeps its form.
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: ranks\ncommand: python x.py --n 3 2>&1\n"
        "run: {instances: 2}\nexpect: {outcome: error}\n"
    )
    plan = plan_run(reprospec.load_spec(tmp_path / "spec.yaml"), RunOptions()).attempts[0]
    assert "MASTER_PORT=29500 python x.py --n 3 2>&1 &\n" in standalone_of(plan, tmp_path).run
