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
uses (an environment, the docker runner's image, the results store's reserve, which a
reader's `try_locked` removes once no engine holds it), under the same rule: None where the
lock cannot be made, the file closed (the venv runner's stopped on a file system without
`flock`; the docker runner's left its file open).

A lock file goes as its last holder lets it go: one per environment and image ever used
piled up, empty, in `~/.cache/reprospec/docker-holds` and the environments' `.locks/`. The
classic race of removing a lock file is closed from both sides: it is unlinked only by a
process that holds it alone (a shared holder tries to take it alone as it lets go, and
leaves it where another still holds it), and every locker, once it has its lock, checks
that the file it locked is still the one at the path (`_still_there`), else opens the new
one and locks again: a process that waited on the file just unlinked would otherwise hold
a lock no one else can see.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

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
    writes into it): an int, else False (held) or None (cannot tell). The file is removed
    as it is let go, while still held alone."""
    try:
        fd = _locked_at(path, lambda fd: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
    except OSError as exc:
        # EWOULDBLOCK: held. Another (ENOLCK, EOPNOTSUPP: a file system without flock; one
        # that cannot be opened): cannot tell.
        yield False if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
        return
    try:
        yield fd
    finally:
        _let_go(fd, path, alone=True)


def locked_waiting(path: Path, on_wait: Callable[[], None] | None = None) -> int:
    """An exclusive lock on `path`, waited for (`on_wait` called first where another holds
    it): the descriptor, to be let go with `let_go`. Raises OSError where it cannot be
    opened or locked (venvs.build's `locked`: a build does not go on unguarded)."""
    told = on_wait is None

    def waiting(fd: int) -> None:
        nonlocal told
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not told and on_wait is not None:
                on_wait()
                told = True  # said once, however often the file was replaced
            fcntl.flock(fd, fcntl.LOCK_EX)

    return _locked_at(path, waiting)


def let_go(fd: int, path: Path) -> None:
    """`locked_waiting`'s lock let go, its file removed while still held alone."""
    _let_go(fd, path, alone=True)


def _locked_at(path: Path, lock: Callable[[int], None]) -> int:
    """The descriptor of the file at `path` (made with its folder where missing), `lock`ed
    (flock), once the file it locked is still the one there: a lock taken on a file its
    last holder unlinked meanwhile is no one else's to see, so the new file is locked
    instead. Raises OSError where it cannot be opened or `lock` fails, nothing left open."""
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            lock(fd)
        except BaseException:
            os.close(fd)
            raise
        if _still_there(fd, path):
            return fd
        os.close(fd)  # unlinked by its last holder as we locked it: lock the new one


def _still_there(fd: int, path: Path) -> bool:
    """Whether the file `fd` locked is still the one at `path` (not unlinked by its last
    holder meanwhile, nor replaced by a new one)."""
    try:
        here, held = path.stat(), os.fstat(fd)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def _let_go(fd: int, path: Path, *, alone: bool) -> None:
    """Close `fd`, its lock with it; the file unlinked first where this process holds it
    alone (`alone`, or a shared hold that can be taken alone now: no one else holds it)
    and it is still the one at `path`. A folder this user cannot write keeps it."""
    try:
        if not alone:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # another holds it still: the last to let go removes it
        if _still_there(fd, path):
            with contextlib.suppress(OSError):
                path.unlink()
    finally:
        os.close(fd)  # the lock goes with the last descriptor of the file


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


def sweep_free(folder: Path) -> None:
    """Remove the lock files in `folder` no process holds: those a version that never
    removed them left (one per environment or image ever used), or a killed holder's.
    Each is taken alone first, so one held now stays (`try_locked` removes it as it lets
    go); `envs prune` sweeps so."""
    try:
        found = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    except OSError:
        return
    for path in found:
        with try_locked(path):
            pass


class SharedHold:
    """A shared lock held until `close` (or the end of a `with`): the file removed then
    where no one else holds it."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            _let_go(fd, self.path, alone=False)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def fileno(self) -> int:
        """The held file's descriptor (the store's reserve allocates and frees through it);
        -1 once closed."""
        return -1 if self._fd is None else self._fd

    def __enter__(self) -> SharedHold:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def hold_shared(path: Path) -> SharedHold | None:
    """A shared lock on `path` until the hold returned is closed (made with its folder
    where missing), waiting while another holds it alone (a prune removing what it
    guards); None, nothing left open, where it cannot be opened or locked."""
    try:
        # A prune it waited for removed the file: the new one is held (_locked_at).
        return SharedHold(_locked_at(path, lambda fd: fcntl.flock(fd, fcntl.LOCK_SH)), path)
    except OSError:
        return None
