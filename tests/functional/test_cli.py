"""The command line end to end, as a user runs it: real children, real signals."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, SPECS, Cli, ExampleRun, terminal_signals
from tests.support.runs import RESULTS_JSON_KEYS


def test_version_and_help(cli: Cli) -> None:
    result = cli("--version")
    assert result.code == 0
    assert result.stdout.startswith("reprospec ")
    assert cli("--help").code == 0


def test_import_cli_never_imports_torch_or_heavy_libraries() -> None:
    code = (
        "import sys, reprospec, reprospec.cli, reprospec.pipeline.stages;"
        "heavy = [m for m in ('torch', 'jsonschema', 'jinja2', 'docker') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_segfault_matrix_reproduces_in_its_corner_only(example_run: ExampleRun) -> None:
    result = example_run("segfault-command.yaml")
    assert result.code == 0, result.stderr + result.stdout
    data = result.results()
    cells = {cell["id"]: cell for cell in data["cells"]}
    assert list(cells) == [
        "num_workers=0,pin_memory=false",
        "num_workers=0,pin_memory=true",
        "num_workers=2,pin_memory=false",
        "num_workers=2,pin_memory=true",
    ]
    assert all(cell["verdict"] == "reproduced" for cell in cells.values())
    crashed = cells["num_workers=2,pin_memory=true"]["attempts"][0]["outcome"]
    assert crashed["kind"] == "crash"
    assert crashed["signal"] == "SIGSEGV"
    assert crashed["phase"] == "validation"
    assert crashed["step"] == 7
    for cell_id in list(cells)[:3]:
        assert cells[cell_id]["attempts"][0]["outcome"]["kind"] == "pass"
    assert data["summary"] == {
        "cells": 4,
        "reproduced": 4,
        "not_reproduced": 0,
        "undecided": 0,
        "infra_error": 0,
    }
    # the table names the crash
    assert "crash SIGSEGV @ validation:7" in result.stdout


def test_results_json_shape_is_the_documented_contract(example_run: ExampleRun) -> None:
    result = example_run("exception.yaml")
    assert result.code == 0, result.stderr
    data = result.results()
    for key in RESULTS_JSON_KEYS:
        assert key in data, key
    assert data["format"] == 1
    assert data["runner"] == "local"
    assert set(data["spec"]) >= {"name", "path"}
    cell = next(c for c in data["cells"] if c["matrix"]["lr"] == "10")
    assert set(cell) >= {"id", "matrix", "verdict", "expected", "rate", "attempts"}
    assert set(cell["rate"]) >= {"matched", "attempts", "low", "high"}
    attempt = cell["attempts"][0]
    assert set(attempt) >= {"attempt", "duration_s", "outcome", "logs"}
    outcome = attempt["outcome"]
    assert set(outcome) >= {
        "kind",
        "signal",
        "exit_code",
        "where",
        "exception",
        "message",
        "phase",
        "step",
        "signature",
    }
    assert outcome["kind"] == "error"
    assert outcome["exception"] == "ValueError"
    assert "loss is nan at train step 3" in outcome["message"]
    run_dir = result.latest_run()
    logs = run_dir / attempt["logs"]
    for name in ("stdout.log", "stderr.log", "events.jsonl"):
        assert (logs / name).exists(), name
    assert (run_dir / "spec.yaml").read_text() == (SPECS / "exception.yaml").read_text()


def test_hang_is_reported_with_stacks_and_rerunnable_report(
    cli: Cli, example_run: ExampleRun
) -> None:
    result = example_run("hang.yaml")
    assert result.code == 0, result.stderr
    data = result.results()
    attempt = data["cells"][0]["attempts"][0]
    assert attempt["outcome"]["kind"] == "hang"
    assert attempt["outcome"]["phase"] == "validation"
    assert attempt["outcome"]["step"] == 4
    stack = (result.latest_run() / attempt["logs"] / "stack.txt").read_text()
    assert "deadlock" in stack
    report = (result.latest_run() / "report.md").read_text()
    assert "<details>" in report
    assert "deadlock" in report
    # the report embeds the spec: running the report runs the spec again (--yes: no
    # terminal to show the plan and ask on)
    again = cli("run", str(result.latest_run() / "report.md"), "--yes")
    assert again.code == 0, again.stderr
    assert again.results()["cells"][0]["attempts"][0]["outcome"]["kind"] == "hang"


def test_not_reproduced_exits_1(cli: Cli) -> None:
    result = cli(
        "run",
        str(SPECS / "segfault-command.yaml"),
        "--set",
        "expect.signal=SIGBUS",
        "-m",
        "num_workers=2",
        "-m",
        "pin_memory=true",
    )
    assert result.code == 1, result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "not-reproduced"
    assert "SIGBUS" in cell["reason"]
    assert "SIGSEGV" in cell["reason"]


def test_bad_spec_exits_2_with_location_and_no_traceback(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "reprospec: 1\nname: x\ncommand: 'true'\nrun:\n  timout: 5s\nexpect: {outcome: pass}\n"
    )
    for verb in ("run", "validate", "plan"):
        result = cli(verb, str(bad))
        assert result.code == 2, (verb, result.stderr)
        assert f"{bad}:5:3" in result.stderr
        assert "did you mean 'timeout'" in result.stderr
        assert "Traceback" not in result.stderr


def test_missing_spec_file_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", str(tmp_path / "nope.yaml"))
    assert result.code == 2
    assert "nope.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_validate_folder_reports_every_file(cli: Cli) -> None:
    result = cli("validate", str(SPECS))
    assert result.code == 0, result.stderr
    assert "valid" in result.stdout


def test_validate_says_what_capture_s_todo_block_still_asks_and_exits_0(
    cli: Cli, tmp_path: Path
) -> None:
    # A --from-log skeleton says `reprospec validate` checks the rest; it said
    # "valid" and nothing of the TODO block, before and after its keys were filled.
    ticket = tmp_path / "issue.md"
    ticket.write_text(
        "Crashes about 1 in 5 runs.\n```\n$ python run.py --workers 2\n"
        "Traceback (most recent call last):\n"
        '  File "/src/run.py", line 3, in <module>\n    main()\n'
        "RuntimeError: DataLoader worker (pid(s) 61) exited unexpectedly\n```\n"
    )
    spec = tmp_path / "issue.yaml"
    assert cli("capture", "--from-log", str(ticket), "-o", str(spec)).code == 0
    result = cli("validate", str(spec))
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == "1 spec file valid"
    assert f"{spec}:" in result.stderr
    assert "still to fill in (" in result.stderr
    assert "environment.workdir, files" in result.stderr


def test_plan_text_json_github(cli: Cli) -> None:
    text = cli("plan", str(SPECS / "segfault-command.yaml"))
    assert text.code == 0, text.stderr
    assert "num_workers=2,pin_memory=true" in text.stdout
    assert "--pin-memory true" in text.stdout
    js = cli("plan", str(SPECS / "segfault-command.yaml"), "--format", "json")
    doc = json.loads(js.stdout)
    assert doc["spec"] == "val-segfault-pinned-workers-command"
    assert [c["id"] for c in doc["cells"]][-1] == "num_workers=2,pin_memory=true"
    assert doc["cells"][0]["matrix"] == {"num_workers": 0, "pin_memory": False}
    gh = json.loads(cli("plan", str(SPECS / "segfault-command.yaml"), "--format", "github").stdout)
    assert len(gh["include"]) == 4
    assert gh["include"][3]["cell"] == "num_workers=2,pin_memory=true"


@pytest.mark.parametrize("unbuffered", [False, True])
def test_plan_into_a_pipe_its_reader_closed_stops_there_and_exits_141(
    tmp_path: Path, unbuffered: bool
) -> None:
    # A real shell pipeline: `plan | head -3` of 4,096 cells, and a plan whose reader is gone
    # before its first write: the reader closes its end, then tells plan to start through a
    # FIFO (`plan | true` raced: once in a loaded suite, true had not exited before plan
    # wrote its few lines into the pipe, and plan exited 0). Planned cell by cell, plan
    # stops at the first write that fails and exits as a program SIGPIPE ends (128 + 13),
    # with nothing on stderr:
    # it planned every cell first and exited 0, and where its output was still buffered
    # at exit (stdout block-buffered, a pipe), Python printed "Exception ignored ...
    # BrokenPipeError" and exited 120.
    axis = "[0, 1, 2, 3, 4, 5, 6, 7]"
    spec = tmp_path / "wide.yaml"
    spec.write_text(
        f"reprospec: 1\nname: wide\nmatrix: {{a: {axis}, b: {axis}, c: {axis}, d: {axis}}}\n"
        'command: "true"\nexpect: {outcome: pass}\n',
        encoding="utf-8",
    )
    plan = shlex.join([sys.executable, "-m", "reprospec", "plan", str(spec)])
    # 8 cells: under 8 KiB, still in the buffer when plan returns (block-buffered).
    few = ["-m", "a=1", "-m", "b=1", "-m", "c=1"]
    one = shlex.join([sys.executable, "-m", "reprospec", "plan", *few, str(spec)])
    go = tmp_path / "go"
    script = (
        f'{plan} | head -3; echo "head ${{PIPESTATUS[0]}}" >&2; '
        f"mkfifo {shlex.quote(str(go))}; "
        f"{{ read -r _ < {shlex.quote(str(go))}; {one}; }} "
        f"| {{ exec 0<&-; echo go > {shlex.quote(str(go))}; }}; "
        'echo "true ${PIPESTATUS[0]}" >&2'
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    done = subprocess.run(
        ["bash", "--norc", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.stdout == "spec wide: 4096 cells x 1 attempt\n\n[a=0,b=0,c=0,d=0]\n"
    assert done.stderr == "head 141\ntrue 141\n"
    # --format json is written cell by cell as well: its head, then the cells as planned.
    as_json = shlex.join([*shlex.split(plan), "--format", "json"])
    done = subprocess.run(
        ["bash", "--norc", "-c", f'{as_json} | head -3; echo "head ${{PIPESTATUS[0]}}" >&2'],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.stdout == '{\n  "spec": "wide",\n  "cells": [\n'
    assert done.stderr == "head 141\n"


def test_matrix_filter_and_set_override(cli: Cli) -> None:
    result = cli(
        "run", str(SPECS / "segfault-command.yaml"), "-m", "num_workers=0", "--set", "run.repeat=2"
    )
    assert result.code == 0, result.stderr
    data = result.results()
    assert [c["id"] for c in data["cells"]] == [
        "num_workers=0,pin_memory=false",
        "num_workers=0,pin_memory=true",
    ]
    assert all(len(c["attempts"]) == 2 for c in data["cells"])
    unknown = cli("run", str(SPECS / "segfault-command.yaml"), "-m", "workers=0")
    assert unknown.code == 2
    assert "num_workers" in unknown.stderr


def test_report_command_renders_md_junit_json(cli: Cli) -> None:
    result = cli("run", str(SPECS / "segfault-command.yaml"), "-m", "pin_memory=true")
    run_dir = result.latest_run()
    md = cli("report", str(run_dir))
    assert md.code == 0
    assert "SIGSEGV" in md.stdout
    junit = cli("report", str(run_dir), "--format", "junit")
    import xml.etree.ElementTree as ET

    root = ET.fromstring(junit.stdout)
    assert len(root.findall(".//testcase")) == 2
    js = cli("report", run_dir.name, "--format", "json")
    assert json.loads(js.stdout)["run_id"] == run_dir.name


def test_schema_command_prints_the_shipped_schema(cli: Cli) -> None:
    result = cli("schema")
    assert result.code == 0
    assert json.loads(result.stdout) == json.loads(
        (ROOT / "schemas/reprospec.schema.json").read_text()
    )


def test_no_color_output_has_no_escape_codes(cli: Cli) -> None:
    result = cli("run", str(SPECS / "segfault-command.yaml"), "-m", "num_workers=0")
    assert "\x1b[" not in result.stdout + result.stderr


def test_python_option_picks_the_interpreter(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "which.yaml"
    spec.write_text(
        "reprospec: 1\nname: which-python\n"
        "command: python -c 'import sys; print(\"EXE\", sys.executable)'\n"
        "expect: {outcome: pass}\n"
    )
    result = cli("run", str(spec), "--python", sys.executable)
    assert result.code == 0, result.stderr
    log = result.latest_run() / result.results()["cells"][0]["attempts"][0]["logs"] / "stdout.log"
    assert "EXE" in log.read_text()
    missing = cli("run", str(spec), "--python", str(tmp_path / "no-python"))
    assert missing.code == 3
    assert "no-python" in missing.stderr


def test_compare_shows_changed_verdicts_and_warns_on_different_specs(cli: Cli) -> None:
    first = cli("run", str(SPECS / "segfault-command.yaml"), "-m", "num_workers=2")
    second = cli(
        "run",
        str(SPECS / "segfault-command.yaml"),
        "-m",
        "num_workers=2",
        "--set",
        "expect.signal=SIGBUS",
    )
    assert (first.code, second.code) == (0, 1)
    # Each run's own folder: two runs of one second do not sort by name in their order.
    run_a, run_b = first.latest_run().name, second.latest_run().name
    same = cli("compare", run_a, run_b)
    assert same.code == 0, same.stderr
    assert "num_workers=2,pin_memory=true: reproduced -> not-reproduced" in same.stdout
    assert "warning" in same.stdout  # --set changed the spec text
    other = cli("run", str(SPECS / "exception.yaml"))
    run_c = next(p.name for p in (other.out / "runs").iterdir() if "nan-loss" in p.name)
    different = cli("compare", run_a, run_c)
    assert "ran different specs" in different.stdout


def test_a_case_that_expects_pass_is_judged_on_every_attempt(cli: Cli, tmp_path: Path) -> None:
    # gpu=0 passes on attempt 3 only: with the base's rate >=0.3 inherited, 1 pass in 3
    # made "GPU 0 always passes" reproduced.
    spec = tmp_path / "gpu-rate.yaml"
    spec.write_text(
        "reprospec: 1\nname: gpu-rate\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        "matrix: {gpu: [0, 1]}\n"
        "command: >-\n"
        '  python -c "import sys; sys.exit(0 if ${{ matrix.gpu }} == 0 and ${{ attempt }} == 3'
        ' else 1)"\n'
        "run: {repeat: 3}\n"
        "expect:\n  outcome: error\n  rate: '>=0.3'\n"
        "  cases:\n    - when: {gpu: 0}\n      outcome: pass\n"
    )
    result = cli("run", str(spec))
    assert result.code == 1, result.stdout + result.stderr
    cells = {c["id"]: c for c in result.results()["cells"]}
    assert cells["gpu=0"]["expected"] == {"outcome": "pass"}
    assert cells["gpu=0"]["verdict"] == "not-reproduced"
    assert cells["gpu=0"]["reason"].startswith("expected pass, got error exit 1 in 2/3 attempts")
    assert cells["gpu=1"]["verdict"] == "reproduced"  # 3/3: 0.44-1.00 is all >= 0.3


def test_a_rate_the_interval_straddles_is_undecided_and_exits_4(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "flaky.yaml"
    spec.write_text(
        "reprospec: 1\nname: flaky\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        'command: python -c "import sys; sys.exit(${{ attempt }} % 2)"\n'
        "run: {repeat: 2}\n"
        "expect: {outcome: error, rate: '>=0.5'}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 4, result.stdout + result.stderr
    assert "0/1 cell reproduced, 1 undecided" in result.stdout
    # Exit 4 said nothing of what to do: the terminal says what decides it, or that 1/2
    # of `>=0.5` is the bound itself, which more attempts may not move off it.
    assert (
        "undecided: default: 1/2 (95% CI 0.09–0.91) straddles >=0.5; the rate seen is the "
        "bound itself: more attempts may not decide it"
    ) in result.stdout
    data = result.results()
    cell = data["cells"][0]
    assert cell["verdict"] == "undecided"
    assert cell["reason"].startswith(
        "undecided (intermittent): 1/2 = 0.50 (95% CI 0.09–0.91) straddles >=0.5"
    )
    assert data["summary"]["undecided"] == 1
    report = (result.latest_run() / "report.md").read_text()
    assert "| ❔ | `default` |" in report
    assert "❔ undecided" in report
    junit = cli("report", str(result.latest_run()), "--format", "junit").stdout
    assert 'type="undecided"' in junit
    assert 'failures="1"' in junit


def test_an_undecided_cell_says_how_many_attempts_decide_it(cli: Cli, tmp_path: Path) -> None:
    """1 crash in 3 attempts of `rate: '>=0.1'` straddles it: `run` exited 4 with `1
    undecided` and no word of what to do; it says how many attempts, at the rate seen, put
    the interval on one side of the bound, and that many do."""
    spec = tmp_path / "rare.yaml"
    spec.write_text(
        "reprospec: 1\nname: rare\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        'command: python -c "import sys; sys.exit(${{ attempt }} % 3 == 1)"\n'
        "run: {repeat: 3}\n"
        "expect: {outcome: error, rate: '>=0.1'}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 4, result.stdout + result.stderr
    said = re.search(
        r"undecided: default: 1/3 \(95% CI 0\.06–0\.80\) straddles >=0\.1; at the rate seen, "
        r"about (\d+) attempts decide it \(reproduced\): --repeat \1 \(or run\.repeat: auto with "
        r"run\.max_repeat: \1\)",
        result.stdout,
    )
    assert said, result.stdout
    # report.md's reason says the same count (it said "run more attempts").
    report = (result.latest_run() / "report.md").read_text()
    assert (
        "straddles >=0.1 (error); at the rate seen, about "
        f"{said.group(1)} attempts decide it (reproduced)\n"
    ) in report, report
    again = cli("run", str(spec), "--repeat", said.group(1))
    assert again.code == 0, again.stdout + again.stderr  # 1 in 3 a cell, as seen: decided
    assert "1/1 cell reproduced\n" in again.stdout
    assert "undecided:" not in again.stdout


def test_a_large_runs_results_table_groups_alike_cells(cli: Cli, tmp_path: Path) -> None:
    """More than 32 cells: one row per group of alike cells (as the report), not one per cell."""
    spec = tmp_path / "forty.yaml"
    spec.write_text(
        "reprospec: 1\nname: forty\n"
        f"matrix:\n  n: [{', '.join(str(n) for n in range(40))}]\n"
        "command: [python, -c, 'import sys; sys.exit(int(sys.argv[1]) % 10 == 3)', "
        "'${{ matrix.n }}']\n"
        "expect: {outcome: pass}\n"
    )
    result = cli("run", str(spec), "-j", "2")
    assert result.code == 1, result.stderr
    table = result.stdout
    # A row begins with its mark; a long list of cells folds onto the lines below it.
    rows = [line for line in table.splitlines() if line.startswith(("│ ❌", "│ ✅"))]
    # The failures first, then the rest; every cell counted once.
    assert len(rows) == 2, table
    assert "4: n=3|13|23|33" in rows[0]
    assert "error exit 1" in rows[0]
    assert "not-reproduced" in rows[0]
    assert "36:" in rows[1]
    assert "reproduced" in rows[1]
    assert "36/40 cells reproduced" in table
    assert len(result.results()["cells"]) == 40


def _startup_s() -> float:
    """How long this interpreter takes to start and import nothing (`python -c pass`), the
    fastest of three: Python's own start-up, before any module of reprospec's loads."""
    times = []
    for _ in range(3):
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.monotonic() - began)
    return min(times)


@pytest.mark.parametrize("entry", ["script", "module"])
def test_ctrl_c_while_the_cli_loads_exits_130_without_a_traceback(
    entry: str, tmp_path: Path
) -> None:
    # A SIGINT in the first ~0.1 s of `reprospec run` (the CLI's modules loading, before
    # cli.main's handler) printed a KeyboardInterrupt's traceback through reprospec/cli.py's
    # imports, exit 1. The signal is sent at delays from before the interpreter has started
    # to after the run began, a real process each: none may print a traceback through
    # reprospec's code. Python's own start-up (before any module of the package loads) is
    # the interpreter's to report, and is not asked of it.
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        'reprospec: 1\nname: slow\ncommand: python -c "import time; time.sleep(30)"\n'
        "expect: {outcome: pass}\n"
    )
    script = Path(sys.executable).parent / "reprospec"
    head = [str(script)] if entry == "script" else [sys.executable, "-m", "reprospec"]
    argv = [*head, "run", str(spec), "--out", str(tmp_path / "out")]
    package = f"{ROOT / 'reprospec'}{os.sep}"
    start = _startup_s()
    delay, quiet = start * 0.5, 0
    for step in range(48):
        if step >= 24 and quiet >= 4:
            break
        child = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            preexec_fn=terminal_signals,  # a SIGINT before the CLI's handler is not lost
        )
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        through_ours = "Traceback" in stderr and (
            package in stderr or "reprospec.cli" in stderr or "reprospec/cli.py" in stderr
        )
        assert not through_ours, f"SIGINT after {delay:.3f} s:\n{stderr}"
        if child.returncode == 130:
            assert stderr.strip().splitlines()[-1].startswith("reprospec: interrupted"), stderr
            quiet += 1
        # 24 steps of an eighth of the start-up; past them, until 4 signals have reached the
        # CLI, a quarter longer each: the start-up is measured once, and on a loaded machine
        # the starts after it took three times as long (0.045 s measured, the interpreter's
        # own still running at 0.15 s), and 5 of the 24 reached it where 4 are asked.
        delay = delay + start / 8 if step < 23 else delay * 1.25
    # The later signals reached the CLI, which said so in one line: the sweep covered its
    # start-up, not only the interpreter's.
    assert quiet >= 4, quiet


def test_first_attempt_numbers_the_attempts_from_n_and_reruns_one_by_its_number(
    cli: Cli, tmp_path: Path
) -> None:
    # A search's probe numbers its attempts after the search's earlier ones (attempt 37 of a
    # report, seeded by `${{ attempt }}`), and no `run` could number them so: rerun from 1,
    # the seed drew other values. `--first-attempt N` numbers them N, N + 1, ...
    spec = tmp_path / "seeded.yaml"
    spec.write_text(
        "reprospec: 1\nname: seeded\n"
        "command: [python, -c, 'print(\"seed\", ${{ attempt }})']\n"
        "expect: {outcome: pass}\n"
    )
    result = cli("run", str(spec), "--first-attempt", "7", "--repeat", "2")
    assert result.code == 0, result.stderr
    run = result.latest_run()
    attempts = result.results()["cells"][0]["attempts"]
    assert [a["attempt"] for a in attempts] == [7, 8]
    for number in (7, 8):
        stdout = (run / "cells" / "default" / str(number) / "stdout.log").read_text()
        assert f"seed {number}" in stdout, stdout
    report = (run / "report.md").read_text()
    assert "--first-attempt 7 --repeat 2" in report, report
    # The report's own rerun line keeps it: its embedded spec numbers from 1.
    assert "reprospec run report.md --repeat 2 --first-attempt 7" in report, report
    refused = cli("run", str(spec), "--first-attempt", "0")
    assert refused.code == 2, refused.stderr
    assert "--first-attempt: expected a number >= 1, got 0" in refused.stderr
    assert "Traceback" not in refused.stderr
