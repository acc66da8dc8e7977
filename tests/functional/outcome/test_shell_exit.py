"""A shell's own `exit 139` (`sh -c 'exit 139'`) is an error exit 139, not a crash: the
command runs shells and their builtins alone, and none of them reported a death. A shell's
139 for a program that really died of SIGSEGV stays a crash."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.words import AS_A_SHELL_REPORTS_A_DEATH_BUT_SHELLS_ALONE
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import run_attempt

SEGFAULT = "import ctypes; ctypes.string_at(0)"
SHELLS_ALONE = [
    "sh -c 'exit 139'",
    "sh -c 'true; exit 139'",
    "bash -c 'exit 139'",
    "A=1 sh -e -c 'sh -c \"exit 139\"'",
]


@pytest.fixture(scope="module")
def shells() -> LocalRunner:
    # Without native stacks (no cores): what the shells printed must be enough.
    runner = LocalRunner(native_stacks=False)
    runner.prepare([])
    return runner


@pytest.mark.parametrize("line", SHELLS_ALONE)
def test_a_shells_own_exit_139_is_an_error(shells: LocalRunner, tmp_path: Path, line: str) -> None:
    """`command: sh -c 'exit 139'` read `crash SIGSEGV`, "as a shell reports it": dash
    forks the inner sh, so a process besides the root ran, but that process ran the
    builtin `exit 139` and died of nothing."""
    result, execution = run_attempt(
        shells, ["/bin/sh", "-c", line], tmp_path, Expectation("error", exit_code=139)
    )
    assert execution.returncode == 139
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.exit_code, outcome.signal) == ("error", 139, None), outcome
    assert (outcome.detail or "") == (
        f"exit code 139; 139 = 128 + SIGSEGV{AS_A_SHELL_REPORTS_A_DEATH_BUT_SHELLS_ALONE}"
    )


@pytest.mark.parametrize("line", ["sh -c '{py}; exit $?'", "sh -c '{py}'", "{py}; exit $?"])
def test_a_shells_139_for_a_real_segfault_stays_a_crash(
    shells: LocalRunner, tmp_path: Path, line: str
) -> None:
    py = f'{shlex.quote(sys.executable)} -c "{SEGFAULT}"'
    result, execution = run_attempt(shells, ["/bin/sh", "-c", line.format(py=py)], tmp_path)
    assert execution.returncode in (139, -11)
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal) == ("crash", "SIGSEGV"), outcome
