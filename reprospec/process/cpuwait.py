"""How long an attempt's threads waited for a CPU: time a `run.stall` does not count.

A stall is a program that could move and does not. A program that is runnable but not
running (a machine with three test suites on two cores, a CPU quota, a neighbour at a
higher priority) moves as soon as it gets a CPU: calling it stuck is a wrong "hang", and
on a loaded machine a torch rank can go ten seconds without a CPU slice worth the name.
The kernel counts that time per thread: the second field of /proc/TID/schedstat is the
nanoseconds it spent runnable on a run queue, waiting (sched_info, present unless the
kernel was built without CONFIG_SCHED_INFO; then every reading is empty and nothing is
subtracted: the stall is the wall clock, as before).

The kernel adds a wait to that count when the wait ends, when the thread gets a CPU. A
thread still waiting shows nothing yet: one that used no CPU and waited no more since the
last reading, and is runnable now (state R in /proc/TID/stat), is counted as waiting all
that time. When its wait then ends, the count grows by the whole wait, and the part already
counted that way is taken off: each wait is counted once.

A wait that ends after a reading may have begun before it, while the thread still got a
slice in the interval before (so it was not "waiting all that time" then): its whole length
counts when it ends, more than the time between the two readings. A starved thread on a
loaded machine waits that way most of the time (a slice, then half a second on a run queue,
across the readings); clipping each reading's wait to the time since the one before lost
part of nearly every such wait, and the losses added up to a wrong stall (in a full test
run, a starved container that went on to print its last line was called a hang by a 1 s
`run.stall`). What is counted is at most the time since the last progress (progress.py).

`CpuWait` answers the longest such wait of any one thread since its last reading: the
attempt could not have moved faster than its most starved thread allows, while a thread
blocked on a lock or a socket (a real deadlock, a collective that never completes) waits
on no run queue and adds nothing. A thread that spins on a loaded machine is starved too:
it then stalls at the pace it gets a CPU, and the timeout still ends it.

Two waits the kernel's count cannot show when the stall is judged, both found in full test
runs on a loaded machine where a starved container was called a hang:

- A thread that got a slice since the reading before and is runnable now is waiting again,
  from some moment after that reading: uncounted until the wait ends. The engine's own
  poll comes late on a loaded machine (0.65 s for a 0.5 s sweep at a load of 8), and each
  late poll left up to its whole interval uncounted. `unseen` answers that bound, and the
  stall is not called on it (progress.py): at most one poll later for a real hang.
- The attempt's processes have all ended, and the engine has not seen its end yet (the
  Docker daemon reports a container's exit and relays its last output late under load).
  Time after the last of them is gone is no stall of theirs: it counts as waited, once
  they were seen (a /proc this engine may not read, `hidepid`, shows none at any
  reading, and then the wall clock counts as before).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable

from reprospec.process.tree import read_proc

# A thread's reading: (nanoseconds on a CPU, nanoseconds waiting for one), since it started.
Reading = tuple[int, int]


def thread_readings(pids: Iterable[int]) -> dict[tuple[int, int], Reading]:
    """Each thread of `pids`, by (pid, thread id): its CPU time and its wait for a CPU so far;
    threads and processes that are gone or unreadable are left out."""
    found: dict[tuple[int, int], Reading] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")  # noqa: PTH208 (tree.py: no Path per pid)
        except OSError:
            continue
        for tid in tids:
            try:
                fields = read_proc(f"/proc/{pid}/task/{tid}/schedstat").split()
                found[pid, int(tid)] = (int(fields[0]), int(fields[1]))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _runnable(pid: int, tid: int) -> bool:
    """Whether the thread is runnable (running or on a run queue) now."""
    try:
        stat = read_proc(f"/proc/{pid}/task/{tid}/stat")
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"R"


class CpuWait:
    """The longest wait for a CPU of any thread of an attempt between two readings.

    `pids` answers the attempt's processes at each reading (its cgroup, or its tree). The
    first reading only sets the baseline and answers 0; a thread first seen later started
    since the reading before, so all of its wait falls between the two.
    """

    def __init__(self, pids: Callable[[], Iterable[int]]) -> None:
        self._pids = pids
        self._last: dict[tuple[int, int], Reading] | None = None
        # Per thread: nanoseconds of its current wait counted already, before the kernel has.
        self._pending: dict[tuple[int, int], int] = {}
        # Whether any reading has shown a thread: none shown after some were is an end.
        self._seen = False
        # The threads that got a CPU between the last two readings, and the seconds between.
        self._ran: list[tuple[int, int]] = []
        self._elapsed = 0.0

    def __call__(self, elapsed: float) -> float:
        """Seconds: the longest wait for a CPU of any one thread counted since the last call,
        which was `elapsed` seconds ago (the watch's clock: a thread still waiting waited that
        long). A wait that began before the last call counts whole when it ends."""
        readings = thread_readings(self._pids())
        last, self._last = self._last, readings
        ended = self._seen and not readings
        self._seen = self._seen or bool(readings)
        self._elapsed = elapsed
        self._ran = []
        if last is None:
            return 0.0
        if ended:
            return elapsed  # every process of the attempt is gone: its end is not yet seen
        worst = 0
        pending: dict[tuple[int, int], int] = {}
        for key, now in readings.items():
            before = last.get(key, (0, 0))
            grown, pending[key] = new_wait(
                before, now, self._pending.get(key, 0), int(elapsed * 1e9),
                runnable=functools.partial(_runnable, *key),
            )  # fmt: skip
            worst = max(worst, grown)
            if now[0] != before[0]:
                self._ran.append(key)
        self._pending = pending
        return worst / 1e9

    def unseen(self) -> float:
        """Seconds a thread may have waited for a CPU that no reading has counted: the time
        between the last two readings, where a thread that ran between them is runnable now
        (its wait began after the earlier one); 0 where none is. Asked only when the
        counted waits would call a stall, so the threads' states are read only then."""
        if any(_runnable(*key) for key in self._ran):
            return self._elapsed
        return 0.0


def new_wait(
    before: Reading, now: Reading, pending: int, elapsed: int, *, runnable: Callable[[], bool]
) -> tuple[int, int]:
    """One thread between two readings: (nanoseconds of wait to count now, nanoseconds of its
    current wait counted before the kernel has), given what was `pending` at the reading
    before and the `elapsed` nanoseconds since it. `runnable` is asked only when needed."""
    (before_cpu, before_waited), (cpu, waited) = before, now
    grown = waited - before_waited
    if grown == 0 and cpu == before_cpu and runnable():
        return elapsed, pending + elapsed  # waiting still: the kernel has not counted it yet
    return max(0, grown - pending), 0
