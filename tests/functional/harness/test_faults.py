"""Each fault is real: a child really dies of the signal (no torch needed, except for oom)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.harness import HARNESS_ROOT
from tests.functional.harness.test_harness import dump_until


def fire(
    kind: str, *, timeout: float = 20, extra: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    code = f"from reprospec_harness import faults; faults.TRIGGERS[{kind!r}]({{{extra}}})"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(HARNESS_ROOT), **(env or {})},
    )


@pytest.mark.parametrize(
    ("kind", "sig"),
    [
        ("segfault", signal.SIGSEGV),
        ("abort", signal.SIGABRT),
        ("bus_error", signal.SIGBUS),
        ("illegal_instruction", signal.SIGILL),
        ("fpe", signal.SIGFPE),
    ],
)
def test_signal_faults_kill_with_their_real_signal(kind: str, sig: signal.Signals) -> None:
    done = fire(kind, env={"PYTHONFAULTHANDLER": "1"})
    assert done.returncode == -sig, done.stderr
    # faulthandler saw a real fault raised by the CPU or kernel, not a kill from outside
    assert "Fatal Python error" in done.stderr
    if kind in ("illegal_instruction", "fpe") and os.uname().machine == "x86_64":
        assert "instead" not in done.stderr  # executed machine code, no os.kill fallback


def test_hang_is_a_real_deadlock_with_both_threads_waiting(tmp_path: Path) -> None:
    dump = tmp_path / "stack.txt"
    code = (
        "import faulthandler, signal; from reprospec_harness import faults;"
        f"faulthandler.register(signal.SIGURG, file=open({str(dump)!r}, 'w'), all_threads=True);"
        "print('ready', flush=True); faults.hang({})"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HARNESS_ROOT)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=1.0)  # still alive: deadlocked, not finished
        # Asked again each second until both threads are where they wait: one dump after
        # the 1 s above showed a thread a starved machine had not yet run into its function.
        dump_until(child.pid, dump, "in hang", "in other_thread")
    finally:
        child.kill()
        child.wait(timeout=10)
    stacks = dump.read_text()
    assert "in other_thread" in stacks, stacks
    assert "in hang" in stacks, stacks


def test_raise_builtin_and_dotted_exception_with_message() -> None:
    done = fire("raise", extra="'exception': 'json.JSONDecodeError', 'message': 'bad json'")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "json.decoder.JSONDecodeError: bad json"
    done = fire("raise", extra="'exception': 'KeyError', 'message': 'missing'")
    assert done.stderr.strip().splitlines()[-1] == "KeyError: 'missing'"


def test_exit_code_in_main_and_worker() -> None:
    assert fire("exit", extra="'code': 7").returncode == 7
    assert fire("exit", extra="'code': 9, 'where': 'worker'").returncode == 9


@pytest.mark.torch
def test_oom_is_a_real_allocation_failure_even_without_a_limit() -> None:
    pytest.importorskip("torch")
    done = fire("oom", timeout=120)
    assert done.returncode == 1
    assert "capping this process's address space" in done.stderr
    assert "DefaultCPUAllocator: can't allocate memory" in done.stderr
