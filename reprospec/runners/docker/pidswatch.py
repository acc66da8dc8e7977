"""Whether a container's pids limit refused a fork, read while the container lives.

The local runner reads its attempt's pids cgroup at the end (process/pidlimit.py); a
container's cgroup is docker's, removed as the container ends, so read then it was gone
and a fork bomb that filled the container's table (`--pids-limit`) carried no warning.
This thread reads the container's pids.events from its start until its end, keeping the
highest count of refused forks it saw; the runner asks it before the container is removed.

Under cgroup v2 the kernel tells of each change of pids.events (a refused fork): the
thread waits on that (poll's POLLPRI on the open file) and reads it at once, so a program
whose fork is refused just before it exits is counted before docker removes the cgroup.
A cgroup v1 pids.events tells of no change: it is read every POLL_S, and a refusal in the
last POLL_S before the container ends and docker removes its cgroup can go uncounted.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading

from reprospec.process import pidlimit

# How often a cgroup v1 count is read: each read is an open, a read and a close of a small
# file. Under v2, how often the thread also checks that the file is still there.
POLL_S = 0.05
NOTIFIED_CHECK_S = 1.0


class PidsWatch:
    """Reads `pids.events` of the cgroup of local process `pid` (a container's first
    process) until `stop()`: as it changes (cgroup v2), else every POLL_S; where there is
    none to read, it reads nothing."""

    def __init__(self, pid: int | None) -> None:
        self.refused = 0
        self._events = pidlimit.events_of(pid) if pid is not None else None
        self._done = threading.Event()
        self._wake: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        if self._events is None:
            return
        self.refused = self._read()
        if pidlimit.notifies(self._events):
            self._wake = os.pipe()  # stop() writes to it: the waiting poll ends at once
            target = self._wait_for_changes
        else:
            target = self._poll
        self._thread = threading.Thread(target=target, name="pids-watch", daemon=True)
        self._thread.start()

    def _read(self) -> int:
        if self._events is None:
            return 0
        return max(self.refused, pidlimit.refused_in(self._events))

    def _poll(self) -> None:
        assert self._events is not None
        while not self._done.wait(POLL_S):
            self.refused = self._read()
            if not os.path.exists(self._events):  # noqa: PTH110 (a str, read as one)
                return  # the container was removed (an error stopped the runner's wait)

    def _wait_for_changes(self) -> None:
        assert self._events is not None
        assert self._wake is not None
        try:
            fd = os.open(self._events, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return  # removed already
        try:
            poller = select.poll()
            poller.register(fd, select.POLLPRI)
            poller.register(self._wake[0], select.POLLIN)
            while not self._done.is_set():
                try:  # read again: the kernel tells of the next change after a read
                    text = os.pread(fd, 4096, 0).decode(errors="replace")
                except OSError:
                    return  # its cgroup was removed (ENODEV)
                self.refused = max(self.refused, pidlimit.max_count(text))
                ready = poller.poll(NOTIFIED_CHECK_S * 1000)
                if any(ready_fd == self._wake[0] for ready_fd, _ in ready):
                    return
                if not ready and not os.path.exists(self._events):  # noqa: PTH110
                    return
        finally:
            os.close(fd)

    def stop(self) -> int:
        """The forks refused while the container lived (one last read now, while its cgroup
        may still be there); called again, the count it said."""
        if self._done.is_set():
            return self.refused
        self._done.set()
        if self._wake is not None:
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._wake is not None:
            for end in self._wake:
                os.close(end)
            self._wake = None
        self.refused = self._read()
        return self.refused
