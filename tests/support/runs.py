"""Hand-built runs for the report, results and store tests: a segfault matrix, a flaky hang,
an error under one toggle, an infra error, a 3x4 grid under a hostile title (the HTML page's
unit and browser tests). Each is the shape the engine produces."""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import product

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.logtext import excerpt
from reprospec.core.results import (
    AttemptResult,
    CellResult,
    CrashedChild,
    NotRun,
    Outcome,
    Rate,
    RunResult,
    Standalone,
)
from reprospec.core.units import RateBound, StepRange

# results.json's top-level keys, the contract docs/cli.md documents: the hand-built runs
# and a real run's file both hold them.
RESULTS_JSON_KEYS = (
    "format",
    "run_id",
    "spec",
    "runner",
    "started",
    "finished",
    "environment",
    "cells",
    "summary",
)

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
expect: {outcome: hang, phase: import, rate: ">=0.2"}
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
ENV: JsonObject = {
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
GPU_ENV: JsonObject = {
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


def _attempt(n: int, outcome: Outcome | NotRun, matched: bool, **kw: object) -> AttemptResult:
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
    matrix: Mapping[str, JsonValue],
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
            attempts = [_attempt(1, crash, True, logs=cell_dir, excerpt=excerpt(SEGFAULT_STDERR))]
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
    env: JsonObject = {**ENV, "environment_mismatch": ["python: spec says 3.10, ran 3.11.7"]}
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
    """One cell, three attempts on two GPU slots: two hangs and a pass (flaky, rate judged:
    2/3 meets >=0.2, whose bound the interval's low end 0.21 clears; >=0.5 is undecided)."""
    expected = Expectation("hang", phase="import", rate=RateBound(">=", 0.2))
    hang = Outcome("hang", phase="import", duration_s=5.0, signature="hang:import")
    passed = Outcome("pass", exit_code=0, signature="pass")
    attempts = [
        _attempt(
            1,
            hang,
            True,
            logs="cells/default/1/",
            gpu_slot=("0",),
            duration_s=5.02,
            stack=HANG_STACK,
        ),
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
        reason="2/3 = 0.67 (95% CI 0.21–0.94) meets >=0.2 (hang @ import)",  # as judged
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


POOL_SPEC = """\
reprospec: 1
name: pool-hang
title: multiprocessing.Pool hangs after a worker segfaults
command: python pool.py
run: {timeout: 5s}
expect: {outcome: hang}
"""
# A hang after a child's death, as pipeline/attempt.py keeps it: the dead worker's own
# stack (its faulthandler report), and apart from it the hung parent's.
POOL_DEAD_STACK = (
    "Fatal Python error: Segmentation fault\n\n"
    "Stack (most recent call first):\n"
    '  File "pool.py", line 9 in work\n'
    '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 48 in mapstar'
)
POOL_STACK = (
    "--- pid 4200 (python pool.py) ---\n"
    "Current thread 0x00007f3b (most recent call first):\n"
    '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 367 in map\n'
    '  File "pool.py", line 15 in <module>\n'
)


def pool_hang_run(dead_stack: str = POOL_DEAD_STACK, command: str = "python pool.py") -> RunResult:
    """One cell, one attempt: a multiprocessing.Pool's map waits forever for a task its
    worker took with it when it died of SIGSEGV (a hang, as expected, naming the worker).
    `dead_stack` is the worker's own stack, `command` the worker's and the parent's."""
    child = CrashedChild("SIGSEGV", 4242, command, "as its core says")
    hang = Outcome(
        "hang",
        where="main",
        duration_s=5.0,
        signature="hang:after-child-SIGSEGV",
        detail=(
            f"child pid 4242 ({command}) died of SIGSEGV (Segmentation fault), as its "
            "core says, before the hang: whatever waited for its work may wait forever (a "
            "multiprocessing.Pool never notices that a worker died with its task); no exit "
            "within the timeout (5 s); killed after 5.0s"
        ),
        crashed_child=child,
    )
    attempt = _attempt(
        1,
        hang,
        True,
        logs="cells/default/1/",
        duration_s=5.02,
        stack=POOL_STACK.replace("python pool.py", command),
        dead_child_stack=dead_stack,
    )
    cell = CellResult(
        cell=Cell(id="default", index=0, matrix={}),
        expected=Expectation("hang"),
        verdict="reproduced",
        reason=f"1/1 attempts as expected: hang after a child died of SIGSEGV ({command})",
        rate=Rate(1, 1, 0.21, 1.0),
        attempts=(attempt,),
        command=command,
    )
    return RunResult(
        run_id="20261121-214512-pool-hang-0b1c",
        spec_name="pool-hang",
        spec_path="specs/pool.yaml",
        spec_text=POOL_SPEC.replace("python pool.py", command),
        runner="local",
        started=T0,
        finished=T1,
        environment=GPU_ENV,
        cells=(cell,),
        command_line="reprospec run specs/pool.yaml",
        title="multiprocessing.Pool hangs after a worker segfaults",
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
    attempt = _attempt(1, NotRun("docker engine not reachable"), False, duration_s=0.0)
    cell = CellResult(
        cell=Cell(id="default", index=0, matrix={}),
        expected=Expectation("pass"),
        verdict="infra-error",
        reason="docker engine not reachable",
        rate=Rate(0, 0, 0.0, 1.0),  # as the judge rates it: no attempt ran to be judged
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


LARGE_SPEC = """\
reprospec: 1
name: fp16-worker-segfault
title: fp16 batches crash DataLoader workers
description: |
  A sweep over the loader and the dtype: float16 batches make a worker segfault
  in validation, only with workers; batch size 8 crashes less often.
environment:
  device: cpu
matrix:
  num_workers: [0, 1, 2, 4]
  batch_size: [8, 16, 32, 64]
  dtype: [float32, float16, bfloat16, float64]
  prefetch_factor: [1, 2, 4, 8]
workload:
  model: {builtin: cnn}
  data:
    dataset: {builtin: synthetic, size: 512, shape: [3, 32, 32], dtype: "${{ matrix.dtype }}"}
    loader:
      batch_size: ${{ matrix.batch_size }}
      num_workers: ${{ matrix.num_workers }}
      prefetch_factor: ${{ matrix.num_workers > 0 and matrix.prefetch_factor or null }}
  phases: [{name: train, steps: 4}, {name: validation, steps: 8}]
run: {repeat: 3, timeout: 60s}
expect:
  outcome: crash
  signal: SIGSEGV
  phase: validation
  cases:
    - {when: {num_workers: 0}, outcome: pass}
    - {when: {dtype: float32}, outcome: pass}
    - {when: {dtype: bfloat16}, outcome: pass}
    - {when: {dtype: float64}, outcome: pass}
"""


def large_matrix() -> RunResult:
    """256 cells x 3 attempts: fp16 with workers crashes (flaky at batch 8), one cell hangs once.

    Judged by the real judge, so verdicts and reasons read as a real run's would.
    """
    from itertools import product

    from reprospec.core.results import ChildWarning
    from reprospec.outcome.evidence import Evidence
    from reprospec.outcome.judge import judge_attempt, judge_cell

    crash = Outcome(
        "crash",
        signal="SIGSEGV",
        where="worker",
        exception="RuntimeError",
        message="DataLoader worker (pid 4242) is killed by signal: Segmentation fault.",
        phase="validation",
        step=5,
        stage="data",
        signature="crash:SIGSEGV:worker:validation",
    )
    passed = Outcome("pass", exit_code=0, phase="validation", step=8, signature="pass")
    hang = Outcome("hang", where="main", phase="validation", step=6, signature="hang:validation")
    numpy = ChildWarning(
        "UserWarning",
        "Failed to initialize NumPy: No module named 'numpy'",
        "/home/alice/proj/.venv/lib/python3.11/site-packages/torch/_subclasses/functional_tensor.py:368",
    )
    failing = Expectation("crash", signal="SIGSEGV", phase="validation")
    cells = []
    axes = (
        [0, 1, 2, 4],
        [8, 16, 32, 64],
        ["float32", "float16", "bfloat16", "float64"],
        [1, 2, 4, 8],
    )
    for index, (workers, batch, dtype, prefetch) in enumerate(product(*axes)):
        matrix: JsonObject = {
            "num_workers": workers,
            "batch_size": batch,
            "dtype": dtype,
            "prefetch_factor": prefetch,
        }
        expected = failing if workers and dtype == "float16" else Expectation("pass")
        if workers and dtype == "float16":
            outcomes = [crash, crash, crash] if batch > 8 else [crash, passed, passed]
        elif (workers, batch, dtype, prefetch) == (4, 64, "float64", 8):
            outcomes = [passed, hang, passed]
        else:
            outcomes = [passed, passed, passed]
        cell_id = ",".join(f"{k}={v}" for k, v in matrix.items())
        attempts = []
        for n, outcome in enumerate(outcomes, 1):
            verdict = judge_attempt(outcome, expected, Evidence())
            attempts.append(
                _attempt(
                    n,
                    outcome,
                    verdict.matched,
                    mismatches=verdict.mismatches,
                    logs=f"cells/{cell_id}/{n}/",
                    duration_s=round(2.0 + (index * 3 + n) % 7 * 0.11, 2),
                    excerpt=excerpt(SEGFAULT_STDERR) if outcome.kind != "pass" else None,
                    child_warnings=(numpy,),
                )
            )
        judged = judge_cell(expected, attempts)
        cells.append(
            CellResult.judged(
                Cell(cell_id, index, matrix),
                expected,
                judged,
                tuple(attempts),
                "python -m reprospec_harness",
            )
        )
    return RunResult(
        run_id="20261121-214512-fp16-worker-segfault-77aa",
        spec_name="fp16-worker-segfault",
        spec_path="specs/fp16.yaml",
        spec_text=LARGE_SPEC,
        runner="local",
        started=T0,
        finished=T1,
        environment=ENV,
        cells=tuple(cells),
        command_line="reprospec run specs/fp16.yaml -j 8",
        title="fp16 batches crash DataLoader workers",
        description="A sweep over the loader and the dtype.",
        paths={"/home/alice/proj/.venv": "<venv>", "/home/alice/proj": "", "/home/alice": "<home>"},
    )


def environment_cell(index: int, **environment: JsonValue) -> CellResult:
    """A passing cell `c<index>` that ran with `environment` (its resolved section): what the
    report compares from cell to cell."""
    return CellResult(
        Cell(f"c{index}", index, {"i": index}),
        Expectation("pass"),
        "reproduced",
        "",
        Rate(1, 1, 0.21, 1.0),
        (),
        environment={"workdir": "/w", "gpus": 0, "env": {}, **environment},
    )


# grid_run's title: a page that printed it unescaped would run it.
HOSTILE = '<script>alert("title")</script>'


def _grid_attempt(n: int, failed: bool) -> AttemptResult:
    outcome = (
        Outcome(
            "crash",
            signal="SIGSEGV",
            where="worker",
            phase="train",
            step=3,
            signature="crash:SIGSEGV:worker:train",
        )
        if failed
        else Outcome("pass", exit_code=0, phase="train", step=10, signature="pass")
    )
    return AttemptResult(
        attempt=n,
        duration_s=0.5 + n,
        outcome=outcome,
        matched=failed,
        mismatches=(),
        logs=f"cells/x/{n}/",
    )


def grid_run() -> RunResult:
    """A 3x4 matrix in which each cell failed a different number of its 4 attempts."""
    expected = Expectation("crash", signal="SIGSEGV")
    cells = []
    batches: list[int | str] = [8, 16, 32, '<b id="x">']
    for index, (workers, batch) in enumerate(product([0, 2, 4], batches)):
        failed = (index * 7) % 5
        attempts = tuple(_grid_attempt(n, n <= failed) for n in range(1, 5))
        matched = sum(a.matched for a in attempts)
        cells.append(
            CellResult(
                cell=Cell(
                    id=f"workers={workers},batch={batch}",
                    index=index,
                    matrix={"workers": workers, "batch": batch},
                ),
                expected=expected,
                verdict="reproduced" if matched else "not-reproduced",
                reason="",
                rate=Rate(matched, 4, 0.0, 1.0),
                attempts=attempts,
            )
        )
    return RunResult(
        run_id="20261122-101010-grid-0001",
        spec_name="grid",
        spec_path="grid.yaml",
        spec_text="reprospec: 1\nname: grid\n",
        runner="local",
        started="2026-11-22T10:10:10+00:00",
        finished="2026-11-22T10:11:10+00:00",
        environment={"python": {"version": "3.11.7"}},
        cells=tuple(cells),
        title=HOSTILE,
        standalone=Standalone(
            cell="workers=0,batch=8",
            kind="workload",
            run="python repro.py",
            script="print('</pre><script>alert(1)</script>')\n",
        ),
    )
