"""Whether a lock file is free, taken without waiting: the one rule of every "is another
reprospec using this?" question (amplify's search folder, the venv runner's environments).

A lock is `flock`'s, which the kernel drops with the last process holding its descriptor,
however that process ends: a lock file left behind by a killed process is free, never
stale. Two callers answered the edge cases apart: amplify's `held` stopped on a lock file it
could not open (a `.lock` that is a folder, a folder it cannot write) and on a file system
that refuses `flock`, where `envs list` and `prune` read the first as "cannot tell" and
stopped on the second. Now both are `None`, "cannot tell", and each caller says what that
means for it: `prune` leaves such an environment, a search runs unguarded, as before there
was a lock.

`search_held` is a search's folder held alone while the search runs (amplify, isolate,
minimize, bisect): a second copy of the same command is refused, naming the folder and the
pid that holds it, where two each ran every probe and the last to write state.json dropped
the other's.

`hold_shared` is the other side of a prune's `try_locked`: a run's shared hold on what it
uses (an environment, the docker runner's image), under the same rule: None where the lock
cannot be made, the file closed (the venv runner's stopped on a file system without
`flock`; the docker runner's left its file open).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from reprospec.errors import UsageError

SEARCH_LOCK = ".lock"


@contextlib.contextmanager
def try_locked(path: Path) -> Iterator[bool | None]:
    """True where the lock `path` was free (then held, exclusive, while inside), False where
    another process holds it, None where it cannot be opened or locked to tell (made with
    its folder where missing)."""
    with _exclusive(path) as fd:
        yield None if fd is None else fd is not False


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[int | bool | None]:
    """`try_locked`, with the locked file's descriptor where it was free (what a holder
    writes into it): an int, else False (held) or None (cannot tell)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            # EWOULDBLOCK: held. Another (ENOLCK, EOPNOTSUPP: a file system without flock).
            yield False if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
            return
        try:
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def search_held(folder: Path, search: str) -> Iterator[None]:
    """`folder`'s `.lock`, held while one search of it runs; a second is refused (exit 2),
    told the folder and the pid of the reprospec that holds it (written into the lock by
    its holder). Two of the same command (another terminal, a script run twice) each ran
    every probe, and the last to write state.json dropped the other's probes. The kernel
    drops the lock with the process, however it ends: a killed search's lock is taken
    over by the next. A lock that cannot be opened or taken to tell (a `.lock` that is a
    folder, a file system without flock) is the venv runner's rule too: the search runs,
    unguarded."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / SEARCH_LOCK
    with _exclusive(lock) as fd:
        if fd is False:
            by = _holder(lock)
            raise UsageError(
                f"{search} is running now in another reprospec ({folder} is held"
                f"{f' by pid {by}' if by else ''}): wait for it to end, then run the same "
                "command to be answered from it, or give another --out"
            )
        if fd is not None:  # held by this search: who holds it, for a second to be told
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield


def _holder(lock: Path) -> str:
    """The pid its holder wrote into `lock`; "" where none can be read (it is writing it)."""
    try:
        text = lock.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def hold_shared(path: Path) -> IO[str] | None:
    """A shared lock on `path` for as long as the file returned stays open (made with its
    folder where missing), waiting while another holds it alone (a prune removing what it
    guards); None, nothing left open, where it cannot be opened or locked."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a")
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
    except OSError:
        handle.close()
        return None
    return handle
