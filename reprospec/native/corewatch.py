"""Cores held open from the moment the kernel creates them, where every core has one name.

With `kernel.core_pattern=core` and `core_uses_pid=0` (CorePattern.shared_name) every
process that crashes in a folder dumps to the same `core`: the kernel unlinks the one
there, then creates its own. Two processes of the engine's attempts crashing close
together in one workdir (`-j`, `run.instances`, two DataLoader workers) would leave one
core, and the other attempt would lose its native stacks. So while attempts run in such
a folder, an inotify watch on it opens every core as soon as it is created: an unlinked
core stays readable through the engine's descriptor until its attempt claims it
(cores.find_cores, then cores.move_core copies it out) or the last attempt running in
the folder ends. A core is known by its (device, inode), never by a descriptor's number,
which the kernel reuses.

inotify through ctypes: the standard library has no binding, and three calls do not
earn a dependency. Where there is none (not Linux), nothing is watched.
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
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from reprospec.core.recent import Recent

_IN_CREATE = 0x00000100
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)
# At most this many cores are held per folder (each keeps its disk space until claimed):
# more crashes at once than this lose the oldest, as they would without the watch.
MAX_HELD = 16
# Folders whose attempts have all ended keep their watch (at most this many): adding and
# removing it for every attempt woke the reader thread each time.
MAX_IDLE = 8

FileId = tuple[int, int]  # (st_dev, st_ino)


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class Held(NamedTuple):
    """A core the watch opened: its descriptor in this process and what it is."""

    fd: int
    file: FileId

    @property
    def path(self) -> Path:
        """A path that opens the core even once it is unlinked (for the core readers)."""
        return Path(f"/proc/{os.getpid()}/fd/{self.fd}")

    def unlinked(self) -> bool:
        """Whether no name leads to this core any more (a later crash replaced it)."""
        try:
            return os.fstat(self.fd).st_nlink == 0
        except OSError:
            return False


@dataclass
class _Folder:
    wd: int  # -1: the kernel dropped the watch (the folder was removed): added anew
    names: tuple[str, ...]  # glob patterns of a core's base name (CorePattern.watched)
    users: int = 0
    held: list[Held] = field(default_factory=list)


# A folder's real path, kept this long (seconds): every attempt asks three times of its
# workdir (acquire, replaced, release), and realpath is a walk in Python with an lstat per
# component. A workdir that is made a symlink to another folder meanwhile is seen this late.
_REAL_TTL_S = 1.0
_real: Recent[str, str] = Recent()


def _real_path(folder: Path) -> str:
    name = str(folder)
    return _real.get(name, _REAL_TTL_S) or _real.put(name, os.path.realpath(folder))


def file_id(info: os.stat_result) -> FileId:
    return (info.st_dev, info.st_ino)


class CoreWatch:
    """One inotify descriptor and reader thread for the engine process; folders are watched
    while attempts run in them (`acquire`/`release`, counted), keyed by their real path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._folders: dict[str, _Folder] = {}
        self._by_wd: dict[int, str] = {}
        self._failed = False

    def acquire(self, folder: Path, names: tuple[str, ...]) -> bool:
        """Watch `folder` for cores named like `names` until the matching `release`.
        False when it cannot be watched (then the attempt runs as it would without)."""
        key = _real_path(folder)
        with self._lock:
            if self._failed:
                return False
            entry = self._folders.pop(key, None)
            # From idle, added again: for the folder already watched the kernel returns the
            # same descriptor and sends nothing; for one removed and made anew (whose
            # IN_IGNORED the reader may not have seen yet), a new one.
            if entry is None or entry.users == 0 or entry.wd < 0:
                wd = self._add_watch(key)
                if wd is None:
                    if entry is not None and entry.users > 0:
                        self._folders[key] = entry
                    elif entry is not None:
                        self._by_wd.pop(entry.wd, None)
                    return False
                if entry is None:
                    entry = _Folder(wd, names)
                elif entry.wd != wd:
                    if self._by_wd.get(entry.wd) == key:
                        del self._by_wd[entry.wd]
                    entry.wd = wd
                self._by_wd[wd] = key
            entry.names = names  # the core pattern may have changed since
            self._folders[key] = entry  # last: the oldest idle folders come first
            entry.users += 1
            return True

    def release(self, folder: Path) -> None:
        """One attempt in `folder` ended, after it claimed its cores: the last one closes
        the cores nobody claimed; the watch stays, idle, for the next attempt there."""
        key = _real_path(folder)
        with self._lock:
            entry = self._folders.get(key)
            if entry is None or entry.users == 0:
                return
            entry.users -= 1
            if entry.users > 0:
                return
            for held in entry.held:
                _close(held.fd)
            entry.held = []
            idle = [k for k, e in self._folders.items() if e.users == 0]
            for old in idle[: max(0, len(idle) - MAX_IDLE)]:
                gone = self._folders.pop(old)
                if self._by_wd.pop(gone.wd, None) is not None and self._fd is not None:
                    with contextlib.suppress(OSError, AttributeError):
                        _libc().inotify_rm_watch(self._fd, gone.wd)

    def replaced(self, folder: Path) -> list[Held]:
        """The cores created in `folder` that a later crash has since unlinked."""
        with self._lock:
            entry = self._folders.get(_real_path(folder))
            return [h for h in entry.held if h.unlinked()] if entry else []

    def forget(self, file: FileId) -> None:
        """A core claimed and moved out by name: close what holds it, so that its space is
        freed when it is deleted and later claims do not read it again."""
        with self._lock:
            for entry in self._folders.values():
                for held in [h for h in entry.held if h.file == file]:
                    entry.held.remove(held)
                    _close(held.fd)

    def copy_out(self, file: FileId, target: Path) -> bool:
        """Copy the held core `file` to `target` and close it; False when none is held, or
        it cannot be copied."""
        with self._lock:
            held = next((h for e in self._folders.values() for h in e.held if h.file == file), None)
            # A descriptor of its own, so the copy runs outside the lock: the reader must
            # open the next core at once. Never by number alone: that could be another file.
            dup = _dup(held.fd) if held is not None else None
        if dup is None:
            return False
        try:
            # A descriptor has no Path: open() takes it (and closes `dup`).
            with open(dup, "rb") as source, target.open("wb") as out:  # noqa: PTH123
                source.seek(0)
                shutil.copyfileobj(source, out, 1 << 20)
            copied = True
        except OSError:
            copied = False
        self.forget(file)
        return copied

    # -- the watch -------------------------------------------------------------------

    def _add_watch(self, folder: str) -> int | None:
        if self._failed:
            return None
        try:
            libc = _libc()
            if self._fd is None:
                fd = libc.inotify_init1(os.O_CLOEXEC)
                if fd < 0:
                    raise OSError(ctypes.get_errno(), "inotify_init1")
                threading.Thread(
                    target=self._read_events, args=(fd,), name="reprospec-corewatch", daemon=True
                ).start()
                self._fd = fd
        except (AttributeError, OSError, RuntimeError):
            # Not Linux, out of inotify instances, or no thread: watch nothing, say nothing.
            self._failed = True
            return None
        wd = libc.inotify_add_watch(self._fd, os.fsencode(folder), _IN_CREATE | _IN_ONLYDIR)
        return int(wd) if wd >= 0 else None  # out of watches, or gone: not watched

    def _read_events(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 64 * 1024)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                self._failed = True
                return
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, at)
                raw = data[at + _EVENT.size : at + _EVENT.size + length]
                at += _EVENT.size + length
                try:
                    if mask & _IN_IGNORED:
                        self._dropped(wd)
                    elif mask & _IN_CREATE:
                        self._created(wd, os.fsdecode(raw.split(b"\0", 1)[0]))
                except Exception:
                    continue

    def _dropped(self, wd: int) -> None:
        """The kernel removed the watch (its folder was deleted): the next acquire adds it."""
        with self._lock:
            key = self._by_wd.pop(wd, None)
            entry = self._folders.get(key) if key is not None else None
            if entry is not None and entry.wd == wd:
                entry.wd = -1

    def _created(self, wd: int, name: str) -> None:
        # Opened at once: the sooner, the less likely a second crash unlinks it first. The
        # lock is held across the open (a local file: microseconds) so that a claim never
        # sees half of what this event holds.
        with self._lock:
            key = self._by_wd.get(wd)
            entry = self._folders.get(key) if key is not None else None
            if key is None or entry is None or entry.users == 0:
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
                _close(fd)
                return
            # Read late, two events can open the same (second) core: hold it once.
            if not stat.S_ISREG(info.st_mode) or any(h.file == file_id(info) for h in entry.held):
                _close(fd)
                return
            entry.held.append(Held(fd, file_id(info)))
            while len(entry.held) > MAX_HELD:
                _close(entry.held.pop(0).fd)


def _dup(fd: int) -> int | None:
    try:
        return os.dup(fd)
    except OSError:
        return None


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    """The C library's inotify calls; AttributeError where there are none."""
    if not _LIBC:
        if not sys.platform.startswith("linux"):
            raise AttributeError("inotify is Linux's")
        libc = ctypes.CDLL(None, use_errno=True)  # the C library the interpreter runs on
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        _LIBC.append(libc)
    return _LIBC[0]


WATCH = CoreWatch()
