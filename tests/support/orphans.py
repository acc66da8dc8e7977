"""Reap the orphans a test process adopted: what a subreaper owes its tree.

A test that runs the engine in its own process (a LocalRunner, the forkserver) makes that
process a subreaper, as the engine is (reprospec/process/tree.py: once per process, never
undone). From then on every orphaned descendant of any later test's children (gdb's own
child, a process an engine in a child left when it exited) is re-parented to the pytest
process, not to init; the engine reaps the orphans of its runs, but nobody waited for those
that came after, and an xdist worker held `[gdb] <defunct>` and `[python3] <defunct>`
zombies for the whole run. After each test, the zombie children nobody can still wait
for are reaped here.
"""

from __future__ import annotations

import gc
import multiprocessing.popen_fork
import os
import subprocess
from pathlib import Path


def _children() -> list[int]:
    """This process's children, from the kernel's `children` files (one per thread)."""
    pids: list[int] = []
    for listing in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            pids += [int(pid) for pid in listing.read_text().split()]
        except OSError:
            continue  # a thread that ended while we read
    return pids


def _is_zombie(pid: int) -> bool:
    """Bytes: a child's name need not be UTF-8 (a program file named so, an adopted
    orphan's), and a strict read failed the test it ran after."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] == b"Z"


def _still_awaited() -> set[int]:
    """Pids a live Popen (subprocess's or multiprocessing's) has not waited for yet: their
    owner's wait must still get the exit status, so they are never reaped here.

    `type()`, not isinstance: that reads `__class__`, which some objects of the heap
    answer with a deprecation warning (torch.distributed.reduce_op), an error here."""
    kinds = (subprocess.Popen, multiprocessing.popen_fork.Popen)
    return {
        obj.pid
        for obj in gc.get_objects()
        if issubclass(type(obj), kinds) and obj.returncode is None and obj.pid
    }


def reap_adopted() -> list[int]:
    """Wait for the zombie children no Popen object stands for; the pids reaped."""
    zombies = [pid for pid in _children() if _is_zombie(pid)]
    if not zombies:
        return []  # the common case: no walk of the heap
    awaited = _still_awaited()
    reaped = []
    for pid in zombies:
        if pid in awaited:
            continue
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped.append(pid)
        except ChildProcessError:
            continue  # reaped meanwhile by whoever started it
    return reaped
