"""torch's "DataLoader worker (pid N) is killed by signal: X" names X by its words
(`Segmentation fault`) or, in older torch and some wrappers, by its number (`11`): both are
the worker's death by that signal, `crash SIGSEGV` where: worker, not an unknown signal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import run_attempt

# A worker that really dies of SIGSEGV; its parent reports it as torch does: the words on
# a RuntimeError it raises, exit status 1.
LOADER = """
import ctypes, os, sys
pid = os.fork()
if pid == 0:
    ctypes.string_at(0)
os.waitpid(pid, 0)
raise RuntimeError(f"DataLoader worker (pid {pid}) is killed by signal: {sys.argv[1]}. ")
"""


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    runner = LocalRunner(native_stacks=False)
    runner.prepare([])
    return runner


@pytest.mark.parametrize("said", ["11", "SIGSEGV", "Segmentation fault"])
def test_a_workers_signal_by_number_is_that_signal(
    runner: LocalRunner, tmp_path: Path, said: str
) -> None:
    script = tmp_path / "loader.py"
    script.write_text(LOADER)
    result, execution = run_attempt(
        runner,
        [sys.executable, str(script), said],
        tmp_path,
        Expectation("crash", signal="SIGSEGV", where="worker"),
    )
    assert execution.returncode == 1
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal, outcome.where) == ("crash", "SIGSEGV", "worker"), outcome
    assert outcome.signature.startswith("crash:SIGSEGV:worker"), outcome.signature
    assert result.matched, result.mismatches
