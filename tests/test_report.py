"""Reports: golden markdown and JUnit for hand-built runs, sandbox safety, log cleaning."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.errors import UsageError
from reprospec.models import (
    AttemptResult,
    Cell,
    CellResult,
    Expectation,
    Outcome,
    Rate,
    RateBound,
    RunResult,
    StepRange,
)
from reprospec.report import render
from reprospec.report.logtext import clean_log, excerpt
from reprospec.report.markdown import (
    fence_for,
    inline_code,
    separators,
    summary_line,
    table_cell,
)
from reprospec.results import run_to_dict

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("REPROSPEC_UPDATE_GOLDEN") == "1"
T0 = "2026-11-21T21:45:12+00:00"
T1 = "2026-11-21T21:45:40+00:00"

SEGFAULT_SPEC = """\
reprospec: 1
name: val-segfault
title: Segfault in validation when DataLoader workers pin memory
matrix:
  num_workers: [0, 2]
  pin_memory: [false, true]
command: python crash.py --workers ${{ matrix.num_workers }} --pin ${{ matrix.pin_memory }}
expect:
  outcome: crash
  signal: SIGSEGV
  phase: validation
  step: 6..8
"""

HANG_SPEC = """\
reprospec: 1
name: import-hang
title: import wandb hangs
command: python -c "import wandb"
run: {timeout: 5s, repeat: 3}
expect: {outcome: hang, phase: import, rate: ">=0.5"}
"""

# A description with its own fenced block: the report's yaml fence must be longer.
ERROR_SPEC = """\
reprospec: 1
name: nan-loss
title: Loss becomes NaN with a large learning rate
description: |
  Training diverges:
  ```
  RuntimeError: loss is nan
  ```
matrix:
  lr: [0.1, 1.0]
command: python train.py --lr ${{ matrix.lr }}
expect: {outcome: error, exception: RuntimeError, message: "loss is nan"}
"""

INFRA_SPEC = """\
reprospec: 1
name: docker-only
environment: {image: "python:3.11-slim"}
command: python -c "import sys; sys.exit(0)"
expect: {outcome: pass}
"""

# The shape the harness captures (reprospec_harness.envinfo), trimmed.
ENV = {
    "format": 1,
    "python": {"version": "3.11.7", "implementation": "CPython", "executable": "/usr/bin/python3"},
    "os": {
        "system": "Linux",
        "distribution": "Debian GNU/Linux 12 (bookworm)",
        "kernel": "6.8.0-45-generic",
        "machine": "x86_64",
        "wsl": None,
        "container": "docker",
    },
    "cpu": {
        "model": "AMD EPYC 7B13",
        "vendor": "AuthenticAMD",
        "flags": ["avx2", "avx512f"],
        "cores": 8,
        "usable_cores": 2,
    },
    "memory": {
        "total": 33_554_432_000,
        "available": 30_000_000_000,
        "swap": 0,
        "cgroup_limit": 4_294_967_296,
        "rlimit_as": None,
    },
    "shm": {"present": True, "size": 67_108_864, "free": 67_000_000},
    "nvidia": {"nvidia_smi": None, "gpus": []},
    "nvcc": {"path": None, "version": None},
    "packages": {"torch": "2.13.0+cpu", "numpy": "2.1.0", "wandb": None},
    "env": {"OMP_NUM_THREADS": "1", "CUDA_LAUNCH_BLOCKING": "1"},
    "multiprocessing": {"start_method": "fork"},
    "torch": {
        "installed": True,
        "version": "2.13.0+cpu",
        "debug": False,
        "cuda": None,
        "hip": None,
        "cudnn": None,
        "cpu_capability": "AVX512",
        "arch_list": [],
        "cuda_available": False,
        "device_count": 0,
        "num_threads": 2,
    },
}
GPU_ENV = {
    "python": {"version": "3.11.7", "implementation": "CPython"},
    "nvidia": {
        "nvidia_smi": "/usr/bin/nvidia-smi",
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA A100-SXM4-40GB",
                "driver_version": "550.54.15",
                "memory_mib": 40960,
                "capability": "8.0",
            },
            {
                "index": 1,
                "name": "NVIDIA A100-SXM4-40GB",
                "driver_version": "550.54.15",
                "memory_mib": 40960,
                "capability": "8.0",
            },
        ],
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
    },
    "torch": {
        "installed": True,
        "version": "2.13.0+cu124",
        "cuda": "12.4",
        "cudnn": 90100,
        "arch_list": ["sm_80", "sm_90"],
        "cuda_available": True,
        "device_count": 2,
    },
}


def _attempt(n: int, outcome: Outcome | None, matched: bool, **kw: object) -> AttemptResult:
    defaults: dict[str, object] = {
        "duration_s": 1.5 * n,
        "mismatches": (),
        "logs": "",
        "started": T0,
        "finished": T1,
    }
    defaults.update(kw)
    return AttemptResult(attempt=n, outcome=outcome, matched=matched, **defaults)  # type: ignore[arg-type]


def _cell(
    index: int,
    matrix: Mapping[str, object],
    expected: Expectation,
    verdict: str,
    reason: str,
    attempts: list[AttemptResult],
    rate: Rate,
) -> CellResult:
    cell_id = ",".join(f"{k}={json.dumps(v)}" for k, v in matrix.items())
    return CellResult(
        cell=Cell(id=cell_id, index=index, matrix=matrix),
        expected=expected,
        verdict=verdict,  # type: ignore[arg-type]
        reason=reason,
        rate=rate,
        attempts=tuple(attempts),
        command="python crash.py",
    )


def segfault_matrix() -> RunResult:
    """A 2x2 matrix where only the num_workers=2, pin_memory=true corner crashes."""
    expected = Expectation("crash", signal="SIGSEGV", phase="validation", step=StepRange(6, 8))
    passed = Outcome("pass", exit_code=0, phase="validation", step=10, signature="pass")
    crash = Outcome(
        "crash",
        signal="SIGSEGV",
        exit_code=None,
        where="worker",
        exception="RuntimeError",
        message="DataLoader worker (pid 4242) is killed by signal: Segmentation fault.",
        phase="validation",
        step=7,
        duration_s=4.2,
        signature="crash:SIGSEGV:worker:validation",
    )
    cells = []
    for index, (workers, pin) in enumerate([(0, False), (0, True), (2, False), (2, True)]):
        matrix = {"num_workers": workers, "pin_memory": pin}
        cell_dir = f"cells/num_workers={workers},pin_memory={str(pin).lower()}/1/"
        if workers and pin:
            attempts = [_attempt(1, crash, True, logs=cell_dir)]
            cells.append(
                _cell(
                    index,
                    matrix,
                    expected,
                    "reproduced",
                    "1/1 attempts matched",
                    attempts,
                    Rate(1, 1, 0.21, 1.0),
                )
            )
        else:
            attempts = [
                _attempt(
                    1,
                    passed,
                    False,
                    logs=cell_dir,
                    mismatches=("outcome: expected crash, got pass",),
                )
            ]
            cells.append(
                _cell(
                    index,
                    matrix,
                    expected,
                    "not-reproduced",
                    "expected crash SIGSEGV, got pass",
                    attempts,
                    Rate(0, 1, 0.0, 0.79),
                )
            )
    env = {**ENV, "environment_mismatch": ["python: spec says 3.10, ran 3.11.7"]}
    return RunResult(
        run_id="20261121-214512-val-segfault-3f9a",
        spec_name="val-segfault",
        spec_path="specs/segfault.yaml",
        spec_text=SEGFAULT_SPEC,
        runner="local",
        started=T0,
        finished=T1,
        environment=env,
        cells=tuple(cells),
        title="Segfault in validation when DataLoader workers pin memory",
        description="Seen on the CI box since the upgrade to torch 2.13.",
    )


SEGFAULT_STDERR = (
    "\x1b[32mEpoch 1\x1b[0m\n"
    + "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}|" for p in range(0, 101, 10))
    + "\n"
    + "ERROR: Unexpected segmentation fault encountered in worker.\n\x00"
    + "Traceback (most recent call last):\n"
    + '  File "crash.py", line 40, in <module>\n'
    + "    for batch in loader:\n"
    + "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.\n"
)


def hang_run() -> RunResult:
    """One cell, three attempts on two GPU slots: two hangs and a pass (flaky, rate judged)."""
    expected = Expectation("hang", phase="import", rate=RateBound(">=", 0.5))
    hang = Outcome("hang", phase="import", duration_s=5.0, signature="hang:import")
    passed = Outcome("pass", exit_code=0, signature="pass")
    attempts = [
        _attempt(1, hang, True, logs="cells/default/1/", gpu_slot=("0",), duration_s=5.02),
        _attempt(
            2,
            passed,
            False,
            logs="cells/default/2/",
            gpu_slot=("1",),
            duration_s=0.8,
            mismatches=("outcome: expected hang, got pass",),
        ),
        _attempt(
            3,
            hang,
            True,
            logs="cells/default/3/",
            gpu_slot=("0",),
            duration_s=5.01,
            stack='Thread 0x7f (most recent call first):\n  File "wandb/__init__.py", line 3',
        ),
    ]
    cell = CellResult(
        cell=Cell(id="default", index=0, matrix={}),
        expected=expected,
        verdict="reproduced",
        reason="2/3 attempts matched (rate >=0.5)",
        rate=Rate(2, 3, 0.21, 0.94),
        attempts=tuple(attempts),
        command='python -c "import wandb"',
    )
    return RunResult(
        run_id="20261121-214512-import-hang-0b1c",
        spec_name="import-hang",
        spec_path="specs/hang.yaml",
        spec_text=HANG_SPEC,
        runner="local",
        started=T0,
        finished=T1,
        environment=GPU_ENV,
        cells=(cell,),
        command_line="reprospec run specs/hang.yaml -j 2 --gpus 0,1",
        title="import wandb hangs",
    )


HANG_STACK = (
    "Thread 0x00007f3a (most recent call first):\n"
    '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
    '  File "wandb/sdk/lib/sock_client.py", line 88 in recv\n'
    "\n"
    "Current thread 0x00007f3b (most recent call first):\n"
    '  File "wandb/__init__.py", line 3 in <module>\n'
)


def error_run() -> RunResult:
    """A one-axis matrix: lr=1.0 raises the expected RuntimeError, lr=0.1 trains fine."""
    expected = Expectation("error", exception="RuntimeError", message="loss is nan")
    error = Outcome(
        "error",
        exit_code=1,
        where="main",
        exception="RuntimeError",
        message="loss is nan at step 3 | lr=1.0",
        phase="train",
        step=3,
        signature="error:RuntimeError:train",
    )
    passed = Outcome("pass", exit_code=0, phase="train", step=10, signature="pass")
    cells = [
        _cell(
            0,
            {"lr": 0.1},
            expected,
            "not-reproduced",
            "expected error RuntimeError, got pass",
            [_attempt(1, passed, False)],
            Rate(0, 1, 0.0, 0.79),
        ),
        _cell(
            1,
            {"lr": 1.0},
            expected,
            "reproduced",
            "1/1 attempts matched",
            [_attempt(1, error, True)],
            Rate(1, 1, 0.21, 1.0),
        ),
    ]
    return RunResult(
        run_id="20261121-214512-nan-loss-77aa",
        spec_name="nan-loss",
        spec_path="specs/nan loss.yaml",
        spec_text=ERROR_SPEC,
        runner="local",
        started=T0,
        finished=T1,
        environment=ENV,
        cells=tuple(cells),
        title="Loss becomes NaN with a large learning rate",
        description="Training diverges:\n```\nRuntimeError: loss is nan\n```",
    )


def infra_run() -> RunResult:
    """The docker runner could not reach an engine: the cell is an infra-error."""
    attempt = _attempt(1, None, False, infra_error="docker engine not reachable", duration_s=0.0)
    cell = CellResult(
        cell=Cell(id="default", index=0, matrix={}),
        expected=Expectation("pass"),
        verdict="infra-error",
        reason="docker engine not reachable",
        rate=Rate(0, 1, 0.0, 0.79),
        attempts=(attempt,),
    )
    return RunResult(
        run_id="20261121-214512-docker-only-aaaa",
        spec_name="docker-only",
        spec_path="specs/docker-only.yaml",
        spec_text=INFRA_SPEC,
        runner="docker",
        started=T0,
        finished=T1,
        environment={},
        cells=(cell,),
    )


def write_logs(run_dir: Path) -> Path:
    """The run folder files the reports read: a worker crash's stderr, a hang's stack dump."""
    crash = run_dir / "cells/num_workers=2,pin_memory=true/1"
    crash.mkdir(parents=True)
    (crash / "stderr.log").write_bytes(SEGFAULT_STDERR.encode())
    hang = run_dir / "cells/default/1"
    hang.mkdir(parents=True)
    (hang / "stack.txt").write_text(HANG_STACK)
    return run_dir


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
def test_markdown_matches_golden(name: str, tmp_path: Path) -> None:
    text = render(CASES[name](), "md", run_dir=write_logs(tmp_path))
    _check_golden(f"{name}.md", text)


@pytest.mark.parametrize("name", ["segfault-matrix", "hang", "infra-error"])
def test_junit_matches_golden(name: str) -> None:
    _check_golden(f"{name}.junit.xml", render(CASES[name](), "junit"))


def test_summary_line_names_failure_and_counts() -> None:
    assert summary_line(segfault_matrix()) == (
        "SIGSEGV (worker) in validation step 7 in 1 of 4 cells; "
        "as expected in 1 of 4 cells (1/4 attempts)"
    )
    assert summary_line(infra_run()).endswith(", 1 infra-error")
    assert summary_line(infra_run()).startswith("Could not run;")


def test_markdown_sections(tmp_path: Path) -> None:
    text = render(segfault_matrix(), "md", run_dir=write_logs(tmp_path))
    assert text.startswith("# Segfault in validation when DataLoader workers pin memory\n")
    assert "| num_workers \\ pin_memory | false | true |" in text
    assert "| 2 | pass ❌ | crash SIGSEGV ✅ |" in text
    assert "`crash SIGSEGV (worker) @ validation:7`" in text
    assert "`num_workers=2, pin_memory=true` together" in text
    assert "python: spec says 3.10, ran 3.11.7" in text
    assert "| Memory | 31.2 GiB (available: 27.9 GiB, cgroup limit 4.0 GiB) |" in text
    assert "| CUDA | none (CPU-only torch build) |" in text
    assert "| Packages | torch 2.13.0+cpu, numpy 2.1.0, wandb not installed |" in text
    assert "Not specified" not in text and "None" not in text
    # The log excerpt: colours gone, the progress bar at its final state, no NUL.
    assert "\x1b" not in text and "\x00" not in text and "\r" not in text
    assert "100%|##########|" in text and " 50%|" not in text
    assert "```sh\nreprospec run specs/segfault.yaml\n```" in text
    assert f"```yaml\n{SEGFAULT_SPEC}```" in text


def test_report_embeds_the_whole_spec_behind_a_fence_it_cannot_close() -> None:
    text = render(error_run(), "md")
    assert f"````yaml\n{ERROR_SPEC}````\n" in text
    assert "reprospec run 'specs/nan loss.yaml'" in text
    # A pipe in a message stays inside its table cell.
    assert table_cell("a | b\nc") == "a \\| b<br>c"


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_gives_back_the_spec_it_embeds(name: str) -> None:
    from reprospec.spec import extract_markdown_spec

    run = CASES[name]()
    block = extract_markdown_spec(render(run, "md"))
    assert block is not None and block[0] == run.spec_text


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


def test_hang_stacks_from_run_folder_or_attempt(tmp_path: Path) -> None:
    with_folder = render(hang_run(), "md", run_dir=write_logs(tmp_path))
    assert "<details><summary>Stacks</summary>" in with_folder
    assert "sock_client.py" in with_folder
    without = render(hang_run(), "md")
    assert "<details><summary>Stacks</summary>" in without
    assert 'File "wandb/__init__.py", line 3' in without and "sock_client.py" not in without
    assert "2/3 (95% CI 0.21–0.94)" in without
    assert "| 0 | 2 | 2 | 2 |\n| 1 | 1 | 0 | 0 |" in without


def test_separators_single_axis() -> None:
    assert separators(error_run()) == ["`lr=1.0`: in every failing cell, in no passing cell"]
    assert separators(hang_run()) is None


def test_junit_is_valid_xml_with_every_attempt() -> None:
    run = segfault_matrix()
    cells = list(run.cells)
    # A NUL in a message must not make the XML invalid.
    cells[0] = replace(cells[0], reason="expected crash\x00, got pass")
    root = ET.fromstring(render(replace(run, cells=tuple(cells)), "junit"))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "4" and suite.get("failures") == "3"
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
    assert error is not None and error.get("message") == "docker engine not reachable"
    assert infra.find("failure") is None


def test_json_format_is_results_json() -> None:
    run = segfault_matrix()
    assert json.loads(render(run, "json")) == json.loads(json.dumps(run_to_dict(run)))


def test_unknown_format_is_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown report format 'html'"):
        render(infra_run(), "html")


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


def test_excerpt_keeps_the_dying_workers_line_far_above_the_window():
    from reprospec.report.logtext import excerpt

    text = "\n".join(
        ["epoch 1", "ERROR: Unexpected segmentation fault encountered in worker.\0"]
        + [f"noise line {i}" for i in range(100)]
        + ["Traceback (most recent call last):", '  File "x.py", line 1', "EOFError"]
    )
    lines = excerpt(text, max_lines=10).split("\n")
    assert lines[0] == "ERROR: Unexpected segmentation fault encountered in worker."
    assert lines[-1] == "EOFError"
    assert "noise line 5" not in lines
