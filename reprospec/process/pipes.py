"""The pipes and sockets a held process has open, read from /proc at a hang.

A launcher that reads its child's output waits in `read` or `poll` as a process that waits
on a descriptor of its own does (a pipe nobody writes, a socket's peer): its stacks cannot
tell the two apart, its descriptors can. The hang's place passes to a child only where the
parent reads a pipe or socket that is the child's stdout or stderr (native/render.py's
`hung_frame`); each live process of a hung tree is read here while it is stopped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from reprospec.core.lazyre import Lazy
from reprospec.native.stacks import Pipes
from reprospec.process.tree import read_proc

# /proc/PID/fd's link of a pipe or a socket (`pipe:[4026]`, `socket:[4027]`): its inode.
_INODE = Lazy(r"^(?:pipe|socket):\[(\d+)\]$")
# /proc/PID/fdinfo's `flags:` (octal open flags) and its access mode's write-only value.
_FLAGS = Lazy(r"^flags:\s*([0-7]+)$")
_O_ACCMODE = 0o3
# A process holds more than this many descriptors only when it leaks them: the rest are
# not read (their links are one system call each, at a hang's deadline).
_MOST = 4096


def held_pipes(pids: Iterable[int]) -> dict[int, Pipes]:
    """Each of `pids`' pipes and sockets (`Pipes`); a process whose descriptors cannot be
    read (gone, another user's) is left out, which its reader takes as not known."""
    found: dict[int, Pipes] = {}
    for pid in pids:
        pipes = _pipes(pid)
        if pipes is not None:
            found[pid] = pipes
    return found


def _pipes(pid: int) -> Pipes | None:
    # str paths and os calls, as tree.py reads /proc: no Path object per descriptor.
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)[:_MOST]  # noqa: PTH208
    except OSError:
        return None
    inodes: dict[int, int] = {}
    for name in names:
        try:
            found = _INODE.match(os.readlink(f"{folder}/{name}"))  # noqa: PTH115
        except OSError:
            continue  # closed since the listing
        if found is not None and name.isdigit():
            inodes[int(name)] = int(found.group(1))
    writes = tuple(sorted({inodes[fd] for fd in (1, 2) if fd in inodes}))
    reads = tuple(
        sorted(
            {inode for fd, inode in inodes.items() if inode not in writes and _readable(pid, fd)}
        )
    )
    return Pipes(reads=reads, writes=writes)


def _readable(pid: int, fd: int) -> bool:
    """Whether `fd` was opened for reading: a pipe's read end, a socket (read and write);
    not a pipe's write end. True where its flags cannot be read: not known, as before."""
    try:
        text = read_proc(f"/proc/{pid}/fdinfo/{fd}").decode("ascii", "replace")
    except OSError:
        return True
    for line in text.splitlines():
        found = _FLAGS.match(line)
        if found is not None:
            return int(found.group(1), 8) & _O_ACCMODE != os.O_WRONLY
    return True
