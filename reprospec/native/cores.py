"""Core dumps: where the kernel writes them, which are an attempt's, what an ELF core says.

The child runs with RLIMIT_CORE raised (its own limit only, set between fork and
exec: `allow_cores`), so a process that dies of SIGSEGV/SIGBUS/SIGABRT/... leaves a
core where `kernel.core_pattern` says: for a plain relative pattern (`core`,
`core.%p`) that is the crashing process's cwd, the spec's workdir, not the attempt
folder. Cores there are claimed by the attempt's token (every process of an attempt
carries it in its environment, which the core holds) or by the attempt's root pid.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import glob
import mmap
import os
import re
import resource
import shutil
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.frozen import frozen
from reprospec.core.logtext import with_bytes_written
from reprospec.core.words import plural
from reprospec.native.corewatch import WATCH, FileId, file_id
from reprospec.spec.files import STORE_DB

if TYPE_CHECKING:
    from collections.abc import Sequence

    from reprospec.native.coreinfo import CoreInfo

# Signals whose default action dumps core (signal(7)).
CORE_SIGNALS = frozenset(
    {"SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGXCPU",
     "SIGXFSZ", "SIGSYS"}
)  # fmt: skip


@frozen
class CorePattern:
    """`/proc/sys/kernel/core_pattern` (+ core_uses_pid), read once."""

    raw: str
    uses_pid: bool = False

    @property
    def piped(self) -> bool:
        return self.raw.startswith("|")

    @property
    def handler(self) -> str:
        """The program cores are piped to (piped patterns only)."""
        return self.raw[1:].split()[0] if self.piped and self.raw[1:].split() else ""

    def globs(self, cwd: Path) -> list[str]:
        """Where cores of processes running in `cwd` can be, as glob patterns."""
        return list(_globs(self, cwd))

    def _globs(self, cwd: Path) -> list[str]:
        if self.piped or not self.raw:
            return []
        pattern = _as_glob(self.raw)
        # Glob patterns, as strs, for glob.glob (find_cores): Path.glob takes no absolute one.
        base = pattern if os.path.isabs(pattern) else os.path.join(glob.escape(str(cwd)), pattern)  # noqa: PTH117, PTH118
        return list(self._with_pid(base))

    def watched(self, cwd: Path) -> tuple[Path, tuple[str, ...]] | None:
        """The folder a process running in `cwd` dumps core into and the core's name as glob
        patterns, for corewatch; None where the folder itself is a pattern or a pipe."""
        return _watched(self, cwd)

    def _watched(self, cwd: Path) -> tuple[Path, tuple[str, ...]] | None:
        if self.piped or not self.raw:
            return None
        folder, _, name = self.raw.rpartition("/")
        if "%" in folder:
            return None
        where = Path(folder) if os.path.isabs(self.raw) else cwd / folder  # noqa: PTH117
        return where, self._with_pid(_as_glob(name))

    def _with_pid(self, pattern: str) -> tuple[str, ...]:
        """`pattern`, and with core_uses_pid also the `.PID` the kernel appends to a pattern
        without `%p`."""
        return (pattern, pattern + ".*") if self.uses_pid and "%p" not in self.raw else (pattern,)

    def folder(self, cwd: Path) -> Path:
        """Where cores of processes running in `cwd` land, as far as one folder can say:
        the watched one (watched), else `cwd`."""
        watched = self.watched(cwd)
        return watched[0] if watched else cwd

    @property
    def shared_name(self) -> bool:
        """Whether every process crashing in one folder writes the same core file: the
        kernel then replaces an earlier crash's core with a later one's (no `%p`, `%P`,
        `%i`, `%I` in the pattern, and core_uses_pid off)."""
        if self.piped or not self.raw or self.uses_pid:
            return False
        return not re.search(r"%[pPiI]", self.raw.replace("%%", ""))


# Every attempt asks both before it starts and after it ends, of the same pattern and
# working directory: worked out once per pair (regular expressions, a glob's escape).
@functools.lru_cache(maxsize=64)
def _globs(pattern: CorePattern, cwd: Path) -> tuple[str, ...]:
    return tuple(pattern._globs(cwd))


@functools.lru_cache(maxsize=64)
def _watched(pattern: CorePattern, cwd: Path) -> tuple[Path, tuple[str, ...]] | None:
    return pattern._watched(cwd)


def _as_glob(pattern: str) -> str:
    """A core_pattern as a glob: every `%x` the kernel expands becomes `*`, `%%` is `%`."""
    return re.sub(r"%.", lambda m: "%" if m.group(0) == "%%" else "*", pattern)


# Every attempt asks twice (before it starts, after it ends) and the settings change only
# when an administrator changes them: read at most once a second.
_PATTERN_TTL_S = 1.0
_pattern_read: list[tuple[float, CorePattern]] = []


def core_pattern() -> CorePattern:
    """The kernel's core_pattern and core_uses_pid (Linux); `core` where they cannot be read."""
    now = time.monotonic()
    if _pattern_read and now - _pattern_read[0][0] < _PATTERN_TTL_S:
        return _pattern_read[0][1]
    pattern = _read_core_pattern()
    _pattern_read[:] = [(now, pattern)]
    return pattern


def _read_core_pattern(kernel: Path = Path("/proc/sys/kernel")) -> CorePattern:
    """The machine's pattern, from `kernel` (/proc/sys/kernel). A path in it that is not
    UTF-8 (an admin's folder in latin-1) is kept as its bytes (surrogateescape), a path
    again for the cores' glob and shown by repr: read strictly, its UnicodeDecodeError
    ended every run that looks for a core."""
    try:
        raw = (kernel / "core_pattern").read_bytes().decode("utf-8", "surrogateescape").strip()
    except OSError:
        raw = "core"
    try:
        uses_pid = (kernel / "core_uses_pid").read_bytes().strip() == b"1"
    except OSError:
        uses_pid = False
    return CorePattern(raw, uses_pid)


def allow_cores() -> None:
    """In the child, between fork and exec: RLIMIT_CORE up to its hard limit (inherited below)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def dumped_signal(returncode: int | None) -> str | None:
    """The core-dumping signal the attempt's root died of, or that it reported as exit status
    128 + N: a shell or launcher whose child died of it (`sh -c`, `run.instances`); else None.
    Either way a process of the attempt should have left a core."""
    if returncode is None or returncode == 0:
        return None
    number = -returncode if returncode < 0 else returncode - 128
    name = signal_name(number) if number > 0 else None
    return name if name in CORE_SIGNALS else None


def signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def core_holds(path: Path, needle: bytes) -> bool:
    """Whether the core's memory holds `needle` (the attempt token, in its environment)."""
    try:
        with (
            path.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m,
        ):
            return m.find(needle) >= 0
    except (OSError, ValueError):
        return False


# The attempt folder's list of the folders its Python processes moved to with os.chdir, one
# a line (stackdump/sitecustomize.py's _record_chdir writes it): a relative core_pattern puts
# a crash's core in the crashing process's working directory, which is then one of them.
MOVED_TO = "cwds.txt"
# Folders of that list looked in at most: a program that moves at every step lists many.
MAX_MOVED_TO = 16


def moved_to(attempt_dir: Path, workdir: Path, listed: frozenset[str] | None = None) -> list[Path]:
    """The folders the attempt's processes moved to (MOVED_TO, removed once read), the
    workdir left out, each once, the last MAX_MOVED_TO (a crash comes after its move).

    `listed`: the names in `attempt_dir` once the attempt's processes were gone
    (process.stacks.listing), where MOVED_TO, which only they write, is not looked for
    again when it is not among them: most attempts move nowhere, and the open that failed
    was a path join and a system call per attempt (issue 30, item 5)."""
    if listed is not None and MOVED_TO not in listed:
        return []
    path = attempt_dir / MOVED_TO
    try:
        text = path.read_bytes()
        path.unlink()
    except OSError:
        return []
    folders: dict[Path, None] = {}
    for line in text.splitlines():
        folder = Path(os.fsdecode(line))
        if folder.is_absolute() and folder != workdir:
            folders.pop(folder, None)
            folders[folder] = None
    return list(folders)[-MAX_MOVED_TO:]


# A core where no record says its process moved (a C program's chdir(), posix_spawn's
# addchdir): looked for under the workdir after a core-dumping death left none where the
# records say; bounded (a workdir may be a repository), hidden folders (.git, .reprospec) left
# out, and so is a run store (`--out out`: a folder holding STORE_DB), whose attempt folders
# hold the cores moved there, other attempts' (-j) among them, each GBs to scan.
WALK_MAX_ENTRIES = 20_000
WALK_MAX_DEPTH = 8


def walked_to(workdir: Path, started: float, pattern: CorePattern) -> tuple[list[Path], bool]:
    """The folders under `workdir` (not itself) holding a file named as core_pattern names
    cores, written since `started`: where a process that moved without a record crashed. No
    link followed; none for a pattern with a folder of its own (find_cores globs it) or a
    pipe. And whether the walk stopped at WALK_MAX_ENTRIES with folders left unread."""
    if pattern.piped or not pattern.raw or "/" in pattern.raw:
        return [], False
    names = re.compile(
        "|".join(fnmatch.translate(n) for n in pattern._with_pid(_as_glob(pattern.raw)))
    )
    found: dict[Path, None] = {}
    stack: list[tuple[str, int]] = [(str(workdir), 0)]
    read = 0
    while stack and read < WALK_MAX_ENTRIES:
        folder, depth = stack.pop()
        try:
            listed = list(os.scandir(folder))
        except OSError:
            continue
        if depth > 0 and any(entry.name == STORE_DB for entry in listed):
            read += len(listed)
            continue
        for entry in listed:
            read += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < WALK_MAX_DEPTH and not entry.name.startswith("."):
                        stack.append((entry.path, depth + 1))
                elif (
                    depth > 0
                    and names.fullmatch(entry.name)
                    and entry.stat(follow_symlinks=False).st_mtime >= started - 1
                ):
                    found[Path(folder)] = None
            except OSError:
                continue
    return list(found), bool(stack)


def looked_in(workdir: Path, pattern: CorePattern, moved: int = 0, cut: bool = False) -> str:
    """Where find_cores and walked_to looked for an attempt's cores, for a reason that
    says none was found: `moved` the folders its processes were known to move to, `cut`
    whether the walk stopped at WALK_MAX_ENTRIES."""
    also = f", and the {plural(moved, 'folder')} its processes moved to" if moved else ""
    # A folder that is not UTF-8 (core_pattern's, kept as its bytes) written `\xe9`: its
    # lone surrogate ended results.json's UTF-8 write with a traceback.
    if "/" in pattern.raw:  # a folder of its own, which walked_to does not walk
        return f"looked in {with_bytes_written(str(pattern.folder(workdir)))}{also}"
    first = f" (the first {WALK_MAX_ENTRIES:,} entries)" if cut else ""
    return f"looked in {with_bytes_written(str(workdir))} and the folders under it{first}{also}"


def find_cores(
    token: str,
    workdir: Path,
    root_pid: int | None,
    started: float,
    pattern: CorePattern,
    elsewhere: Sequence[Path] = (),
) -> list[CoreInfo]:
    """The cores this attempt left (its token in their memory, or the root's pid), oldest first.

    Those lying where core_pattern puts them, for the workdir and for each folder of
    `elsewhere` (where its processes moved: `moved_to`), then those a later crash unlinked
    that the watch holds (corewatch.py), each file once."""
    needle = f"REPROSPEC_ATTEMPT_TOKEN={token}\0".encode()
    found: list[tuple[float, CoreInfo]] = []
    seen: set[FileId] = set()
    watched = pattern.watched(workdir)
    here = pattern.globs(workdir)
    names = [Path(n) for g in here for n in _matches(g)]
    # Each glob once: an absolute core_pattern (/var/crash/core.%p) is one for every folder.
    other = dict.fromkeys(g for folder in elsewhere for g in pattern.globs(folder))
    moved = [Path(n) for g in other if g not in here for n in _matches(g)]
    # After the glob: a core replaced meanwhile is in this list, if not in that one.
    names += [held.path for held in WATCH.replaced(watched[0])] if watched else []
    moved += [h.path for f in elsewhere if (w := pattern.watched(f)) for h in WATCH.replaced(w[0])]
    newest: dict[Path, float] = {}  # by folder (_note_seen); a held core's is none
    for path in [*names, *moved]:
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.parts[:2] != ("/", "proc"):
            newest[path.parent] = max(stat.st_mtime, newest.get(path.parent, 0.0))
        file = file_id(stat)
        if file in seen:
            continue
        seen.add(file)
        # Older than the attempt: someone else's; so is another user's, but root's (USER 1000)
        foreign = os.getuid() not in (0, stat.st_uid)
        if not path.is_file() or stat.st_mtime < started - 1 or foreign:
            continue
        from reprospec.native.coreinfo import read_core  # a file there: read it

        info = read_core(path)
        if info is None:
            continue
        # The root's pid first: it needs no scan of the whole core.
        if (root_pid is not None and info.pid == root_pid) or core_holds(path, needle):
            found.append((stat.st_mtime, replace(info, file=file)))
    for folder, mtime in newest.items():
        _note_seen(folder, mtime)
    return [info for _, info in sorted(found, key=lambda item: item[0])]


def _matches(pattern: str) -> list[str]:
    """`glob.glob(pattern)`; a pattern without a wildcard (`core`, the default core_pattern,
    in a workdir whose name needs no escape) is one lstat, as glob.glob does it, without
    the glob module's work around it at every attempt's end."""
    if glob.has_magic(pattern):
        return glob.glob(pattern)  # noqa: PTH207 (an absolute pattern: see globs)
    return [pattern] if os.path.lexists(pattern) else []


# The newest core (its mtime) find_cores has seen in each folder, claimed or not, so that an
# attempt whose core-dumping death left no core can tell when another crash in the same
# folder took its core's name (CorePattern.shared_name), even once that core is moved away.
_seen_lock = threading.Lock()
_newest_seen: dict[str, float] = {}


def _note_seen(folder: Path, mtime: float) -> None:
    with _seen_lock:
        key = str(folder)
        _newest_seen[key] = max(mtime, _newest_seen.get(key, mtime))


def core_written_since(workdir: Path, started: float, pattern: CorePattern) -> bool:
    """Whether a core was written where cores of `workdir` land since `started`
    (time.time()), as find_cores saw, this attempt's own look included. Asked for an
    attempt that left none of its own, it says another crash there most likely replaced it."""
    with _seen_lock:
        return _newest_seen.get(str(pattern.folder(workdir)), 0.0) >= started - 1


def move_core(info: CoreInfo, out_dir: Path) -> Path | None:
    """The claimed core moved into `out_dir` as `core.PID`; where it lies when it cannot be
    moved (another file system); None when a later crash replaced it and it is gone.

    A core the watch holds is copied out through its descriptor. One still at its name is
    renamed, then checked to be the file that was claimed: a crash since the claim may have
    put another attempt's core there, which goes back (and ours comes from the watch)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (f"core.{info.pid}" if info.pid else info.path.name)
    if info.path.parts[:2] == ("/", "proc"):  # Held.path: no name leads to it any more
        return target if info.file is not None and WATCH.copy_out(info.file, target) else None
    try:
        info.path.replace(target)
    except FileNotFoundError:
        # No name leads to it since it was claimed: a later crash in the folder replaced it
        # and that crash's attempt has already moved its own core out (-j 2 in one workdir,
        # crashing together). Ours is the watch's, if it holds it; never this path, which
        # a reader would be sent to and find empty.
        ok = info.file is not None and WATCH.copy_out(info.file, target)
        return target if ok else None
    except OSError:
        try:
            shutil.move(str(info.path), target)  # another file system
        except OSError:
            return info.path  # cannot move it: read it where it lies (and delete it there)
        return target
    if info.file is None:
        return target
    try:
        same = file_id(target.stat()) == info.file
    except OSError:
        same = False
    if same:
        WATCH.forget(info.file)
        return target
    with contextlib.suppress(OSError):
        os.link(target, info.path)  # EEXIST: a newer crash's is there; this one was replaced
    with contextlib.suppress(OSError):
        target.unlink()
    return target if WATCH.copy_out(info.file, target) else None


def move_cores(cores: list[CoreInfo], out_dir: Path) -> list[tuple[CoreInfo, Path | None]]:
    """Every claimed core moved (move_core) before any is read: the longer a core lies at
    its name, the likelier a later crash replaces it, and gdb takes seconds a core."""
    return [(info, move_core(info, out_dir)) for info in cores]


# A claimed core that a later crash replaced before it was moved, and no watch held.
REPLACED = "not read: a later crash in the same folder replaced this core before it was moved"
