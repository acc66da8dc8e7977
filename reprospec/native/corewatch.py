"""Cores held open from the moment the kernel creates them, where every core has one name.

With `kernel.core_pattern=core` and `core_uses_pid=0` (CorePattern.shared_name) every
process that crashes in a folder dumps to the same `core`: the kernel unlinks the one
there, then creates its own. Two processes of the engine's attempts crashing close
together in one workdir (`-j`, `run.instances`, two DataLoader workers) would leave one
core, and the other attempt would lose its native stacks. So while attempts run in such
a folder, an inotify watch on it opens every core as soon as it is created: an unlinked
core stays readable through the engine's descriptor (`/proc/self/fd/N`) until its
attempt claims it (cores.find_cores) or the last attempt in the folder ends.

inotify through ctypes: the standard library has no binding, and three calls do not
earn a dependency.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fnmatch
import os
import shutil
import stat
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

_IN_CREATE = 0x00000100
_IN_ONLYDIR = 0x01000000
_IN_IGNORED = 0x00008000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)
# At most this many cores are held per folder (each keeps its disk space until claimed):
# more crashes at once than this lose the oldest, as they would without the watch.
MAX_HELD = 16
# Folders whose attempts have all ended keep their watch (at most this many).
MAX_IDLE = 8


@dataclass(frozen=True)
class Held:
    """A core the watch opened: its descriptor in this process, and the name it was created as."""

    fd: int
    name: str
    inode: int

    @property
    def path(self) -> Path:
        """A path that opens the core even once it is unlinked (for gdb and the readers)."""
        return Path(f"/proc/{os.getpid()}/fd/{self.fd}")

    def unlinked(self) -> bool:
        """Whether no name leads to this core any more (a later crash replaced it)."""
        try:
            return os.fstat(self.fd).st_nlink == 0
        except OSError:
            return False


@dataclass
class _Folder:
    wd: int
    names: tuple[str, ...]  # glob patterns of the core's name (CorePattern.globs, base name)
    users: int = 0
    held: list[Held] | None = None


class CoreWatch:
    """One inotify descriptor and thread for the engine process; folders are added while
    attempts run in them (`acquire`/`release`, counted)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._folders: dict[str, _Folder] = {}
        self._by_wd: dict[int, str] = {}
        self._failed = False

    def acquire(self, folder: Path, names: tuple[str, ...]) -> bool:
        """Watch `folder` for cores named like `names` until the matching `release`.
        False when inotify cannot watch it (no watch: the attempt runs as before)."""
        key = str(folder)
        with self._lock:
            entry = self._folders.pop(key, None)
            if entry is None or entry.names != names:
                if entry is not None:  # the core pattern changed: the same watch, new names
                    entry = _Folder(entry.wd, names, entry.users, entry.held)
                else:
                    wd = self._add_watch(key)
                    if wd is None:
                        return False
                    entry = _Folder(wd, names, held=[])
                    self._by_wd[wd] = key
            self._folders[key] = entry  # last: the oldest idle folders come first
            entry.users += 1
            return True

    def release(self, folder: Path) -> None:
        """One attempt in `folder` ended (after it claimed its cores): the last one closes
        the cores nobody claimed. The watch itself stays, idle, for the next attempt there
        (adding and removing it for each attempt woke the reader thread each time); only
        beyond MAX_IDLE idle folders is the oldest removed."""
        key = str(folder)
        with self._lock:
            entry = self._folders.get(key)
            if entry is None or entry.users == 0:
                return
            entry.users -= 1
            if entry.users > 0:
                return
            for held in entry.held or ():
                with contextlib.suppress(OSError):
                    os.close(held.fd)
            entry.held = []
            idle = [k for k, e in self._folders.items() if e.users == 0]
            for old in idle[: max(0, len(idle) - MAX_IDLE)]:
                gone = self._folders.pop(old)
                self._by_wd.pop(gone.wd, None)
                if self._fd is not None:
                    with contextlib.suppress(OSError):
                        _libc().inotify_rm_watch(self._fd, gone.wd)

    def replaced(self, folder: Path) -> list[Held]:
        """The cores created in `folder` that a later crash has since unlinked."""
        with self._lock:
            entry = self._folders.get(str(folder))
            return [h for h in (entry.held or []) if h.unlinked()] if entry else []

    def forget(self, folder: Path, inode: int) -> None:
        """A claimed core (moved or copied out): close what holds it, so its space is freed
        when it is deleted and later claims do not read it again."""
        with self._lock:
            entry = self._folders.get(str(folder))
            if entry is None or entry.held is None:
                return
            for held in [h for h in entry.held if h.inode == inode]:
                entry.held.remove(held)
                with contextlib.suppress(OSError):
                    os.close(held.fd)

    def copy_out(self, path: Path, target: Path) -> bool:
        """Copy the held core at `path` (Held.path) to `target` and close it; False when
        `path` is not a held core."""
        with self._lock:
            owner = next(
                (
                    (Path(key), held)
                    for key, entry in self._folders.items()
                    for held in entry.held or ()
                    if held.path == path
                ),
                None,
            )
        if owner is None:
            return False
        with contextlib.suppress(OSError):  # not copied: gdb then says it cannot read it
            shutil.copyfile(path, target)
        self.forget(owner[0], owner[1].inode)
        return True

    # -- the watch -------------------------------------------------------------------

    def _add_watch(self, folder: str) -> int | None:
        if self._failed:
            return None
        libc = _libc()
        if self._fd is None:
            fd = libc.inotify_init1(os.O_CLOEXEC)
            if fd < 0:
                self._failed = True  # out of inotify instances: say nothing, watch nothing
                return None
            self._fd = fd
            threading.Thread(target=self._read_events, args=(fd,), daemon=True).start()
        wd = libc.inotify_add_watch(self._fd, os.fsencode(folder), _IN_CREATE | _IN_ONLYDIR)
        return wd if wd >= 0 else None

    def _read_events(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 64 * 1024)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, at)
                raw = data[at + _EVENT.size : at + _EVENT.size + length]
                at += _EVENT.size + length
                if mask & _IN_CREATE and not mask & _IN_IGNORED:
                    self._created(wd, os.fsdecode(raw.split(b"\0", 1)[0]))

    def _created(self, wd: int, name: str) -> None:
        # Opened before anything else: the sooner, the less likely a second crash
        # unlinks this core first. Matching the name under the lock is cheap.
        with self._lock:
            key = self._by_wd.get(wd)
            entry = self._folders.get(key) if key is not None else None
            if key is None or entry is None or entry.held is None or entry.users == 0:
                return  # idle: no attempt runs there
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in entry.names):
                return
            try:
                fd = os.open(
                    os.path.join(key, name),  # noqa: PTH118 (a str path for os.open)
                    os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK,
                )
            except OSError:
                return  # already replaced, or not a file: nothing to hold
            try:
                info = os.fstat(fd)
            except OSError:
                info = None
            if info is None or not stat.S_ISREG(info.st_mode):
                os.close(fd)
                return
            entry.held.append(Held(fd, name, info.st_ino))
            while len(entry.held) > MAX_HELD:
                with contextlib.suppress(OSError):
                    os.close(entry.held.pop(0).fd)


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)  # the C library the interpreter runs on
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        _LIBC.append(libc)
    return _LIBC[0]


WATCH = CoreWatch()
