"""Whether a container's pids limit refused a fork, read while the container lives.

The local runner reads its attempt's pids cgroup at the end (process/pidlimit.py); a
container's cgroup is docker's, removed as the container ends, so read then it was gone
and a fork bomb that filled the container's table (`--pids-limit`) carried no warning.
This thread reads the container's pids.events from its start until its end, keeping the
highest count of refused forks it saw; the runner asks it before the container is removed.
"""

from __future__ import annotations

import os
import threading

from reprospec.process import pidlimit

# How often the count is read: each read is an open, a read and a close of a small file.
POLL_S = 0.05


class PidsWatch:
    """Reads `pids.events` of the cgroup of local process `pid` (a container's first
    process) every POLL_S until `stop()`; where there is none to read, it reads nothing."""

    def __init__(self, pid: int | None) -> None:
        self.refused = 0
        self._events = pidlimit.events_of(pid) if pid is not None else None
        self.refused = self._read()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        if self._events is not None:
            self._thread = threading.Thread(target=self._watch, name="pids-watch", daemon=True)
            self._thread.start()

    def _read(self) -> int:
        if self._events is None:
            return 0
        return max(self.refused, pidlimit.refused_in(self._events))

    def _watch(self) -> None:
        assert self._events is not None
        while not self._done.wait(POLL_S):
            self.refused = self._read()
            if not os.path.exists(self._events):  # noqa: PTH110 (a str, read as one)
                return  # the container was removed (an error stopped the runner's wait)

    def stop(self) -> int:
        """The forks refused while the container lived (one last read now, while its cgroup
        may still be there); called again, the count it said."""
        if self._done.is_set():
            return self.refused
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self.refused = self._read()
        return self.refused
