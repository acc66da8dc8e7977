"""Which native-stack readers this machine has (eu-stack, gdb), and the limits they run under.

Apart from the readers themselves (eustack.py, gdb.py) so that an attempt can ask
whether its crash could be read, and set its deadlines, without importing the
parsers: every attempt asks, and almost none crashes or hangs (issue 30, item 4).
"""

from __future__ import annotations

import functools
import os
import shutil

from reprospec.native.cores import core_pattern

GDB_INSTALL_HINT = "apt-get install gdb"
EUSTACK_INSTALL_HINT = "apt-get install elfutils"

# A hang report must arrive within timeout + 5 s: gdb is stopped this long after the
# timeout (the Python stacks, taken first, usually need a few tens of ms of it; killing
# the tree after it a few ms). One gdb attaches to the processes in turn (gdb.py).
HANG_DEADLINE_S = 4.5
HANG_MIN_BUDGET_S = 0.5
# ... on a machine that can run it. Where more tasks are runnable than there are CPUs (three
# test suites on two cores: a load of 20), gdb gets a slice of a CPU and reaches nothing in
# 4.5 s: the deadline stretches with the load, at most this many times.
HANG_STRETCH_MAX = 4.0


# gdb on one core: a torch process's core takes 3-10 s on a loaded 2-core machine.
CORE_GDB_TIMEOUT_S = 60.0


def load_stretch() -> float:
    """How many times HANG_DEADLINE_S a hang's reader gets now: the last minute's load
    average over the CPUs this engine may use, from 1 (not loaded) to HANG_STRETCH_MAX."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1.0
    cpus = len(os.sched_getaffinity(0)) or 1
    return min(HANG_STRETCH_MAX, max(1.0, load / cpus))


def gdb_path() -> str | None:
    """The gdb executable, or None (looked up once per PATH: every attempt asks)."""
    return _which("gdb", os.environ.get("PATH", os.defpath))


def eustack_path() -> str | None:
    """The eu-stack executable, or None (looked up once per PATH: every attempt asks)."""
    return _which("eu-stack", os.environ.get("PATH", os.defpath))


def eu_addr2line_path() -> str | None:
    """eu-addr2line (elfutils, beside eu-stack), or None: it names the frames of a core that
    maps a big library, read in parts (eustack.py)."""
    return _which("eu-addr2line", os.environ.get("PATH", os.defpath))


@functools.lru_cache(maxsize=16)
def _which(name: str, path: str) -> str | None:
    return shutil.which(name, path=path)


def can_read() -> bool:
    """Whether anything here reads native stacks: eu-stack or gdb."""
    return eustack_path() is not None or gdb_path() is not None


def unavailable_reason(crash: bool = True) -> str | None:
    """Why native stacks cannot be taken here (of a crash, or of a hang); None if they can
    (with gdb, or with eu-stack: eustack.py)."""
    if gdb_path() is None and eustack_path() is None:
        return f"native stacks unavailable: gdb not found ({GDB_INSTALL_HINT})"
    pattern = core_pattern()
    if crash and pattern.piped:
        return (
            "native stacks of crashes unavailable: kernel.core_pattern pipes cores to "
            f"{pattern.handler} (`sysctl kernel.core_pattern=core` lets reprospec read them)"
        )
    return None


__all__ = [
    "CORE_GDB_TIMEOUT_S",
    "EUSTACK_INSTALL_HINT",
    "GDB_INSTALL_HINT",
    "HANG_DEADLINE_S",
    "HANG_MIN_BUDGET_S",
    "can_read",
    "eu_addr2line_path",
    "eustack_path",
    "gdb_path",
    "unavailable_reason",
]
