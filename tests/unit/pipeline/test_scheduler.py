"""The scheduler's policy in-process: an injected attempt function instead of processes.

These cover what `reprospec run` decides before any child starts (order,
stop_on, resume, shards, adaptive repeats, GPU slots, cancellation); the
real-process behaviour of the same options is in test_scheduler.py.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reprospec.core.inputs import AttemptPlan, Cell
from reprospec.core.results import AttemptResult, NotRun, Outcome
from reprospec.core.runoptions import RunOptions, Shard
from reprospec.outcome.judge import judge_attempt
from reprospec.pipeline import scheduler, slack
from reprospec.pipeline.gpus import GpuPool
from reprospec.pipeline.scheduler import Scheduler
from reprospec.plan.run import RunPlan, plan_run
from reprospec.spec.load import load_spec

CRASH = Outcome(kind="crash", signal="SIGSEGV", where="main", signature="crash:SIGSEGV:main")
PASS = Outcome(kind="pass", exit_code=0, signature="pass")
PASS_RESULT = AttemptResult(1, 0.0, PASS, True, (), logs="")


def make_plan(tmp_path: Path, body: str, **options: object) -> RunPlan:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text("reprospec: 1\nname: policy\ncommand: 'true'\n" + body)
    return plan_run(load_spec(spec_file), RunOptions(out=tmp_path, **options))  # type: ignore[arg-type]


class Recorder:
    """An attempt function: decides each attempt's outcome from (cell id, attempt number)."""

    def __init__(self, crashes: Callable[[str, int], bool]) -> None:
        self.crashes = crashes
        self.calls: list[tuple[str, int, tuple[str, ...]]] = []
        self._lock = threading.Lock()

    def __call__(
        self, plan: AttemptPlan, slot: tuple[str, ...], _cancel: threading.Event
    ) -> AttemptResult:
        with self._lock:
            self.calls.append((plan.cell.id, plan.attempt, slot))
        crashed = self.crashes(plan.cell.id, plan.attempt)
        outcome = CRASH if crashed else PASS
        # The run's own rule (an observed attempt matches whatever it did).
        matched = judge_attempt(outcome, plan.expectation).matched
        return AttemptResult(plan.attempt, 0.0, outcome, matched, (), logs="")


def test_repeats_interleave_round_robin_over_cells(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "matrix: {n: [1, 2]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n")
    recorder = Recorder(lambda _cell, _n: False)
    results = Scheduler(plan, recorder).run()
    order = [(c, n) for c, n, _ in recorder.calls]
    assert order == [("n=1", 1), ("n=2", 1), ("n=1", 2), ("n=2", 2)]
    assert {cell: len(r) for cell, r in results.items()} == {"n=1": 2, "n=2": 2}


def test_stop_on_first_reproduction_stops_only_that_cell(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path,
        "matrix: {n: [1, 2]}\nrun: {repeat: 5, stop_on: first-reproduction}\n"
        "expect: {outcome: crash}\n",
    )
    # n=1 crashes on its 2nd attempt; n=2 never does.
    results = Scheduler(plan, Recorder(lambda cell, n: cell == "n=1" and n == 2)).run()
    assert [r.attempt for r in results["n=1"]] == [1, 2]
    assert [r.attempt for r in results["n=2"]] == [1, 2, 3, 4, 5]


def test_stop_on_first_miss(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "run: {repeat: 6, stop_on: first-miss}\nexpect: {outcome: crash}\n")
    results = Scheduler(plan, Recorder(lambda _cell, n: n < 3)).run()
    assert [r.matched for r in results["default"]] == [True, True, False]


def test_options_stop_on_overrides_the_spec(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "run: {repeat: 6}\nexpect: {outcome: crash}\n", stop_on="first-reproduction"
    )
    results = Scheduler(plan, Recorder(lambda _cell, _n: True)).run()
    assert len(results["default"]) == 1


def test_resume_runs_only_the_missing_attempts(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "matrix: {n: [1, 2]}\nrun: {repeat: 3}\nexpect: {outcome: pass}\n")
    done = {
        ("n=1", 1): AttemptResult(1, 0.0, PASS, True, (), logs=""),
        ("n=2", 2): AttemptResult(2, 0.0, PASS, True, (), logs=""),
    }
    recorder = Recorder(lambda _cell, _n: False)
    results = Scheduler(plan, recorder, done=done).run()
    ran = sorted((c, n) for c, n, _ in recorder.calls)
    assert ran == [("n=1", 2), ("n=1", 3), ("n=2", 1), ("n=2", 3)]
    assert all([r.attempt for r in rs] == [1, 2, 3] for rs in results.values())


@pytest.mark.parametrize(
    ("stop_on", "crashed"), [("first-reproduction", True), ("first-miss", False)]
)
def test_a_resumed_cell_that_stop_on_stopped_runs_nothing_more(
    tmp_path: Path, stop_on: str, crashed: bool
) -> None:
    # The run stopped n=1 at its first attempt (a resume ran its attempt 2, and
    # each later resume one more); n=2 was interrupted after one attempt that did not stop it.
    plan = make_plan(
        tmp_path,
        f"matrix: {{n: [1, 2]}}\nrun: {{repeat: 3, stop_on: {stop_on}}}\n"
        "expect: {outcome: crash}\n",
    )
    stopping = CRASH if crashed else PASS
    going_on = PASS if crashed else CRASH
    done = {
        ("n=1", 1): AttemptResult(1, 0.0, stopping, crashed, (), logs=""),
        ("n=2", 1): AttemptResult(1, 0.0, going_on, not crashed, (), logs=""),
    }
    recorder = Recorder(lambda _cell, _n: not crashed)
    results = Scheduler(plan, recorder, done=done).run()
    assert sorted((c, n) for c, n, _ in recorder.calls) == [("n=2", 2), ("n=2", 3)]
    assert [r.attempt for r in results["n=1"]] == [1]


def test_an_observed_cell_runs_its_repeats_whatever_stop_on_says(tmp_path: Path) -> None:
    # An observed attempt counts as a match, so first-reproduction stopped every
    # observed cell at one attempt: no rate to observe.
    body = "matrix: {n: [1, 2]}\nrun: {repeat: 4, stop_on: first-reproduction}\n"
    judged = make_plan(tmp_path, body + "expect: {outcome: pass}\n")
    results = Scheduler(judged, Recorder(lambda _c, _n: False)).run()
    assert {cell: len(r) for cell, r in results.items()} == {"n=1": 1, "n=2": 1}
    for observed in (
        make_plan(tmp_path, body + "expect: {outcome: pass}\n", observe=True),
        make_plan(tmp_path, body),
    ):  # a spec without expect observes
        results = Scheduler(observed, Recorder(lambda _c, n: n == 2)).run()
        assert {cell: len(r) for cell, r in results.items()} == {"n=1": 4, "n=2": 4}


def test_a_resumed_adaptive_cell_still_undecided_gets_more_attempts(tmp_path: Path) -> None:
    # Interrupted with 10 attempts stored, 5 of them failing: `>=0.45` is undecided on them.
    # The resume ran nothing ("0 run now") and left the cell undecided for good: the extra
    # attempts the interrupted run had queued were never stored, and only a finished
    # attempt asked for more.
    plan = make_plan(
        tmp_path, "run: {repeat: auto, max_repeat: 40}\nexpect: {outcome: crash, rate: '>=0.45'}\n"
    )
    done = {
        ("default", n): AttemptResult(n, 0.0, CRASH if n % 2 else PASS, bool(n % 2), (), logs="")
        for n in range(1, 11)
    }
    recorder = Recorder(lambda _cell, _n: True)  # from now on it always fails: decided soon
    results = Scheduler(plan, recorder, done=done).run()
    ran = [n for _c, n, _ in recorder.calls]
    assert ran[:1] == [11], ran
    attempts = results["default"]
    assert [r.attempt for r in attempts] == list(range(1, 11 + len(ran)))
    assert len(attempts) < 40  # it stopped once decided, not at max_repeat


@pytest.mark.parametrize(
    ("stop_on", "crashes", "attempts"),
    [
        ("first-reproduction", lambda n: n == 1, 12),  # 1/1 is no reproduction of >=0.3
        ("first-reproduction", lambda _n: True, 2),  # 2/2: 95% CI 0.34-1.00, met
        ("first-miss", lambda n: n != 1, 12),  # 0/1 is no miss of >=0.3 either
        ("first-miss", lambda _n: False, 9),  # 0/9: 95% CI 0.00-0.299, failed
    ],
)
def test_stop_on_with_a_rate_stops_where_the_cell_s_interval_decides(
    tmp_path: Path, stop_on: str, crashes: Callable[[int], bool], attempts: int
) -> None:
    """stop_on stopped a rate cell at its first matching (or missing) attempt,
    and a flaky cell stayed `1/1 undecided` with no way to run more."""
    plan = make_plan(
        tmp_path,
        f"run: {{repeat: 12, stop_on: {stop_on}}}\nexpect: {{outcome: crash, rate: '>=0.3'}}\n",
    )
    results = Scheduler(plan, Recorder(lambda _cell, n: crashes(n))).run()
    assert len(results["default"]) == attempts


def test_an_attempt_waiting_for_its_places_when_stop_on_stops_its_cell_never_starts(
    tmp_path: Path,
) -> None:
    """With run.instances, each attempt takes its instances' places: the attempts
    other jobs had taken waited for them, and then ran, one after another, after stop_on
    had stopped their cell (-j 3: 3/3 where -j 1 gave 1/1)."""
    plan = make_plan(
        tmp_path,
        "run: {instances: 3, repeat: 5, stop_on: first-reproduction}\nexpect: {outcome: crash}\n",
        jobs=3,
    )

    def crashes(_cell: str, n: int) -> bool:
        time.sleep(0.3 if n == 1 else 0.0)  # the others are taken while it runs
        return True

    recorder = Recorder(crashes)
    results = Scheduler(plan, recorder).run()
    assert [n for _c, n, _ in recorder.calls] == [1]
    assert [r.attempt for r in results["default"]] == [1]


def test_ctrl_c_returns_only_once_every_job_is_done(tmp_path: Path) -> None:
    """A join that Ctrl-C interrupts can mark a thread that still runs as stopped
    (CPython 3.11's _wait_for_tstate_lock), and the join after it returned at once: the run
    ended while a job still stored its attempt and judged its cell, and the end judged the
    cell as never run (an IndexError in the report, exit 3; a stored attempt lost)."""
    import signal

    plan = make_plan(tmp_path, "run: {repeat: 2}\nexpect: {outcome: pass}\n")
    ended: list[int] = []

    def attempt(
        plan: AttemptPlan, _slot: tuple[str, ...], _cancel: threading.Event
    ) -> AttemptResult:
        # Ctrl-C reaches the main thread (in run) while this attempt has still to end.
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.5)
        ended.append(plan.attempt)
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="")

    recorded: list[int] = []
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        scheduler = Scheduler(plan, attempt, on_attempt=lambda a, _r: recorded.append(a.attempt))
        with pytest.raises(KeyboardInterrupt):
            scheduler.run()
        # Nothing of the job is left running once run() has raised: its attempt ended and
        # was given to on_attempt (stored), and no other was started after the Ctrl-C.
        assert ended == [1]
        assert recorded == [1]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_progress_count_drops_the_attempts_stop_on_will_not_run(tmp_path: Path) -> None:
    """`[2/4]` at the end of a run whose cell stop_on stopped: the count (and the
    eta made from it) kept the attempts it skipped."""
    body = (
        "matrix: {n: [1, 2]}\nrun: {repeat: 4, stop_on: first-reproduction}\n"
        "expect: {outcome: crash}\n"
    )
    seen: list[tuple[int, int]] = []

    def progress(event: str, _cell: Cell, _result: object, finished: int, total: int) -> None:
        if event == "attempt":
            seen.append((finished, total))

    crashes = Recorder(lambda cell, _n: cell == "n=1")
    Scheduler(make_plan(tmp_path, body), crashes, progress=progress).run()
    assert seen[-1] == (5, 5)  # n=1 once, n=2 four times
    # Resumed with n=1 stopped: its three attempts left are no part of the count either.
    done = {("n=1", 1): AttemptResult(1, 0.0, CRASH, True, (), logs="")}
    seen.clear()
    Scheduler(make_plan(tmp_path, body), crashes, progress=progress, done=done).run()
    assert seen[-1] == (4, 4)


def test_attempts_that_could_not_run_neither_stop_a_cell_nor_decide_its_rate(
    tmp_path: Path,
) -> None:
    """An infra-error counted as a miss: first-miss stopped the cell at an
    attempt that could not run, and `repeat: auto` decided `0/9` (at -j 2 `0/10`) on
    attempts none of which ran, where the judge calls the cell 0/0."""

    def cannot_run(plan: AttemptPlan, _slot: tuple[str, ...], _c: threading.Event) -> AttemptResult:
        return AttemptResult.not_run(plan.attempt, "command not found")

    stopping = make_plan(
        tmp_path, "run: {repeat: 3, stop_on: first-miss}\nexpect: {outcome: crash}\n"
    )
    assert len(Scheduler(stopping, cannot_run).run()["default"]) == 3
    body = "run: {repeat: auto, max_repeat: 12}\nexpect: {outcome: crash, rate: '>=0.3'}\n"
    for jobs in (1, 2):
        adaptive = make_plan(tmp_path, body, jobs=jobs)
        assert len(Scheduler(adaptive, cannot_run).run()["default"]) == 5, jobs


def test_a_resumed_rate_cell_is_read_on_all_its_stored_attempts(tmp_path: Path) -> None:
    """The stored attempts were replayed in attempt order, and a cell the run
    never stopped (attempt 3 passed first, then 1 and 2 crashed: 0/1, 1/2, 2/3) read as
    `2/2`, met, at attempt 2: the resume ran nothing more."""
    plan = make_plan(
        tmp_path,
        "run: {repeat: 6, stop_on: first-reproduction}\nexpect: {outcome: crash, rate: '>=0.3'}\n",
    )
    done = {
        ("default", 1): AttemptResult(1, 0.0, CRASH, True, (), logs=""),
        ("default", 2): AttemptResult(2, 0.0, CRASH, True, (), logs=""),
        ("default", 3): AttemptResult(3, 0.0, PASS, False, (), logs=""),
    }
    recorder = Recorder(lambda _cell, _n: False)
    Scheduler(plan, recorder, done=done).run()
    assert sorted(n for _c, n, _ in recorder.calls) == [4, 5, 6]  # 2/3: 0.21-0.94, undecided


def test_a_resumed_adaptive_cell_runs_its_extra_attempts_on_every_job(tmp_path: Path) -> None:
    """The jobs were as many as the attempts planned, none on a resume of a
    cell whose planned attempts were all stored: its extra attempts ran one at a time."""
    plan = make_plan(
        tmp_path,
        "run: {repeat: auto, max_repeat: 30}\nexpect: {outcome: crash, rate: '>=0.5'}\n",
        jobs=3,
    )
    done = {
        ("default", n): AttemptResult(n, 0.0, CRASH if n % 2 else PASS, bool(n % 2), (), logs="")
        for n in range(1, 6)
    }
    lock = threading.Lock()
    running, most = [0], [0]

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], _c: threading.Event) -> AttemptResult:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        crashed = plan.attempt % 2 == 1  # 50%: undecided against >=0.5 to max_repeat
        return AttemptResult(plan.attempt, 0.0, CRASH if crashed else PASS, crashed, (), logs="")

    results = Scheduler(plan, attempt, done=done).run()
    assert len(results["default"]) == 30
    assert most[0] == 3


def test_shards_split_attempts_disjointly_and_completely(tmp_path: Path) -> None:
    body = "matrix: {n: [1, 2, 3, 4, 5]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n"
    whole = {(a.cell.id, a.attempt) for a in make_plan(tmp_path, body).attempts}
    parts = [
        {(a.cell.id, a.attempt) for a in make_plan(tmp_path, body, shard=Shard(k, 3)).attempts}
        for k in (1, 2, 3)
    ]
    assert set().union(*parts) == whole
    assert sum(len(p) for p in parts) == len(whole)
    assert all(parts)


def test_adaptive_repeats_stop_once_the_interval_decides(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path,
        "run: {repeat: auto, max_repeat: 40}\nexpect: {outcome: crash, rate: '>=0.3'}\n",
    )
    assert plan.adaptive
    assert plan.repeat == 5
    # Always crashing: the interval leaves 0.3 behind quickly, far before 40.
    always = Scheduler(plan, Recorder(lambda _cell, _n: True)).run()["default"]
    assert 5 <= len(always) < 40
    # Crashing at about the threshold: undecided until the cap.
    edge = Scheduler(plan, Recorder(lambda _cell, n: n % 10 < 3)).run()["default"]
    assert len(edge) == 40


def test_adaptive_repeats_in_parallel_number_each_attempt_once(tmp_path: Path) -> None:
    # -j 2: an attempt ended while its cell's next one was still running, and the one it
    # queued took the number after the last one *finished*: the running one's. Both ran
    # under one number (one folder, one store row, the later kept), 31 processes for 19
    # attempts, and the rate the verdict read was biased to the slower outcome.
    plan = make_plan(
        tmp_path,
        "run: {repeat: auto, max_repeat: 30}\nexpect: {outcome: crash, rate: '>=0.3'}\n",
        jobs=2,
    )
    crashes = Recorder(lambda _cell, n: n % 10 < 3)

    def uneven(plan: AttemptPlan, slot: tuple[str, ...], cancel: threading.Event) -> AttemptResult:
        # A pass takes longer than a crash, as a real crash ends at once.
        if not crashes.crashes(plan.cell.id, plan.attempt):
            time.sleep(0.01)
        return crashes(plan, slot, cancel)

    results = Scheduler(plan, uneven).run()["default"]
    numbers = [n for _, n, _ in crashes.calls]
    assert sorted(numbers) == list(range(1, 31))  # each number started once, none past 30
    assert [r.attempt for r in results] == list(range(1, 31))


def test_cells_needing_more_gpus_than_visible_are_not_run(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "environment: {gpus: 2}\nexpect: {outcome: pass}\n")
    recorder = Recorder(lambda _cell, _n: False)
    results = Scheduler(plan, recorder, gpu_pool=GpuPool(("0",))).run()
    assert recorder.calls == []
    (only,) = results["default"]
    assert only.outcome == NotRun("skipped: needs 2 GPUs, 1 visible to this run")
    assert only.infra_error == "skipped: needs 2 GPUs, 1 visible to this run"


def test_gpu_slots_are_handed_out_exclusively(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path,
        "matrix: {n: [1, 2, 3, 4]}\nenvironment: {gpus: 1}\nexpect: {outcome: pass}\n",
        jobs=2,
    )
    in_use: set[str] = set()
    overlaps: list[str] = []
    lock = threading.Lock()
    both_running = threading.Barrier(2, timeout=5)

    def attempt(
        plan: AttemptPlan, slot: tuple[str, ...], _cancel: threading.Event
    ) -> AttemptResult:
        with lock:
            overlaps.extend(s for s in slot if s in in_use)
            in_use.update(slot)
        if plan.cell.id in ("n=1", "n=2"):
            both_running.wait()  # the first two really run at the same time
        with lock:
            in_use.difference_update(slot)
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="", gpu_slot=slot)

    results = Scheduler(plan, attempt, gpu_pool=GpuPool(("5", "7"))).run()
    assert overlaps == []
    slots = [r.gpu_slot for rs in results.values() for r in rs]
    assert sorted(set(slots)) == [("5",), ("7",)]


def test_cancel_stops_before_the_next_attempt(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "run: {repeat: 10}\nexpect: {outcome: pass}\n")
    cancel = threading.Event()

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], stop: threading.Event) -> AttemptResult:
        if plan.attempt == 3:
            stop.set()
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="")

    results = Scheduler(plan, attempt, cancel=cancel).run()
    assert cancel.is_set()
    assert [r.attempt for r in results["default"]] == [1, 2, 3]


@pytest.mark.parametrize("jobs", [1, 3])
def test_progress_reports_every_start_and_end(tmp_path: Path, jobs: int) -> None:
    plan = make_plan(
        tmp_path, "matrix: {n: [1, 2, 3]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n", jobs=jobs
    )
    events: list[tuple[str, int, int]] = []
    lock = threading.Lock()

    def progress(event: str, _cell: object, _result: object, finished: int, total: int) -> None:
        with lock:
            events.append((event, finished, total))

    Scheduler(plan, Recorder(lambda _cell, _n: False), progress=progress).run()
    assert sum(e == "start" for e, _, _ in events) == 6
    ends = sorted(f for e, f, _ in events if e == "attempt")
    assert ends == [1, 2, 3, 4, 5, 6]
    assert {t for _, _, t in events} == {6}


class _GuardingLock:
    """The scheduler's lock, with its counts torn (`finished` past `total`) whenever it is
    free: a count read without it reads what another job's `_work_on` may be changing."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._inner = threading.Lock()
        self._scheduler = scheduler
        self._kept: tuple[int, int] | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        taken = self._inner.acquire(blocking, timeout)
        if taken and self._kept is not None:
            self._scheduler.finished, self._scheduler.total = self._kept
            self._kept = None
        return taken

    def release(self) -> None:
        self._kept = (self._scheduler.finished, self._scheduler.total)
        self._scheduler.finished = self._scheduler.total + 1000
        self._inner.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.release()


def test_the_start_of_an_attempt_reads_the_counts_under_the_lock(tmp_path: Path) -> None:
    """The "start" progress call read `finished` and `total` without the lock,
    and could show a torn pair (`[5/4]`) while another job counted its attempt."""
    plan = make_plan(
        tmp_path, "matrix: {n: [1, 2]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n", jobs=2
    )
    starts: list[tuple[int, int]] = []

    def progress(event: str, _cell: object, _result: object, finished: int, total: int) -> None:
        if event == "start":
            starts.append((finished, total))

    scheduler = Scheduler(plan, Recorder(lambda _cell, _n: False), progress=progress)
    guard = _GuardingLock(scheduler)
    scheduler._lock = guard  # type: ignore[assignment]
    scheduler._ended = threading.Condition(guard)  # type: ignore[arg-type]
    scheduler.run()
    assert len(starts) == 4
    assert all(finished <= total == 4 for finished, total in starts), starts


def test_an_attempt_killed_by_the_signal_that_stops_the_run_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGTERM from a batch system reaches the attempt too; the engine's handler sets
    # `cancel`. That attempt was stopped, not crashed: a resume must run it again.
    # The handler's moment later is a timer thread, which a loaded machine may start past
    # the 0.5 s grace: the grace is made long, and the wait still ends as the stop is set.
    monkeypatch.setattr(scheduler, "STOP_GRACE_S", 60.0)
    plan = make_plan(tmp_path, "run: {repeat: 3}\nexpect: {outcome: pass}\n")
    term = Outcome(kind="crash", signal="SIGTERM", where="main", signature="crash:SIGTERM:main")

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], stop: threading.Event) -> AttemptResult:
        if plan.attempt == 2:
            threading.Timer(0.05, stop.set).start()  # the handler runs a moment later
            return AttemptResult(plan.attempt, 0.0, term, False, (), logs="")
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="")

    begin = time.monotonic()
    results = Scheduler(plan, attempt).run()
    assert [r.attempt for r in results["default"]] == [1]
    assert time.monotonic() - begin < 30  # ended by the stop, not by the grace


def test_a_sigterm_crash_while_the_run_goes_on_is_a_crash(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "expect: {outcome: crash, signal: SIGTERM}\n")
    term = Outcome(kind="crash", signal="SIGTERM", where="main", signature="crash:SIGTERM:main")

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], _stop: threading.Event) -> AttemptResult:
        return AttemptResult(plan.attempt, 0.0, term, True, (), logs="")

    (only,) = Scheduler(plan, attempt).run()["default"]
    assert only.ran is not None
    assert only.ran.signal == "SIGTERM"


class Cells:
    """An `on_cell` that keeps what it is given, and what the scheduler still held then."""

    def __init__(self) -> None:
        self.given: dict[str, list[int]] = {}
        self.scheduler: Scheduler | None = None
        self.held: list[int] = []

    def __call__(self, cell: Cell, attempts: tuple[AttemptResult, ...]) -> None:
        assert cell.id not in self.given, f"{cell.id} given twice"
        self.given[cell.id] = [a.attempt for a in attempts]
        if self.scheduler is not None:
            self.held.append(len(self.scheduler.unfinished()))


def test_each_cell_is_handed_over_once_as_its_last_attempt_ends(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "matrix: {n: [1, 2, 3, 4, 5, 6]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n"
    )
    cells = Cells()
    scheduler = cells.scheduler = Scheduler(plan, Recorder(lambda _c, _n: False), on_cell=cells)
    assert scheduler.run() == {}
    assert cells.given == {f"n={n}": [1, 2] for n in range(1, 7)}
    # Round-robin: every cell is started before the first one is complete, then each
    # complete cell leaves the scheduler, so it holds fewer as the run goes on.
    assert cells.held == [5, 4, 3, 2, 1, 0]


def test_a_stopped_cell_is_handed_over_and_its_later_attempts_never_run(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path,
        "matrix: {n: [1, 2]}\nrun: {repeat: 5, stop_on: first-reproduction}\n"
        "expect: {outcome: crash}\n",
    )
    cells = Cells()
    recorder = Recorder(lambda cell, n: cell == "n=1" and n == 2)
    Scheduler(plan, recorder, on_cell=cells).run()
    assert cells.given == {"n=1": [1, 2], "n=2": [1, 2, 3, 4, 5]}
    assert sorted(n for c, n, _ in recorder.calls if c == "n=1") == [1, 2]


def test_a_cell_stopped_while_its_attempts_waited_is_handed_over_as_they_give_up(
    tmp_path: Path,
) -> None:
    """The attempts taken before stop_on stopped their cell, which waited for
    their places and never started, did not give the cell to `on_cell`: it was held (and
    judged) only at the end of the run."""
    plan = make_plan(
        tmp_path,
        "run: {instances: 3, repeat: 5, stop_on: first-reproduction}\nexpect: {outcome: crash}\n",
        jobs=3,
    )

    taken: list[int] = []
    cells = Cells()

    def crashes(_cell: str, n: int) -> bool:
        if n == 1:
            # It ends once the two other jobs have taken attempts 2 and 3, which wait for
            # its places: waited for, not slept for (0.3 s of a loaded machine may not see
            # them taken, and the test then passed on the old scheduler too).
            held = cells.scheduler
            assert held is not None
            deadline = time.monotonic() + 30
            while held._running < 3 and time.monotonic() < deadline:
                time.sleep(0.005)
            taken.append(held._running)
        return True

    cells.scheduler = Scheduler(plan, Recorder(crashes), on_cell=cells)
    assert cells.scheduler.run() == {}
    assert taken == [3]
    assert cells.given == {"default": [1]}


def test_a_cell_stopped_with_extra_attempts_queued_is_handed_over_as_it_stops(
    tmp_path: Path,
) -> None:
    """A `repeat: auto` cell stop_on stopped while an extra attempt was queued
    (its job was still storing the attempt before) waited for that attempt, which is only
    skipped, and went to `on_cell` never: it was held to the end of the run."""
    from reprospec.core.rates import judge_rate, rate_of
    from reprospec.core.units import parse_rate

    plan = make_plan(
        tmp_path,
        "run: {repeat: auto, max_repeat: 60, stop_on: first-reproduction}\n"
        "expect: {outcome: crash, rate: '>=0.3'}\n",
        jobs=2,
    )
    # The first 5 pass (undecided), then each crashes: the k-th crash meets the bound.
    bound = parse_rate(">=0.3")
    k = next(k for k in range(1, 50) if judge_rate(rate_of(k, 5 + k), bound) == "met")
    crashed: list[int] = []
    lock = threading.Lock()
    stopped = threading.Event()

    def attempt(plan: AttemptPlan, slot: tuple[str, ...], cancel: threading.Event) -> AttemptResult:
        time.sleep(0.05)  # the two jobs' attempts run at once
        return Recorder(lambda _c, n: n > 5)(plan, slot, cancel)

    def store(_plan: AttemptPlan, result: AttemptResult) -> None:
        with lock:
            crashed.append(result.matched)
            seen = sum(crashed)
        if seen == k - 1 and result.matched:
            # This job queued an extra attempt as this one ended undecided: it takes it
            # only once the other job's attempt has met the bound and stopped the cell.
            stopped.wait(5)
        elif seen == k and result.matched:
            stopped.set()

    cells = Cells()
    scheduler = cells.scheduler = Scheduler(plan, attempt, on_attempt=store, on_cell=cells)
    assert scheduler.run() == {}
    assert stopped.is_set()
    assert len(cells.given["default"]) == 5 + k


class _UnwalkedQueue(deque[AttemptPlan]):
    """The extra attempts' queue, counting each walk of it (a finished attempt's cost)."""

    walks = 0

    def __iter__(self) -> Iterator[AttemptPlan]:
        type(self).walks += 1
        return super().__iter__()


def test_a_finished_attempt_does_not_walk_the_queue_of_extra_attempts(tmp_path: Path) -> None:
    """Each finished attempt walked every cell's queued extra attempts under
    the lock (three times: whether its cell is complete, what stop_on drops, how many to
    add): O(cells x -j) per attempt of a run of many `repeat: auto` cells."""
    plan = make_plan(
        tmp_path,
        "matrix: {n: [1, 2, 3, 4]}\n"
        "run: {repeat: auto, max_repeat: 30, stop_on: first-reproduction}\n"
        "expect: {outcome: crash, rate: '>=0.3'}\n",
        jobs=3,
    )
    cells = Cells()
    scheduler = Scheduler(plan, Recorder(lambda _c, n: n % 10 < 3), on_cell=cells)
    scheduler._extra = _UnwalkedQueue()
    assert scheduler.run() == {}
    assert sorted(cells.given) == ["n=1", "n=2", "n=3", "n=4"]
    assert _UnwalkedQueue.walks == 0


def test_an_adaptive_cell_is_handed_over_only_once_it_decides(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "run: {repeat: auto, max_repeat: 40}\nexpect: {outcome: crash, rate: '>=0.3'}\n"
    )
    cells = Cells()
    Scheduler(plan, Recorder(lambda _cell, n: n % 10 < 3), on_cell=cells).run()
    assert cells.given == {"default": list(range(1, 41))}


def test_resumed_and_shard_cells_are_handed_over_or_left_for_the_end(tmp_path: Path) -> None:
    body = "matrix: {n: [1, 2, 3]}\nrun: {repeat: 2}\nexpect: {outcome: pass}\n"
    plan = make_plan(tmp_path, body)
    # n=1 is complete already: nothing of it runs, so the end judges it (unfinished).
    done = {
        ("n=1", 1): AttemptResult(1, 0.0, PASS, True, (), logs=""),
        ("n=1", 2): AttemptResult(2, 0.0, PASS, True, (), logs=""),
        ("n=2", 1): AttemptResult(1, 0.0, PASS, True, (), logs=""),
    }
    cells = Cells()
    left = Scheduler(plan, Recorder(lambda _c, _n: False), done=done, on_cell=cells).run()
    assert cells.given == {"n=2": [1, 2], "n=3": [1, 2]}
    assert {cell: [a.attempt for a in r] for cell, r in left.items()} == {"n=1": [1, 2]}
    # A shard of 4 over 3 cells x 2 attempts: each cell's last attempt in this shard ends it.
    for k in (1, 2, 3, 4):
        sharded = make_plan(tmp_path, body, shard=Shard(k, 4))
        cells = Cells()
        Scheduler(sharded, Recorder(lambda _c, _n: False), on_cell=cells).run()
        expected: dict[str, list[int]] = {}
        for a in sharded.attempts:
            expected.setdefault(a.cell.id, []).append(a.attempt)
        assert cells.given == expected


def test_adaptive_repeats_keep_every_job_busy(tmp_path: Path) -> None:
    # -j 2: past the planned attempts an attempt was added only when none was queued, and
    # a thread that found nothing to take ended: once the other thread had taken the one
    # added, the rest of the cell ran on one thread, one attempt at a time.
    plan = make_plan(
        tmp_path,
        "run: {repeat: auto, max_repeat: 20}\nexpect: {outcome: crash, rate: '>=0.3'}\n",
        jobs=2,
    )
    crashes = Recorder(lambda _cell, n: n % 10 < 3)
    threads: dict[int, str] = {}

    def named(plan: AttemptPlan, slot: tuple[str, ...], cancel: threading.Event) -> AttemptResult:
        threads[plan.attempt] = threading.current_thread().name
        time.sleep(0.02)
        return crashes(plan, slot, cancel)

    def store(_plan: AttemptPlan, _result: AttemptResult) -> None:
        time.sleep(0.03)  # the store row, the progress line: the other attempt ends first

    results = Scheduler(plan, named, on_attempt=store).run()["default"]
    assert [r.attempt for r in results] == list(range(1, 21))
    assert len({threads[n] for n in range(11, 21)}) == 2


@pytest.mark.parametrize("body", ["run: {repeat: 6}\n", "run: {repeat: auto, max_repeat: 20}\n"])
def test_an_attempt_that_raises_stops_the_run_and_is_raised_to_the_caller(
    tmp_path: Path, body: str
) -> None:
    # A job thread died of an attempt's OSError (a full disk writing its folder): the
    # thread's count of running attempts stayed at 1, and with `repeat: auto` the other
    # thread waited for it for ever; without, the run went on and the error was lost.
    plan = make_plan(tmp_path, body + "expect: {outcome: crash, rate: '>=0.3'}\n", jobs=2)
    crashes = Recorder(lambda _cell, n: n % 10 < 3)

    def failing(plan: AttemptPlan, slot: tuple[str, ...], cancel: threading.Event) -> AttemptResult:
        if plan.attempt == 3:
            raise OSError(28, "No space left on device")
        time.sleep(0.01)
        return crashes(plan, slot, cancel)

    raised: list[BaseException] = []

    def run() -> None:
        try:
            Scheduler(plan, failing).run()
        except OSError as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "the run hung"
    assert [str(e) for e in raised] == ["[Errno 28] No space left on device"]


class StopClock:
    """A `stop_arrival` whose stop arrives at a moment set by an attempt (time.monotonic()),
    and is heard only once that moment has passed, as core/stopclock.py hears a signal."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, since: float) -> float | None:
        at = self.at
        return at if at is not None and since <= at <= time.monotonic() else None


def test_an_attempt_that_ended_just_before_a_stop_arrived_is_set_aside(tmp_path: Path) -> None:
    # A stop sent to every process reached the attempt first: it ended (a shell whose sleep
    # the stop killed exits 0) a moment before the engine heard of the stop, and was kept
    # as its program's own end, the run complete. Now it is set aside, its cell held back
    # from `on_cell` meanwhile; the attempt that ended well before the stop is kept.
    plan = make_plan(tmp_path, "matrix: {n: [1, 2]}\nexpect: {outcome: pass}\n", jobs=1)
    clock = StopClock()

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], _stop: threading.Event) -> AttemptResult:
        if plan.cell.id == "n=2":
            time.sleep(scheduler.STOPPED_SLACK_S * 2)
            clock.at = time.monotonic() + 0.05  # the engine hears of it 50 ms after the end
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="")

    cells = Cells()
    ran = Scheduler(plan, attempt, on_cell=cells, stop_arrival=clock)
    assert ran.run() == {"n=2": [PASS_RESULT]}  # held: the end judges it
    (aside,) = ran.settle()
    assert (aside.cell_id, aside.attempt, aside.result.ran) == ("n=2", 1, PASS)
    assert cells.given == {"n=1": [1]}
    assert ran.unfinished() == {"n=2": []}
    assert not ran.complete()


def test_without_a_stop_a_held_cell_goes_on_and_settle_waits_the_slack_at_most(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "matrix: {n: [1, 2, 3]}\nexpect: {outcome: pass}\n", jobs=1)
    cells = Cells()
    ran = Scheduler(plan, Recorder(lambda _c, _n: False), on_cell=cells, stop_arrival=StopClock())
    left = ran.run()
    begin = time.monotonic()
    assert ran.settle() == ()
    assert time.monotonic() - begin <= scheduler.STOPPED_SLACK_S + 0.2
    # Every cell ended within the slack of the run's end: none went to `on_cell`, all are
    # judged at the end, whole.
    assert {cell: len(results) for cell, results in left.items()} == {"n=1": 1, "n=2": 1, "n=3": 1}
    assert cells.given == {}
    assert ran.complete()


def test_an_attempt_that_ends_after_a_stop_arrived_is_set_aside_and_nothing_more_starts(
    tmp_path: Path,
) -> None:
    # The engine's handler has not run yet (cancel is not set): the stop is heard all the same.
    plan = make_plan(tmp_path, "run: {repeat: 3}\nexpect: {outcome: pass}\n", jobs=1)
    clock = StopClock()

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], _stop: threading.Event) -> AttemptResult:
        clock.at = time.monotonic()
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="")

    ran = Scheduler(plan, attempt, stop_arrival=clock)
    assert ran.run() == {"default": []}
    assert [(a.cell_id, a.attempt) for a in ran.settle()] == [("default", 1)]
    assert not ran.cancel.is_set()


def test_an_attempt_set_aside_is_never_said_and_one_kept_is_said_once_its_end_is_old(
    tmp_path: Path,
) -> None:
    # Its progress ("attempt", whose line the command prints as `pass`) was said as it
    # ended, before the engine heard of the stop that then set it aside. Said once its end
    # is STOPPED_SLACK_S old: n=1's while n=2 runs, n=2's never.
    plan = make_plan(tmp_path, "matrix: {n: [1, 2]}\nexpect: {outcome: pass}\n", jobs=1)
    clock = StopClock()
    said: list[tuple[str, float]] = []
    ends: dict[str, float] = {}

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], _stop: threading.Event) -> AttemptResult:
        if plan.cell.id == "n=2":
            time.sleep(scheduler.STOPPED_SLACK_S * 3)
            clock.at = time.monotonic() + 0.1  # heard 100 ms after the end
        ends[plan.cell.id] = time.monotonic()
        return AttemptResult(plan.attempt, 0.0, PASS, True, (), logs="")

    def progress(event: str, cell: Cell, *_rest: object) -> None:
        if event == "attempt":
            said.append((cell.id, time.monotonic()))

    ran = Scheduler(plan, attempt, on_cell=Cells(), progress=progress, stop_arrival=clock)
    ran.run()
    (aside,) = ran.settle()
    assert aside.cell_id == "n=2"
    assert [cell for cell, _at in said] == ["n=1"]
    assert said[0][1] >= ends["n=1"] + scheduler.STOPPED_SLACK_S
    assert said[0][1] < ends["n=2"]  # said as the next attempt ran, not at the end


def test_settle_after_a_ctrl_c_waits_the_slack_without_spinning(tmp_path: Path) -> None:
    # Ctrl-C (SIGINT, no stop that reaches the attempts) or a store's failure set `cancel`
    # before `settle`: its wait on `cancel` returned at once, and the slack's rest went in a
    # loop reading the stop clock (the wakeup pipe's read, a syscall each) on a full core.
    plan = make_plan(tmp_path, "expect: {outcome: pass}\n", jobs=1)
    reads: list[float] = []

    def clock(_since: float) -> float | None:
        reads.append(time.monotonic())
        return None

    ran = Scheduler(plan, Recorder(lambda _c, _n: False), stop_arrival=clock)
    ran.run()
    ran.cancel.set()
    reads.clear()
    begin = time.monotonic()
    assert ran.settle() == ()
    waited = time.monotonic() - begin
    assert waited <= scheduler.STOPPED_SLACK_S + 0.2
    # A read each 50 ms slice of the slack at most (and the one that ends the wait).
    assert len(reads) <= scheduler.STOPPED_SLACK_S / 0.05 + 3, len(reads)


def test_the_ends_of_quick_attempts_are_said_together_not_one_wake_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The main thread woke every 10 ms while ends were held (a run of `true` at -j 1: an
    # end every millisecond or few), each wake taking the interpreter lock from the
    # attempts' thread for the few ends grown due since; on a loaded machine nearly one
    # wake an end. It wakes at most every BATCH_S, and says what grew due meanwhile.
    plan = make_plan(tmp_path, "expect: {outcome: pass}\n", repeat=150, jobs=1)

    def attempt(plan: AttemptPlan, _slot: tuple[str, ...], _stop: threading.Event) -> AttemptResult:
        time.sleep(0.003)
        return AttemptResult(plan.attempt, 0.003, PASS, True, (), logs="")

    said: list[int] = []
    ran = Scheduler(
        plan,
        attempt,
        progress=lambda event, _c, _r, finished, _t: (
            said.append(finished) if event == "attempt" else None
        ),
        stop_arrival=StopClock(),
    )
    wakes = 0
    release = ran._release

    def counted() -> None:
        nonlocal wakes
        wakes += 1
        release()

    monkeypatch.setattr(ran, "_release", counted)
    begin = time.monotonic()
    ran.run()
    took = time.monotonic() - begin
    ran.settle()
    assert sorted(said) == list(range(1, 151))
    # The first end waits its slack; from then on, a wake per BATCH_S at most (and a few
    # for the slices' rounding), where 10 ms wakes made 3 to 5 times as many.
    assert wakes <= (took - scheduler.STOPPED_SLACK_S) / slack.BATCH_S + 4, (wakes, took)


def test_the_wait_for_the_next_due_end_is_never_below_the_batch() -> None:
    ends = slack.RecentEnds()
    assert ends.wait_s(100.0, 0.1) == 0.1  # nothing held: the longest
    cell = Cell(id="default", index=0, matrix={})
    ends.add(slack.Ended(100.0, cell, PASS_RESULT, 1, 2))
    assert ends.wait_s(100.0, 0.1) == pytest.approx(0.1)  # due in the slack: the longest
    assert ends.wait_s(100.0 + slack.STOPPED_SLACK_S - 0.001, 0.1) == slack.BATCH_S
    assert ends.wait_s(100.0 + slack.STOPPED_SLACK_S + 1.0, 0.1) == slack.BATCH_S
