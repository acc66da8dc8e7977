"""A faulthandler watchdog's dump at the end of stderr: the program timed itself out."""

from __future__ import annotations

from pathlib import Path

from reprospec.core.results import Outcome, PythonFrame
from reprospec.outcome.hangsource import on_disk
from reprospec.outcome.watchdog import (
    hung_frame,
    pytest_timeout_dump,
    pytest_timeout_failure,
    pytest_timeout_worker,
    watchdog_timeout,
)
from tests.support.paths import DATA

DUMP = """\
Timeout (0:00:00.500000)!
Thread 0x00007f46c9a636c0 (most recent call first):
  File "/work/job.py", line 4 in worker
  File "/usr/lib/python3.11/threading.py", line 982 in run

Thread 0x00007f46cadd8b80 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 1119 in join
  File "/work/job.py", line 6 in <module>
"""


def test_a_dump_that_ends_stderr_is_the_watchdogs_end_and_says_where_it_sat() -> None:
    found = watchdog_timeout("loading\nstep 1\n" + DUMP)
    assert found is not None
    assert found.header == "Timeout (0:00:00.500000)!"
    # The main thread joins the worker thread: the hang sits in the worker's frame.
    assert hung_frame(found, source=on_disk) == PythonFrame("/work/job.py", 4, "worker")


def test_a_dump_the_program_went_on_after_is_no_watchdogs_end() -> None:
    # exit=False: it dumped and went on, and what it printed after ended it.
    assert watchdog_timeout(DUMP + "Traceback (most recent call last):\nValueError: x\n") is None
    assert watchdog_timeout(DUMP + "done\n") is None
    # A header alone, a program's own words, is no dump.
    assert watchdog_timeout("Timeout (0:00:05)!\n") is None
    assert watchdog_timeout("") is None


def _classified(tmp_path: Path, stdout: str) -> Outcome:
    from reprospec.outcome.classify import classify
    from tests.support.plans import execution_in

    (tmp_path / "stdout.log").write_text(stdout)
    (tmp_path / "stderr.log").write_text("")
    (tmp_path / "events.jsonl").write_text("")
    outcome = classify(execution_in(tmp_path, 1), pytest=True)
    assert isinstance(outcome, Outcome)
    return outcome


def test_a_test_pytest_timeout_ended_is_that_tests_hang(tmp_path: Path) -> None:
    # Recorded: pytest 9, pytest-timeout 2.4 `--timeout 2`, a test that sleeps. Its thread
    # method dumps the stacks on stdout and `os._exit(1)`s: read as `error exit 1`; its
    # signal method fails the test, `Failed: Timeout (>2.0s) from pytest-timeout.`: read as
    # the error `Failed`. A ticket of either reads the test's hang, and a live run now too.
    recorded = DATA / "capture" / "pytesttimeout"
    thread = _classified(tmp_path, (recorded / "pytest-timeout-thread-v.txt").read_text())
    assert (thread.kind, thread.exit_code, thread.exception) == ("hang", None, None)
    assert thread.detail == (
        "pytest-timeout's thread method ended the run at its timeout (2s), exit status 1"
    )
    signal = _classified(tmp_path, (recorded / "pytest-timeout-signal.txt").read_text())
    assert (signal.kind, signal.exception, signal.message, signal.phase) == (
        "hang",
        None,
        None,
        "test_hang.py::test_sleeps_forever",
    )
    assert (signal.detail or "").startswith(
        "pytest-timeout's signal method ended the test at its timeout (2s); "
    )
    assert pytest_timeout_failure("Timeout (>0.5s) from pytest-timeout.") is not None
    # `--tb=no`: only the short summary, cut at the terminal's width.
    cut = "FAILED test_hang.py::test_sleeps_forever - Failed: Timeout (>2.0s) from pytes...\n"
    assert _classified(tmp_path, cut).kind == "hang"
    assert pytest_timeout_failure("Timeout (>2.0s) from pytest-timeout and more") is None
    # The rule alone, or a dump the session went on after, is no end of the run.
    assert pytest_timeout_dump("+++++ Timeout +++++\n") is None
    # `-v`'s line run on into the first rule with no space between: the rule all the same,
    # as a ticket of it reads (one pattern, watchdog.PYTEST_TIMEOUT_RULE).
    verbose = (recorded / "pytest-timeout-thread-v.txt").read_text()
    joined = verbose.replace("test_sleeps_forever +++", "test_sleeps_forever+++", 1)
    assert joined != verbose
    assert pytest_timeout_dump(joined) is not None
    went_on = (recorded / "pytest-timeout-signal-threads.txt").read_text()
    assert pytest_timeout_dump(went_on) is None
    assert _classified(tmp_path, went_on).kind == "hang"  # by its `Failed: Timeout`
    # Under pytest-xdist, a worker that exited (no signal) while pytest-timeout's thread
    # method is in force: read as `error exit 1`, message `worker 'gw0' crashed ...`.
    xdist = _classified(tmp_path, (recorded / "pytest-timeout-thread-xdist.txt").read_text())
    assert (xdist.kind, xdist.exception, xdist.phase) == (
        "hang",
        None,
        "test_hang.py::test_sleeps_forever",
    )
    assert (xdist.detail or "").startswith(
        "pytest-timeout's thread method ended a pytest-xdist worker at its timeout (2s)"
    )
    # Recorded: the same header (`--timeout 30`), the worker's test `os.kill(os.getpid(),
    # 9)` (the OOM killer's case): `1 failed in 4.48s`, no bound reached, no rule shown.
    killed = (recorded / "pytest-timeout-thread-xdist-killed.txt").read_text()
    assert pytest_timeout_worker(killed) is None
    assert _classified(tmp_path, killed).kind == "error"
    # Its dump's rule shown is evidence enough, however long the session says it ran.
    rule = "+" * 9 + " Timeout " + "+" * 9
    ruled = killed.replace("\n[gw0] node down", f"\n{rule}\n[gw0] node down")
    assert pytest_timeout_worker(ruled) is not None
    # Another test's `Failed` stays an error.
    failed = "FAILED t.py::test_x - Failed: Timeout waiting for the server\n"
    assert _classified(tmp_path, failed).kind == "error"
