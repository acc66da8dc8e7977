"""`run.stall`: what counts as progress, read from events.jsonl as a child appends it; the
spec field's checks; the hang's detail naming the limit that fired."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

from reprospec.core.results import Execution, Outcome
from reprospec.core.sections import RunPolicy, SectionError
from reprospec.errors import SpecError
from reprospec.outcome.classify import classify
from reprospec.process.cpuwait import CpuWait, new_wait
from reprospec.process.progress import ProgressWatch, is_progress
from reprospec.spec.load import load_spec


def line(**event: object) -> bytes:
    return json.dumps(event).encode() + b"\n"


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


@pytest.mark.parametrize(
    ("event", "progress"),
    [
        ({"event": "step", "phase": "train", "step": 3}, True),
        ({"event": "phase", "phase": "validation"}, True),
        ({"event": "stage", "stage": "backward"}, True),
        ({"event": "marker", "line": "step 3"}, True),
        ({"event": "done"}, True),
        ({"phase": "train", "step": 1}, True),  # a line with no `event` says where it got to
        # Written before the import starts: where the attempt is, not that it moves.
        ({"event": "import", "module": "torch", "phase": "import"}, False),
        ({"event": "ranks_stuck", "phase": "train", "step": 3}, False),
        ({"event": "worker_busy", "worker": 0}, False),
        ({"event": "start"}, False),
    ],
)
def test_what_counts_as_progress(event: dict[str, object], progress: bool) -> None:
    assert is_progress(json.dumps(event).encode()) is progress


def test_garbage_is_no_progress() -> None:
    assert not is_progress(b"{not json")
    assert not is_progress(b"[1, 2]")


def test_the_clock_starts_at_the_first_progress_and_counts_from_the_last(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    watch = ProgressWatch(events, 10.0, output_counts=False)
    append(events, line(event="import", module="torch", phase="import"))
    watch.poll(100.0)
    assert watch.last is None
    assert not watch.stalled(1000.0)  # no progress yet: only the timeout applies
    append(events, line(event="step", step=1))
    watch.poll(101.0)
    assert watch.last == 101.0
    assert not watch.stalled(110.9)
    assert watch.stalled(111.0)
    append(events, line(event="ranks_stuck", step=1))
    watch.poll(112.0)
    assert watch.last == 101.0  # the harness saying the ranks are stuck is no progress
    watch.close()


def test_a_line_is_read_once_it_is_whole(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    watch = ProgressWatch(events, 5.0, output_counts=False)
    whole = line(event="step", step=2)
    append(events, whole[:10])
    watch.poll(1.0)
    assert watch.last is None
    append(events, whole[10:])
    watch.poll(2.0)
    assert watch.last == 2.0
    watch.close()


def test_an_over_long_line_is_skipped_whole(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    watch = ProgressWatch(events, 5.0, output_counts=False)
    # A progress line buried in a line too long to be an event: skipped, not half-read.
    append(events, b'{"event": "step", "pad": "' + b"x" * (80 * 1024))
    watch.poll(1.0)
    append(events, b'"}\n')
    watch.poll(2.0)
    assert watch.last is None
    append(events, line(event="step", step=1))
    watch.poll(3.0)
    assert watch.last == 3.0
    watch.close()


def test_output_counts_only_when_told(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    quiet = ProgressWatch(events, 5.0, output_counts=False)
    quiet.output(1.0, 10)
    assert quiet.last is None
    loud = ProgressWatch(events, 5.0, output_counts=True)
    loud.output(1.0, 10)
    assert loud.last == 1.0
    loud.output(2.0, 10)  # nothing more printed: not progress
    assert loud.last == 1.0
    loud.output(3.0, 12)
    assert loud.last == 3.0


def test_time_spent_waiting_for_a_cpu_is_not_a_stall(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    watch = ProgressWatch(events, 5.0, output_counts=True)
    # What a CpuWait would answer at each poll: the longest wait of one thread since the last.
    waits = Waits([0.0, 2.0, 3.0, 9.0, 0.0, 0.0, 4.0])
    watch.count_cpu_wait(waits)
    watch.poll(0.0)  # the baseline, before any progress
    watch.output(1.0, 10)
    watch.poll(1.0)  # 2 s waited, all before the progress: none of it counts
    assert watch.waited_s == 0.0
    watch.poll(4.0)  # 3 s of the 3 waited
    assert watch.waited_s == 3.0
    assert not watch.stalled(8.0)  # 7 s since the last progress, 4 s of them runnable
    # The waits never add up to more than the time since the last progress.
    watch.poll(6.0)
    assert watch.waited_s == 5.0
    assert not watch.stalled(10.5)
    watch.poll(11.0)
    assert watch.stalled(11.0)  # 10 s, 5 of them runnable: stalled
    # Progress forgets the wait: the next stall is counted afresh.
    watch.output(12.0, 20)
    assert watch.waited_s == 0.0
    watch.poll(16.0)  # waited 0.0, and 4.0 at 17: a wait that began before the poll at 16
    watch.poll(17.0)
    assert watch.waited_s == 4.0  # counts whole (the thread got a slice in between)
    assert not watch.stalled(20.5)
    assert watch.stalled(21.0)
    watch.close()


class Waits:
    """What a CpuWait would answer at each poll, in turn, and what it has not counted yet."""

    def __init__(self, waits: list[float], unseen: float = 0.0) -> None:
        self._waits = iter(waits)
        self.unseen_s = unseen

    def __call__(self, elapsed: float) -> float:  # noqa: ARG002 (the protocol's)
        return next(self._waits)

    def unseen(self) -> float:
        return self.unseen_s


def test_a_wait_not_counted_yet_holds_the_stall_back_one_poll(tmp_path: Path) -> None:
    """A late poll on a loaded machine: a thread that got a slice since the poll before and
    is runnable now may have waited since (CpuWait.unseen); the stall is not called on it,
    and is called once a poll counts no such wait."""
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    watch = ProgressWatch(events, 1.0, output_counts=True)
    waits = Waits([0.0, 0.2, 0.0, 0.0], unseen=1.5)
    watch.count_cpu_wait(waits)
    watch.poll(0.0)
    watch.output(0.0, 10)
    watch.poll(1.5)  # 1.5 s since the progress, 0.2 counted: 1.3 s by the counted waits
    assert not watch.stalled(1.5)
    waits.unseen_s = 0.0  # the next poll came on time and nothing was runnable
    watch.poll(2.0)
    assert watch.stalled(2.0)
    watch.close()


def test_each_wait_counts_once_and_whole() -> None:
    """`new_wait` over one thread's readings (CPU ns, waited ns), as /proc/TID/schedstat gives
    them, polled every 0.5 s: a wait still going is counted as it goes and taken off when the
    kernel counts it; one that began before a reading counts whole when it ends."""
    half = 500_000_000
    # Waiting from 0 to 1.2 s, no CPU: counted as it goes (0.5, 0.5), then the kernel's
    # 1.2 s at the reading after it ran, less the 1.0 s already counted.
    assert new_wait((0, 0), (0, 0), 0, half, runnable=lambda: True) == (half, half)
    assert new_wait((0, 0), (0, 0), half, half, runnable=lambda: True) == (half, 2 * half)
    grown, pending = new_wait((0, 0), (2_000_000, 1_200_000_000), 2 * half, half,
                              runnable=lambda: True)  # fmt: skip
    assert (grown, pending) == (200_000_000, 0)
    # A slice at 1.2 s, then a wait from 1.202 s to 2.3 s: at the reading of 1.5 s the thread
    # had run (no "still waiting" credit); at 2.5 s the kernel counts its 1.098 s whole,
    # more than the 0.5 s between the readings: none of it is lost.
    grown, _ = new_wait((2_000_000, 1_200_000_000), (4_000_000, 2_298_000_000), 0, half,
                        runnable=lambda: True)  # fmt: skip
    assert grown == 1_098_000_000
    # Asleep (not runnable), or running: nothing waited, and runnable is asked only when
    # neither count moved.
    assert new_wait((5, 7), (5, 7), 0, half, runnable=lambda: False) == (0, 0)
    assert new_wait((5, 7), (9, 7), 0, half, runnable=_never_asked) == (0, 0)


def _never_asked() -> bool:
    raise AssertionError("runnable asked although the thread's counts moved")


def test_a_thread_waiting_for_a_cpu_is_counted_and_a_sleeping_one_is_not() -> None:
    """`CpuWait` on this process, held to one CPU: two threads busy at once (hashing, which
    lets go of the GIL, so both are runnable) wait for it in turns; asleep, none waits."""
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(affinity)})
    try:
        wait = CpuWait(lambda: [os.getpid()])
        assert wait(0.0) == 0.0  # the baseline
        time.sleep(1.0)
        # Runnable only at the wake-up: not the whole second, as a thread still waiting
        # would be. The wake-up itself may wait a few hundred ms at a load of 10 on 2 cores.
        assert wait(1.0) < 0.9
        stop = threading.Event()
        spinner = threading.Thread(target=_hash_until, args=(stop,))
        spinner.start()
        try:
            end = time.monotonic() + 0.6
            while time.monotonic() < end:
                hashlib.sha256(_BLOCK).digest()
        finally:
            stop.set()
            spinner.join()
        assert wait(0.6) > 0.1  # each about 0.3 s on a quiet machine
    finally:
        os.sched_setaffinity(0, affinity)


_BLOCK = bytes(1 << 20)


def test_the_time_after_every_process_ended_is_no_stall() -> None:
    """The attempt's processes are gone and its end is not seen yet (a container's exit
    reported late): the time counts as waited, once a reading has seen them; a /proc that
    shows none from the start (hidepid) leaves the wall clock."""
    gone = _unused_pid()
    pids = [os.getpid()]
    wait = CpuWait(lambda: pids)
    assert wait(0.0) == 0.0
    pids = [gone]
    assert wait(0.7) == 0.7
    assert wait(0.5) == 0.5
    assert wait.unseen() == 0.0
    never = CpuWait(lambda: [gone])
    assert never(0.0) == 0.0
    assert never(0.7) == 0.0


def test_a_thread_that_ran_and_is_runnable_may_be_waiting_unseen() -> None:
    """`CpuWait.unseen` on this process: its threads ran since the last reading and this
    one is running now, so the time between the two readings may hide a wait; a reading
    of nothing hides none."""
    wait = CpuWait(lambda: [os.getpid()])
    wait(0.0)
    end = time.monotonic() + 0.05
    while time.monotonic() < end:
        hashlib.sha256(_BLOCK).digest()
    wait(0.8)
    assert wait.unseen() == 0.8
    empty = CpuWait(list)
    empty(0.0)
    empty(0.8)
    assert empty.unseen() == 0.0


def _unused_pid() -> int:
    """A pid no process has now."""
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):  # noqa: PTH110
        pid -= 1
    return pid


def _hash_until(stop: threading.Event) -> None:
    while not stop.is_set():
        hashlib.sha256(_BLOCK).digest()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"timeout": "60s", "stall": "60s"}, "60s is not below run.timeout (1m)"),
        ({"timeout": "1m", "stall": "2m"}, "2m is not below run.timeout (1m)"),
        ({"stall": "20m"}, "20m is not below run.timeout (10m)"),  # the default timeout
        ({"stall": 0}, "expected a duration > 0, got 0"),
        ({"stall": "soon"}, "expected a duration like 90s, 5m or 1h, got 'soon'"),
    ],
)
def test_a_stall_must_be_a_duration_below_the_timeout(
    section: dict[str, object], message: str
) -> None:
    with pytest.raises(SectionError) as caught:
        RunPolicy.from_section(section)
    assert caught.value.path == ("run", "stall")
    assert message in str(caught.value)


def test_a_stall_below_the_timeout_is_kept() -> None:
    assert RunPolicy.from_section({"timeout": "60s", "stall": "15s"}).stall_s == 15.0
    assert RunPolicy.from_section({}).stall_s is None


HEAD = "reprospec: 1\nname: s\ncommand: [python3, -c, pass]\nexpect: {outcome: pass}\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "run: {timeout: 30s, stall: 30s}\n",
            "5:28: run.stall: 30s is not below run.timeout (30s): the timeout would always end"
            " the attempt first",
        ),
        ("run: {stall: -1}\n", "5:14: run.stall: expected a number of seconds > 0, got -1"),
        (
            "matrix: {t: [5s, 60s]}\nrun: {timeout: '${{ matrix.t }}', stall: 10s}\n",
            "6:42: run.stall: 10s is not below run.timeout (5s): the timeout would always end"
            " the attempt first (in cell t=5s)",
        ),
        (
            "matrix: {s: [0s, 5s]}\nrun: {stall: '${{ matrix.s }}'}\n",
            "6:14: run.stall: expected a finite duration > 0, got '0s' (in cell s=0s)",
        ),
    ],
)
def test_a_bad_stall_is_refused_where_it_is_written(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + body)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    problems = [p.removeprefix(f"{path}:") for p in caught.value.problems]
    assert any(p.startswith(expected) for p in problems), problems


def test_a_stall_from_the_matrix_below_each_timeout_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "matrix: {s: [1s, 5s]}\nrun: {timeout: 60s, stall: '${{ matrix.s }}'}\n")
    assert load_spec(path).document["run"] == {"timeout": "60s", "stall": "${{ matrix.s }}"}


def hung(tmp_path: Path, *, stalled: bool) -> Execution:
    for name in ("stdout.log", "stderr.log"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "events.jsonl").write_bytes(line(event="step", phase="train", step=3))
    return Execution(
        cell_id="cell",
        attempt=1,
        log_dir=tmp_path,
        returncode=-9,
        timed_out=True,
        duration_s=17.25,
        started="",
        finished="",
        stdout_path=tmp_path / "stdout.log",
        stderr_path=tmp_path / "stderr.log",
        events_path=tmp_path / "events.jsonl",
        timeout_s=60.0,
        stall_s=15.0,
        stalled=stalled,
    )


def test_the_hang_says_which_limit_fired(tmp_path: Path) -> None:
    stalled = classify(hung(tmp_path, stalled=True))
    assert isinstance(stalled, Outcome)
    assert (stalled.kind, stalled.phase, stalled.step) == ("hang", "train", 3)
    assert stalled.detail == "no progress for 15 s (run.stall); killed after 17.2s"
    timed_out = classify(dataclasses.replace(hung(tmp_path, stalled=False), duration_s=60.5))
    assert isinstance(timed_out, Outcome)
    assert (timed_out.detail or "").startswith(
        "no exit within the timeout (60 s); killed after 60.5s"
    )


def test_a_marker_at_the_position_it_reported_is_a_redraw_not_progress(tmp_path: Path) -> None:
    # A bar stuck at 7/10 that keeps redrawing its clock matched at every redraw,
    # each match counted, and the stall never fired.
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    watch = ProgressWatch(events, 2.0, output_counts=False)
    append(events, line(event="marker", phase=None, step=7, line="7/10 [00:01<00:03]"))
    watch.poll(1.0)
    for now in (2.0, 3.0, 4.0):
        append(events, line(event="marker", phase=None, step=7, line=f"7/10 [00:0{now:.0f}]"))
        watch.poll(now)
    assert watch.last == 1.0
    assert watch.stalled(4.0)
    append(events, line(event="marker", phase=None, step=8, line="8/10"))
    watch.poll(5.0)
    assert watch.last == 5.0  # a new step
    append(events, line(event="marker", phase="eval", step=8, line="eval 8/10"))
    watch.poll(6.0)
    assert watch.last == 6.0  # the same step of another phase
    append(events, line(event="marker", phase="train", step=None, line="epoch done"))
    append(events, line(event="marker", phase="train", step=None, line="epoch done"))
    watch.poll(7.0)
    assert watch.last == 7.0  # a match without a step: nothing to compare, progress
    watch.close()
