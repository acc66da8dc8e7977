"""A command that never started is infra-error with the reason, not a non-reproduction."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.results import AttemptResult, NotRun, Outcome
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.judge import judge_cell
from reprospec.pipeline.attempt import attempt_result
from reprospec.runners.local import LocalRunner
from tests.support.cli import Cli
from tests.support.plans import attempt_plan

PY = sys.executable


CRASH = Expectation("crash", signal="SIGSEGV")


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def run_attempt(
    runner: LocalRunner,
    argv: list[str] | str,
    tmp_path: Path,
    packages: tuple[str, ...] = (),
) -> AttemptResult:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    environment = {"device": "cpu", "packages": list(packages)}
    plan = replace(attempt_plan(argv, work, environment=environment), expectation=CRASH)
    execution = runner.run(plan, tmp_path / "attempt")
    return attempt_result(plan, execution, Evidence.read(execution))


def not_run(result: AttemptResult) -> str:
    assert isinstance(result.outcome, NotRun), result.outcome
    assert not result.matched
    verdict = judge_cell(CRASH, [result])
    assert verdict.kind == "infra-error"
    return result.outcome.reason


def test_command_not_found(runner: LocalRunner, tmp_path: Path) -> None:
    reason = not_run(run_attempt(runner, "trainer_that_is_not_installed --epochs 1", tmp_path))
    assert reason == "command not found: trainer_that_is_not_installed (exit 127)"


def test_command_not_executable(runner: LocalRunner, tmp_path: Path) -> None:
    script = tmp_path / "work" / "train.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho never\n")
    script.chmod(0o644)
    reason = not_run(run_attempt(runner, f"{script} --epochs 1", tmp_path))
    assert reason == f"not executable: {script}: Permission denied (exit 126)"


def test_python_cannot_open_the_script(runner: LocalRunner, tmp_path: Path) -> None:
    reason = not_run(run_attempt(runner, "python no_such_train.py --epochs 1", tmp_path))
    assert "can't open file" in reason
    assert "no_such_train.py" in reason
    assert reason.endswith("No such file or directory (exit 2)")


def test_python_cannot_open_a_script_whose_name_holds_a_quote(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # Python names it in double quotes then ("can't open file \"/w/it's a.py\""), and a
    # name with a space was no setup failure: a minimize candidate that dropped `-c` ran
    # `python 'CODE' ARG`, CODE holding quotes and spaces, and was read as the bug's error.
    reason = not_run(run_attempt(runner, 'python "it\'s not here.py" --epochs 1', tmp_path))
    assert "can't open file" in reason
    assert "it's not here.py" in reason
    assert reason.endswith("No such file or directory (exit 2)")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["t.py::test_typo"], "pytest ran no test: not found: "),
        (["no_such_test.py"], "pytest ran no test: file or directory not found: no_such_test.py"),
        (
            ["t.py", "--no-such-option"],
            "pytest ran no test: unrecognized arguments: --no-such-option",
        ),
        (
            ["t.py", "-k", "typo"],
            "pytest ran no test, none collected or selected: collected 1 item",
        ),
    ],
)
def test_a_pytest_command_that_ran_no_test_is_infra_error(
    runner: LocalRunner, tmp_path: Path, args: list[str], said: str
) -> None:
    # A typo in the test id (pytest's exit 4) or a `-k` that selects nothing (exit 5) ran
    # no test: it read `error exit 4`, which met a spec's `expect: {outcome: error}` as
    # reproduced, and named only `(no match in any of [<Module t.py>])`.
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "t.py").write_text("def test_fails():\n    assert False\n")
    argv = [PY, "-m", "pytest", *args, "-p", "no:cacheprovider", "-v"]
    reason = not_run(run_attempt(runner, argv, tmp_path))
    assert reason.startswith(said), reason
    assert reason.endswith(f"(exit {5 if '-k' in args else 4})"), reason


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("test_gpu", "pytest ran no test: 1 skipped, 1 deselected: no GPU here (exit 0)"),
        ("test_gpu or test_cpu", None),  # one ran and passed: the run's pass
    ],
)
def test_a_pytest_command_whose_tests_were_all_skipped_ran_no_test(
    runner: LocalRunner, tmp_path: Path, test: str, expected: str | None
) -> None:
    # A `skipif` this machine meets: pytest exits 0 having run nothing, which read `pass @
    # t.py::test_gpu` and met `expect: pass` as reproduced (or missed a crash as "got pass").
    work = tmp_path / "work"
    work.mkdir()
    (work / "t.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.skip(reason='no GPU here')\ndef test_gpu():\n    pass\n\n"
        "def test_cpu():\n    pass\n"
    )
    argv = [PY, "-m", "pytest", "t.py", "-k", test, "-p", "no:cacheprovider", "-v"]
    result = run_attempt(runner, argv, tmp_path)
    if expected is None:
        assert isinstance(result.outcome, Outcome), result.outcome
        assert result.outcome.kind == "pass"
    else:
        assert not_run(result) == expected


def test_a_conftest_that_fails_to_import_is_the_programs_error(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # pytest's exit 4 too, but the program's own failure (an import a version lacks),
    # which a spec or a bisect may be about: not read as a test id it did not find.
    work = tmp_path / "work"
    work.mkdir()
    (work / "conftest.py").write_text("import reprospec_absent_pkg\n")
    (work / "t.py").write_text("def test_passes():\n    pass\n")
    result = run_attempt(runner, [PY, "-m", "pytest", "t.py", "-p", "no:cacheprovider"], tmp_path)
    assert isinstance(result.outcome, Outcome), result.outcome
    assert (result.outcome.kind, result.outcome.exit_code) == ("error", 4)


def test_python_dash_m_of_a_module_the_interpreter_lacks(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # `python -m pytest` in a cell's venv without pytest printed `python: No module named
    # pytest` and exited 1: judged `error exit 1`, it met an `expect: {outcome: error}` of a
    # test that never ran.
    reason = not_run(run_attempt(runner, [PY, "-m", "reprospec_absent_mod", "-q"], tmp_path))
    assert reason == (
        f"{PY} -m reprospec_absent_mod: no module named reprospec_absent_mod in that "
        "interpreter (exit 1); install it there, or add it to environment.packages"
    )
    # A submodule its installed package lacks is the program's failure (bisect's).
    (tmp_path / "sub").mkdir()
    result = run_attempt(runner, [PY, "-m", "json.reprospec_absent"], tmp_path / "sub")
    assert isinstance(result.outcome, Outcome), result.outcome
    assert (result.outcome.kind, result.outcome.exit_code) == ("error", 1)


def test_declared_package_missing(runner: LocalRunner, tmp_path: Path) -> None:
    # The local runner checks the cell's packages before it starts anything; whichever
    # layer notices, the attempt did not run what the spec asks.
    argv = [PY, "-c", "import reprospec_absent_pkg.sub"]
    result = run_attempt(runner, argv, tmp_path, packages=("reprospec-absent-pkg==1.2",))
    assert "reprospec-absent-pkg" in not_run(result)


@pytest.mark.parametrize("code", ["import yaml.reprospec_absent_sub", "import pyyaml"])
def test_a_module_a_declared_installed_package_lacks_is_the_programs_error(
    runner: LocalRunner, tmp_path: Path, code: str
) -> None:
    # pyyaml is installed here, and the runner checked it before the start: a module its
    # version lacks (a submodule, or its project name, which is not its import name) is
    # the program's failure, as `packaging.__about__` gone in packaging 23 is the one a
    # version bisect looks for. It read "not installed where the attempt ran" (infra-error)
    # and bisect refused the bad end.
    result = run_attempt(runner, [PY, "-c", code], tmp_path, packages=("pyyaml",))
    assert isinstance(result.outcome, Outcome), result.outcome
    assert (result.outcome.kind, result.outcome.exception) == ("error", "ModuleNotFoundError")


def test_undeclared_module_missing_is_the_programs_error(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # Not in environment.packages: a missing import may be the very bug.
    result = run_attempt(runner, [PY, "-c", "import reprospec_absent_pkg"], tmp_path)
    assert isinstance(result.outcome, Outcome)
    assert (result.outcome.kind, result.outcome.exception) == ("error", "ModuleNotFoundError")


def test_exit_127_after_progress_is_an_outcome(runner: LocalRunner, tmp_path: Path) -> None:
    # The program made progress first (a marker-less progress event): its own exit 127.
    code = (
        "import json, os; "
        "open(os.environ['REPROSPEC_EVENTS'], 'a').write(json.dumps({'phase': 'train'}) + '\\n'); "
        "import sys; sys.stderr.write('sh: 1: helper: not found\\n'); sys.exit(127)"
    )
    result = run_attempt(runner, [PY, "-c", code], tmp_path)
    assert isinstance(result.outcome, Outcome)
    assert (result.outcome.kind, result.outcome.exit_code) == ("error", 127)


def test_run_exits_3_with_the_reason(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "missing.yaml"
    spec.write_text(
        "reprospec: 1\nname: missing-command\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        "command: trainer_that_is_not_installed --epochs 1\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 3, result.stdout + result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "infra-error"
    assert cell["attempts"][0]["infra_error"] == (
        "command not found: trainer_that_is_not_installed (exit 127)"
    )
