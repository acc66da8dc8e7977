"""Native (C/C++) stacks of an attempt: from core dumps after a crash, from gdb attached at a hang.

Crash: the child runs with RLIMIT_CORE raised (its own limit only, set between fork and
exec), so a process that dies of SIGSEGV/SIGBUS/SIGABRT/... leaves a core where
`kernel.core_pattern` says: for a plain relative pattern (`core`, `core.%p`) that is the
crashing process's cwd, the spec's workdir, not the attempt folder. Cores there are
claimed by the attempt's token (every process of an attempt carries it in its
environment, which the core holds) or by the attempt's root pid, moved into the attempt
folder, read with `gdb -batch` (`thread apply all bt`, and `py-bt` where the Python gdb
extensions load), and deleted unless kept. A core_pattern that pipes cores to a handler
(`|/usr/share/apport/apport ...`) is said once; crashes then have no native stacks.

Hang: before a timed-out attempt is killed, one gdb attaches to every live process of
the tree in turn. One gdb rather than one per process: the processes of an attempt share
their libraries, and gdb shares a library's symbols between the processes it attaches
to, which is most of its cost (libtorch_cpu alone takes about 4 s of CPU to read; a
second torch process attached in the same gdb costs about 0.1 s). Its output is read as
it comes, so at the deadline every process finished so far keeps its stacks.

Results are typed frozen values (`NativeStacks` -> `ProcessStacks` -> `Thread` ->
`Frame`), written into the attempt folder as `native-stacks.txt` (for people) and
`native-stacks.json` (read back by `read`). The report helpers at the end give the top
frames of the crashing thread, the full text, and the frame that goes into the failure
signature. Engine side only: never imports torch.
"""

from __future__ import annotations

import contextlib
import glob
import json
import mmap
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

TEXT_NAME = "native-stacks.txt"
JSON_NAME = "native-stacks.json"
GDB_INSTALL_HINT = "apt-get install gdb"

# A hang report must arrive within timeout + 5 s: gdb is stopped this long after the
# timeout (the Python stacks, taken first, usually need a few tens of ms of it; killing
# the tree after it a few ms). One gdb attaches to the processes in turn (see above).
HANG_DEADLINE_S = 4.5
HANG_MIN_BUDGET_S = 0.5
# gdb on one core: a torch process's core takes 3-10 s on a loaded 2-core machine.
CORE_GDB_TIMEOUT_S = 60.0
# At most this many cores of one attempt are read (the first to die first); the others
# are listed, and deleted unless kept. Eight workers dying together cost 8 cores of 150 MB.
MAX_CORES = 3
TOP_FRAMES = 5

# Signals whose default action dumps core (signal(7)).
CORE_SIGNALS = frozenset(
    {"SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGXCPU",
     "SIGXFSZ", "SIGSYS"}
)  # fmt: skip

Source = Literal["core", "attach"]


# -- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One frame of a native backtrace as gdb printed it."""

    number: int
    function: str | None  # None for gdb's `??`
    library: str | None  # basename of the shared object or executable (`libc.so.6`)
    address: int | None = None
    file: str | None = None
    line: int | None = None
    signal_handler: bool = False  # gdb's `<signal handler called>`

    @property
    def symbol(self) -> str:
        """The function's short name: no C++ parameters, no libc `__GI_`/CPU-variant decorations."""
        if self.signal_handler:
            return "<signal handler called>"
        if self.function is None:
            return "??"
        return short_symbol(self.function, self.library)

    def describe(self) -> str:
        """`strlen (libc.so.6)`."""
        if self.signal_handler:
            return self.symbol
        return f"{self.symbol} ({self.library})" if self.library else self.symbol


@dataclass(frozen=True)
class Thread:
    """One thread's frames, innermost first. `id` is gdb's thread id (`2`, or `3.1`)."""

    id: str
    lwp: int | None
    name: str | None
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class ProcessStacks:
    """The native stacks of one process, from its core (crash) or a live attach (hang)."""

    pid: int
    source: Source
    command: str = ""
    signal: str | None = None  # core: the signal that killed the process
    crashed_lwp: int | None = None  # core: the thread that took the signal
    threads: tuple[Thread, ...] = ()
    python: str = ""  # `py-bt` of every thread, where the Python gdb extensions loaded
    error: str | None = None  # why there are no (or only some) stacks
    core: str | None = None  # the kept core's path (keep_cores)
    root: bool = False  # the attempt's own process (not a worker or other descendant)

    @property
    def crashing_thread(self) -> Thread | None:
        """The thread that took the fatal signal (cores only)."""
        for thread in self.threads:
            if self.crashed_lwp is not None and thread.lwp == self.crashed_lwp:
                return thread
        return None


@dataclass(frozen=True)
class NativeStacks:
    """All native stacks of one attempt; `unavailable` says why there are none."""

    processes: tuple[ProcessStacks, ...] = ()
    unavailable: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NativeStacks:
        processes = []
        for proc in data.get("processes") or ():
            threads = tuple(
                Thread(
                    id=str(t["id"]),
                    lwp=t.get("lwp"),
                    name=t.get("name"),
                    frames=tuple(Frame(**f) for f in t.get("frames") or ()),
                )
                for t in proc.get("threads") or ()
            )
            fields = {k: v for k, v in proc.items() if k != "threads"}
            processes.append(ProcessStacks(**fields, threads=threads))
        return cls(
            processes=tuple(processes),
            unavailable=data.get("unavailable"),
            notes=tuple(data.get("notes") or ()),
        )


@dataclass(frozen=True)
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
        if self.piped or not self.raw:
            return []
        pattern = re.sub(r"%.", lambda m: "%" if m.group(0) == "%%" else "*", self.raw)
        base = pattern if os.path.isabs(pattern) else os.path.join(glob.escape(str(cwd)), pattern)
        found = [base]
        if self.uses_pid and "%p" not in self.raw:
            found.append(base + ".*")
        return found


@dataclass(frozen=True)
class CoreInfo:
    """What an ELF core file says about the process that left it."""

    path: Path
    pid: int | None
    signal: str | None
    executable: str | None  # the mapped file holding the entry point
    command: str  # the first 80 bytes of the command line (NT_PRPSINFO)
    files: tuple[tuple[int, int, str], ...]  # (start, end, path) of every mapped file
    ppid: int | None = None  # the parent's pid (in a container: 1 for the attempt's root)


@dataclass(frozen=True)
class Capture:
    """What the process layer does about native stacks for one attempt (process.run_process)."""

    out_dir: Path
    keep_cores: bool = False
    hang_deadline_s: float = HANG_DEADLINE_S  # after the timeout, gdb is stopped
    core_timeout_s: float = CORE_GDB_TIMEOUT_S

    def preexec(self) -> Callable[[], None] | None:
        """The function to run in the child before exec: raises RLIMIT_CORE; None when useless."""
        if gdb_path() is None and not self.keep_cores:
            return None  # nothing could read a core: do not write one
        if core_pattern().piped:
            return None
        return allow_cores

    def hang(self, pids: Mapping[int, str], timed_out_at: float) -> NativeStacks:
        """Native stacks of the live processes `{pid: command}` of a timed-out attempt.

        `timed_out_at` is the time.monotonic() of the timeout: gdb is stopped
        `hang_deadline_s` after it, whatever it has done by then.
        """
        left = timed_out_at + self.hang_deadline_s - time.monotonic()
        return attach_stacks(pids, budget_s=max(HANG_MIN_BUDGET_S, left))

    def crash(
        self,
        token: str,
        workdir: Path,
        root_pid: int,
        returncode: int | None,
        started: float,
        read_cores: bool = True,
    ) -> NativeStacks | None:
        """Native stacks from the cores the attempt left; None when it left none and needed none.

        With `read_cores` False (an interrupted run) cores are only cleared away.
        """
        return collect_crash_stacks(
            self.out_dir,
            token=token,
            workdir=workdir,
            root_pid=root_pid,
            returncode=returncode,
            started=started,
            keep_cores=self.keep_cores,
            timeout_s=self.core_timeout_s,
            read_cores=read_cores,
        )


# -- the machine -------------------------------------------------------------------------


def gdb_path() -> str | None:
    """The gdb executable, or None."""
    return shutil.which("gdb")


_said_lock = threading.Lock()
_said: set[str] = set()


def say_once(message: str) -> bool:
    """True the first time this engine process sees `message` (a warning said once per run)."""
    with _said_lock:
        if message in _said:
            return False
        _said.add(message)
        return True


def core_pattern() -> CorePattern:
    """The kernel's core_pattern and core_uses_pid (Linux); `core` where they cannot be read."""
    try:
        raw = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    except OSError:
        raw = "core"
    try:
        uses_pid = Path("/proc/sys/kernel/core_uses_pid").read_text().strip() == "1"
    except OSError:
        uses_pid = False
    return CorePattern(raw, uses_pid)


def unavailable_reason(crash: bool = True) -> str | None:
    """Why native stacks cannot be taken here (of a crash, or of a hang); None if they can."""
    if gdb_path() is None:
        return f"native stacks unavailable: gdb not found ({GDB_INSTALL_HINT})"
    pattern = core_pattern()
    if crash and pattern.piped:
        return (
            "native stacks of crashes unavailable: kernel.core_pattern pipes cores to "
            f"{pattern.handler} (`sysctl kernel.core_pattern=core` lets reprospec read them)"
        )
    return None


def allow_cores() -> None:
    """In the child, between fork and exec: RLIMIT_CORE up to its hard limit (inherited below)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


# -- ELF cores -----------------------------------------------------------------------------

_ELF_MAGIC = b"\x7fELF"
_ET_CORE = 4
_PT_NOTE = 4
_NT_PRSTATUS = 1
_NT_PRPSINFO = 3
_NT_AUXV = 6
_NT_FILE = 0x46494C45
_AT_ENTRY = 9


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def read_core(path: Path) -> CoreInfo | None:
    """Pid, signal, executable and mapped files of an ELF core (64-bit LE); None if not one."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            if len(head) < 64 or head[:4] != _ELF_MAGIC or head[4] != 2 or head[5] != 1:
                return None
            (e_type,) = struct.unpack_from("<H", head, 16)
            if e_type != _ET_CORE:
                return None
            phoff, phentsize, phnum = (
                struct.unpack_from("<Q", head, 32)[0],
                *struct.unpack_from("<HH", head, 54),
            )
            notes: list[tuple[int, bytes]] = []
            for index in range(phnum):
                handle.seek(phoff + index * phentsize)
                p_type, _flags, offset, _vaddr, _paddr, filesz = struct.unpack(
                    "<IIQQQQ", handle.read(40)
                )
                if p_type == _PT_NOTE:
                    handle.seek(offset)
                    notes.extend(_notes(handle.read(filesz)))
    except (OSError, struct.error):
        return None
    pid: int | None = None
    ppid: int | None = None
    sig: str | None = None
    command = ""
    entry: int | None = None
    files: list[tuple[int, int, str]] = []
    for kind, desc in notes:
        if kind == _NT_PRSTATUS and pid is None and len(desc) >= 48:
            # The first NT_PRSTATUS is the thread that took the signal.
            cursig = struct.unpack_from("<h", desc, 12)[0]
            sig = _signal_name(cursig)
            pid, ppid = struct.unpack_from("<II", desc, 32)
        elif kind == _NT_PRPSINFO and len(desc) >= 136:
            command = desc[56:136].split(b"\0")[0].decode("utf-8", "replace").strip()
        elif kind == _NT_AUXV:
            for at in range(0, len(desc) - 15, 16):
                key, value = struct.unpack_from("<QQ", desc, at)
                if key == _AT_ENTRY:
                    entry = value
        elif kind == _NT_FILE and len(desc) >= 16:
            count = struct.unpack_from("<Q", desc, 0)[0]
            names = desc[16 + 24 * count :].split(b"\0")
            for index in range(min(count, len(names))):
                start, end, _ = struct.unpack_from("<QQQ", desc, 16 + 24 * index)
                files.append((start, end, names[index].decode("utf-8", "replace")))
    executable = None
    if entry is not None:
        executable = next((name for start, end, name in files if start <= entry < end), None)
    return CoreInfo(path, pid, sig, executable, command, tuple(files), ppid)


def _notes(data: bytes) -> Iterable[tuple[int, bytes]]:
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from("<III", data, at)
        at += 12 + ((namesz + 3) & ~3)
        yield kind, data[at : at + descsz]
        at += (descsz + 3) & ~3


def core_holds(path: Path, needle: bytes) -> bool:
    """Whether the core's memory holds `needle` (the attempt token, in its environment)."""
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m,
        ):
            return m.find(needle) >= 0
    except (OSError, ValueError):
        return False


def find_cores(
    token: str, workdir: Path, root_pid: int | None, started: float, pattern: CorePattern
) -> list[CoreInfo]:
    """The cores this attempt left (its token in their memory, or the root's pid), oldest first."""
    needle = f"REPROSPEC_ATTEMPT_TOKEN={token}\0".encode()
    found: list[tuple[float, CoreInfo]] = []
    seen: set[str] = set()
    for pattern_glob in pattern.globs(workdir):
        for name in glob.glob(pattern_glob):
            if name in seen:
                continue
            seen.add(name)
            path = Path(name)
            try:
                stat = path.stat()
            except OSError:
                continue
            # A core older than the attempt is someone else's; so is one we cannot read.
            if not path.is_file() or stat.st_mtime < started - 1 or stat.st_uid != os.getuid():
                continue
            info = read_core(path)
            if info is None:
                continue
            if core_holds(path, needle) or (root_pid is not None and info.pid == root_pid):
                found.append((stat.st_mtime, info))
    return [info for _, info in sorted(found, key=lambda item: item[0])]


# -- gdb ---------------------------------------------------------------------------------

_MARK = "@@reprospec:"
_GDB_SETTINGS = (
    "set width 0",
    "set height 0",
    "set print frame-arguments presence",
    "set print frame-info location-and-address",
    "set print entry-values no",
)


def _gdb_base(gdb: str) -> list[str]:
    # -nx: no user or system gdbinit; no debuginfod: gdb must never go to the network.
    # No demangling: gdb demangles every symbol of every library it loads (about 3 s of
    # CPU for libtorch_cpu alone); c++filt demangles the few frames printed (_demangle).
    return [
        *(gdb, "-batch", "-nx"),
        *("-iex", "set debuginfod enabled off", "-iex", "set confirm off"),
        *("-iex", "set demangle-style none"),
    ]


def _echo(mark: str) -> list[str]:
    return ["-ex", f"echo \\n{_MARK}{mark}@@\\n"]


@dataclass(frozen=True)
class _GdbRun:
    output: str
    finished: bool
    seconds: float


def _run_gdb(argv: Sequence[str], timeout_s: float) -> _GdbRun:
    """Run gdb (stderr into stdout), killing it at the timeout; what it printed is kept."""
    begin = time.monotonic()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    env.pop("PYTHONPATH", None)  # gdb's embedded Python must not see the engine's modules
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    finished = True
    try:
        out, _ = proc.communicate(timeout=max(0.05, timeout_s))
    except subprocess.TimeoutExpired:
        finished = False
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        # communicate() keeps what it had read before the timeout.
        out, _ = proc.communicate()
    return _GdbRun(out.decode("utf-8", "replace"), finished, time.monotonic() - begin)


def _sections(output: str) -> dict[str, str]:
    """gdb's output split at our `echo` marks: {mark: text after it}."""
    parts: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in output.splitlines():
        if line.startswith(_MARK) and line.endswith("@@"):
            if current is not None:
                parts[current] = "\n".join(lines)
            current, lines = line[len(_MARK) : -2], []
        elif current is not None:
            lines.append(line)
    if current is not None:
        parts[current] = "\n".join(lines)
    return parts


_THREAD = re.compile(r"^Thread (?P<id>\d+(?:\.\d+)?) \((?P<what>.*)\):$")
_LWP = re.compile(r"\bLWP (\d+)\)?")
_THREAD_NAME = re.compile(r'\) "(?P<name>[^"]*)"$')
_FRAME = re.compile(r"^#(?P<n>\d+)\s+(?:(?P<addr>0x[0-9a-fA-F]+) in )?(?P<rest>.*)$")
_FROM = re.compile(r" from (?P<lib>\S+)$")
_AT = re.compile(r" at (?P<file>\S+):(?P<line>\d+)$")
_CURRENT = re.compile(r"^\[Current thread is (?P<id>\d+(?:\.\d+)?) \((?P<what>.*)\)\]$", re.M)


def _strip_args(text: str) -> str:
    """`foo (a=1, b=...)` -> `foo`: drop gdb's argument list (after a space, balanced)."""
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        char = text[index]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                return text[: index - 1] if index > 0 and text[index - 1] == " " else text
    return text


def demangle(names: Iterable[str]) -> dict[str, str]:
    """C++ symbol names demangled by `c++filt` (binutils); those it cannot read are left out."""
    mangled = sorted({name for name in names if name.startswith("_Z")})
    exe = shutil.which("c++filt")
    if not mangled or exe is None:
        return {}
    try:
        done = subprocess.run(
            [exe],
            input="\n".join(mangled) + "\n",
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(mangled):
        return {}
    return {name: plain for name, plain in zip(mangled, lines, strict=True) if plain != name}


def _demangled(threads: tuple[Thread, ...]) -> tuple[Thread, ...]:
    names = demangle(f.function for t in threads for f in t.frames if f.function)
    if not names:
        return threads
    return tuple(
        replace(
            thread,
            frames=tuple(
                replace(frame, function=names.get(frame.function, frame.function))
                if frame.function
                else frame
                for frame in thread.frames
            ),
        )
        for thread in threads
    )


def _library_at(address: int | None, maps: Sequence[tuple[int, int, str]]) -> str | None:
    if address is None:
        return None
    for start, end, path in maps:
        if start <= address < end:
            return os.path.basename(path)
    return None


def parse_backtrace(text: str, maps: Sequence[tuple[int, int, str]] = ()) -> tuple[Thread, ...]:
    """Threads and frames from gdb's `thread apply all bt`; `maps` name each address's library."""
    threads: list[Thread] = []
    header: re.Match[str] | None = None
    frames: list[Frame] = []

    def close() -> None:
        if header is not None:
            what = header["what"]
            lwp = _LWP.search(what)
            name = _THREAD_NAME.search(what)
            threads.append(
                Thread(
                    id=header["id"],
                    lwp=int(lwp.group(1)) if lwp else None,
                    name=name["name"] if name else None,
                    frames=tuple(frames),
                )
            )

    for line in text.splitlines():
        line = line.rstrip()
        started = _THREAD.match(line)
        if started is not None:
            close()
            header, frames = started, []
            continue
        match = _FRAME.match(line)
        if match is None or header is None:
            continue
        number = int(match["n"])
        address = int(match["addr"], 16) if match["addr"] else None
        rest = match["rest"]
        if rest.startswith("<signal handler called>"):
            frames.append(Frame(number, None, None, address, signal_handler=True))
            continue
        library: str | None = None
        found = _FROM.search(rest)
        if found is not None:
            library = os.path.basename(found["lib"])
            rest = rest[: found.start()]
        source_file: str | None = None
        source_line: int | None = None
        found = _AT.search(rest)
        if found is not None:
            source_file, source_line = found["file"], int(found["line"])
            rest = rest[: found.start()]
        function = _strip_args(rest.strip())
        frames.append(
            Frame(
                number=number,
                function=None if function in ("??", "") else function,
                library=_library_at(address, maps) or library,
                address=address,
                file=source_file,
                line=source_line,
            )
        )
    close()
    return tuple(threads)


_PY_NOISE = re.compile(r"^(warning: |\[New |\[Thread debugging|Using host libthread_db)")


def _python_text(text: str) -> str:
    if "Undefined command" in text or "Traceback (most recent call first)" not in text:
        return ""
    lines = [line.rstrip() for line in text.splitlines() if not _PY_NOISE.match(line)]
    return "\n".join(lines).strip()


def _gdb_error(text: str) -> str | None:
    """The reason gdb gives for producing nothing (attach refused, core unreadable)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("ptrace:", "Could not attach", "Can't attach", "Cannot access")):
            return line
        if "is not a core dump" in line or "not in executable format" in line:
            return line
    return None


def core_stacks(info: CoreInfo, timeout_s: float = CORE_GDB_TIMEOUT_S) -> ProcessStacks:
    """`gdb -batch` on one core: every thread's backtrace, which thread crashed, and `py-bt`."""
    gdb = gdb_path()
    if gdb is None:
        return ProcessStacks(info.pid or 0, "core", info.command, info.signal,
                             error=f"gdb not found ({GDB_INSTALL_HINT})")  # fmt: skip
    run = _run_gdb(core_gdb_argv(info, str(info.path), gdb=gdb), timeout_s)
    return core_gdb_stacks(info, run.output, finished=run.finished, timeout_s=timeout_s)


def core_gdb_argv(
    info: CoreInfo, core: str, *, gdb: str = "gdb", exists: Callable[[str], bool] = os.path.isfile
) -> list[str]:
    """The gdb command line that reads the core at `core` (the path where gdb runs).

    `exists` says whether a path exists where gdb runs (a container's files cannot be
    checked from here: the docker runner passes one that says yes).
    """
    argv = _gdb_base(gdb)
    for _start, _end, name in info.files:
        # CPython's gdb extension (py-bt) sits next to the interpreter: python3.11-gdb.py.
        helper = f"{name}-gdb.py"
        if os.path.basename(name).startswith(("python", "libpython")) and exists(helper):
            argv += ["-iex", f"add-auto-load-safe-path {helper}"]
    for setting in _GDB_SETTINGS:
        argv += ["-ex", setting]
    argv += [*_echo("thread"), "-ex", "thread"]
    argv += [*_echo("bt"), "-ex", "thread apply all bt"]
    argv += [*_echo("py-bt"), "-ex", "thread apply all py-bt", *_echo("end")]
    if info.executable and exists(info.executable):
        argv.append(info.executable)
    return [*argv, "-c", core]


def core_gdb_stacks(
    info: CoreInfo, output: str, *, finished: bool, timeout_s: float
) -> ProcessStacks:
    """The stacks in what gdb printed for `core_gdb_argv` (stderr included); `finished`
    False when it was stopped at `timeout_s`."""
    parts = _sections(output)
    current = _CURRENT.search(parts.get("thread", "")) or _CURRENT.search(output)
    crashed = _LWP.search(current["what"]) if current else None
    threads = _demangled(parse_backtrace(parts.get("bt", ""), info.files))
    error = None
    if not finished:
        error = f"gdb did not finish within {timeout_s:g}s"
    elif not threads:
        error = _gdb_error(output) or "gdb printed no stack"
    return ProcessStacks(
        pid=info.pid or 0,
        source="core",
        command=info.command,
        signal=info.signal,
        crashed_lwp=int(crashed.group(1)) if crashed else info.pid,
        threads=threads,
        python=_python_text(parts.get("py-bt", "")),
        error=error,
    )


def _proc_maps(pid: int) -> tuple[tuple[int, int, str], ...]:
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ()
    return parse_maps(text)


def parse_maps(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, path) of every file-backed line of a `/proc/PID/maps` text."""
    maps = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            start, end = fields[0].split("-")
            maps.append((int(start, 16), int(end, 16), fields[5]))
    return tuple(maps)


def attach_stacks(pids: Mapping[int, str], budget_s: float = HANG_DEADLINE_S) -> NativeStacks:
    """Native stacks of live processes `{pid: command}`: one gdb attaches to each, bounded."""
    reason = unavailable_reason(crash=False)
    if reason is not None:
        return NativeStacks(unavailable=reason)
    gdb = gdb_path()
    assert gdb is not None
    maps = {pid: _proc_maps(pid) for pid in pids}  # read before gdb stops them
    run = _run_gdb(attach_gdb_argv(list(pids), gdb=gdb), budget_s)
    return attach_gdb_stacks(pids, maps, run.output, finished=run.finished, budget_s=budget_s)


def attach_gdb_argv(pids: Sequence[int], *, gdb: str = "gdb") -> list[str]:
    """The command line of one gdb that attaches to each of `pids` in turn (the order given)."""
    # --readnever: no DWARF, so no file:line or inlined frames, but a third of the time
    # (function names come from the symbol tables; unwinding from .eh_frame).
    argv = [*_gdb_base(gdb), "--readnever"]
    for setting in _GDB_SETTINGS:
        argv += ["-ex", setting]
    for number, pid in enumerate(pids, start=1):
        if number > 1:
            argv += ["-ex", "add-inferior", "-ex", f"inferior {number}"]
        argv += [*_echo(f"pid:{pid}"), "-ex", f"attach {pid}", "-ex", f"thread apply {number}.* bt"]
    return [*argv, *_echo("end")]


def attach_gdb_stacks(
    pids: Mapping[int, str],
    maps: Mapping[int, Sequence[tuple[int, int, str]]],
    output: str,
    *,
    finished: bool,
    budget_s: float,
) -> NativeStacks:
    """The stacks in what gdb printed for `attach_gdb_argv(pids)`; `finished` False when it
    was stopped at `budget_s`. `maps` (pid -> parse_maps) name the libraries of addresses."""
    parts = _sections(output)
    order = list(pids)
    reached = [pid for pid in order if f"pid:{pid}" in parts]
    # At the deadline only the last process reached can be cut short; the others are whole.
    cut = reached[-1] if reached and not finished and "end" not in parts else None
    processes = []
    for pid in order:
        text = parts.get(f"pid:{pid}")
        threads = _demangled(parse_backtrace(text or "", maps.get(pid, ())))
        error = None
        if text is None:
            error = f"gdb did not reach this process within {budget_s:g}s"
        elif not threads:
            error = _gdb_error(text) or (
                f"gdb did not finish within {budget_s:g}s" if pid == cut else "gdb printed no stack"
            )
        elif pid == cut:
            error = f"gdb was stopped after {budget_s:g}s: these stacks may be incomplete"
        processes.append(
            ProcessStacks(pid=pid, source="attach", command=pids[pid], threads=threads, error=error)
        )
    notes: tuple[str, ...] = ()
    if not finished:
        notes = (f"gdb stopped after {budget_s:g}s: the hang report does not wait longer",)
    return NativeStacks(processes=tuple(processes), notes=notes)


def collect_crash_stacks(
    out_dir: Path,
    *,
    token: str,
    workdir: Path,
    root_pid: int | None,
    returncode: int | None,
    started: float,
    keep_cores: bool = False,
    timeout_s: float = CORE_GDB_TIMEOUT_S,
    read_cores: bool = True,
) -> NativeStacks | None:
    """Claim the attempt's cores, move them into `out_dir`, read them; None when there were none.

    `started` is the attempt's start (time.time()). A root that died of a core-dumping
    signal but left no core gets a NativeStacks that says why.
    """
    pattern = core_pattern()
    root_signal = _signal_name(-returncode) if returncode is not None and returncode < 0 else None
    dumped = root_signal in CORE_SIGNALS
    if gdb_path() is None and not keep_cores:
        return NativeStacks(unavailable=unavailable_reason()) if dumped else None
    if pattern.piped:
        return NativeStacks(unavailable=unavailable_reason()) if dumped else None
    cores = find_cores(token, workdir, root_pid, started, pattern)
    if not cores:
        if not dumped:
            return None
        return NativeStacks(
            unavailable=(
                f"native stacks unavailable: the process died of {root_signal} but left no core "
                f"(kernel.core_pattern={pattern.raw!r}, looked in {workdir}; the folder must be "
                "writable and the hard RLIMIT_CORE above 0)"
            )
        )
    processes: list[ProcessStacks] = []
    notes: list[str] = []
    for index, info in enumerate(cores):
        kept = _move_core(info.path, out_dir, info.pid)
        info = replace(info, path=kept)
        if read_cores and index < MAX_CORES and gdb_path() is not None:
            stacks = core_stacks(info, timeout_s)
        else:
            if not read_cores:
                why = "not read: the run was interrupted"
            elif gdb_path() is None:
                why = f"not read: gdb not found ({GDB_INSTALL_HINT})"
            else:
                why = f"not read: only the first {MAX_CORES} cores of an attempt are read"
            stacks = ProcessStacks(info.pid or 0, "core", info.command, info.signal, error=why)
        stacks = replace(stacks, root=info.pid is not None and info.pid == root_pid)
        if keep_cores:
            stacks = replace(stacks, core=str(kept))
        else:
            with contextlib.suppress(OSError):
                kept.unlink()
        processes.append(stacks)
    if len(cores) > MAX_CORES:
        notes.append(f"{len(cores)} processes left cores; the first {MAX_CORES} were read")
    return NativeStacks(processes=tuple(processes), notes=tuple(notes))


def _move_core(path: Path, out_dir: Path, pid: int | None) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (f"core.{pid}" if pid else path.name)
    try:
        os.replace(path, target)
    except OSError:
        try:
            shutil.move(str(path), target)  # another file system
        except OSError:
            return path  # cannot move it: read it where it lies (and delete it there)
    return target


def merge(*parts: NativeStacks | None) -> NativeStacks | None:
    """One NativeStacks from several (a hang's attach plus the cores of earlier crashes)."""
    present = [p for p in parts if p is not None]
    if not present:
        return None
    processes = tuple(proc for p in present for proc in p.processes)
    reasons = [p.unavailable for p in present if p.unavailable]
    notes = [note for p in present for note in p.notes]
    if processes or len(reasons) > 1:
        # Some stacks were taken: what could not be taken is a note beside them.
        notes += reasons[0 if processes else 1 :]
        reasons = reasons[:0] if processes else reasons[:1]
    return NativeStacks(processes, reasons[0] if reasons else None, tuple(notes))


# -- the attempt folder ------------------------------------------------------------------


def write(stacks: NativeStacks, out_dir: Path) -> Path:
    """`native-stacks.txt` and `native-stacks.json` in the attempt folder; the text's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / JSON_NAME).write_text(json.dumps(stacks.to_dict(), indent=1), encoding="utf-8")
    path = out_dir / TEXT_NAME
    path.write_text(full_text(stacks), encoding="utf-8")
    return path


def read(attempt_dir: Path) -> NativeStacks | None:
    """The native stacks an attempt folder holds; None when it has none (or they cannot be read)."""
    try:
        data = json.loads((attempt_dir / JSON_NAME).read_text(encoding="utf-8"))
        return NativeStacks.from_dict(data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


# -- what the report shows ---------------------------------------------------------------

# The C/C++ runtime and the Python interpreter: a frame there says where a fault landed,
# the first frame outside says whose code it was.
_RUNTIME = re.compile(
    r"^(libc|libm|libdl|librt|libpthread|ld-linux[-\w]*|ld64|libgcc_s|libstdc\+\+|libffi"
    r"|libpython[\d.]*|python[\d.]*|linux-vdso|libutil)$"
)
_LIBC_LIKE = re.compile(r"^(libc|libm|libpthread|libdl|librt|ld-linux[-\w]*)$")
# glibc runs one of several CPU-specific copies (ifuncs): `__strlen_evex`, `__memmove_avx_...`.
_VARIANTS = frozenset(
    {"avx", "avx2", "avx512", "avx512f", "avx512bw", "avx512vl", "evex", "evex256", "evex512",
     "sse2", "sse4", "sse42", "ssse3", "erms", "unaligned", "aligned", "rtm", "generic"}
)  # fmt: skip
# Frames that only deliver the signal: the crash itself is below them.
_DELIVERY = frozenset(
    {"pthread_kill", "pthread_kill_implementation", "pthread_kill_internal", "raise", "gsignal",
     "kill", "tgkill", "killpg"}
)  # fmt: skip


def short_library(name: str | None) -> str | None:
    """`libc.so.6` -> `libc`, `libgomp-a34b3233.so.1` -> `libgomp`: stable across versions."""
    if not name:
        return None
    name = re.sub(r"\.so(\.[\w.]+)?$", "", os.path.basename(name))
    name = re.sub(r"\.cpython-\d+[-\w]*$", "", name)
    return re.sub(r"-[0-9a-f]{8}$", "", name)


def short_symbol(function: str, library: str | None = None) -> str:
    """A function's short name: C++ without parameters, template arguments and return type;
    in the C library without glibc's internal prefixes and CPU-variant suffixes."""
    name = re.sub(r"\s*\[clone [^\]]*\]$", "", function.strip())
    name = re.sub(r"\s+(const|volatile|&&|&)$", "", name)
    templated = "<" in name
    name = _simplify_cpp(name)
    if templated:
        # Only a function template's demangled name starts with its return type.
        name = re.sub(r"^(?:[\w:]+[\s*&]+)+(?=[\w(~])", "", name)
    lib = short_library(library)
    if lib is not None and _LIBC_LIKE.match(lib) and "::" not in name:
        name = name.removeprefix("__GI_").removeprefix("__libc_").lstrip("_") or name
        tokens = name.split("_")
        for index, token in enumerate(tokens):
            if index > 0 and token in _VARIANTS:
                name = "_".join(tokens[:index])
                break
    return name


def _matching(text: str, start: int, opening: str, closing: str) -> int | None:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index
    return None


def _simplify_cpp(name: str) -> str:
    """Drop template arguments and parameter lists: `ns::f<int>(a, b)::{lambda(int)#1}::operator()`
    -> `ns::f::{lambda#1}::operator()`; `(anonymous namespace)` stays."""
    out = ""
    index = 0
    while index < len(name):
        char = name[index]
        end: int | None = None
        if char == "<" and out and not re.search(r"operator\s*<?$", out):
            end = _matching(name, index, "<", ">")
        elif (
            char == "("
            and out
            and (
                out[-1].isalnum()
                or out[-1] in "_>]"
                or re.search(r"operator(?:\(\)|[^\w\s(]+)$", out)
            )
            and not out.endswith("operator")
        ):
            end = _matching(name, index, "(", ")")
        if end is None:
            out += char
            index += 1
        else:
            index = end + 1
    return out.strip() or name


def crashed_process(stacks: NativeStacks, pid: int | None = None) -> ProcessStacks | None:
    """The process whose crash the report is about: `pid`'s core, else the first to die."""
    cores = [p for p in stacks.processes if p.source == "core" and p.threads]
    if pid is not None:
        cores = [p for p in cores if p.pid == pid] or cores
    return cores[0] if cores else None


def fault_frames(thread: Thread) -> tuple[Frame, ...]:
    """The crashing thread's frames from the fault down: no signal handler, no raise()."""
    frames = thread.frames
    for index, frame in enumerate(frames):
        if frame.signal_handler:
            frames = frames[index + 1 :]
            break
    start = 0
    while start < len(frames) and frames[start].symbol in _DELIVERY:
        start += 1
    return frames[start:]


def top_frames(stacks: NativeStacks, limit: int = TOP_FRAMES, pid: int | None = None) -> str | None:
    """`strlen (libc.so.6) <- string_at (_ctypes...so) <- ...`: the crashing thread's top."""
    process = crashed_process(stacks, pid)
    thread = process.crashing_thread if process else None
    if thread is None:
        return None
    frames = [f for f in fault_frames(thread) if f.function or f.library][:limit]
    return " <- ".join(frame.describe() for frame in frames) or None


def signature_frame(stacks: NativeStacks, pid: int | None = None) -> str | None:
    """The frame the failure signature gains: `strlen@libc`, `pthread_mutex_lock@libc<-foo@libfoo`.

    The top frame where the fault landed; when that is in the C/C++ runtime or the
    Python interpreter, the first caller outside it too (whose code called in).
    """
    process = crashed_process(stacks, pid)
    thread = process.crashing_thread if process else None
    if thread is None:
        return None
    frames = [f for f in fault_frames(thread) if f.function or f.library]
    if not frames:
        return None
    top = frames[0]
    text = _signature_part(top)
    if _is_runtime(top):
        caller = next((f for f in frames[1:] if f.library and not _is_runtime(f)), None)
        if caller is not None:
            text += "<-" + _signature_part(caller)
    return text


def _is_runtime(frame: Frame) -> bool:
    lib = short_library(frame.library)
    # The standard library's extension modules (_ctypes, _struct, ...) are the interpreter's.
    return lib is None or bool(_RUNTIME.match(lib)) or lib in sys.stdlib_module_names


def _signature_part(frame: Frame) -> str:
    name = frame.symbol
    if len(name) > 120:
        name = name[:117] + "..."
    lib = short_library(frame.library)
    return f"{name}@{lib}" if lib else name


def with_native_frame(signature: str, stacks: NativeStacks | None) -> str:
    """`crash:SIGSEGV:main:validation` + `:strlen@libc`, for a crash with native stacks."""
    frame = signature_frame(stacks) if stacks is not None else None
    return f"{signature}:{frame}" if frame and signature.startswith("crash") else signature


def thread_tops(stacks: NativeStacks, limit: int = 3) -> list[str]:
    """One line per thread: `pid 12 thread 1 (LWP 12): futex_wait (libc.so.6) <- ...`."""
    lines = []
    for process in stacks.processes:
        if process.error and not process.threads:
            lines.append(f"pid {process.pid}: {process.error}")
        for thread in process.threads:
            named = [f for f in thread.frames if f.function or f.library]
            where = " <- ".join(f.describe() for f in named[:limit]) or "(no frames)"
            if all(_is_runtime(f) for f in named[:limit]):
                # Whose code waits there: the first frame outside libc and the interpreter.
                caller = next((f for f in named[limit:] if not _is_runtime(f)), None)
                if caller is not None:
                    where += f" <- ... <- {caller.describe()}"
            lwp = f" (LWP {thread.lwp})" if thread.lwp is not None else ""
            lines.append(f"pid {process.pid} thread {thread.id}{lwp}: {where}")
    return lines


def _frame_line(frame: Frame) -> str:
    if frame.signal_handler:
        return f"#{frame.number:<3}<signal handler called>"
    where = f" at {frame.file}:{frame.line}" if frame.file else ""
    lib = f" ({frame.library})" if frame.library else ""
    function = frame.function or "??"
    return f"#{frame.number:<3}{function}{lib}{where}"


def full_text(stacks: NativeStacks) -> str:
    """Every process's native stacks as text (native-stacks.txt; the report's `<details>`)."""
    parts: list[str] = []
    if stacks.unavailable:
        parts.append(stacks.unavailable)
    parts.extend(stacks.notes)
    for process in stacks.processes:
        what = "core" if process.source == "core" else "attached"
        if process.signal:
            what += f", {process.signal}"
        if process.source == "core":
            what += ", the attempt's main process" if process.root else ", a child process"
        command = process.command if len(process.command) <= 200 else process.command[:197] + "..."
        lines = [f"--- pid {process.pid} ({command}) [native, {what}] ---"]
        if process.error:
            lines.append(f"({process.error})")
        if process.core:
            lines.append(f"core kept: {process.core}")
        for thread in process.threads:
            mark = " (crashed)" if process.crashed_lwp and thread.lwp == process.crashed_lwp else ""
            name = f' "{thread.name}"' if thread.name else ""
            lwp = f" (LWP {thread.lwp})" if thread.lwp is not None else ""
            lines.append(f"Thread {thread.id}{lwp}{name}{mark}:")
            lines.extend(_frame_line(frame) for frame in thread.frames)
            lines.append("")
        if process.python:
            lines += ["Python stacks (gdb py-bt):", process.python, ""]
        parts.append("\n".join(lines).rstrip() + "\n")
    return "\n".join(parts).rstrip() + "\n"


def render_markdown(stacks: NativeStacks, pid: int | None = None) -> str:
    """A report fragment: the crashing thread's top frames (each thread's at a hang), the text."""
    lines: list[str] = []
    if stacks.unavailable and not stacks.processes:
        return f"_{stacks.unavailable}_\n"
    top = top_frames(stacks, pid=pid)
    if top:
        lines.append(f"Native frames of the crashing thread: `{top}`")
    else:
        tops = thread_tops(stacks)
        if tops:
            lines.append("Native frames of every thread:")
            lines += [f"- `{line}`" for line in tops[:20]]
            if len(tops) > 20:
                lines.append(f"- ... and {len(tops) - 20} more threads")
    lines += ["", "<details><summary>Native stacks (gdb)</summary>", "", "```"]
    lines.append(full_text(stacks).replace("```", "'''").rstrip())
    lines += ["```", "", "</details>", ""]
    return "\n".join(lines)


__all__ = [
    "Capture",
    "CoreInfo",
    "CorePattern",
    "Frame",
    "NativeStacks",
    "ProcessStacks",
    "Thread",
    "allow_cores",
    "attach_gdb_argv",
    "attach_gdb_stacks",
    "attach_stacks",
    "collect_crash_stacks",
    "core_pattern",
    "core_gdb_argv",
    "core_gdb_stacks",
    "core_stacks",
    "crashed_process",
    "demangle",
    "fault_frames",
    "find_cores",
    "full_text",
    "gdb_path",
    "merge",
    "parse_backtrace",
    "parse_maps",
    "read",
    "read_core",
    "render_markdown",
    "say_once",
    "short_library",
    "short_symbol",
    "signature_frame",
    "thread_tops",
    "top_frames",
    "unavailable_reason",
    "with_native_frame",
    "write",
]
