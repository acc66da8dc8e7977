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

`hold_shared` is the other side of a prune's `try_locked`: a run's shared hold on what it
uses (an environment, the docker runner's image), under the same rule: None where the lock
cannot be made, the file closed (the venv runner's stopped on a file system without
`flock`; the docker runner's left its file open).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def try_locked(path: Path) -> Iterator[bool | None]:
    """True where the lock `path` was free (then held, exclusive, while inside), False where
    another process holds it, None where it cannot be opened or locked to tell (made with
    its folder where missing)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a")
    except OSError:
        yield None
        return
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            # EWOULDBLOCK: held. Another (ENOLCK, EOPNOTSUPP: a file system without flock).
            yield False if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
