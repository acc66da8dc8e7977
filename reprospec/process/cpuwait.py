"""How long an attempt's threads waited for a CPU: time a `run.stall` does not count.

A stall is a program that could move and does not. A program that is runnable but not
running (a machine with three test suites on two cores, a CPU quota, a neighbour at a
higher priority) moves as soon as it gets a CPU: calling it stuck is a wrong "hang", and
on a loaded machine a torch rank can go ten seconds without a CPU slice worth the name.
The kernel counts that time per thread: the second field of /proc/TID/schedstat is the
nanoseconds it spent runnable on a run queue, waiting (sched_info, present unless the
kernel was built without CONFIG_SCHED_INFO; then every reading is empty and nothing is
subtracted: the stall is the wall clock, as before).

`CpuWait` answers the longest such wait of any one thread since its last reading: the
attempt could not have moved faster than its most starved thread allows, while a thread
blocked on a lock or a socket (a real deadlock, a collective that never completes) waits
on no run queue and adds nothing. A thread that spins on a loaded machine is starved too:
it then stalls at the pace it gets a CPU, and the timeout still ends it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from reprospec.process.tree import read_proc


def run_delays(pids: Iterable[int]) -> dict[int, int]:
    """Nanoseconds each thread of `pids` has waited for a CPU since it started, by thread id;
    threads and processes that are gone or unreadable are left out."""
    found: dict[int, int] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")  # noqa: PTH208 (tree.py: no Path per pid)
        except OSError:
            continue
        for tid in tids:
            try:
                fields = read_proc(f"/proc/{pid}/task/{tid}/schedstat").split()
                found[int(tid)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    return found


class CpuWait:
    """The longest wait for a CPU of any thread of an attempt between two readings.

    `pids` answers the attempt's processes at each reading (its cgroup, or its tree). The
    first reading only sets the baseline and answers 0; a thread first seen later started
    since the reading before, so all of its wait falls between the two.
    """

    def __init__(self, pids: Callable[[], Iterable[int]]) -> None:
        self._pids = pids
        self._last: dict[int, int] | None = None

    def __call__(self) -> float:
        """Seconds: the longest any one thread waited for a CPU since the last call."""
        delays = run_delays(self._pids())
        last, self._last = self._last, delays
        if last is None:
            return 0.0
        worst = max((ns - last.get(tid, 0) for tid, ns in delays.items()), default=0)
        return max(worst, 0) / 1e9
