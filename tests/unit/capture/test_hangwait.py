"""How long a verify attempt waits for a captured hang (capture/hangwait.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from reprospec.capture.hangwait import (
    MIN_STALL_S,
    CpuReading,
    VerifyWait,
    alone_timeout,
    cpu_moved,
    moving_at_bound,
    read_hang,
    still_moving,
    verify_wait,
)
from reprospec.core.results import AttemptResult, Outcome

START = 1_796_000_000.0


def hung(
    run_dir: Path,
    number: int,
    progress: list[float],
    duration: float,
    *,
    lines: str = "step",
    signature: str = "hang",
) -> AttemptResult:
    """An attempt that hung after progress events at `progress` seconds from its start."""
    logs = f"cells/default/{number}/"
    (run_dir / logs).mkdir(parents=True)
    events = [
        {"t": START + t, "event": "marker", "step": i, "line": f"{lines} {i}"}
        for i, t in enumerate(progress, 1)
    ]
    # Written before its import starts: where the attempt is, not that it moves.
    events.append({"t": START + duration - 1, "event": "import", "module": "wandb"})
    (run_dir / logs / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return AttemptResult(
        attempt=number,
        duration_s=duration,
        outcome=Outcome("hang", signature=signature),
        matched=False,
        mismatches=(),
        logs=logs,
        started=datetime.fromtimestamp(START, timezone.utc).isoformat(timespec="milliseconds"),
    )


def test_a_hang_long_after_its_last_step_is_called_at_a_stall(tmp_path: Path) -> None:
    # A deadlock after steps 0.1 s apart, seen at the 300 s timeout; every verify
    # waited 300 s again.
    attempts = [hung(tmp_path, 1, [0.1, 0.2], 300.3)]
    wait = verify_wait(read_hang("hang", tmp_path, attempts, ("steps",)), 300.0)
    assert wait is not None
    assert (wait.timeout_s, wait.stall_s) == (300.0, MIN_STALL_S)
    assert round(wait.quiet_s or 0, 2) == 300.1
    assert round(wait.gap_s or 0, 2) == 0.1
    assert wait.overrides == ("run.stall=10s",)
    assert "called after 10s without progress" in wait.note()
    assert "`--set run.stall=10s` calls it early in your runs too" in wait.said()


def test_the_stall_is_ten_times_the_longest_gap_between_progress(tmp_path: Path) -> None:
    attempts = [hung(tmp_path, 1, [1, 3.2, 4], 300), hung(tmp_path, 2, [1, 5.5], 300)]
    wait = verify_wait(read_hang("hang", tmp_path, attempts, ("steps",)), 300.0)
    assert wait is not None
    assert wait.stall_s == 45.0  # 4.5 s apart at most: 45 s


def test_a_stall_not_well_below_the_quiet_the_hang_showed_is_not_used(tmp_path: Path) -> None:
    # 5 s timeout, last progress at 0.1 s: a 10 s stall would call nothing sooner.
    wait = verify_wait(
        read_hang("hang", tmp_path, [hung(tmp_path, 1, [0.1], 5.2)], ("steps",)), 5.0
    )
    assert wait == VerifyWait(5.0)
    assert wait.overrides == ()
    assert wait.note() == (
        "a hang waits the spec's timeout, 5s, in each attempt: capture --timeout D shortens it"
    )
    # Quiet 19 s: twice a 10 s stall is more.
    wait = verify_wait(
        read_hang("hang", tmp_path, [hung(tmp_path, 2, [1.0], 20.0)], ("steps",)), 20.0
    )
    assert wait == VerifyWait(20.0)


def test_a_spec_without_markers_counts_the_lines_a_preset_matched_as_output(
    tmp_path: Path,
) -> None:
    # A user's dl2.py printed one `step 1` and deadlocked: no preset fits one line, so its
    # spec has no markers and its output is progress; the line's marker event is its time.
    attempts = [hung(tmp_path, 1, [0.1], 300.2)]
    wait = verify_wait(read_hang("hang", tmp_path, attempts, ()), 300.0)
    assert wait is not None
    assert (wait.stall_s, wait.gap_s) == (MIN_STALL_S, None)
    assert "went 300.1 s without progress to the timeout, after its only progress;" in wait.said()


def test_a_hang_without_progress_waits_the_timeout(tmp_path: Path) -> None:
    wait = verify_wait(read_hang("hang", tmp_path, [hung(tmp_path, 1, [], 300)], ("steps",)), 300.0)
    assert wait == VerifyWait(300.0)
    # Markers of a preset the spec does not keep are no progress of its verify.
    attempts = [hung(tmp_path, 2, [0.1, 0.2], 300, lines="[ RUN      ] Suite.test")]
    assert verify_wait(read_hang("hang", tmp_path, attempts, ("steps",)), 300.0) == VerifyWait(
        300.0
    )


def test_only_a_hang_gets_a_wait(tmp_path: Path) -> None:
    attempts = [hung(tmp_path, 1, [0.1], 300)]
    assert verify_wait(read_hang("error:ValueError", tmp_path, attempts, ("steps",)), 300.0) is None
    # The attempts of another signature say nothing of this one's hang.
    assert verify_wait(
        read_hang("hang:phase", tmp_path, attempts, ("steps",)), 300.0
    ) == VerifyWait(300.0)


def test_a_rerun_alone_waits_as_long_as_the_test_went_unended_with_the_others(
    tmp_path: Path,
) -> None:
    # pt40: start-up and a 10 s stall (12 s here) called a test that alone sleeps 20 s and
    # passes "hung alone". The first run showed only that the test did not end within
    # 27.9 s (1 s of start-up, then 26.9 s after the test before it ended): that long, and
    # a margin for the rerun's start-up.
    attempts = [hung(tmp_path, 1, [1.0, 1.1], 28.0, signature="hang:t.py::test_x")]
    bound = alone_timeout(read_hang("hang:t.py::test_x", tmp_path, attempts, ("steps",)), 30.0)
    assert bound == 30.0
    attempts = [hung(tmp_path, 2, [1.0, 1.1], 28.0, signature="hang:t.py::test_x")]
    assert (
        alone_timeout(read_hang("hang:t.py::test_x", tmp_path, attempts, ("steps",)), 60.0) == 31.0
    )
    # A long test before the hung one is not waited for again.
    attempts = [hung(tmp_path, 3, [1.0, 40.0], 60.0, signature="hang:t.py::test_x")]
    assert (
        alone_timeout(read_hang("hang:t.py::test_x", tmp_path, attempts, ("steps",)), 60.0) == 24.0
    )


def test_a_first_test_that_hung_is_rerun_alone_within_the_timeout(tmp_path: Path) -> None:
    # pt40: no progress before the hang (the first test): it was not narrowed at all.
    attempts = [hung(tmp_path, 1, [], 10.2, signature="hang:t.py::test_x")]
    assert (
        alone_timeout(read_hang("hang:t.py::test_x", tmp_path, attempts, ("pytest",)), 10.0) == 10.0
    )
    assert alone_timeout(read_hang("crash:SIGSEGV", tmp_path, attempts, ("pytest",)), 10.0) is None


def test_under_xdist_a_rerun_alone_waits_the_whole_first_run(tmp_path: Path) -> None:
    # pytest-xdist's workers run tests side by side: the other worker's tests ended until
    # 25 s, after the hung one began, and start-up and the 3 s after that (6 s with the
    # margin) would call a test that alone takes 20 s and passes "hung alone".
    attempts = [hung(tmp_path, 1, [1.0, 25.0], 28.0, signature="hang:t.py::test_x")]
    (tmp_path / attempts[0].logs / "stdout.log").write_text(
        "created: 2/2 workers\n2 workers [3 items]\n\nt.py::test_x \nt.py::test_a \n"
        "[gw1] [ 33%] PASSED t.py::test_a \n"
    )
    assert (
        alone_timeout(read_hang("hang:t.py::test_x", tmp_path, attempts, ("steps",)), 60.0) == 31.0
    )


def _trail(cpu_ms_per_s: float, seconds: int, *, threads: int = 1) -> list[CpuReading]:
    """Half-second readings from START of `threads` threads each using `cpu_ms_per_s`."""
    return [
        (
            START + i / 2,
            {(100, 100 + n): int(i / 2 * cpu_ms_per_s * 1e6) for n in range(threads)},
        )
        for i in range(seconds * 2 + 1)
    ]


def test_a_rerun_using_cpu_at_its_bound_is_moving(tmp_path: Path) -> None:
    # pt42: a test that alone sleeps and works in steps (100 ms of each 500) was still at it
    # at the bound, killed, and called "hung alone".
    attempt = hung(tmp_path, 1, [], 20.5)
    assert moving_at_bound(_trail(200, 30), [attempt], 20.0, tmp_path)
    assert cpu_moved(_trail(200, 30), START + 15, START + 20) is True


def test_a_rerun_still_at_its_bound_is_a_hang(tmp_path: Path) -> None:
    # A sleep, a lock, a read: no CPU time; a thread polling 10 times a second, under 1%.
    attempt = hung(tmp_path, 1, [], 20.5)
    assert not moving_at_bound(_trail(0, 30), [attempt], 20.0, tmp_path)
    assert not moving_at_bound(_trail(2, 30, threads=3), [attempt], 20.0, tmp_path)


def test_cpu_before_the_window_or_after_the_bound_is_no_move() -> None:
    # Work that ended before the window, then a still hang; and the engine's kill after
    # it (its stack dumps), which the window leaves out.
    busy_then_still = [(t, {k: min(v, 10**9) for k, v in r.items()}) for t, r in _trail(500, 30)]
    assert cpu_moved(busy_then_still, START + 14.8, START + 19.8) is False
    assert cpu_moved(_trail(500, 30), START + 14.8, START + 19.8) is True


def test_a_thread_that_started_in_the_window_counts_all_its_cpu() -> None:
    readings: list[CpuReading] = [(START, {}), (START + 4, {(7, 7): 200_000_000})]
    assert cpu_moved(readings, START, START + 4) is True


def test_too_few_readings_say_nothing(tmp_path: Path) -> None:
    # A sampler starved of the CPU, or a tree it could not read: nothing known, still.
    readings: list[CpuReading] = [(START + 19, {(7, 7): 0}), (START + 19.5, {(7, 7): 10**9})]
    assert cpu_moved(readings, START + 15, START + 20) is None
    assert not moving_at_bound(readings, [hung(tmp_path, 1, [], 20.5)], 20.2, tmp_path)


def test_the_reruns_start_up_before_its_test_began_is_no_move(tmp_path: Path) -> None:
    # A bound of 6 s whose first 4 were pytest's start-up (its imports, the
    # collection: CPU), then the test's `-v` line and a still hang. The window begins at
    # that line, not 5 s before the bound.
    attempt = replace(
        hung(tmp_path, 1, [], 6.5),
        outcome=Outcome("hang", signature="hang:t.py::test_x", phase="t.py::test_x"),
    )
    line = {"t": START + 4, "event": "marker", "phase": "t.py::test_x", "line": "t.py::test_x"}
    with (tmp_path / attempt.logs / "events.jsonl").open("a") as events:
        events.write(json.dumps(line) + "\n")
    start_up = [(t, {k: min(v, 2 * 10**9) for k, v in r.items()}) for t, r in _trail(500, 8)]
    assert cpu_moved(start_up, START + 0.8, START + 5.8) is True
    assert not moving_at_bound(start_up, [attempt], 6.0, tmp_path)
    # Still working after its line began: moving.
    assert moving_at_bound(_trail(500, 8), [attempt], 6.0, tmp_path)


def test_a_hang_still_making_progress_at_its_timeout_is_said_to_be_one(tmp_path: Path) -> None:
    # `--timeout 4s` of a run printing `step N` every 0.5 s: written `expect: {outcome: hang,
    # step: 7}`, the step the timeout found it at (step 8 in the next attempt here).
    steps = [0.1 + 0.5 * i for i in range(8)]
    moving = still_moving(read_hang("hang", tmp_path, [hung(tmp_path, 1, steps, 4.0)], ("steps",)))
    assert moving is not None
    assert round(moving.gap_s, 2) == 0.5
    assert round(moving.quiet_s, 2) == 0.4
    said = moving.said(4.0)
    assert said.startswith("the hang was still making progress when the 4s timeout ended it")
    assert "so the spec expects no step" in said


def test_a_hang_that_stopped_progressing_is_stuck_where_it_stopped(tmp_path: Path) -> None:
    # Steps 0.1 s apart, then 300 s of nothing: its step is where it stuck.
    assert (
        still_moving(read_hang("hang", tmp_path, [hung(tmp_path, 1, [0.1, 0.2], 300.3)], ()))
        is None
    )
    # One progress event: no pace to tell it by; no progress at all, or no hang: nothing.
    assert still_moving(read_hang("hang", tmp_path, [hung(tmp_path, 2, [3.9], 4.0)], ())) is None
    assert still_moving(read_hang("hang", tmp_path, [hung(tmp_path, 3, [], 4.0)], ())) is None
    assert still_moving(read_hang("crash:SIGSEGV", tmp_path, [], ())) is None
    # Every attempt must still have been moving: one stuck long before its end is a hang.
    attempts = [hung(tmp_path, 4, [0.1, 0.6, 1.1], 1.3), hung(tmp_path, 5, [0.1, 0.6], 30)]
    assert still_moving(read_hang("hang", tmp_path, attempts, ("steps",))) is None


def test_a_hangs_progress_is_read_once_for_every_question_asked_of_it(tmp_path: Path) -> None:
    # Whether it still moved, its test's bound alone and the verify's wait each read every
    # attempt's events.jsonl again (three reads of one run's progress in one capture).
    attempts = [hung(tmp_path, 1, [0.1 + 0.5 * i for i in range(8)], 4.0)]
    hang = read_hang("hang", tmp_path, attempts, ("steps",))
    assert hang is not None
    shutil.rmtree(tmp_path / "cells")  # asked after this, nothing is read again
    assert still_moving(hang) is not None
    assert alone_timeout(hang, 60.0) == 3.0
    assert verify_wait(hang, 4.0) == VerifyWait(4.0)


def test_a_hang_that_ended_itself_long_before_the_timeout_waits_for_none(tmp_path: Path) -> None:
    # Its faulthandler watchdog ended it at 0.5 s (outcome/watchdog.py): capture said its
    # verify's attempts "waited the spec's timeout, 5m", which they never did.
    attempts = [hung(tmp_path, 1, [], 0.5), hung(tmp_path, 2, [0.1], 0.6)]
    assert verify_wait(read_hang("hang", tmp_path, attempts, ()), 300.0) is None
    # One attempt the timeout ended: the verify may wait it.
    attempts.append(hung(tmp_path, 3, [], 300))
    assert verify_wait(read_hang("hang", tmp_path, attempts, ()), 300.0) == VerifyWait(300.0)


def test_a_hang_that_ran_near_the_timeout_still_waits_it_and_says_so(tmp_path: Path) -> None:
    # Only attempts that all ended well before the timeout (under half of it) ended
    # themselves: one that ran half of it or more may be the timeout's, and the verify
    # waits the timeout and says so, as before the watchdog's hang was told apart.
    for number, duration in enumerate((150.0, 290.0), 1):
        hang = read_hang("hang", tmp_path, [hung(tmp_path, number, [], duration)], ())
        wait = verify_wait(hang, 300.0)
        assert wait == VerifyWait(300.0)
        assert wait.note() == (
            "a hang waits the spec's timeout, 5m, in each attempt: capture --timeout D shortens it"
        )
    sooner = read_hang("hang", tmp_path, [hung(tmp_path, 3, [], 149.0)], ())
    assert verify_wait(sooner, 300.0) is None
