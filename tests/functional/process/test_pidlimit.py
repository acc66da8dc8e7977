"""The process limit where no cgroup holds an attempt: RLIMIT_NPROC, sized as the kernel counts."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from reprospec.process import pidlimit


def test_the_users_count_is_of_threads_as_the_kernel_counts_them() -> None:
    """The count the limit adds to was of processes, where the kernel counts every
    thread against RLIMIT_NPROC: a user with a process of 4,000 threads had each attempt's
    new threads refused. 40 threads held here are all in the count."""
    release = threading.Event()
    threads = [threading.Thread(target=release.wait) for _ in range(40)]
    for thread in threads:
        thread.start()
    try:
        uid = os.getuid()
        processes = sum(
            1 for p in Path("/proc").iterdir() if p.name.isdigit() and p.stat().st_uid == uid
        )
        counted = pidlimit.user_threads(uid)
        own = len(list(Path("/proc/self/task").iterdir()))
        assert own >= 41
        # Ours alone holds 40 more threads than processes; others' may come and go meanwhile.
        assert counted >= processes + own - 1 - 5, (counted, processes, own)
    finally:
        release.set()
        for thread in threads:
            thread.join()


def test_a_cgroup_or_root_sets_no_rlimit() -> None:
    """A cgroup limits the attempt already; root is not bound by RLIMIT_NPROC."""
    assert pidlimit.user_limit(pidlimit.Limit(Path("/sys/fs/cgroup/pids/x"), 100)) is None
    without = pidlimit.user_limit(pidlimit.Limit(None, 100))
    assert (without is None) is (os.geteuid() == 0)
