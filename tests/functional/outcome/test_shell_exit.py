"""A shell told to `exit 139` (`sh -c 'exit 139'`, a script ending `exit 139`) exits with
139 of its own: `error` exit 139, not a crash. A shell's 139 for a process that really died
of SIGSEGV stays a crash, its report on stderr showing the death even where the line also
says `exit 139` (shellexit.py, classify.py rule 4)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.core.words import a_shells_own_exit
from reprospec.runners.local import LocalRunner
from tests.functional.outcome.test_children import run_attempt

SEGFAULT = "import ctypes; ctypes.string_at(0)"
OWN_EXIT = [
    ("sh -c 'exit 139'", "exit 139"),
    ("dash -c 'true; exit 139'", "exit 139"),
    ("bash -c 'exit 139'", "exit 139"),
    ("bash -c 'set -e; sh -c \"exit 139\"; echo never'", "exit 139"),
    ("./ends.sh", "exit 139 in ends.sh"),
    ("sh plain.sh --fast", "exit 139 in plain.sh"),
    ("f() { ls > /dev/null; return 139; }; f", "return 139"),
]


@pytest.fixture(scope="module")
def shells() -> LocalRunner:
    # Without native stacks (no cores read): what the shells printed must be enough.
    runner = LocalRunner(native_stacks=False)
    runner.prepare([])
    return runner


def _scripts(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    # A script that runs programs (ls: a process besides the shells) before its exit.
    ends = work / "ends.sh"
    ends.write_text("#!/bin/bash\nls > /dev/null\necho done\nexit 139\n")
    ends.chmod(0o755)
    (work / "plain.sh").write_text("ls > /dev/null\nexit 139\n")


@pytest.mark.parametrize(("line", "said"), OWN_EXIT)
def test_a_shells_own_exit_139_is_an_error(
    shells: LocalRunner, tmp_path: Path, line: str, said: str
) -> None:
    """`command: sh -c 'exit 139'` read `crash SIGSEGV`, "as a shell reports it": dash
    forks the inner sh, so a process besides the root ran, but it ran `exit 139` and died
    of nothing; so did a script that ends `exit 139`."""
    _scripts(tmp_path)
    result, execution = run_attempt(
        shells, ["/bin/sh", "-c", line], tmp_path, Expectation("error", exit_code=139)
    )
    assert execution.returncode == 139
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.exit_code, outcome.signal) == ("error", 139, None), outcome
    assert outcome.detail == f"exit code 139; 139 = 128 + SIGSEGV{a_shells_own_exit(said)}"
    assert result.matched, result.mismatches


@pytest.mark.parametrize(
    "line",
    [
        # No `exit 139` anywhere: the status is passed on, a death's report.
        "sh -c '{py}; exit $?'",
        "sh -c '{py}'",
        "{py}; exit $?",
        "bash -c 'set -e; {py}; echo never'",
        "sh -c 'kill -SEGV $$'; exit $?",
        # The line says `exit 139`, but a shell reported the death: dash's `Segmentation
        # fault`, bash's `line 1: 4242 Segmentation fault`, with `(core dumped)` too.
        "sh -c 'kill -SEGV $$'; exit 139",
        "bash -c 'set -e; sh -c \"kill -SEGV \\$\\$\"; echo never'; exit 139",
        "bash -c 'sh -c \"kill -SEGV \\$\\$\"; exit 139'",
        "ulimit -c unlimited; sh -c 'kill -SEGV $$'; exit 139",
    ],
)
def test_a_shells_139_for_a_real_segfault_stays_a_crash(
    shells: LocalRunner, tmp_path: Path, line: str
) -> None:
    py = f'{shlex.quote(sys.executable)} -c "{SEGFAULT}"'
    result, execution = run_attempt(shells, ["/bin/sh", "-c", line.format(py=py)], tmp_path)
    assert execution.returncode in (139, -11)
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal) == ("crash", "SIGSEGV"), outcome
