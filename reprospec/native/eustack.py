"""eu-stack (elfutils): the native stacks of a core or of a live process, without gdb's cost.

gdb reads the symbols of every library a process mapped before it prints a frame:
libtorch_cpu alone is about 3 s of CPU, even with `--readnever`. eu-stack (libdwfl)
unwinds from `.eh_frame` and looks up only the addresses it prints, so a torch core
costs about a tenth of that and a plain Python one a few hundredths
(`benchmarks/native_stacks.py`, docs/performance.md).

The frames are gdb's: the same separate debug info (libc6-dbg's `/usr/lib/debug`), so
libc's internal functions have the same names; of a core, inlined frames (`-i`) and
file:line (`-s`) where DWARF is there, and of a live process neither (which gdb, reading
the DWARF, adds); raw names (`-r`) demangled by c++filt as gdb's are
(backtrace.demangled); the symbol version eu-stack appends and gdb drops
(`__pthread_mutex_lock@GLIBC_2.2.5`) dropped. libc's signal trampoline (`__restore_rt`)
is gdb's `<signal handler called>`, which render.fault_frames looks for. The thread
that crashed is the core's first NT_PRSTATUS (coreinfo.read_core), as it is gdb's current
thread. eu-stack never goes to the network (no debuginfod).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

from reprospec.core import capped
from reprospec.core.frozen import frozen
from reprospec.native import framenames
from reprospec.native.backtrace import demangled, library_at, path_at, proc_maps
from reprospec.native.coreinfo import CoreInfo
from reprospec.native.pyspy import core_python
from reprospec.native.readers import eu_addr2line_path, eustack_path
from reprospec.native.stacks import Frame, NativeStacks, ProcessStacks, Thread
from reprospec.native.symindex import SymbolIndex, indexed, open_index

# What is kept of one eu-stack's output (head + a quarter as tail): a runaway recursion
# prints a line per frame, and `-n` bounds the frames of each thread as gdb's limit does.
EUSTACK_OUTPUT_BYTES = 8 << 20
MAX_FRAMES = 2000
# Live processes read at once: each eu-stack stops its process while it unwinds it, and a
# tree of hundreds must not start hundreds of readers on a small machine.
PARALLEL_READS = 4


def _env() -> dict[str, str]:
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    env.pop("DEBUGINFOD_URLS", None)  # never the network: libdwfl asks debuginfod where set
    return env


def _base(eustack: str, *, dwarf: bool) -> list[str]:
    # -m the module of each frame, -r raw names for c++filt, -n gdb's frame limit. With
    # `dwarf` (a core, as gdb reads one) -s file:line and -i inlined frames; without it (a
    # live process at a hang, whose deadline is short) the symbol tables only.
    return [eustack, "-m", "-r", "-n", str(MAX_FRAMES), *(("-s", "-i") if dwarf else ())]


def core_eustack_argv(
    info: CoreInfo,
    core: str,
    *,
    eustack: str = "eu-stack",
    exists: Callable[[str], bool] = os.path.isfile,
) -> list[str]:
    """The eu-stack command line that reads the core at `core`."""
    argv = [*_base(eustack, dwarf=True), f"--core={core}"]
    if info.executable and exists(info.executable):
        argv += ["-e", info.executable]
    return argv


_TID = re.compile(r"^TID (?P<tid>\d+):$")
# `#3  0x00007f... __strlen_avx2 - libc.so.6`; the name is absent where no symbol covers it.
_FRAME = re.compile(r"^#(?P<n>\d+)\s+(?P<addr>0x[0-9a-fA-F]+)(?: (?P<rest>.*))?$")
_SOURCE = re.compile(r"^\s+(?P<file>\S+?):(?P<line>\d+)(?::\d+)?$")  # file:line[:column]
# The symbol version an ELF symbol table name carries (`@GLIBC_2.2.5`, `@@GLIBCXX_3.4`).
_VERSION = re.compile(r"@@?[A-Za-z_][\w.]*$")
# libc's signal return trampoline: the frame of a signal handler's caller (gdb's
# `<signal handler called>`).
SIGNAL_TRAMPOLINES = frozenset({"__restore_rt"})


def parse_eustack(text: str, maps: Sequence[tuple[int, int, str]] = ()) -> tuple[Thread, ...]:
    """Threads and frames from eu-stack's `-m -s -i -r` output; `maps` name each address's
    library (as gdb's frames are named, backtrace.library_at), eu-stack's module otherwise."""
    threads: list[Thread] = []
    tid: int | None = None
    frames: list[Frame] = []

    def close() -> None:
        if tid is not None:
            threads.append(Thread(str(len(threads) + 1), tid, None, tuple(frames)))

    for line in text.splitlines():
        line = line.rstrip()
        started = _TID.match(line)
        if started is not None:
            close()
            tid, frames = int(started["tid"]), []
            continue
        if tid is None:
            continue
        source = _SOURCE.match(line)
        if source is not None and frames and frames[-1].file is None:
            frames[-1] = Frame(
                frames[-1].number,
                frames[-1].function,
                frames[-1].library,
                frames[-1].address,
                source["file"],
                int(source["line"]),
            )
            continue
        match = _FRAME.match(line)
        if match is None:
            continue
        address = int(match["addr"], 16)
        function, _, module = (match["rest"] or "").rpartition(" - ")
        function = _VERSION.sub("", function.strip())
        if function in SIGNAL_TRAMPOLINES:
            frames.append(Frame(int(match["n"]), None, None, None, signal_handler=True))
            continue
        library = library_at(address, maps) or (
            PurePosixPath(module.strip()).name if module.strip() else None
        )
        frames.append(Frame(int(match["n"]), function or None, library, address))
    close()
    return tuple(threads)


def eustack_error(text: str) -> str | None:
    """eu-stack's own reason for printing nothing (`eu-stack: dwfl_...: No such process`)."""
    for line in text.splitlines():
        found = _ERROR.match(line)
        if found is not None:
            return f"eu-stack: {found['what'].strip()}"
    return None


# eu-stack names itself as it was started: `/usr/bin/eu-stack: dwfl_...`.
_ERROR = re.compile(r"^\S*eu-stack: (?P<what>.+)$")


@frozen
class _Run:
    stdout: str
    stderr: str
    finished: bool


def _run(argv: Sequence[str], timeout_s: float) -> _Run:
    done = capped.run(argv, limit=EUSTACK_OUTPUT_BYTES, timeout_s=max(0.05, timeout_s), env=_env())
    return _Run(
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
        not done.timed_out,
    )


def core_eustack_stacks(
    info: CoreInfo, run: _Run, *, python: str, timeout_s: float
) -> ProcessStacks:
    """The stacks in what eu-stack printed for `core_eustack_argv`."""
    threads = demangled(parse_eustack(run.stdout, info.files))
    error = None
    if not run.finished:
        error = f"eu-stack did not finish within {timeout_s:g}s"
    elif not threads:
        error = eustack_error(run.stderr) or "eu-stack printed no stack"
    return ProcessStacks(
        pid=info.pid or 0,
        source="core",
        command=info.command,
        signal=info.signal,
        crashed_lwp=info.lwp,  # the first NT_PRSTATUS: the thread that took the signal
        threads=threads,
        python=python,
        error=error,
    )


def eustack_core_stacks(info: CoreInfo, timeout_s: float) -> ProcessStacks:
    """eu-stack on one core, and beside it py-spy for its Python stacks (pyspy.py).

    The two run at once: py-spy reads the core whole, eu-stack the few pages it unwinds.
    """
    eustack = eustack_path()
    assert eustack is not None
    python: list[str] = []
    reader = threading.Thread(
        target=lambda: python.append(core_python(info, timeout_s)),
        name="reprospec-pyspy-core",
        daemon=True,
    )
    reader.start()
    run = _core_run(info, eustack, timeout_s)
    reader.join(timeout_s)
    return core_eustack_stacks(info, run, python=python[0] if python else "", timeout_s=timeout_s)


def _core_run(info: CoreInfo, eustack: str, timeout_s: float) -> _Run:
    """eu-stack's `-m -r -s -i` output for the core, the costly part done without it where
    the core maps a library of hundreds of thousands of symbols (symindex.py).

    There eu-stack unwinds alone (`-q -b`: the frames' addresses and modules, no names),
    eu-addr2line names the frames of every other library as eu-stack would (the same
    libdwfl lookups: DWARF's inlined frames and source lines, the symbol tables), and the
    index names the big libraries' frames; the text is put together as eu-stack prints it.
    A torch core's dozen libtorch frames then cost a binary search each instead of 20 ms.
    """
    whole = core_eustack_argv(info, str(info.path), eustack=eustack)
    addr2line = eu_addr2line_path()
    big = {path: facts for path in {p for _, _, p in info.files} if (facts := indexed(path))}
    if not big or addr2line is None:
        return _run(whole, timeout_s)
    deadline = time.monotonic() + timeout_s
    executable = whole[whole.index(f"--core={info.path}") + 1 :]  # `-e EXE` where known
    frames = _run([eustack, "-q", "-b", "-m", "-n", str(MAX_FRAMES), f"--core={info.path}",
                   *executable], timeout_s)  # fmt: skip
    threads = _unwound(frames.stdout)
    if not frames.finished or not threads:
        return frames
    others = [
        f
        for t in threads
        for f in t[1]
        if f.at is not None and path_at(f.pc, info.files) not in big
    ]
    # What an earlier core's frames of the same builds were named (framenames.py).
    kept = framenames.load(sorted({f.build_id for f in others if f.build_id}))
    named: dict[int, framenames.Entries] = {}
    for f in others:
        known = kept[f.build_id].get(f.offset) if f.build_id and f.offset is not None else None
        if known and f.at is not None:
            named[f.at] = known
    asked = sorted({f.at for f in others if f.at is not None} - named.keys())
    if asked:
        left = deadline - time.monotonic()
        argv = [addr2line, f"--core={info.path}", *executable, "-a", "-f", "-i", "--relative"]
        found = _run([*argv, *(hex(a) for a in asked)], left)
        if not found.finished:
            return _Run(frames.stdout, found.stderr, finished=False)
        answers = _addr2line_entries(found.stdout)
        if not answers:  # eu-addr2line could not read the core: eu-stack names every frame
            return _run(whole, deadline - time.monotonic())
        named.update(answers)
        new: dict[str, dict[int, framenames.Entries]] = {}
        for f in others:
            if f.build_id and f.offset is not None and f.at in answers:
                new.setdefault(f.build_id, {})[f.offset] = answers[f.at]
        framenames.store(new)
    indexes: dict[str, SymbolIndex | None] = {}
    try:
        lines = []
        for header, unwound in threads:
            lines.append(header)
            number = 0
            for frame in unwound:
                path = path_at(frame.pc, info.files)
                module = f" - {frame.module}" if frame.module else ""
                entries: list[tuple[str | None, str | None]] = [(None, None)]
                # (the library on disk must be the one the process ran, as libdwfl checks)
                if (
                    path in big
                    and frame.offset is not None
                    and frame.build_id == big[path].build_id
                ):
                    if path not in indexes:
                        indexes[path] = open_index(path, big[path])
                    index = indexes[path]
                    entries = [(index.name_at(frame.offset) if index else None, None)]
                elif frame.at is not None:
                    entries = named.get(frame.at) or entries
                for name, source in entries:
                    lines.append(
                        f"#{number:<2} {frame.pc:#018x} {name or ''}{module}".replace("  -", " -")
                    )
                    if source:
                        lines.append(f"    {source}")
                    number += 1
        return _Run("\n".join(lines) + "\n", frames.stderr, finished=True)
    finally:
        for index in indexes.values():
            if index is not None:
                index.close()


@frozen
class _Unwound:
    """One frame of `eu-stack -q -b -m`: its pc, module name, and the address its name is
    looked up at (`at`: the module's start plus eu-stack's offset, a return address moved
    back into its call) with the offset alone."""

    pc: int
    module: str | None
    at: int | None
    offset: int | None
    build_id: str | None = None


_QUIET_FRAME = re.compile(r"^#\d+\s+(?P<pc>0x[0-9a-fA-F]+)(?: - (?P<module>.+))?$")
_BUILD_ID = re.compile(
    r"^\s+\[(?P<id>[0-9a-fA-F]*)\]@(?P<start>0x[0-9a-fA-F]+)\+(?P<offset>0x[0-9a-fA-F]+)$"
)


def _unwound(text: str) -> list[tuple[str, list[_Unwound]]]:
    """The threads (their `TID N:` line) and frames of `eu-stack -q -b -m` output."""
    threads: list[tuple[str, list[_Unwound]]] = []
    for line in text.splitlines():
        line = line.rstrip()
        if _TID.match(line):
            threads.append((line, []))
            continue
        if not threads:
            continue
        frames = threads[-1][1]
        frame = _QUIET_FRAME.match(line)
        if frame is not None:
            frames.append(_Unwound(int(frame["pc"], 16), frame["module"], None, None))
            continue
        where = _BUILD_ID.match(line)
        if where is not None and frames and frames[-1].at is None:
            start, offset = int(where["start"], 16), int(where["offset"], 16)
            frames[-1] = replace(
                frames[-1], at=start + offset, offset=offset, build_id=where["id"].lower()
            )
    return threads


def _addr2line_entries(text: str) -> dict[int, list[tuple[str | None, str | None]]]:
    """`eu-addr2line -a -f -i --relative` output: per address, its frames innermost first
    (an inlined function, then what it was inlined into), each a name and `file:line:col`."""
    entries: dict[int, list[tuple[str | None, str | None]]] = {}
    current: list[tuple[str | None, str | None]] | None = None
    name: str | None = None
    expect_name = True
    for line in text.splitlines():
        if re.fullmatch(r"0x[0-9a-fA-F]+", line):
            current = entries.setdefault(int(line, 16), [])
            expect_name = True
            continue
        if current is None:
            continue
        if expect_name:
            name = line.split(" inlined at ", 1)[0].strip()
            name = None if name in ("", "??") else name
            expect_name = False
        else:
            current.append((name, None if line.startswith("??") else line.strip()))
            expect_name = True
    return entries


def _thread_names(pid: int, threads: tuple[Thread, ...]) -> tuple[Thread, ...]:
    """gdb names the threads of a live process (their `comm`): so does this."""
    named = []
    for thread in threads:
        try:
            # comm is the name cut at 15 bytes: perhaps in the middle of a character
            comm = Path(f"/proc/{pid}/task/{thread.lwp}/comm").read_text(errors="replace").strip()
        except OSError:
            comm = ""
        named.append(Thread(thread.id, thread.lwp, comm or None, thread.frames))
    return tuple(named)


def attach_eustack(pids: Mapping[int, str], budget_s: float) -> NativeStacks:
    """Native stacks of live processes `{pid: command}`: one eu-stack each, PARALLEL_READS
    at a time, all stopped `budget_s` from now (what finished keeps its stacks)."""
    eustack = eustack_path()
    assert eustack is not None
    deadline = time.monotonic() + budget_s
    cut: list[int] = []  # the pids the deadline cut short or never reached

    def read(pid: int) -> ProcessStacks:
        left = deadline - time.monotonic()
        command = pids[pid]
        if left <= 0:
            cut.append(pid)
            missed = f"eu-stack did not reach this process within {budget_s:g}s"
            return ProcessStacks(pid=pid, source="attach", command=command, error=missed)
        maps = proc_maps(pid)  # before eu-stack stops it; names the libraries of addresses
        run = _run([*_base(eustack, dwarf=False), "-p", str(pid)], left)
        threads = _thread_names(pid, demangled(parse_eustack(run.stdout, maps)))
        error: str | None = None
        if not run.finished:
            cut.append(pid)
            error = f"eu-stack was stopped after {budget_s:g}s" + (
                ": these stacks may be incomplete" if threads else ""
            )
        elif not threads:
            error = eustack_error(run.stderr) or "eu-stack printed no stack"
        return ProcessStacks(
            pid=pid, source="attach", command=command, threads=threads, error=error
        )

    order = list(pids)
    from concurrent.futures import ThreadPoolExecutor  # only for a hang: 40 ms to import

    with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL_READS, len(order)))) as pool:
        processes = tuple(pool.map(read, order))
    notes: tuple[str, ...] = ()
    if cut:
        notes = (f"eu-stack stopped after {budget_s:g}s: the hang report does not wait longer",)
    return NativeStacks(processes=processes, notes=notes)
