"""The attempts that ended too recently to be taken as their program's own ends (the
scheduler's, under its lock).

A SIGTERM sent to every process at once (systemd's control-group kill, Slurm, a shutdown)
reaches an attempt's processes a moment before the engine hears of it: a shell whose `sleep`
it killed exits 0, a program that handles SIGTERM exits 0, and that end is the stop's. So the
scheduler has one rule (`stopped_with`): an attempt that ended within STOPPED_SLACK_S before a
stop arrived, or after it, is set aside, not kept. An end is here (`RecentEnds`) until it is
STOPPED_SLACK_S old: meanwhile nothing is said of it that a stop could take back, neither its
progress line (a verdict the user reads) nor its complete cell's judgment (`on_cell`).
"""

from __future__ import annotations

import math
from collections import Counter, deque

from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell
from reprospec.core.results import AttemptResult

# How long before a stop signal arrived an attempt may have ended of that same stop, whatever
# it read: a stop sent to every process reaches the attempt's processes before the engine,
# deepest first, within moments; one attempt run again on resume is the cost of a slack too
# wide, a progress line a moment late the cost of each attempt.
STOPPED_SLACK_S = 0.25
# The least time between two wakes of the thread that says the ends (`RecentEnds.wait_s`):
# the ends that grow due meanwhile are said together, at one wake. Each wake takes the
# interpreter lock from the attempts' thread, asks the stop clock and waits on a new lock:
# at 10 ms, a run of `true` on a loaded machine (an attempt every few ms) woke for nearly
# every end, and the main thread's CPU was 0.2 ms an attempt. A line said up to 50 ms later
# than its slack is not seen.
BATCH_S = 0.05


def stopped_with(ended: float, arrival: float | None) -> bool:
    """Whether an attempt that ended at `ended` may have ended of the stop that arrived at
    `arrival` (both time.monotonic(); None: no stop came): the one rule of a set-aside."""
    return arrival is not None and ended >= arrival - STOPPED_SLACK_S


@frozen
class Ended:
    """An attempt kept as it ended, with the progress counts of that moment: its line is
    said once the end is STOPPED_SLACK_S old, as it would have been said then."""

    at: float  # time.monotonic() of its end, its result read
    cell: Cell
    result: AttemptResult
    finished: int
    total: int


class RecentEnds:
    """The ends kept in the last STOPPED_SLACK_S or so, oldest first; a cell with one of them
    here is not judged yet. Read and changed under the scheduler's lock."""

    def __init__(self) -> None:
        self._ends: deque[Ended] = deque()
        # How many of the ends here are each cell's: whether one holds it, without a walk.
        self._cells: Counter[str] = Counter()

    def add(self, end: Ended) -> None:
        self._ends.append(end)
        self._cells[end.cell.id] += 1

    def holds(self, cell_id: str) -> bool:
        """Whether an end of the cell is still here: a stop may yet take it back."""
        return self._cells[cell_id] > 0

    def due(self, now: float) -> list[Ended]:
        """Take the ends STOPPED_SLACK_S old by `now` (the caller has seen no stop arrive
        before `now`, so none can take them back): theirs are the programs' own ends."""
        given: list[Ended] = []
        while self._ends and self._ends[0].at + STOPPED_SLACK_S <= now:
            given.append(self._forget(self._ends.popleft()))
        return given

    def all(self) -> list[Ended]:
        """Take every end here (the run is over: each is set aside or said)."""
        given = [self._forget(end) for end in self._ends]
        self._ends.clear()
        return given

    def last(self) -> float:
        """The latest end here (-inf for none): the run waits for it to be old."""
        return max((end.at for end in self._ends), default=-math.inf)

    def wait_s(self, now: float, longest: float) -> float:
        """How long to wait before the oldest end is due, at least BATCH_S (the ends due
        meanwhile are said with it) and at most `longest`."""
        if not self._ends:
            return longest
        return min(longest, max(BATCH_S, self._ends[0].at + STOPPED_SLACK_S - now))

    def _forget(self, end: Ended) -> Ended:
        self._cells[end.cell.id] -= 1
        if not self._cells[end.cell.id]:
            del self._cells[end.cell.id]
        return end


__all__ = ["BATCH_S", "STOPPED_SLACK_S", "Ended", "RecentEnds", "stopped_with"]
