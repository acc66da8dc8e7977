"""A shell told to `exit 139` by a command that runs no program (`sh -c 'exit 139'`, a
script of builtins ending `exit 139`) exits with 139 of its own: `error` exit 139, not a
crash. A shell's 139 for a process that really died of SIGSEGV stays a crash, whether its
report on stderr shows the death or the script passes the status on in words of its own
(a comment, a `case`, a pipeline's PIPESTATUS, a trap) where no shell printed a report
(shellexit.py, classify.py rule 4)."""

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
    ("f() { sh -c 'echo x'; return 139; }; f", "return 139"),
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
    # Scripts that run no program but a shell (a process besides the root) before the exit.
    ends = work / "ends.sh"
    ends.write_text("#!/bin/bash\nsh -c 'echo x' > /dev/null\necho done\nexit 139\n")
    ends.chmod(0o755)
    (work / "plain.sh").write_text("set -e\nsh -c :\nexit 139\n")


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


# A program that dies of SIGSEGV and prints nothing of it: no sitecustomize, no faulthandler.
QUIET_SEGV = f'{shlex.quote(sys.executable)} -S -c "{SEGFAULT}"'
# Scripts that pass on a death they reaped in words of their own, as repro scripts do,
# where no shell printed a report (a pipeline's first member, a substitution, a dash whose
# report went to the redirected log), with `exit 139` in a comment or a mapping of it.
PASSED_ON = {
    "1A comment, tee": (
        "#!/bin/bash\n# Reproduces #123. Expected: exit 139 (SIGSEGV)\n"
        "{segv} 2>&1 | tee out.log\nexit ${{PIPESTATUS[0]}}\n"
    ),
    "1F substitution, comment": (
        "#!/bin/bash\nout=$({segv})\nrc=$?\n"
        '[ $rc -ne 0 ] && {{ echo "failed rc=$rc"; exit $rc; }}\n'
        "# exit 139 means segfault\n"
    ),
    "2B tee, PIPESTATUS": (
        "#!/bin/bash\n{segv} 2>&1 | tee out.log\nrc=${{PIPESTATUS[0]}}\n"
        'if [ "$rc" -eq 139 ]; then echo segfault >&2; exit 139; fi\nexit $rc\n'
    ),
    "2C dash, log, case": (
        "#!/bin/sh\n{segv} > train.log 2>&1\nrc=$?\n"
        "case $rc in 139) echo 'segfaulted, see train.log' >&2; exit 139;; esac\nexit $rc\n"
    ),
    "2D python, dash, log": (
        "#!/bin/sh\n{py} > train.log 2>&1\nrc=$?\n"
        "[ $rc -eq 139 ] && {{ echo segfault >&2; exit 139; }}\nexit $rc\n"
    ),
}


@pytest.mark.parametrize("case", sorted(PASSED_ON))
def test_a_script_that_passes_a_segfault_on_stays_a_crash(
    shells: LocalRunner, tmp_path: Path, case: str
) -> None:
    """Each read `error exit 139 ... nothing shows a death` where its text said `exit 139`
    anywhere (a comment too), with native stacks off: a real crash read as an error."""
    work = tmp_path / "work"
    work.mkdir()
    py = f'{shlex.quote(sys.executable)} -c "{SEGFAULT}"'
    (work / "run.sh").write_text(PASSED_ON[case].format(segv=QUIET_SEGV, py=py))
    (work / "run.sh").chmod(0o755)
    result, execution = run_attempt(shells, ["/bin/sh", "-c", "./run.sh"], tmp_path)
    assert execution.returncode == 139
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal) == ("crash", "SIGSEGV"), outcome


def test_a_trap_that_exits_143_on_sigterm_stays_a_crash(
    shells: LocalRunner, tmp_path: Path
) -> None:
    """`trap '...; exit 143' TERM` is the shell's report of the SIGTERM it received, sent
    here by the program to its process group: it read `crash SIGTERM` until its `exit 143`
    was read as the shell's own (`error exit 143`)."""
    work = tmp_path / "work"
    work.mkdir()
    kill = "import os, signal, time; os.killpg(os.getpgrp(), signal.SIGTERM); time.sleep(5)"
    (work / "run.sh").write_text(
        "#!/bin/bash\ntrap 'echo stopping >&2; exit 143' TERM\n"
        f"{shlex.quote(sys.executable)} -c {shlex.quote(kill)} &\nwait $!\n"
    )
    result, execution = run_attempt(
        shells, ["bash", "./run.sh"], tmp_path, Expectation("crash", signal="SIGTERM")
    )
    assert execution.returncode == 143
    outcome = result.ran
    assert outcome is not None, result.infra_error
    assert (outcome.kind, outcome.signal) == ("crash", "SIGTERM"), outcome
