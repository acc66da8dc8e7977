"""The execute stage's clock: which attempt runs next, on how many threads, with which GPUs.

The scheduler knows nothing of processes, files or verdict wording: it is
given a `RunAttempt` function that runs one planned attempt and returns its
judged `AttemptResult` (or None when the run was cancelled under it). That
keeps the policy (round-robin over cells, `-j`, GPU slots, `stop_on`,
`repeat: auto`, resume) testable in-process in milliseconds.

`-j N` bounds the process trees running at once: an attempt with `run.instances: K`
takes min(K, N) of the N places (waiting, first come first served, until they
are free) and K x `environment.gpus` GPU slots, so the processes at once never
exceed N: with N above K, other attempts run beside it in the places left.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from reprospec.core.inputs import AttemptPlan, Cell, Expectation
from reprospec.core.rates import rate_decided
from reprospec.core.results import AttemptResult, SetAside
from reprospec.core.words import plural
from reprospec.outcome.judge import ran_rate, stopped_by
from reprospec.pipeline.gpus import GpuPool
from reprospec.pipeline.slack import STOPPED_SLACK_S as STOPPED_SLACK_S
from reprospec.pipeline.slack import Ended, RecentEnds, stopped_with
from reprospec.plan.run import RunPlan
from reprospec.spec.matrix import position_of

# Runs one attempt to its end on the given GPU slot; None when `cancel` stopped it.
RunAttempt = Callable[[AttemptPlan, tuple[str, ...], threading.Event], "AttemptResult | None"]
ProgressEvent = Literal["start", "attempt"]
# progress(event, cell, result (None at "start"), attempts finished, attempts planned)
ProgressCallback = Callable[[ProgressEvent, Cell, "AttemptResult | None", int, int], None]
AttemptCallback = Callable[[AttemptPlan, AttemptResult], None]
# A cell whose attempts are all in (none running, none to come), with them in attempt order.
CellCallback = Callable[[Cell, tuple[AttemptResult, ...]], None]


def _one_at_a_time(progress: ProgressCallback) -> ProgressCallback:
    """`progress` called by one thread at a time: the worker threads end attempts at once,
    and a callback that prints (python-api.md's example) wrote two lines as one, `[3/4]
    crash=true #2: crash  [4/4] crash=true #1: crash` (print writes its text and its newline
    apart). The callback must be quick anyway; holding the others back that long is cheap."""
    lock = threading.Lock()

    def said(
        event: ProgressEvent, cell: Cell, result: AttemptResult | None, finished: int, total: int
    ) -> None:
        with lock:
            progress(event, cell, result, finished, total)

    return said


# What `_run_one` gives for an attempt whose cell stop_on stopped while it waited to start.
NeverStarted = Literal["never-started"]
_NEVER_STARTED: NeverStarted = "never-started"

# Signals that stop a whole run (a batch system's time limit, CI cancelling, Ctrl-C).
_STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGKILL")
STOP_GRACE_S = 0.5
# How long an attempt that died of a stop signal waits at most for the main thread to have
# run its signal handlers (`_handled_since`): a bound for a main thread that never steps.
HANDLERS_WAIT_S = 10.0
# The first stop that may have reached the attempts (a SIGTERM) that arrived at or after a
# moment (time.monotonic()), else None (core/stopclock.py's `first_since`).
StopArrival = Callable[[float], "float | None"]


class _Places:
    """The `-j` places: an attempt takes one per process tree it runs, first come first served."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._turns: list[object] = []
        self._cond = threading.Condition()

    def take(self, count: int, cancel: threading.Event) -> bool:
        """Wait for `count` places (at most all of them); False when cancelled while waiting."""
        count = min(count, self.size)
        turn = object()
        with self._cond:
            self._turns.append(turn)
            try:
                while self._turns[0] is not turn or self._free < count:
                    if cancel.is_set():
                        return False
                    self._cond.wait(timeout=0.2)
                self._free -= count
                return True
            finally:
                self._turns.remove(turn)
                self._cond.notify_all()

    def give_back(self, count: int) -> None:
        with self._cond:
            self._free += min(count, self.size)
            self._cond.notify_all()


@dataclass
class _CellState:
    """Mutable bookkeeping of one cell while its attempts run (scheduler-private)."""

    results: dict[int, AttemptResult] = field(default_factory=dict)
    stopped: bool = False
    # The highest attempt number taken to run (or skipped): a planned one above it is queued.
    taken: int = 0
    # The highest number `repeat: auto` gave an attempt it added (queued, maybe not taken).
    added: int = 0
    # Attempts of the cell running now, and whether its last planned attempt was taken.
    running: int = 0
    last_taken: bool = False
    # Its attempts went to `on_cell` (stop_on stopped it): what is left only skips the rest.
    handed_over: bool = False
    # Its extra attempts in the scheduler's queue, not yet taken: counted here, where every
    # finished attempt walked the whole queue, every cell's, under the lock.
    queued: int = 0


class Scheduler:
    """Runs a plan's attempts on `plan.parallel` threads; stop_on, adaptive repeats, resume."""

    def __init__(
        self,
        plan: RunPlan,
        run_attempt: RunAttempt,
        *,
        gpu_pool: GpuPool | None = None,
        on_attempt: AttemptCallback | None = None,
        progress: ProgressCallback | None = None,
        done: Mapping[tuple[str, int], AttemptResult] | None = None,
        cancel: threading.Event | None = None,
        on_cell: CellCallback | None = None,
        stop_arrival: StopArrival | None = None,
    ) -> None:
        """`stop_arrival`: when a SIGTERM arrived (the command line's, core/stopclock.py);
        an attempt that ended within STOPPED_SLACK_S before it, or after it, is set aside
        (`set_aside`, pipeline/slack.py). With it, an attempt's end is said (its "attempt"
        progress) and its complete cell goes to `on_cell` only once that end is older than
        the slack (`_release`), so that nothing said or judged is taken back."""
        self.plan = plan
        self.on_cell = on_cell
        self.run_attempt = run_attempt
        self.gpu_pool = gpu_pool or GpuPool(())
        self.on_attempt = on_attempt
        self.progress = _one_at_a_time(progress) if progress is not None else None
        self.cancel = cancel or threading.Event()
        self._lock = threading.Lock()
        # Told when an attempt ends: a thread with nothing to take waits while another's
        # attempt may still add more (`repeat: auto`), rather than leave the run to it.
        self._ended = threading.Condition(self._lock)
        self._running = 0
        # What a job thread raised (an attempt's bug, a callback's): the run stops, and it
        # is raised on the caller's thread, as if the attempt had run there.
        self._failure: BaseException | None = None
        # A cell's state is made when its first attempt is taken (or resumed): a cell that
        # has not started costs nothing.
        self._states: dict[str, _CellState] = {}
        # Resumed attempts count as finished, so they are neither run again nor lost.
        in_plan = {cell.id for cell in plan.cells} if done else set()
        # Where each cell is among the attempts' cells, to find a resumed cell's planned
        # numbers by its id: made only to resume, and let go once the run has started.
        positions = {cell.id: i for i, cell in enumerate(plan.attempts.cells)} if done else {}
        planned_done = 0
        planned_numbers: dict[str, frozenset[int]] = {}  # once per resumed cell, not per attempt
        for (cell_id, number), result in (done or {}).items():
            if cell_id in in_plan:
                state = self._states.setdefault(cell_id, _CellState())
                state.results[number] = result
                numbers = planned_numbers.get(cell_id)
                if numbers is None:
                    numbers = planned_numbers[cell_id] = frozenset(
                        self._numbers_at(positions.get(cell_id))
                    )
                planned_done += number in numbers
        # The planned attempts, each planned as it is taken (plan.PlannedAttempts), then the
        # extra ones `repeat: auto` adds. A deque for those: taken from the front, once
        # per attempt (a list's pop(0) is quadratic over the attempts a run may hold).
        self._planned = plan.attempts.with_last()
        self._extra: deque[AttemptPlan] = deque()
        self.total = len(plan.attempts) - planned_done
        for cell_id, numbers in planned_numbers.items():
            state = self._states[cell_id]
            # A cell stop_on stopped stays stopped: its planned attempts were never to run,
            # and a resume that ran them changed what the run had found. Read on the whole
            # stored set, not replayed in attempt order: a rate cell the run never stopped
            # (3 passed, then 1 and 2 crashed) read as `2/2` met at attempt 2.
            self._apply_stop_on(state, None, self.plan.expectations[cell_id])
            if state.stopped:
                # Its planned attempts left will not run: no part of the progress count.
                self.total -= sum(n not in state.results for n in numbers)
        self.finished = 0
        self._places = _Places(max(1, plan.parallel))
        # The steps of `run`'s wait on the main thread (`_step`), where Python runs signal
        # handlers; None while `run` is not on the main thread (no handler runs there).
        self._steps: int | None = None
        self._stepped = threading.Condition()
        self.stop_arrival = stop_arrival
        # When `run` began: a stop before it is not this run's.
        self._began = time.monotonic()
        # With `stop_arrival`: the attempts kept that ended in the last STOPPED_SLACK_S or
        # so, neither said nor judged yet; None without (nothing is ever set aside).
        self._recent = RecentEnds() if stop_arrival is not None else None
        self._set_aside: list[SetAside] = []

    def run(self) -> dict[str, list[AttemptResult]]:
        """Run everything (or until cancelled); each cell's attempt results in attempt order
        (with `on_cell`, only the cells it was not given: `unfinished`).

        Ctrl-C in the calling thread sets `cancel`, waits for the attempts in flight to
        be stopped by their runner (no orphans), and re-raises KeyboardInterrupt.
        """
        # Each job says it is done with an Event, not by Thread.join: a join that Ctrl-C
        # interrupts can mark a thread that still runs as stopped (CPython 3.11's
        # _wait_for_tstate_lock, bpo-45274), and the join after it returned while a job
        # was still judging its cell: the end then judged the cell too, as never run, and
        # the report's cells broke (an IndexError, exit 3, no report.md).
        jobs: list[tuple[threading.Thread, threading.Event]] = []
        self._began = time.monotonic()
        if threading.current_thread() is threading.main_thread():
            with self._stepped:
                self._steps = 0
        try:
            # Started inside the try: a Ctrl-C while one starts stops the others too.
            # A `repeat: auto` run adds attempts later: as many jobs as -j, to run them.
            planned = self.total if not self.plan.adaptive else self.plan.parallel
            for i in range(min(self.plan.parallel, max(1, planned))):
                finished = threading.Event()
                job = threading.Thread(
                    target=self._work, args=(finished,), name=f"reprospec-job-{i}", daemon=True
                )
                jobs.append((job, finished))
                job.start()
            # Waited for in short slices: a plain wait would keep Ctrl-C from reaching us.
            # This thread, free while the jobs run attempts, says the ends that grew old.
            for _job, finished in jobs:
                while not finished.wait(self._slice()):
                    self._step()
                    try:
                        self._release()
                    except KeyboardInterrupt:
                        raise
                    except BaseException as exc:  # a callback's: as a job's is
                        self._fail(exc)
        except KeyboardInterrupt:
            self.cancel.set()
            # A job not yet alive runs nothing now that `cancel` is set (is_alive never
            # waits, so it cannot be cut short as a join can).
            for job, finished in jobs:
                while job.is_alive() and not finished.wait(0.1):
                    pass
            raise
        if self._failure is not None:
            raise self._failure
        # With on_cell the complete cells went there: an empty list for every one of them
        # would be a list per cell again, at the end.
        return self.unfinished() if self.on_cell is not None else self.results_so_far()

    def set_aside(self) -> tuple[SetAside, ...]:
        """The attempts that ended as a stop signal came, none of them kept (`SetAside`):
        complete once `settle` has returned."""
        with self._lock:
            return tuple(self._set_aside)

    def settle(self) -> tuple[SetAside, ...]:
        """Once `run` has returned: wait until the last attempt kept ended STOPPED_SLACK_S
        ago (or a stop has come), then take back those that ended within STOPPED_SLACK_S
        before the stop's arrival and say the others' ends (their progress); what
        `set_aside` gives. Their cells are judged at the end of the run, not by `on_cell`.

        A stop sent to every process comes to the engine a moment after its attempt's: the
        shell whose `sleep` it killed has exited 0, the engine has read it, and the run
        would be complete and stored before the engine heard of the stop. The wait is the
        slack's rest at most, and only with `stop_arrival` (the command line's runs)."""
        if self.stop_arrival is None or self._recent is None:
            return self.set_aside()
        with self._lock:
            last = self._recent.last()
        while (arrival := self.stop_arrival(self._began)) is None:
            left = last + STOPPED_SLACK_S - time.monotonic()
            if left <= 0:
                break
            # (the cancel event: set by the stop's handler, which then has its arrival;
            # one set already, by Ctrl-C or a store's failure, would return at once, and the
            # slack's rest go in reads of the stop clock on a full core)
            if self.cancel.is_set():
                time.sleep(min(left, 0.05))
            else:
                self.cancel.wait(min(left, 0.05))
        kept: list[Ended] = []
        with self._lock:
            for end in self._recent.all():
                state = self._states.get(end.cell.id)
                number = end.result.attempt
                if stopped_with(end.at, arrival) and state is not None:
                    if state.results.pop(number, None) is not None:
                        self.finished -= 1
                        self._set_aside.append(SetAside(end.cell.id, number, end.result))
                else:
                    kept.append(end)
        if self.progress is not None:
            for end in kept:
                self.progress("attempt", end.cell, end.result, end.finished, end.total)
        return self.set_aside()

    def complete(self) -> bool:
        """Whether every attempt the run holds has ended (the progress's `[N/N]`): none left
        to take, none cut short. A run cancelled after that is complete."""
        with self._lock:
            return self.finished >= self.total

    def results_so_far(self) -> dict[str, list[AttemptResult]]:
        """Each cell's finished attempts, in attempt order."""
        with self._lock:
            results: dict[str, list[AttemptResult]] = {}
            for cell in self.plan.cells:
                state = self._states.get(cell.id)
                results[cell.id] = (
                    [state.results[n] for n in sorted(state.results)] if state else []
                )
            return results

    def unfinished(self) -> dict[str, list[AttemptResult]]:
        """The cells not yet given to `on_cell`, each with its attempts so far, in attempt order.

        With `on_cell`, what the end of a run judges besides the cells it was given (an
        interrupted run's, a resumed cell's): a cell that never started is not here.
        """
        with self._lock:
            return {
                cell_id: [state.results[n] for n in sorted(state.results)]
                for cell_id, state in self._states.items()
                if not state.handed_over
            }

    def _numbers_planned(self, cell: Cell) -> Iterator[int]:
        """The attempt numbers the plan holds of `cell`, in order (`repeat: auto`): found
        by its matrix index, as the judge finds it (no map of every cell's id)."""
        return self._numbers_at(position_of(self.plan.attempts.cells, cell))

    def _numbers_at(self, position: int | None) -> Iterator[int]:
        """The attempt numbers the plan holds of the cell at `position`, in order."""
        return iter(()) if position is None else self.plan.attempts.numbers_of(position)

    def _next(self) -> AttemptPlan | None:
        with self._lock:
            while True:
                # The planned attempts first, then the extra ones, in the order they were added.
                attempt, last = next(self._planned, (None, False))
                extra = attempt is None and bool(self._extra)
                if extra:
                    attempt = self._extra.popleft()
                if attempt is None:
                    if self.plan.adaptive and self._running and not self.cancel.is_set():
                        self._ended.wait(timeout=0.2)
                        continue
                    return None
                state = self._states.setdefault(attempt.cell.id, _CellState())
                state.queued -= extra
                state.taken = max(state.taken, attempt.attempt)
                state.last_taken = state.last_taken or last
                if attempt.attempt in state.results or state.stopped:
                    if last and not state.stopped:
                        # A resumed cell's planned attempts have all run: `repeat: auto`
                        # adds more where its rate is still undecided, as the interrupted
                        # run would have (its queued ones were never stored).
                        self._maybe_extend(attempt, state)
                    continue  # resumed, or its cell stopped (stop_on)
                state.running += 1
                self._running += 1
                return attempt

    def _work(self, finished: threading.Event) -> None:
        try:
            self._work_on()
        except BaseException as exc:
            self._fail(exc)
        finally:
            finished.set()

    def _fail(self, exc: BaseException) -> None:
        """A job's or a callback's exception: the run stops, and it is raised again in `run`,
        on the caller's thread (the first one only)."""
        with self._lock:
            self._failure = self._failure or exc
        self.cancel.set()

    def _work_on(self) -> None:
        while not self.cancel.is_set():
            if self._stop_heard():
                return  # a stop has come, its handler not run yet: start nothing more
            attempt = self._next()
            if attempt is None:
                return
            try:
                result = self._run_one(attempt)
                # Its end as the engine has it: its result read, which the engine's own
                # helpers (eu-stack, py-spy) gave, and a stop sent to every process kills them too.
                ended = time.monotonic()
            except BaseException:
                # Not running any more: a thread waiting for this attempt to add more
                # (`repeat: auto`) would otherwise wait for ever.
                self._not_running(attempt)
                raise
            if result == _NEVER_STARTED:
                with self._lock:
                    state = self._states[attempt.cell.id]
                    state.running -= 1
                    self._running -= 1
                    self.total -= 1  # counted as it was taken, it never ran
                    # The last of its cell's attempts to end: the cell is complete now, not
                    # held until the run ends (stop_on stopped it while this one waited).
                    complete = self._hand_over(attempt.cell, state)
                    self._ended.notify_all()
                if complete is not None and self.on_cell is not None:
                    self.on_cell(attempt.cell, complete)
                continue
            if result is None or self._killed_with_the_engine(result):
                self._not_running(attempt)
                return
            if self.stop_arrival is not None and stopped_with(
                ended, self.stop_arrival(self._began)
            ):
                # A stop has come, and this attempt ended after it or just before it.
                with self._lock:
                    self._set_aside.append(SetAside(attempt.cell.id, attempt.attempt, result))
                self._not_running(attempt)
                return
            with self._lock:
                state = self._states[attempt.cell.id]
                state.results[attempt.attempt] = result
                state.running -= 1
                self._running -= 1
                self.finished += 1
                if not state.stopped:
                    self._apply_stop_on(state, result, attempt.expectation)
                    if state.stopped:
                        self.total -= self._left_of(attempt.cell, state)
                self._maybe_extend(attempt, state)
                finished, total = self.finished, self.total
                if self._recent is not None:
                    # Said and judged once it is STOPPED_SLACK_S old (`_release`, `settle`).
                    self._recent.add(Ended(ended, attempt.cell, result, finished, total))
                complete = self._hand_over(attempt.cell, state)
                self._ended.notify_all()
            if self.on_attempt is not None:
                self.on_attempt(attempt, result)
            if complete is not None and self.on_cell is not None:
                self.on_cell(attempt.cell, complete)
            if self.progress is not None and self._recent is None:
                self.progress("attempt", attempt.cell, result, finished, total)

    def _hand_over(self, cell: Cell, state: _CellState) -> tuple[AttemptResult, ...] | None:
        """A complete cell's attempts, given to `on_cell` and no longer held here; else None.

        Complete: none of its attempts is running and none is to come (its last planned
        attempt was taken and `repeat: auto` queued no other, or stop_on stopped it). Held
        here until the run ended, every cell's results cost a state and a dict per cell
        beside them, and a list per cell again when the end judged them all at once
        (docs/performance.md). A stopped cell keeps an empty state, so the planned (or
        queued extra) attempts still to come of it are skipped, not run as a new cell's.
        """
        if state.handed_over or self.on_cell is None or state.running:
            return None
        if not (state.last_taken or state.stopped):
            return None
        # Extra attempts queued for it are still to come, unless stop_on stopped it: then
        # `_next` only skips them, and the cell is complete now, not at the end of the run.
        queued = state.queued > 0
        if queued and not state.stopped:
            return None
        if self._recent is not None and (self._recent.holds(cell.id) or self._stop_heard()):
            # An attempt of it ended a moment ago: a stop that comes now sets it aside, so
            # the cell is judged once that end is old (`_release`) or, a stop heard, at the
            # end of the run, never with an attempt taken back.
            return None
        attempts = tuple(state.results[n] for n in sorted(state.results))
        if state.stopped and (not state.last_taken or queued):
            state.results = {}
            state.handed_over = True
        else:
            del self._states[cell.id]
        return attempts

    def _left_of(self, cell: Cell, state: _CellState) -> int:
        """The attempts of a cell stop_on has just stopped that will not run: its planned
        ones not yet taken and the extra ones queued (the progress count drops them, as
        `[2/4]` at the end of a run that ran 2 read as half of it lost)."""
        planned = sum(
            n > state.taken and n not in state.results for n in self._numbers_planned(cell)
        )
        return planned + state.queued

    def _not_running(self, attempt: AttemptPlan) -> None:
        """`attempt` no longer runs, and keeps no result: the counts a waiting thread reads."""
        with self._lock:
            self._states[attempt.cell.id].running -= 1
            self._running -= 1
            self._ended.notify_all()

    def _killed_with_the_engine(self, result: AttemptResult) -> bool:
        """Whether the attempt died of the signal that is stopping the whole run.

        SIGTERM from a batch system or CI (or Ctrl-C in a terminal) reaches the
        attempt's processes too, often before the engine's own handler sets `cancel`:
        such an attempt did not crash, it was stopped, and a resumed run must run it
        again rather than keep a `crash SIGTERM` that never happened.
        """
        outcome = result.ran
        if outcome is None or outcome.signal not in _STOP_SIGNALS:
            return False
        # Give the engine's signal handler a moment to say whether the run is stopping.
        if self.cancel.wait(STOP_GRACE_S):
            return True
        self._handled_since()
        return self.cancel.is_set()

    def _stop_heard(self) -> bool:
        """Whether a stop that may reach the attempts (SIGTERM) has arrived since `run` began:
        heard here as it came, where its handler, which sets `cancel`, may run seconds later
        on a loaded machine, and an attempt started meanwhile would be set aside too."""
        return self.stop_arrival is not None and self.stop_arrival(self._began) is not None

    def _slice(self) -> float:
        """How long `run` waits for a job at a time: 0.1 s, less when an end is due sooner."""
        if self._recent is None:
            return 0.1
        with self._lock:
            return self._recent.wait_s(time.monotonic(), 0.1)

    def _release(self) -> None:
        """Say the ends STOPPED_SLACK_S old with no stop since (their progress), and give
        `on_cell` the complete cells they held; nothing once a stop has come (`settle` sets
        aside, or says, what is still held, and the end of the run judges their cells)."""
        if self._recent is None:
            return
        # Read before the stop: one that arrived after `now` came later than each end's slack.
        now = time.monotonic()
        if self._stop_heard():
            return
        given: list[tuple[Cell, tuple[AttemptResult, ...]]] = []
        with self._lock:
            due = self._recent.due(now)
            for end in due:
                state = self._states.get(end.cell.id)
                complete = None if state is None else self._hand_over(end.cell, state)
                if complete is not None:
                    given.append((end.cell, complete))
        for end in due:
            if self.progress is not None:
                self.progress("attempt", end.cell, end.result, end.finished, end.total)
        if self.on_cell is not None:
            for cell, attempts in given:
                self.on_cell(cell, attempts)

    def _step(self) -> None:
        """One step of `run`'s wait on the main thread: the handlers of the signals that
        came before it have run (Python runs them as a function is entered)."""
        with self._stepped:
            if self._steps is not None:
                self._steps += 1
            self._stepped.notify_all()

    def _handled_since(self) -> None:
        """Wait for the main thread to have run the handlers of the signals that came by
        now: two of `run`'s steps (the first may have begun before).

        A signal comes to the process at once, but its Python handler runs on the main
        thread alone, once that thread is given the CPU: on a loaded machine that took
        longer than STOP_GRACE_S, and an attempt Slurm's time limit killed with its engine
        was kept as `crash SIGTERM` in a run that read complete, not stopped (CI, stop
        62). Without `run` on the main thread no handler of the engine's runs there."""
        deadline = time.monotonic() + HANDLERS_WAIT_S
        with self._stepped:
            if self._steps is None:
                return
            target = self._steps + 2
            while self._steps < target and not self.cancel.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._stepped.wait(min(left, 0.1))

    def _run_one(self, attempt: AttemptPlan) -> AttemptResult | NeverStarted | None:
        needed = attempt.gpu_slots_needed
        if needed > self.gpu_pool.size:
            visible = self.gpu_pool.size or "none"
            each = (
                f" ({attempt.gpus} for each of {attempt.copies} instances)"
                if attempt.instances is not None and attempt.copies > 1
                else ""
            )
            reason = f"skipped: needs {plural(needed, 'GPU')}{each}, {visible} visible to this run"
            return AttemptResult.not_run(attempt.attempt, reason)
        debug = attempt.environment.debug
        if debug.any and self.gpu_pool.size == 0:
            # Every diagnostic of environment.debug is for a CUDA program: without a GPU it
            # shows nothing (compute-sanitizer does not even start the program).
            toggles = ", ".join(debug.to_json())
            reason = (
                f"skipped: needs a GPU for environment.debug ({toggles}), none visible to this "
                "run (--gpus, CUDA_VISIBLE_DEVICES or nvidia-smi -L)"
            )
            return AttemptResult.not_run(attempt.attempt, reason)
        if not self._places.take(attempt.copies, self.cancel):
            return None
        try:
            slot = self.gpu_pool.take(needed, self.cancel)
            if slot is None:
                return None
            with self._lock:
                stopped = self._states[attempt.cell.id].stopped
                # Read as one pair under the lock: another job may be counting its attempt.
                finished, total = self.finished, self.total
            if stopped:
                # Taken before stop_on stopped its cell, it waited for its places (the
                # instances of another attempt held them) or its GPUs: it never started,
                # and a stopped cell starts no attempt (each ran in turn, one per job).
                self.gpu_pool.give_back(slot)
                return _NEVER_STARTED
            if self.progress is not None:
                self.progress("start", attempt.cell, None, finished, total)
            try:
                return self.run_attempt(attempt, slot, self.cancel)
            finally:
                self.gpu_pool.give_back(slot)
        finally:
            self._places.give_back(attempt.copies)

    def _apply_stop_on(
        self, state: _CellState, result: AttemptResult | None, expected: Expectation
    ) -> None:
        """Stop the cell where `result` (the attempt that just ended; None: every stored
        attempt, a resume's) reproduced or missed it, as run.stop_on asks (`stopped_by`,
        the rule the judge reads too). With a rate, the cell's interval decides: a flaky
        cell stopped at its first match stayed `1/1 undecided`."""
        if result is not None and result.infra_error is not None:
            return  # it could not run: it neither reproduces nor misses
        # Without a rate the attempt that just ended decides: the earlier ones did not stop
        # the cell (a stored set, a resume's, is read whole).
        attempts = (
            [result]
            if result is not None and expected.rate is None
            else list(state.results.values())
        )
        if stopped_by(self.plan.stop_on, expected, attempts):
            state.stopped = True

    def _maybe_extend(self, attempt: AttemptPlan, state: _CellState) -> None:
        """`repeat: auto`: while the interval does not decide, queue more attempts, as many
        as keep `-j` of the cell's attempts running (one at -j 1)."""
        bound = attempt.expectation.rate
        if not self.plan.adaptive or state.stopped or bound is None:
            return
        if any(
            n > state.taken and n not in state.results for n in self._numbers_planned(attempt.cell)
        ):
            return  # planned attempts are still to come
        numbers = sorted(state.results)
        rate = ran_rate(state.results.values())
        if rate.attempts == 0 or rate_decided(rate, bound):
            # Decided; or none of its attempts could run, and more would not either (the
            # judge calls it 0/0: an infra-error counted as a miss decided `0/9`, at -j 2
            # `0/10`, neither the first attempts nor max_repeat).
            return
        # The attempts running and queued count against max_repeat and against -j.
        while (
            state.queued + state.running < self.plan.parallel
            and len(numbers) + state.running + state.queued < self.plan.max_repeat
        ):
            # Numbered after every attempt taken or added, not after the last one finished:
            # that number may be running on another thread (-j 2), and the two ran under
            # one number, one folder and one store row, the later kept, with the other's core.
            state.added = max(state.taken, state.added, numbers[-1]) + 1
            self._extra.append(self.plan.extra_attempt(attempt.cell, state.added))
            self.total += 1
            state.queued += 1
