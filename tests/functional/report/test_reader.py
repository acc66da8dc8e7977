"""The report as a maintainer reads it: injected faults labelled, the dead worker's own stack,
warnings that say a toggle did nothing, short paths, a large matrix in a page, interrupted runs.

Behaviour that depends on real children is checked on real runs (the CLI, as a user
runs it); the goldens are the reports of such runs as recorded by tests/support/recorded.py
(REPROSPEC_UPDATE_GOLDEN=1 runs them again and records them), and of hand-built runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

import reprospec
from reprospec import native
from reprospec.core.words import STUCK_MARK
from reprospec.report import render
from reprospec.report.failure import summary_line
from reprospec.store.resultsjson import load_run
from tests.support import recorded
from tests.support.cli import ROOT, Cli, CliResult, ExampleRun, torch_captures_shared
from tests.support.deadline import until_reached

UPDATE = os.environ.get("REPROSPEC_UPDATE_GOLDEN") == "1"


# A DataLoader worker segfaults (an injected fault) only with workers and pinned memory;
# on a machine without an accelerator torch warns that pin_memory had no effect.
WORKER_SPEC = """\
reprospec: 1
name: worker-segfault-pinned
title: A DataLoader worker segfaults in validation when workers pin memory
environment:
  device: cpu
matrix:
  num_workers: [0, 2]
  pin_memory: [false, true]
workload:
  seed: 0
  model: {builtin: cnn, params: {channels: 4}}
  data:
    dataset: {builtin: synthetic, size: 64, shape: [3, 8, 8], classes: 4}
    loader:
      batch_size: 8
      num_workers: ${{ matrix.num_workers }}
      pin_memory: ${{ matrix.pin_memory }}
      multiprocessing_context: fork
  phases:
    - {name: train, steps: 2}
    - {name: validation, steps: 4}
  faults:
    - kind: segfault
      where: worker
      at: {phase: validation, step: 3}
      when: ${{ matrix.num_workers > 0 and matrix.pin_memory }}
run:
  timeout: 60s
expect:
  outcome: crash
  signal: SIGSEGV
  phase: validation
  cases:
    - when: {num_workers: 0}
      outcome: pass
    - when: {pin_memory: false}
      outcome: pass
"""


def _section(report: str, heading: str) -> str:
    """The text of one `## heading` section."""
    return report.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_a_real_worker_crash_report(example_run: ExampleRun, cli: Cli, tmp_path: Path) -> None:
    # specs/segfault.yaml is this very case, larger (a worker's injected SIGSEGV at validation
    # step 7 in the one cell of four with workers and pinned memory): its run, `-j 2` once per
    # session for the examples' own tests, is read here too. The golden's recording (UPDATE)
    # runs WORKER_SPEC below, a smaller copy whose report stays short.
    result = example_run("segfault.yaml")
    assert result.code == 0, result.stdout + result.stderr
    run = load_run(result.latest_run())
    crashed = run.cells[3]
    assert crashed.cell.matrix == {"num_workers": 2, "pin_memory": True}
    outcome = crashed.attempts[0].ran
    assert outcome is not None
    assert outcome.where == "worker"
    # The worker's index, as the harness's `worker_exit` names it, in the `child_exit` event
    # of the main process's reaping too (that event named the pid only).
    events = result.latest_run() / crashed.attempts[0].logs / "events.jsonl"
    written = [json.loads(line) for line in events.read_text().splitlines()]
    (harness,) = [e for e in written if e["event"] == "worker_exit"]
    reaped = [e for e in written if e["event"] == "child_exit"]
    assert [(e["worker"], e["pid"]) for e in reaped] == [(harness["worker"], harness["pid"])]

    # 1. Injected: in results, the signature, the console table, the headline, the table.
    assert outcome.injected == "workload.faults[0]"
    assert ":injected=faults[0]" in outcome.signature
    assert "injected by the spec: workload.faults[0] (match" in result.stderr  # progress
    report = (result.latest_run() / "report.md").read_text()
    assert summary_line(run).startswith("crash SIGSEGV (worker) @ validation:7")
    assert ", injected by the spec: workload.faults[0]; as expected in every cell" in summary_line(
        run
    )
    assert report.count("injected by the spec") >= 3  # headline, signature list, results table

    # 2. The child's warnings, once each, and the toggle one of them nullifies.
    pinned = [c for c in run.cells if c.cell.matrix["pin_memory"]]
    for cell in pinned:
        texts = [w.message for a in cell.attempts for w in a.child_warnings]
        assert any("'pin_memory' argument is set as true" in t for t in texts), texts
        assert len(texts) == len(set(texts))
    unpinned = [c for c in run.cells if not c.cell.matrix["pin_memory"]]
    assert not any(
        "pin_memory" in w.message for c in unpinned for a in c.attempts for w in a.child_warnings
    )
    separates = _section(report, "What separates failing from passing cells")
    assert "`pin_memory=true` had no effect, the child warned" in separates
    warned = _section(report, "Warnings the children printed")
    assert "**By its own words, `pin_memory=true` had no effect** in those cells" in warned

    # 3. The excerpt leads with the stack of the worker that died, then the main's view.
    failure = _section(report, "Failure")
    own = failure.index("The stack of the process that died (the DataLoader worker pid ")
    main_view = failure.index("The main process's view:")
    assert own < main_view
    worker_stack = failure[own:main_view]
    assert "Fatal Python error: Segmentation fault" in worker_stack
    first_frames = worker_stack.split("Stack (most recent call first):", 1)[1].split("\n\n")[0]
    assert '<harness>/reprospec_harness/faults.py", line' in first_frames
    assert "in segfault" in first_frames
    assert "in fire_worker" in first_frames
    # torch's own handler still ran after faulthandler's report: its message is there.
    assert (
        "ERROR: Unexpected segmentation fault encountered in worker."
        in (result.latest_run() / "cells" / crashed.cell.id / "1" / "stderr.log").read_text()
    )

    # 4. No absolute path of this machine in the failure, the warnings or the stacks.
    for place in (failure, warned):
        for root in (sys.prefix, sys.base_prefix, str(Path.home()), str(ROOT), str(result.out)):
            assert root + "/" not in place, root
    assert "<venv>/lib/python" in report
    assert "<python>/lib/python" in report

    if UPDATE:
        spec = tmp_path / "worker-crash.yaml"
        spec.write_text(WORKER_SPEC)
        ran = cli("run", str(spec), "-j", "2")
        assert ran.code == 0, ran.stdout + ran.stderr
        recorded.record("worker-crash", load_run(ran.latest_run()), "specs/worker-crash.yaml")


def test_a_main_process_fault_is_labelled_on_its_error(tmp_path: Path) -> None:
    spec = tmp_path / "raises.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: raises\n"
        "environment: {device: cpu}\n"
        "workload:\n"
        "  model: {builtin: mlp, params: {hidden: 8}}\n"
        "  data: {dataset: {builtin: synthetic, size: 16, shape: [4], classes: 2},"
        " loader: {batch_size: 4}}\n"
        "  phases: [{name: train, steps: 3}]\n"
        "  faults:\n"
        "    - {kind: raise, exception: ValueError, message: loss is nan,"
        " at: {phase: train, step: 2}}\n"
        "expect: {outcome: error, exception: ValueError}\n"
    )
    with torch_captures_shared(tmp_path / "out"):  # the environment's torch, captured once
        run = reprospec.run(spec, reprospec.RunOptions(out=tmp_path / "out"))
    outcome = run.cells[0].attempts[0].ran
    assert outcome is not None
    assert outcome.exception == "ValueError"
    assert outcome.injected == "workload.faults[0]"
    assert outcome.signature == "error:ValueError:train:injected=faults[0]"
    assert summary_line(run) == (
        "error exit 1 ValueError @ train:2 (start) in 1 of 1 cell, injected by the spec: "
        "workload.faults[0]; as expected in every cell (1/1 attempts)"
    )


def test_a_real_failure_without_a_fault_is_not_labelled(tmp_path: Path) -> None:
    spec = tmp_path / "real.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: real\n"
        f"command: [{sys.executable}, -c, \"raise ValueError('boom')\"]\n"
        "expect: {outcome: error}\n"
    )
    with torch_captures_shared(tmp_path / "out"):  # the environment's torch, captured once
        run = reprospec.run(spec, reprospec.RunOptions(out=tmp_path / "out"))
    outcome = run.cells[0].attempts[0].ran
    assert outcome is not None
    assert outcome.injected is None
    assert "injected" not in render(run, "md")


def test_an_interrupted_run_says_which_cells_did_not_run(tmp_path: Path) -> None:
    spec = tmp_path / "eight.yaml"
    spec.write_text(
        "reprospec: 1\n"
        "name: eight\n"
        "matrix: {n: [1, 2, 3, 4, 5, 6, 7, 8]}\n"
        # The cells after the fourth take a second each: the progress that sets `cancel` is
        # told of an attempt after it ended, and under a load of 8 (the full suite) eight
        # attempts of `pass` had all ended before it was.
        f"command: [{sys.executable}, -c, 'import sys, time; time.sleep(int(sys.argv[1]) > 4)', "
        "'${{ matrix.n }}']\n"
        "expect: {outcome: pass}\n"
    )
    cancel = threading.Event()

    def progress(event: str, _cell: object, _res: object, finished: int, _total: int) -> None:
        if event == "attempt" and finished >= 4:
            cancel.set()

    with torch_captures_shared(tmp_path / "out"):
        run = reprospec.run(
            spec,
            reprospec.RunOptions(out=tmp_path / "out", jobs=1),
            progress=progress,
            cancel=cancel,
        )
    assert run.interrupted
    ran = [c for c in run.cells if c.attempts]
    skipped = [c for c in run.cells if not c.attempts]
    assert 4 <= len(ran) < 8
    assert skipped
    assert {c.verdict for c in skipped} == {"not-run"}
    assert run.summary["infra_error"] == 0
    assert run.summary["not_run"] == len(skipped)
    headline = summary_line(run)
    assert headline.startswith("No failure; as expected in ")
    assert headline.endswith(f", {len(skipped)} not run (interrupted)")
    assert "Could not run" not in headline
    assert "infra-error" not in headline
    report = render(run, "md")
    assert "| ⏸️ |" in report
    assert "⏸️ not run (interrupted)" in report
    assert "infra-error" not in _section(report, "Results").replace("⚠️ infra-error", "")
    junit = render(run, "junit")
    assert f'skipped="{len(skipped)}"' in junit


WORKER_SCRIPT = """\
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 5:
            ctypes.string_at(0)  # a real invalid read, in the worker
        return torch.zeros(2)


for batch in DataLoader(Items(), batch_size=2, num_workers=1, multiprocessing_context="fork"):
    pass
"""


HUNG_WORKER_SCRIPT = """\
import threading

import torch
from torch.utils.data import DataLoader, Dataset

lock = threading.Lock()


class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 5:
            lock.acquire(); open("ready", "w").close()
            lock.acquire()  # a real self-deadlock, in the worker
        return torch.zeros(2)


for batch in DataLoader(Items(), batch_size=2, num_workers=2, multiprocessing_context="fork"):
    pass
"""


def _run_hung_loader(cli: Cli, tmp_path: Path, script: str, name: str) -> CliResult:
    """`reprospec run` of `script` as loader.py, a command whose DataLoader worker hangs
    (it says so in the file `ready`): expected to hang, 15 s. torch's import takes 3.5-4.5 s
    with every core busy: the timeout is doubled while a loaded machine kept the worker from
    its hang before it ran out."""

    def attempt(timeout_s: float, here: Path) -> CliResult:
        (here / "loader.py").write_text(script)
        spec = here / "hung.yaml"
        spec.write_text(
            f"reprospec: 1\nname: {name}\n"
            f"environment: {{workdir: {here}}}\n"
            f"command: [{sys.executable}, loader.py]\n"
            f"run: {{timeout: {timeout_s:g}s}}\n"
            "expect: {outcome: hang}\n"
        )
        return replace(cli("run", str(spec), "--out", str(here / "out")), out=here / "out")

    return until_reached(attempt, lambda here: (here / "ready").exists(), 15.0, tmp_path).result


def test_a_hang_in_a_worker_of_the_users_own_script_says_where_it_sits(
    cli: Cli, tmp_path: Path
) -> None:
    """No harness in the worker, no event: the hang's stacks show which of three processes of
    one command line is the worker stuck in `__getitem__`, and the report says so (it read
    `hang`, `where: main`, three alike headers). The signature stays `hang`."""
    result = _run_hung_loader(cli, tmp_path, HUNG_WORKER_SCRIPT, "hung-loader")
    assert result.code == 0, result.stdout + result.stderr
    run = load_run(result.latest_run())
    attempt = run.cells[0].attempts[0]
    assert attempt.ran is not None
    assert (attempt.ran.kind, attempt.ran.where, attempt.ran.signature) == (
        "hang",
        "worker",
        "hang",
    )
    worker = attempt.ran.pid
    assert worker is not None
    assert f"the DataLoader worker pid {worker} was fetching an item, in " in (
        attempt.ran.detail or ""
    )
    assert "loader.py:16 in __getitem__" in (attempt.ran.detail or "")
    failure = _section(render(run, "md"), "Failure")
    assert (
        f"- `hang` (1 attempt): the DataLoader worker pid {worker} was fetching an item, in "
        "`loader.py:16 in __getitem__` (cell `default`, attempt 1)"
    ) in failure
    headers = [line for line in failure.splitlines() if line.startswith("--- pid")]
    assert len(headers) == 3, headers  # the main process and its two workers
    assert sum(h.endswith(" [DataLoader worker] ---") for h in headers) == 2
    assert any(h.startswith(f"--- pid {worker} ") for h in headers[1:])


NATIVE_HUNG_WORKER_SCRIPT = """\
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset

libc = ctypes.CDLL("libc.so.6")


class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 5:
            mutex = ctypes.create_string_buffer(64)  # PTHREAD_MUTEX_INITIALIZER: zeros
            libc.pthread_mutex_lock(mutex); open("ready", "w").close()
            libc.pthread_mutex_lock(mutex)  # locked twice: blocks forever, in native code
        return torch.zeros(2)


for batch in DataLoader(Items(), batch_size=2, num_workers=2, multiprocessing_context="fork"):
    pass
"""


@pytest.mark.skipif(
    native.gdb_path() is None and native.eustack_path() is None,
    reason="no native stacks here (apt-get install elfutils gdb)",
)
def test_a_hang_in_native_code_of_a_worker_lists_that_workers_thread_first(
    cli: Cli, tmp_path: Path
) -> None:
    """The Python summary named the worker stuck fetching an item; the native list of every
    thread showed its thread among the others' (a poll, a futex), unmarked, in pid order."""
    result = _run_hung_loader(cli, tmp_path, NATIVE_HUNG_WORKER_SCRIPT, "native-hung-loader")
    assert result.code == 0, result.stdout + result.stderr
    attempt = result.results()["cells"][0]["attempts"][0]
    assert (attempt["outcome"]["kind"], attempt["outcome"]["where"]) == ("hang", "worker")
    worker = attempt["outcome"]["pid"]
    listed = attempt["native_stacks"].splitlines()
    assert listed[0] == (
        f"Native frames of every thread, the stuck DataLoader worker's (pid {worker}) first:"
    )
    assert listed[1].startswith(
        f"- `pid {worker} thread 1 (LWP {worker}) (stuck: the DataLoader worker fetching an item): "
    ), listed
    assert "pthread_mutex_lock" in listed[1] or "lll_lock_wait" in listed[1], listed
    assert sum("(stuck: " in line for line in listed) == 1
    report = (result.latest_run() / "report.md").read_text()
    assert "\n".join(listed[:2]) in report
    # The full text the report links marks it alike (it listed it unmarked, in pid order).
    text = (result.latest_run() / attempt["logs"] / "native-stacks.txt").read_text()
    assert text.startswith(f"--- pid {worker} "), text[:300]
    marked = [line for line in text.splitlines() if "(stuck: " in line]
    assert len(marked) == 1, marked  # its thread's name between: torch's pt_data_worker
    assert marked[0].startswith(f"Thread 1 (LWP {worker}) "), marked
    assert marked[0].endswith(f"{STUCK_MARK}:"), marked


def test_a_worker_of_the_users_own_script_shows_its_stack_from_its_core(
    cli: Cli, tmp_path: Path
) -> None:
    """No harness in the worker: torch's handler prints one line; the Python stacks read from
    the worker's core are the stack of the process that died."""
    (tmp_path / "loader.py").write_text(WORKER_SCRIPT)
    spec = tmp_path / "own.yaml"
    spec.write_text(
        "reprospec: 1\nname: own-loader\n"
        f"environment: {{workdir: {tmp_path}}}\n"
        f"command: [{sys.executable}, loader.py]\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    run = load_run(result.latest_run())
    attempt = run.cells[0].attempts[0]
    assert attempt.ran is not None
    assert attempt.ran.where == "worker"
    assert attempt.ran.injected is None
    assert attempt.ran.pid is not None
    if native.unavailable_reason() is not None:
        pytest.skip(f"no native stacks here: {native.unavailable_reason()}")
    assert attempt.stack is not None
    assert "in __getitem__" in attempt.stack
    # A forked worker's stack holds its parent's start of it: the sitecustomize's wrapper of
    # Popen.__init__, reprospec's frame, is left out in gdb's words too.
    assert "popen_fork.py" in attempt.stack
    assert "sitecustomize.py" not in attempt.stack
    failure = _section(render(run, "md"), "Failure")
    shown = failure.split("The stack of the process that died", 1)[1]
    assert shown.index("loader.py") < shown.index("The main process's view:")
    # py-spy reads it beside eu-stack, gdb's py-bt without: the report names neither.
    assert shown.split("\n", 1)[0].endswith(", as read from its core:")
