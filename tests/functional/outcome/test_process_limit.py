"""A failure at the attempt's process limit says so in its outcome's detail.

The engine's pids cgroup refuses a fork or a thread past the limit; the program then fails
its own way (`can't start new thread`, a thread pool's abort, a BlockingIOError), and that
failure read alone as the program's bug, with the limit only in a warning beside it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.inputs import Expectation
from reprospec.outcome.evidence import Evidence
from reprospec.pipeline.attempt import attempt_result
from reprospec.process import pidlimit
from reprospec.runners.local import LocalRunner
from tests.support.plans import attempt_plan

THREADS = """\
import threading, time
threads = [threading.Thread(target=time.sleep, args=(2,)) for _ in range(8)]
for thread in threads:
    thread.start()
"""


def test_a_failure_at_the_process_limit_names_the_limit_in_its_detail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidlimit._root_cache.clear()
    if pidlimit._own_pids_root() is None:
        pytest.skip("no writable cgroup v1 pids hierarchy: no refused fork is counted")
    monkeypatch.setenv(pidlimit.MAX_PROCESSES_VAR, "4")
    runner = LocalRunner(native_stacks=False)
    runner.prepare([])
    program = tmp_path / "threads.py"
    program.write_text(THREADS)
    work = tmp_path / "work"
    work.mkdir()
    plan = replace(
        attempt_plan([sys.executable, str(program)], work, timeout_s=20.0),
        expectation=Expectation("error", exception="RuntimeError"),
    )
    execution = runner.run(plan, tmp_path / "attempt")
    outcome = attempt_result(plan, execution, Evidence.read(execution)).ran
    assert outcome is not None
    assert (outcome.kind, outcome.exception) == ("error", "RuntimeError"), outcome
    assert outcome.message == "can't start new thread"
    assert execution.process_limit is not None
    assert (outcome.detail or "").endswith(
        "; the attempt reached its process limit (4 processes): a fork or a new thread was "
        "refused (fork failed: process limit; docs/limits.md)"
    ), outcome.detail
