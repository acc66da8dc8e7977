"""The local runner's OOM watch, read at an attempt's end only where a process of the
attempt can have been the OOM killer's. The kernel's count is this machine's, which no test
may raise: the engine's counter is a file of the test's (as tests/unit/process/
test_memcgroup.py), which the attempt's own program writes as the kernel would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.core.results import Outcome
from reprospec.outcome.evidence import Evidence
from reprospec.pipeline.attempt import attempt_result
from reprospec.process import memcgroup
from reprospec.runners.local import LocalRunner
from tests.support.local import make_plan

PY = sys.executable
SAID = "the kernel's OOM killer killed 1 process in the attempt's memory cgroup"


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A program's line that counts one OOM kill in the engine's (test's) memory cgroup."""
    path = tmp_path / "memory.oom_control"
    path.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    monkeypatch.setattr(memcgroup, "own_counter", lambda: path)
    return f"open({str(path)!r}, 'w').write('oom_kill_disable 0\\nunder_oom 0\\noom_kill 1\\n')"


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def test_a_kill_counted_while_one_process_ran_and_exited_is_not_the_attempts(
    runner: LocalRunner, tmp_path: Path, counted: str
) -> None:
    """One process, which died of no SIGKILL: the kill was someone else's (another
    process of the cgroup), so the counts are not read, and the pass has no warning."""
    ex = runner.run(make_plan([PY, "-c", counted]), tmp_path / "attempt")
    assert (ex.returncode, ex.descendants, ex.oom) == (0, False, None)
    result = attempt_result(make_plan([PY, "-c", counted]), ex, Evidence.read(ex))
    assert isinstance(result.outcome, Outcome)
    assert result.outcome.kind == "pass"
    assert SAID not in " ".join(result.warnings)


def test_a_sigkill_after_a_kill_was_counted_is_still_the_oom_killers(
    runner: LocalRunner, tmp_path: Path, counted: str
) -> None:
    line = f"{counted}; import os; os.kill(os.getpid(), 9)"
    ex = runner.run(make_plan([PY, "-c", line]), tmp_path / "attempt")
    assert (ex.returncode, ex.descendants, ex.oom) == (-9, False, SAID)
    outcome = attempt_result(make_plan([PY, "-c", line]), ex, Evidence.read(ex)).outcome
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.signal, outcome.oom_killed) == ("crash", "SIGKILL", True)


def test_a_kill_counted_while_the_attempt_ran_a_child_is_kept(
    runner: LocalRunner, tmp_path: Path, counted: str
) -> None:
    """A child that may have been the one killed (its parent reaped it and went on): the
    count is read, and said beside the pass."""
    line = f"import subprocess; subprocess.run(['true']); {counted}"
    ex = runner.run(make_plan([PY, "-c", line]), tmp_path / "attempt")
    assert (ex.returncode, ex.descendants, ex.oom) == (0, True, SAID)
    result = attempt_result(make_plan([PY, "-c", line]), ex, Evidence.read(ex))
    assert isinstance(result.outcome, Outcome)
    assert result.outcome.kind == "pass"
    assert SAID in " ".join(result.warnings)
