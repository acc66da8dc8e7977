"""Reports of real runs: headlines, per-cell environments, what an attempt left behind."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.results import AttemptResult, CellResult, RunResult
from reprospec.outcome.classify import classify
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.judge import judge_attempt, judge_cell
from reprospec.report.failure import summary_line
from tests.functional.outcome.test_classify import BEHAVE
from tests.support.cli import Cli

# --- the headline counts every failing cell (real children, judged by the judge) ----------


def _judged_run(tmp_path: Path, modes: list[str]) -> RunResult:
    """One cell per mode, each a real child (tests/data/outcome_children/behave.py) judged."""
    from tests.functional.outcome.test_classify import behave

    expectation = Expectation("crash", signal="SIGSEGV")
    cells = []
    for index, mode in enumerate(modes):
        folder = tmp_path / f"{index}-{mode}"
        folder.mkdir(parents=True)
        execution = behave(folder, mode)
        evidence = Evidence.read(execution)
        outcome = classify(execution, evidence)
        verdict = judge_attempt(outcome, expectation, evidence)
        attempt = AttemptResult(1, 1.0, outcome, verdict.matched, verdict.mismatches, "")
        cell = Cell(f"mode={mode},i={index}", index, {"mode": mode, "i": index})
        judged = judge_cell(expectation, [attempt])
        cells.append(CellResult.judged(cell, expectation, judged, (attempt,)))
    return RunResult("r", "s", "s.yaml", "", "local", "", "", {}, tuple(cells))


def test_headline_counts_every_failing_cell_and_lists_signatures_by_count(
    tmp_path: Path,
) -> None:
    # Two failure signatures in 2 of 4 cells: it said "in 1 of 4 cells".
    run = _judged_run(tmp_path / "a", ["segv", "raise", "pass", "pass"])
    assert summary_line(run) == (
        "2 of 4 cells failed: crash SIGSEGV @ validation:3 in 1, "
        "error exit 1 Boom @ validation:3 in 1; as expected in 1 of 4 cells (1/4 attempts)"
    )
    # Most cells first, whatever came first.
    run = _judged_run(tmp_path / "b", ["raise", "exit3", "segv", "exit3", "pass"])
    assert summary_line(run).startswith(
        "4 of 5 cells failed: error exit 3 @ validation:3 in 2, "
        "crash SIGSEGV @ validation:3 in 1, error exit 1 Boom @ validation:3 in 1;"
    )
    # One signature reads as before.
    run = _judged_run(tmp_path / "c", ["segv", "pass"])
    assert summary_line(run) == (
        "crash SIGSEGV @ validation:3 in 1 of 2 cells; as expected in 1 of 2 cells (1/2 attempts)"
    )


# --- per-cell environments --------------------------------------------------------------


def test_environment_a_toggle_changes_is_shown_per_cell_not_run_wide(
    cli: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "threads.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: threads\n"
        "matrix:\n"
        "  threads: [1, 2]\n"
        "environment:\n"
        f"  workdir: {tmp_path}\n"
        "  env: {OMP_NUM_THREADS: '${{ matrix.threads }}', CUDA_LAUNCH_BLOCKING: '1'}\n"
        "command: [python, -c, \"import os; assert os.environ['OMP_NUM_THREADS']\"]\n"
        "expect: {outcome: pass}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    data = result.results()
    assert [c["environment"]["env"]["OMP_NUM_THREADS"] for c in data["cells"]] == ["1", "2"]
    # The capture was taken with one cell's value: the run-wide tables must not claim it.
    assert data["environment"]["env"]["OMP_NUM_THREADS"] == "1"
    report = (result.latest_run() / "report.md").read_text()
    environment = report.split("## Environment")[1]
    assert "OMP_NUM_THREADS" not in environment.split("Not every cell")[0]
    assert "| CUDA_LAUNCH_BLOCKING | `1` |" in environment
    assert "threads)" not in environment  # torch's thread count follows OMP_NUM_THREADS
    assert (
        "Not every cell ran with the same environment: `OMP_NUM_THREADS` differs from cell to cell"
        in environment
    )
    results = report.split("## Results")[1].split("## How to reproduce")[0]
    assert "| | threads | environment | expected | actual | rate |" in results
    assert "| ✅ | 1 | `OMP_NUM_THREADS=1` | `pass` | `pass` | 1/1 |" in results
    assert "| ✅ | 2 | `OMP_NUM_THREADS=2` | `pass` | `pass` | 1/1 |" in results
    # The HTML page's table too: it had no environment column.
    page = cli("report", result.latest_run().name, "--format", "html").stdout
    headers = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', page.split('id="cells"')[1])
    assert headers[:4] == ["verdict", "threads", "environment", "expected"]
    assert "<td>OMP_NUM_THREADS=2</td>" in page


def test_what_an_attempt_left_behind_is_in_the_report(cli: Cli, tmp_path: Path) -> None:
    """The private TMPDIR's leftovers, removed after the attempt, are shown next to the verdict."""
    spec = tmp_path / "litter.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: litter\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        'command: [python, -c, "import os, tempfile; open(os.path.join(tempfile.gettempdir(),'
        " 'torn.json'), 'w').write('{')\"]\n"
        "expect: {outcome: pass}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    report = (result.latest_run() / "report.md").read_text()
    assert (
        "### Attempt warnings\n\n- `default`, attempt 1: removed what the attempt left in its"
        " private TMPDIR: 1 file, 1 B (torn.json)\n"
    ) in report
    # Under an Attempts heading of its own, though one attempt per cell shows no table:
    # it stood under "Environment".
    last = report.split("\n## ")[-1]
    assert last.startswith("Attempts\n\n### Attempt warnings\n")
    assert result.results()["cells"][0]["attempts"][0]["warnings"] == [
        "removed what the attempt left in its private TMPDIR: 1 file, 1 B (torn.json)"
    ]


# --- a traceback the process went on from is named as the last one printed ---------------


def _ran(cli: Cli, tmp_path: Path, program: list[str], expect: str) -> tuple[dict[str, Any], str]:
    """One attempt of `program` through the CLI: its outcome, and the report's text."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"reprospec: 1\nname: s\ncommand: {json.dumps(program)}\nexpect: {expect}\n")
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcome: dict[str, Any] = result.results()["cells"][0]["attempts"][0]["outcome"]
    return outcome, (result.latest_run() / "report.md").read_text()


def test_a_logged_traceback_is_not_reported_as_what_ended_the_run(cli: Cli, tmp_path: Path) -> None:
    """A handled KeyError, logged, then `sys.exit(2)`: it read `error exit 2 KeyError`,
    signature `error:KeyError`, message "'missing'\\ncheckpoint dir not writable"."""
    outcome, report = _ran(
        cli, tmp_path, [sys.executable, str(BEHAVE), "logged-exit2"],
        "{outcome: error, exit_code: 2, exception: KeyError}",
    )  # fmt: skip
    assert outcome["signature"] == "error:exit-2:validation"
    assert (outcome["exception"], outcome["message"]) == (None, "checkpoint dir not writable")
    assert outcome["last_traceback"] == {"type": "KeyError", "message": "'missing'"}
    assert "**error exit 2 (last traceback: KeyError) @ validation:3 in 1 of 1 cell;" in report
    assert "- `error:exit-2:validation` (1 attempt)" in report
    assert (
        "The last traceback printed, which did not end the process (an exception it handled"
        " and logged, or a child process's): `KeyError: 'missing'`"
    ) in report


def test_an_uncaught_exception_keeps_its_signature(cli: Cli, tmp_path: Path) -> None:
    """The same KeyError uncaught (exit 1) is still what ended the run."""
    outcome, report = _ran(
        cli, tmp_path, [sys.executable, "-c", '{}["missing"]'],
        "{outcome: error, exception: KeyError}",
    )  # fmt: skip
    assert (outcome["signature"], outcome["exception"]) == ("error:KeyError", "KeyError")
    assert outcome["message"] == "'missing'"
    assert "last_traceback" not in outcome
    assert "**error exit 1 KeyError in 1 of 1 cell;" in report
    assert "The last traceback printed" not in report


def test_the_reproduce_command_of_a_run_whose_set_held_a_secret_runs(
    cli: Cli, tmp_path: Path
) -> None:
    # `--set environment.env.MY_API_TOKEN=***` pasted was `the value is not valid YAML`,
    # exit 2: the secret is read back from the reader's environment, as the
    # embedded spec reads it.
    import os
    import subprocess

    (tmp_path / "s.yaml").write_text(
        'reprospec: 1\nname: setsecret\ncommand: python3 -c "import os, sys; '
        "sys.exit(3 if os.environ.get('MY_API_TOKEN', '').endswith('999') else 0)\"\n"
        "expect: {outcome: error}\n"
    )
    done = cli("run", "s.yaml", "--set", "environment.env.MY_API_TOKEN=zzsecret999", cwd=tmp_path)
    assert done.code == 0, done.stderr
    report = (done.latest_run() / "report.md").read_text()
    assert "zzsecret999" not in report
    command = report.split("## How to reproduce\n\n```sh\n", 1)[1].split("\n```", 1)[0]
    assert command == (
        "reprospec run s.yaml --set 'environment.env.MY_API_TOKEN=${{ env.MY_API_TOKEN }}'"
    )
    assert "Export `MY_API_TOKEN` first: the command reads it from your environment" in report
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MY_API_TOKEN": "zzsecret999",
        "NO_COLOR": "1",
    }
    ran = subprocess.run(
        ["bash", "-c", f"{command} --out again"], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "1/1 cell reproduced" in ran.stdout


def test_the_reproduce_command_of_an_api_run_whose_set_held_a_secret_reads_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `reprospec.run(spec, RunOptions(overrides=("environment.env.MY_API_TOKEN=...",)))`
    # records no command line: the one its report built from its options said
    # `--set 'environment.env.MY_API_TOKEN=***'`, refused as YAML, with no line to export.
    import reprospec

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_API_TOKEN", "zzsecret999")
    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: setsecret\ncommand: python3 -c 'pass'\nexpect: {outcome: pass}\n"
    )
    options = reprospec.RunOptions(
        out=tmp_path / "out", overrides=("environment.env.MY_API_TOKEN=zzsecret999",)
    )
    result = reprospec.run(tmp_path / "s.yaml", options, progress=None)
    report = reprospec.render(result, "md")
    assert "zzsecret999" not in report
    command = report.split("## How to reproduce\n\n```sh\n", 1)[1].split("\n```", 1)[0]
    assert command.endswith(
        "s.yaml --set 'environment.env.MY_API_TOKEN=${{ env.MY_API_TOKEN }}'"
    ), command
    assert "Export `MY_API_TOKEN` first: the command reads it from your environment" in report
    assert result.options["overrides"] == ["environment.env.MY_API_TOKEN=${{ env.MY_API_TOKEN }}"]


def test_a_hang_in_a_file_named_with_a_byte_not_utf8_reads_it_as_a_replacement(
    cli: Cli, tmp_path: Path
) -> None:
    """faulthandler escapes a byte of a file's name that is not UTF-8 (`w\\udc80x.py`), and
    the run's line, headline and Stacks block showed the escape raw: each now shows the
    byte as the report shows other undecodable bytes, U+FFFD."""
    (tmp_path / b"w\x80x.py".decode("utf-8", "surrogateescape")).write_text(
        "import time\ntime.sleep(60)\n"
    )
    (tmp_path / "main.py").write_text(
        "import importlib, sys\nsys.path.insert(0, '.')\n"
        "importlib.import_module(b'w\\x80x'.decode('utf-8', 'surrogateescape'))\n"
    )
    spec = tmp_path / "hang.yaml"
    spec.write_text(
        "reprospec: 1\nname: hang\ncommand: [python3, main.py]\nrun: {timeout: 2s}\n"
        "expect: {outcome: hang}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    assert "hang in <module> (w\ufffdx.py:2)" in result.stdout, result.stdout
    report = (result.latest_run() / "report.md").read_text()
    assert "hang in <module> (w\ufffdx.py:2)" in report
    assert 'File "w\ufffdx.py", line 2 in <module>' in report
    assert "\\udc80" not in report
    assert "\\udc80" not in result.stdout
