"""The harness end to end: real children run `python -m reprospec_harness` on a cell.json.

Each test is one real child (torch import ~2 s), so the set is kept small and
each run checks several things at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from reprospec.core.results import Execution, NotRun, Outcome
from reprospec.core.sections import Environment, Workload
from reprospec.harness import HARNESS_ROOT
from reprospec.outcome.classify import classify
from reprospec.process import rlimits
from tests.support.cli import Cli
from tests.support.paths import ROOT

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

FIXTURES = ROOT / "specs" / "fixtures"
TINY_DATA = {
    "dataset": {"builtin": "synthetic", "size": 64, "shape": [3, 8, 8], "classes": 4},
    "loader": {"batch_size": 4},
}


class Child:
    """One attempt's folder: cell.json in, events / env.json / stacks / logs out."""

    def __init__(
        self,
        folder: Path,
        workload: dict[str, Any],
        environment: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> None:
        self.folder = folder
        (folder / "stacks").mkdir(parents=True)
        cell = {
            "spec": "t",
            "cell_id": "c",
            "matrix": {},
            "attempt": attempt,
            # As the engine writes it: with its defaults (the phases) filled in.
            "workload": Workload.from_section(workload).document,
            "environment": environment or {},
        }
        (folder / "cell.json").write_text(json.dumps(cell))
        self.env = {
            **os.environ,
            "PYTHONPATH": str(HARNESS_ROOT),
            "PYTHONFAULTHANDLER": "1",
            "REPROSPEC_CELL": str(folder / "cell.json"),
            "REPROSPEC_EVENTS": str(folder / "events.jsonl"),
            "REPROSPEC_ENV_JSON": str(folder / "env.json"),
            "REPROSPEC_STACK_DIR": str(folder / "stacks"),
        }
        argv, self.warnings = rlimits.wrap_argv(
            [sys.executable, "-m", "reprospec_harness"],
            Environment.from_section(environment or {}, folder),
        )
        self.argv = argv

    def run(
        self, timeout: float = 120, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run to the end in a session of its own; whatever it left (a DataLoader's
        forkserver and its workers outlive a main that crashed or timed out) is killed
        with the group, where subprocess.run's timeout would kill the main alone."""
        process = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=self.env,
            cwd=cwd or self.folder,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.returncode is None:
                process.communicate()
        return subprocess.CompletedProcess(self.argv, process.returncode, stdout, stderr)

    def start(self, cwd: Path | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=cwd or self.folder,
            start_new_session=True,
        )

    def events(self) -> list[dict[str, Any]]:
        path = self.folder / "events.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def last(self, kind: str) -> dict[str, Any]:
        return [e for e in self.events() if e["event"] == kind][-1]

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(e) for e in self.events()):
                return
            time.sleep(0.1)
        raise AssertionError(f"event never came; got {self.events()[-3:]}")


def dump_until(pid: int, stack: Path, *needles: str, timeout: float = 60) -> None:
    """Ask `pid` for its stacks (SIGURG) until its dump file shows every one of `needles`,
    asked again each second while it does not: the event the test saw comes just before
    the process goes where it hangs, and a dump asked before it got there (a fixed sleep
    after the event, which a loaded machine need not keep) shows where it was instead.
    faulthandler appends each dump, one thread at a time."""
    deadline = time.monotonic() + timeout
    while True:
        os.kill(pid, signal.SIGURG)
        again = time.monotonic() + 1.0
        while time.monotonic() < again:
            if all(needle in stack.read_text() for needle in needles):
                return
            time.sleep(0.05)
        assert time.monotonic() < deadline, f"never dumped {needles}:\n{stack.read_text()}"


def located(events: list[dict[str, Any]]) -> tuple[Any, Any]:
    """Phase and step as the classifier reads them: from the last event that has either."""
    for event in reversed(events):
        if "phase" in event or "step" in event:
            return event.get("phase"), event.get("step")
    return None, None


def test_worker_segfault_names_the_worker_signal_and_item(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "seed": 0,
            "imports": ["json"],
            "model": {"builtin": "cnn", "params": {"channels": 4}},
            "data": {
                **TINY_DATA,
                "loader": {"batch_size": 4, "num_workers": 2, "pin_memory": True},
            },
            "phases": [{"name": "train", "steps": 2}, {"name": "validation", "steps": 10}],
            "faults": [
                {
                    "kind": "segfault",
                    "where": "worker",
                    "at": {"phase": "validation", "step": 7},
                    "when": True,
                }
            ],
        },
        {"packages": ["torch==2.13.0"]},
    )
    done = child.run()
    assert done.returncode == 1  # the main process re-raises the DataLoader's RuntimeError
    assert "Unexpected segmentation fault encountered in worker" in done.stderr
    # The main process's last exception is torch's RuntimeError (the harness raises it from a
    # ConnectionResetError or EOFError that came first), which names no signal: the
    # worker_exit event is what says which worker died of what.
    events = child.events()
    kinds = [e["event"] for e in events]
    assert kinds[:3] == ["start", "import", "import"]
    assert [e["module"] for e in events if e["event"] == "import"] == ["json", "torch"]
    fault = child.last("fault")
    assert fault["where"] == "worker"
    assert fault["index"] == 6 * 4  # first item of validation step 7
    exit_ = child.last("worker_exit")
    assert exit_["signal"] == "SIGSEGV"
    assert exit_["pid"] == fault["pid"]
    assert exit_["index"] == 24
    assert (exit_["phase"], exit_["step"]) == ("validation", 7)
    assert exit_["main_step"] is not None
    assert exit_["main_step"] <= 7  # prefetch: main is behind
    assert located(events) == ("validation", 7)
    env = json.loads((tmp_path / "env.json").read_text())
    assert env["torch"]["version"].startswith("2.")
    assert env["packages"]["torch"]
    assert env["workload"]["num_workers"] == 2
    assert env["multiprocessing"]["start_method"] in ("fork", "spawn", "forkserver")


def test_same_fault_without_workers_never_fires_and_the_run_passes(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "model": {"builtin": "transformer-decoder"},
            "amp": "bf16",
            "optimizer": {"name": "adam", "lr": 1e-3},
            "data": {
                "dataset": {"size": 32, "shape": [12], "dtype": "int64", "classes": 20},
                "loader": {"batch_size": 4, "num_workers": 0, "prefetch_factor": 2},
            },
            "phases": [
                {"name": "train", "steps": 9},
                {"name": "test", "steps": 2},
                {"name": "probe", "mode": "eval"},
            ],
            "faults": [{"kind": "segfault", "where": "worker", "at": {"index": 3}}],
        },
    )
    done = child.run()
    assert done.returncode == 0, done.stderr
    events = child.events()
    assert events[-1]["event"] == "done"
    assert not [e for e in events if e["event"] in ("fault", "worker_exit")]
    steps = [(e["phase"], e["step"]) for e in events if e["event"] == "step"]
    # 9 train steps over 8 batches: the loader starts a second epoch; `probe` runs one epoch (8)
    assert steps[8] == ("train", 9)
    assert steps[9:11] == [("test", 1), ("test", 2)]
    assert len(steps) == 19
    stages = [
        e["stage"]
        for e in events
        if e["event"] == "stage" and e["step"] == 1 and e["phase"] == "train"
    ]
    assert stages == ["data", "forward", "loss", "backward", "optimizer"]
    assert [e["stage"] for e in events if e["event"] == "stage" and e["phase"] == "test"][:3] == [
        "data",
        "forward",
        "loss",
    ]  # eval phases: no backward, no optimizer step


def test_main_segfault_at_validation_step_dies_of_sigsegv_there(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "data": TINY_DATA,
            "phases": [{"name": "train", "steps": 2}, {"name": "validation", "steps": 10}],
            "faults": [{"kind": "segfault", "at": {"phase": "validation", "step": 7}}],
        },
    )
    done = child.run()
    assert done.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in done.stderr
    assert located(child.events()) == ("validation", 7)
    assert child.events()[-1]["event"] == "fault"


def test_exception_at_the_loss_stage_and_a_loss_entrypoint(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "model": {"builtin": "mlp", "loss": "losses:finite_cross_entropy"},
            "data": TINY_DATA,
            "phases": [{"name": "train", "steps": 5}],
            "faults": [
                {
                    "kind": "raise",
                    "exception": "ValueError",
                    "message": "injected at loss",
                    "at": {"phase": "train", "step": 3, "stage": "loss"},
                }
            ],
        },
    )
    done = child.run(cwd=FIXTURES)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "ValueError: injected at loss"
    last = child.events()[-1]
    assert (last["event"], last["phase"], last["step"], last["stage"]) == (
        "fault",
        "train",
        3,
        "loss",
    )


def test_cuda_without_a_gpu_is_an_infra_error_not_a_crash(tmp_path: Path) -> None:
    child = Child(tmp_path, {"device": "cuda:1", "data": TINY_DATA})
    done = child.run()
    assert done.returncode == 3
    reason = child.last("infra_error")["reason"]
    assert reason.startswith("device cuda:1 requested but no CUDA device is visible")
    assert "Traceback" not in done.stderr
    assert json.loads((tmp_path / "env.json").read_text())["torch"]["cuda_available"] is False


def test_a_typo_in_a_builtin_is_an_infra_error_not_the_expected_error(tmp_path: Path) -> None:
    child = Child(tmp_path, {"model": {"builtin": "mlp", "params": {"bogus_param": 3}}})
    done = child.run()
    assert done.returncode == 3  # EXIT_INFRA, as for a missing GPU
    reason = child.last("infra_error")["reason"]
    assert reason == "workload.model.params: mlp() got an unexpected keyword argument 'bogus_param'"
    assert "Traceback" not in done.stderr
    execution = _execution(tmp_path, done.returncode, timed_out=False)
    assert classify(execution) == NotRun(reason)  # the engine's cell verdict: infra-error


def test_a_typo_in_imports_is_an_infra_error_but_a_listed_module_failing_is_an_error(
    tmp_path: Path,
) -> None:
    """`imports: [jsonn]` is the spec's mistake (infra-error naming the entry), never an
    expected ModuleNotFoundError reproduced; a listed module that is there and imports
    something missing is the program's own failure, an error as before."""
    typo = tmp_path / "typo"
    typo.mkdir()
    child = Child(typo, {"imports": ["json", "jsonn"], "data": TINY_DATA})
    done = child.run()
    assert done.returncode == 3
    reason = child.last("infra_error")["reason"]
    assert reason.startswith("workload.imports[1]: no module named 'jsonn' in ")
    assert "Traceback" not in done.stderr
    assert classify(_execution(typo, done.returncode, timed_out=False)) == NotRun(reason)

    own = tmp_path / "own"
    own.mkdir()
    (own / "plugin.py").write_text("import not_installed_dependency\n")
    child = Child(own, {"imports": ["plugin"], "data": TINY_DATA})
    done = child.run()
    assert done.returncode == 1
    (own / "stderr.log").write_text(done.stderr)  # as the runner keeps it
    outcome = classify(_execution(own, done.returncode, timed_out=False))
    assert isinstance(outcome, Outcome)
    assert outcome.exception == "ModuleNotFoundError"
    assert outcome.phase == "import"


def test_a_submodule_an_installed_package_lacks_is_an_error_a_missing_package_is_not(
    tmp_path: Path,
) -> None:
    """`imports: [pkg.sub]` where pkg is there and this version of it lacks `sub` is what a
    bisect over versions seeks (an error); it read "could not run" (infra-error). Where
    `pkg` itself is missing, the entry is the spec's or this machine's mistake, as before."""
    lacks = tmp_path / "lacks"
    (lacks / "pkg").mkdir(parents=True)
    (lacks / "pkg" / "__init__.py").write_text("")
    child = Child(lacks, {"imports": ["pkg.sub"], "data": TINY_DATA})
    done = child.run()
    assert done.returncode == 1, done.stderr
    (lacks / "stderr.log").write_text(done.stderr)
    outcome = classify(_execution(lacks, done.returncode, timed_out=False))
    assert isinstance(outcome, Outcome)
    assert outcome.exception == "ModuleNotFoundError"
    assert outcome.phase == "import"

    absent = tmp_path / "absent"
    absent.mkdir()
    child = Child(absent, {"imports": ["nopkg.sub"], "data": TINY_DATA})
    done = child.run()
    assert done.returncode == 3
    assert child.last("infra_error")["reason"].startswith(
        "workload.imports[0]: no module named 'nopkg' in "
    )


def _execution(folder: Path, returncode: int | None, timed_out: bool) -> Execution:
    """The harness's attempt as a runner records it (a workload: its events are believed)."""
    (folder / "stdout.log").touch()
    (folder / "stderr.log").touch()
    return Execution(
        cell_id="c",
        attempt=1,
        log_dir=folder,
        returncode=returncode,
        timed_out=timed_out,
        duration_s=1.0,
        started="",
        finished=datetime.now(timezone.utc).isoformat(),
        stdout_path=folder / "stdout.log",
        stderr_path=folder / "stderr.log",
        events_path=folder / "events.jsonl",
        harness=True,
    )


def test_forkserver_worker_exit_code_is_reported(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "data": {
                **TINY_DATA,
                "loader": {
                    "batch_size": 4,
                    "num_workers": 2,
                    "multiprocessing_context": "forkserver",
                    "persistent_workers": True,
                },
            },
            "phases": [{"name": "train", "steps": 3}, {"name": "validation", "steps": 4}],
            "faults": [
                {
                    "kind": "exit",
                    "code": 7,
                    "where": "worker",
                    "at": {"phase": "validation", "index": 9},
                }
            ],
        },
    )
    done = child.run()
    assert done.returncode == 1  # the main loop's own error varies; the event does not
    exit_ = child.last("worker_exit")
    assert exit_["exit_code"] == 7
    assert exit_["index"] == 9
    assert exit_["phase"] == "validation"
    assert child.last("loader")["multiprocessing_context"] == "forkserver"


def test_import_time_deadlock_is_located_at_the_import_with_stacks(tmp_path: Path) -> None:
    child = Child(tmp_path, {"imports": ["json", "deadlock_on_import"], "data": TINY_DATA})
    process = child.start(cwd=FIXTURES)
    try:
        child.wait_for(lambda e: e.get("module") == "deadlock_on_import")
        stack = tmp_path / "stacks" / f"stack-{process.pid}.txt"
        assert stack.exists()
        dump_until(process.pid, stack, "in _warm_up", "in join")
        assert process.poll() is None  # still there: hung, not failed
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    last = child.events()[-1]
    assert (last["event"], last["module"], last["phase"]) == (
        "import",
        "deadlock_on_import",
        "import",
    )
    dump = stack.read_text()
    assert "in _warm_up" in dump
    assert "in join" in dump
    env = json.loads((tmp_path / "env.json").read_text())  # written before the imports
    assert env["python"]["version"]
    assert env["torch"] == {"captured": False}


def test_hung_worker_dumps_its_own_stack_and_is_named_in_the_hang(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "data": {**TINY_DATA, "loader": {"batch_size": 4, "num_workers": 2}},
            "phases": [{"name": "train", "steps": 6}],
            "faults": [{"kind": "hang", "where": "worker", "at": {"index": 9}}],
        },
    )
    process = child.start()
    try:
        fault = None
        deadline = time.monotonic() + 60
        while fault is None and time.monotonic() < deadline:
            fault = next((e for e in child.events() if e["event"] == "fault"), None)
            time.sleep(0.1)
        assert fault is not None
        stack = tmp_path / "stacks" / f"stack-{fault['pid']}.txt"
        dump_until(fault["pid"], stack, "in hang", "in other_thread")
        # Past BUSY_AFTER (2 s) the worker's watch says which item it is stuck on.
        child.wait_for(lambda e: e["event"] == "worker_busy", timeout=10)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    dump = stack.read_text()
    assert "in hang" in dump
    assert "in __getitem__" in dump
    assert "in other_thread" in dump
    main_dump = (tmp_path / "stacks" / f"stack-{process.pid}.txt").read_text()
    assert "in hang" not in main_dump  # each process dumps into its own file
    busy = child.last("worker_busy")
    assert (busy["pid"], busy["index"], busy["phase"], busy["step"]) == (
        fault["pid"],
        9,
        "train",
        3,
    )
    outcome = classify(_execution(tmp_path, None, timed_out=True))
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where) == ("hang", "worker")
    assert (outcome.phase, outcome.step) == ("train", 3)
    assert f"DataLoader worker {busy['worker']} (pid {fault['pid']}) stuck fetching item 9" in (
        outcome.detail or ""
    )
    # The pid the detail names, which the native stacks list first.
    assert outcome.pid == fault["pid"]


@pytest.mark.skipif(
    rlimits.namespaces_permitted() is not None, reason="private /dev/shm not permitted here"
)
def test_small_shm_exhausts_shared_memory_without_any_fault(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "model": {"builtin": "mlp", "params": {"hidden": 8, "layers": 1}},
            "data": {
                "dataset": {"size": 256, "shape": [3, 256, 256]},
                "loader": {"batch_size": 48, "num_workers": 2},
            },  # 36 MiB batches: the one the main process holds and the next exceed 64 MiB
            "phases": [{"name": "train", "steps": 4}],
        },
        {"shm_size": "64m"},
    )
    assert child.warnings == []
    done = child.run()
    assert done.returncode == 1
    assert "unable to allocate shared memory(shm)" in done.stderr
    assert "No space left on device" in done.stderr
    env = json.loads((tmp_path / "env.json").read_text())
    assert env["shm"]["size"] == 64 * 2**20  # the attempt saw its own /dev/shm


def test_oom_fault_under_the_spec_memory_limit(tmp_path: Path) -> None:
    child = Child(
        tmp_path,
        {
            "data": TINY_DATA,
            "phases": [{"name": "train", "steps": 3}],
            "faults": [{"kind": "oom", "at": {"phase": "train", "step": 2}}],
        },
        {"memory": "3g"},
    )
    done = child.run()
    assert done.returncode == 1
    assert "DefaultCPUAllocator: can't allocate memory" in done.stderr
    assert "capping" not in done.stderr  # the spec's own limit applied, not the fallback
    env = json.loads((tmp_path / "env.json").read_text())
    assert env["memory"]["rlimit_as"] == 3 * 2**30


def test_a_fault_whose_when_is_no_is_left_out_from_validate_to_the_run(
    cli: Cli, tmp_path: Path
) -> None:
    # `when: no` is the text 'no' (YAML 1.2), `${{ matrix.inject }}` evaluates to text: both
    # are false as spec-format.md says, so validate and plan accept them and the harness
    # leaves both faults out: the cell passes.
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: when-words\nmatrix: {inject: ['no']}\n"
        "workload:\n"
        "  data:\n"
        "    dataset: {builtin: synthetic, size: 8, shape: [4], classes: 2}\n"
        "    loader: {batch_size: 4}\n"
        "  phases: [{name: train, steps: 2}]\n"
        "  faults:\n"
        "    - {kind: segfault, when: no}\n"
        "    - {kind: raise, when: '${{ matrix.inject }}'}\n"
        "expect: {outcome: pass}\n"
    )
    assert cli("validate", "spec.yaml", cwd=tmp_path).code == 0
    planned = cli("plan", "spec.yaml", cwd=tmp_path)
    assert planned.code == 0, planned.stderr
    assert '"faults": [{"kind": "segfault", "when": "no"}, {"kind": "raise", "when": "no"}]' in (
        planned.stdout
    )
    ran = cli("run", "spec.yaml", cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    ((attempt,),) = [cell["attempts"] for cell in ran.results()["cells"]]
    assert attempt["outcome"]["kind"] == "pass"
    assert "injected" not in attempt["outcome"]
