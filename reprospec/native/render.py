"""Native stacks for people: the frames a report shows, the failure signature's frame, the text.

`top_frames` is the crashing thread from the fault down (no signal handler, no
raise()); `signature_frame` is the frame a failure signature gains (`strlen@libc`,
and the first caller outside the C runtime and the interpreter when the fault
landed there); `full_text` is native-stacks.txt, written beside native-stacks.json.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.lazyre import Lazy
from reprospec.core.pythonargs import is_interpreter_file
from reprospec.core.results import group_agrees
from reprospec.core.shellline import DUPLICATE, SHELLS, skeleton
from reprospec.core.words import STUCK_MARK, STUCK_UNREAD, stack_header

if TYPE_CHECKING:
    # Created at a crash or a hang (`read` imports them where a folder holds stacks): the
    # questions a report asks of every attempt (`read_none`, `agrees`) need none of them.
    from reprospec.core.results import AttemptResult
    from reprospec.native.stacks import Frame, NativeStacks, ProcessStacks, Thread

# The attempt folder's files (`write`, `read`).
TEXT_NAME = "native-stacks.txt"
JSON_NAME = "native-stacks.json"

TOP_FRAMES = 5

# `hang_rank` of code that runs (no wait, not idle): a signal handler's frames so ranked are
# one our stop of a child ran (`_interrupted`), not a wait of its own.
_RUNS = (1, False)

# The C/C++ runtime (and the Python interpreter, by pythonargs.is_interpreter_file's rule:
# its executable, its libpython, PyPy's libpypy3.10-c): a frame there says where a fault
# landed, the first frame outside says whose code it was.
_RUNTIME = Lazy(
    r"^(libc|libm|libdl|librt|libpthread|ld-linux[-\w]*|ld64|libgcc_s|libstdc\+\+|libffi"
    r"|linux-vdso|libutil)$"
)
# The calls a process waits for its child in (`wait4 (libc.so.6)`: dash's, bash's, make's).
_WAITS = frozenset({"wait4", "waitpid", "waitid", "wait", "wait3"})
_HANDLER_WAITS = _WAITS | {"pause", "sigsuspend", "sigwait", "sigwaitinfo", "sigtimedwait"}
# A shell's line in the report's list where it only waits for its child (`shell_waiting`).
SHELL_WAITING = "the shell, waiting for its child in"
# Frames that only deliver the signal: the crash itself is below them.
_DELIVERY = frozenset(
    {"pthread_kill", "pthread_kill_implementation", "pthread_kill_internal", "raise", "gsignal",
     "kill", "tgkill", "killpg"}
)  # fmt: skip


def crashed_process(stacks: NativeStacks, pid: int | None = None) -> ProcessStacks | None:
    """The process whose crash the report is about: `pid`'s core, else the first to die."""
    cores = [p for p in stacks.processes if p.source == "core" and p.threads]
    if pid is not None:
        cores = [p for p in cores if p.pid == pid] or cores
    return cores[0] if cores else None


def fault_frames(thread: Thread) -> tuple[Frame, ...]:
    """The crashing thread's frames from the fault down: no signal handler, no raise().

    Handlers may chain (faulthandler re-raises into torch's handler, which re-raises
    again): the fault is below the outermost `<signal handler called>`.
    """
    frames = thread.frames
    for index in range(len(frames) - 1, -1, -1):
        if frames[index].signal_handler:
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


# gdb's `py-bt` and py-spy's dump of a core, each thread a block (`Thread 1 (Thread 0x7f..
# (LWP 5412)):`), its frames faulthandler's lines with a comma (`File "t.py", line 9, in f`).
_PYTHON_THREAD = Lazy(r"^Thread \d+ \(.*?\(LWP (?P<lwp>\d+)\).*$", re.M)
_PYTHON_FRAME = Lazy(
    r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+),? in (?P<function>\S.*)$', re.M
)


def python_caller(
    stacks: NativeStacks, pid: int | None = None, limit: int = TOP_FRAMES
) -> str | None:
    """`reduce (torchop.py:9) <- <module> (torchop.py:12)`: where the crashed process's Python
    code was, when the thread that took the signal runs none (an OpenMP worker of a torch op,
    a library's own thread), read from its core; None otherwise.

    faulthandler prints nothing for a thread with no Python state, so such a crash's report
    named only native frames, and the line of the user's code that called the op (the main
    thread, waiting in it) was in native-stacks.txt alone.
    """
    process = crashed_process(stacks, pid)
    if process is None or not process.python or process.crashed_lwp is None:
        return None
    text = process.python
    heads = list(_PYTHON_THREAD.finditer(text))
    blocks = {
        int(head["lwp"]): text[head.end() : heads[n + 1].start() if n + 1 < len(heads) else None]
        for n, head in enumerate(heads)
    }
    if _PYTHON_FRAME.search(blocks.get(process.crashed_lwp, "")):
        return None  # the crashed thread's own Python stack, which faulthandler prints
    # The main thread's (its LWP is the pid), else the first thread that runs Python.
    order = sorted(blocks, key=lambda lwp: lwp != process.pid)
    for lwp in order:
        frames = [
            f"{m['function'].strip()} ({Path(m['path']).name}:{m['line']})"
            for m in _PYTHON_FRAME.finditer(blocks[lwp])
        ][:limit]
        if frames:
            return " <- ".join(frames)
    return None


def signature_frame(stacks: NativeStacks, pid: int | None = None) -> str | None:
    """The frame the failure signature gains: `strlen@libc`, `pthread_mutex_lock@libc<-foo@libfoo`.

    The top frame where the fault landed; when that is in the C/C++ runtime or the
    Python interpreter, the first caller outside it too (whose code called in).
    """
    process = crashed_process(stacks, pid)
    thread = process.crashing_thread if process else None
    if thread is None:
        return None
    return _named_place(fault_frames(thread))


def hung_frame(stacks: NativeStacks) -> str | None:
    """`clock_nanosleep@libc<-main@nap`: where a hang sits in native code, named as a crash's
    signature frame is (`_named_place`), for a program with no Python stack to name it (a C
    program's hang was titled `./nap: hang`, where a crash names its frame). Of the processes
    read live, in their order, the first whose main thread waits for no child (`_child_wait`)
    whose thread `hung_thread_order` ranks first (one on a mutex before one that sleeps)
    names a frame. Any launcher waits where its child hangs, not a shell alone: `make` was
    titled `hang in wait4@libc<-reap_children@make` while its `./nap` slept in `main`; a
    cargo's or a C parent's `waitpid` are alike, beside threads of their own that idle on a
    lock. Its main thread says it is a launcher, not any thread: a program whose helper
    thread reaps a child while main deadlocks was passed over whole, and its hang placed in
    the idle child's sleep. A thread that reaps a child is never ranked (a bare `wait4`
    ranked as one that runs, before a main thread asleep: a supervisor's hang was placed in
    its reaper's wait); and a process that reaps a child in one thread while its best other
    one only idles (a sleep, a timed wait, a poll: a supervisor's main loop, `cargo
    build`'s in `pthread_cond_timedwait`; not a loop busy in `strlen`), or whose main thread
    alone beside its reapers joins or awaits them (`t.join()`, `std::async(...).get()`),
    is a launcher too (`_launches`), its place taken only where no other process names
    one. One on a mutex (reap.c's main), in a join beside a thread of its own that hangs,
    or running its own code hangs there. None where only launchers whose main thread waits
    name one: the child that hangs was not read, and its launcher's wait is no place of it.

    A launcher that reads its child's output waits in `read` or `poll`, not in `wait4`
    (cargo's `Command::output`, ctest's epoll loop, a C parent's pipe): `./pp: hang in
    read@libc<-main@pp` while its `./nap` slept. So a process whose threads only wait on
    a file descriptor as such a reader does (`_reads`; not a server's `accept`, beside an
    idle pre-forked worker: it waits for a client) gives way to a descendant of its own (by
    the parents `with_parents` recorded) whose output it reads (`_feeds`) that names a
    place and is no such reader: leaf first, and of several the one that hangs most surely
    (`hang_rank`: a child deadlocked on its mutex, not its sibling asleep, which was taken
    as the first listed), as where a pid that wrapped lists the child before its reader;
    where none is, the reader's own place is ranked with those outside its tree (a sibling
    on its mutex). Not a process that hangs by itself beside an idle child (a parent on a
    mutex, or one thread reading while another deadlocks): its own place, as before."""
    found = _hung(stacks)
    return found[0] if found is not None else None


def hung_process(stacks: NativeStacks) -> ProcessStacks | None:
    """The process whose frame `hung_frame` names: a launcher's child (`./nap` under
    `make`), which capture's title names as a crash's process is (`in a process it ran
    (nap)`); None where it names none."""
    found = _hung(stacks)
    return found[1] if found is not None else None


def hung_descendant(stacks: NativeStacks) -> str | None:
    """The command line of `hung_process` where it is a process another one read ran (its
    parent is in the listing: `./nap` under `./pp` or `make`), the attempt's own program
    not: `Outcome.hung_process`, which the run's line and report name beside the place, as
    capture's title does; None where the place is the program's own or names no process."""
    found = hung_process(stacks)
    by_pid = {p.pid: p for p in stacks.processes}
    parent = by_pid.get(found.ppid) if found is not None and found.ppid is not None else None
    if found is None or parent is None or _runs_the_command(parent, by_pid):
        return None
    return found.command.strip() or None


def hung_below(stacks: NativeStacks, pid: int) -> tuple[str, ProcessStacks] | None:
    """`hung_frame`'s place and process of the live tree under `pid` (by the recorded
    parents): a child a Python program only waits for (`subprocess.run(["./nap"])`, the
    outcome's `where: child`), placed as a C launcher's child is, leaf first; None where
    none of them names one. Its Python stack named no frame of the user's: `run.py: hang in
    a child process`, no place at all."""
    parents = {p.pid: p.ppid for p in stacks.processes if p.ppid is not None}
    tree = tuple(p for p in stacks.processes if p.pid == pid or _descends(p.pid, pid, parents))
    return _hung(replace(stacks, processes=tree)) if tree else None


def _runs_the_command(shell: ProcessStacks, by_pid: Mapping[int, ProcessStacks]) -> bool:
    """Whether `shell` is the runner's own `/bin/sh -c ./nap` over the attempt's command
    (its child, `./nap`): the listing's top (its parent not listed), a `-c`. The spec's command
    is run so, and its direct child is then the program itself, no process it ran, whatever
    the `-c` text says of it: `./nap 'x y'`, `FOO=1 ./nap` or `./nap > /dev/null` is run as
    argv `./nap x y` or `./nap`, and comparing the two texts called the spec's own program
    `a process it ran (nap x y)`. Only where that text is one simple command (`_one_command`):
    `./nap; echo done` forks ./nap as one process of several, and read `hang in
    clock_nanosleep@libc<-main@nap` as if ./nap were the whole command."""
    words = shell.command.split(maxsplit=2)
    return (
        shell.ppid not in by_pid
        and len(words) == 3
        and words[0].rsplit("/", 1)[-1] in SHELLS
        and words[1] == "-c"
        and _one_command(words[2])
    )


# Parts of one simple command that hold an operator's character: a parameter's expansion
# (`${HOME}`, `${X:-a;b}`) with one level of expansion in it (`${X:-${Y} #a}`: its first `}`
# ended it, and ` #a}; ./nap` was read as a comment, the list as one command), a clobbering
# redirection (`>|`). (An arithmetic one, `$((1|2))`, is `skeleton`'s None, as a command
# substitution is; an expansion nested deeper leaves a `}` that reads as a group: a list.)
_EXPANSION = Lazy(r"\$\{(?:[^{}]|\{[^{}]*\})*\}|>\|")
# A comment: a `#` that begins a word, to its line's end (`./nap # why`), no command.
_COMMENT = Lazy(r"(?:^|(?<=\s))#[^\n]*")
# What makes a `-c` line more than one simple command, once its quoted words, descriptor
# redirections (`2>&1`), expansions and comments are taken out: a list, a pipeline, a
# background job, a subshell, a new line, or a group (a `{` or `}` that is a word of its own;
# `x{1,2}` and `{}` are words, as `find -exec ... {}` passes them).
_COMPOUND = Lazy(r"[;&|()\n]|(?:^|(?<=\s))[{}](?=\s|$)")


def _one_command(line: str) -> bool:
    """Whether a `sh -c` line is one simple command (`./nap 'x y'`, `FOO=1 ./nap`, `./nap >
    /dev/null`, `./nap ${HOME} x{1,2} # why`), whose program is the whole command; not a list
    or pipeline (`./nap; echo done`, `cd sub && ./nap`, `{ ./nap; }`) nor one with a command
    substitution (`skeleton`'s None): `./nap ${HOME}` read as a list named the spec's own
    program `a process it ran (nap /root)`."""
    unquoted = skeleton(line.strip())
    if unquoted is None:
        return False
    words = _COMMENT.sub(" ", _EXPANSION.sub("w", DUPLICATE.sub(" ", unquoted)))
    return not _COMPOUND.search(words)


def _hung(stacks: NativeStacks) -> tuple[str, ProcessStacks] | None:
    """`hung_frame`'s place and its process."""
    idling: tuple[str, ProcessStacks] | None = None
    placed: list[_Placed] = []
    for process in stacks.processes:
        found = _own_place(process)
        if found is None:
            continue
        if found.launches:
            idling = idling or (found.place, process)
        else:
            placed.append(found)
    if not placed:
        return idling
    parents = {p.pid: p.ppid for p in stacks.processes if p.ppid is not None}
    first = _topmost_reader(placed[0], placed, parents)
    if first.reads:
        by_pid = {p.pid: p for p in stacks.processes}
        below = [
            (child.rank, index, child)
            for index, child in enumerate(placed)
            if not child.reads
            and _descends(child.process.pid, first.process.pid, parents)
            and _feeds(child.process, first.process, by_pid)
        ]
        if below:
            best = min(below, key=lambda found: found[:2])[2]
            return best.place, best.process
        # Nothing below it that it reads: its wait is as idle as a launcher's, ranked with
        # every other placed process (a sibling deadlocked on its mutex, and its own child
        # deadlocked beside its wait on a pipe of its own), itself first between equals
        # (beside a child that only sleeps, its wait is the hang). It was taken as the
        # listing's first: `read@libc<-main@rd` while ./dl, listed after, deadlocked.
        beside = [
            (other.rank, other is not first, index, other)
            for index, other in enumerate(placed)
            if other is first or not other.reads
        ]
        best = min(beside, key=lambda found: found[:3])[3]
        return best.place, best.process
    return first.place, first.process


@dataclass(frozen=True)
class _Placed:
    """A live process's own place (`hung_frame`'s rules): `launches`, a launcher that only
    idles beside its reapers (taken where no other process names one); `reads`, one that
    only waits on a descriptor as a reader of a child's output does (`_reads`); `rank`, its
    best thread's (`hang_rank`: a lock before code that runs before an idle wait before a
    sleep), by which a reader's hung descendants are ranked."""

    place: str
    process: ProcessStacks
    launches: bool
    reads: bool
    rank: tuple[int, bool]


def _topmost_reader(first: _Placed, placed: Sequence[_Placed], parents: dict[int, int]) -> _Placed:
    """The listing's first placed process, or the topmost reader above it that names a
    place: the listing is by pid after the root's, and a pid that wrapped lists a reader's
    child before it (a sleeping one, before its deadlocked sibling: its sleep was taken)."""
    above = [p for p in placed if p.reads and _descends(first.process.pid, p.process.pid, parents)]
    top = next(
        (
            p
            for p in above
            if not any(_descends(p.process.pid, q.process.pid, parents) for q in above)
        ),
        None,
    )
    return top if top is not None else first


def _own_place(process: ProcessStacks) -> _Placed | None:
    """A live process's own place and what it is (`_Placed`); None where it names none or
    its main thread waits for a child."""
    from reprospec.native.stacks import hang_rank, hung_thread_order

    if process.source != "attach" or not process.threads:
        return None
    # Read where each thread was, not in a handler the runner's own SIGSTOP of a child ran
    # (SIGCHLD: `chld@sl`, make's `child_handler`): one hang read two places across attempts.
    live = replace(process, threads=tuple(_interrupted(t) for t in process.threads))
    if _child_wait(_main_thread(live)) is not None:
        return None
    threads = [t for t in live.threads if _child_wait(t) is None]
    order = hung_thread_order([(t.lwp == live.pid, [f.symbol for f in t.frames]) for t in threads])
    best = threads[order[0]]
    place = _named_place(best.frames, named_caller=True)
    if place is None:
        return None
    launches = len(threads) < len(live.threads) and _launches(live, threads, best)
    reads = _reads(live, threads, best)
    return _Placed(place, process, launches, reads, hang_rank([f.symbol for f in best.frames]))


def _interrupted(thread: Thread) -> Thread:
    """A live thread's frames below its last `<signal handler called>` where the handler's
    own frames run code (a SIGCHLD handler the runner's stop of a child ran: `chld@sl`,
    make's `child_handler`, never the place), as a crash's fault is read (`fault_frames`);
    the whole stack where the handler itself waits (a SIGALRM handler on a mutex the code
    it interrupted holds, a read, a sleep): that wait is the hang, not where it came from."""
    # Imported here, as this module's other readers of a live stack do: a report's questions
    # (`read_none`, `agrees`) load this module and need none of stacks.py.
    from reprospec.native.stacks import hang_rank

    frames = thread.frames
    # Innermost first: a handler our stop entered may sit on top of one that waits.
    while (index := next((i for i, f in enumerate(frames) if f.signal_handler), None)) is not None:
        handler = frames[:index]
        if hang_rank([f.symbol for f in handler]) != _RUNS or any(
            _is_libc(f) and f.symbol.lstrip("_") in _HANDLER_WAITS for f in handler
        ):
            break
        frames = frames[index + 1 :]
    return replace(thread, frames=frames)


def waits_on_a_descriptor(stacks: NativeStacks) -> bool:
    """Whether a live process of `stacks` only waits on a descriptor, as a reader of its
    child's output does (`_reads`): the runner reads the tree's pipes (process/pipes.py)
    only then, not at each hang of a process holding thousands of descriptors."""
    return any(
        found is not None and found.reads
        for found in (_own_place(process) for process in stacks.processes)
    )


def _reads(process: ProcessStacks, threads: Sequence[Thread], best: Thread) -> bool:
    """Whether a hung process only waits on its descendants' output: its ranked thread
    waits on a file descriptor as a reader of a child's output does (`waits_on_output`:
    `read`, `poll`, `epoll_wait`, `select`; not a server's `accept` or a socket's `recv`,
    which wait for a client), and each other one idles too (a sleep, a timed wait, a poll)
    or is main joining or awaiting them. One thread on a mutex or running its own code is a
    hang of its own beside it."""
    from reprospec.native.stacks import idles, waits_for_an_end, waits_on_output

    if not waits_on_output([f.symbol for f in best.frames]):
        return False
    main = _main_thread(process)
    for thread in threads:
        functions = [f.symbol for f in thread.frames]
        if not (idles(functions) or (thread is main and waits_for_an_end(functions))):
            return False
    return True


def _feeds(
    child: ProcessStacks, reader: ProcessStacks, by_pid: Mapping[int, ProcessStacks]
) -> bool:
    """Whether `reader` may wait on `child`'s output: a pipe or socket it can read is the
    stdout or stderr of `child` or of a process between them (a shell's, which `child`
    shares), by the pipes the runner read (`Pipes`). A parent whose every thread waits on
    a descriptor of its own (a pipe nobody writes, a socket's peer) beside a child that
    only sleeps was placed in the child's sleep, both idle: its wait is the hang. True where
    the pipes of either are not known (a core's, the docker runner's), as before."""
    if reader.pipes is None:
        return True
    reads = set(reader.pipes.reads)
    seen = {reader.pid}
    at: ProcessStacks | None = child
    while at is not None and at.pid not in seen:
        if at.pipes is None or reads.intersection(at.pipes.writes):
            return True
        seen.add(at.pid)
        at = by_pid.get(at.ppid) if at.ppid is not None else None
    return False


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    """Whether `pid` is below `ancestor` by the recorded parents, through processes that
    name no place (a shell between them waiting in `wait4`: its ppid is recorded too)."""
    seen = {pid}
    while (pid := parents.get(pid, 0)) and pid not in seen:
        if pid == ancestor:
            return True
        seen.add(pid)
    return False


def _launches(process: ProcessStacks, threads: Sequence[Thread], best: Thread) -> bool:
    """Whether a process with threads that reap a child (left out of `threads`) is a
    launcher by its best other thread: that one only idles (`idles`: a sleep, a timed wait,
    a poll; not code that runs, in the C runtime too: `while (1) strlen(s)`), or main is the
    only other thread and waits for one to end or give a result (`waits_for_an_end`: a
    `t.join()` of the thread that runs `system("./nap")`, a `std::async(...).get()`), not
    on a mutex (reap.c's main, on its own lock: its hang)."""
    from reprospec.native.stacks import idles, waits_for_an_end

    functions = [f.symbol for f in best.frames]
    if idles(functions):
        return True
    return list(threads) == [_main_thread(process)] and waits_for_an_end(functions)


def _named_place(frames: Sequence[Frame], *, named_caller: bool = False) -> str | None:
    """A thread's place from its innermost frame down: that frame, and where it is in the
    C runtime or the interpreter, the first caller outside it (whose code called in).
    `named_caller`: a caller with no symbol left out (a stripped program's, `??@sleep`),
    for a title a person reads; a signature keeps it, whose rule (`??@lib`) is matched."""
    frames = [f for f in frames if f.function or f.library]
    if not frames:
        return None
    top = frames[0]
    text = _signature_part(top)
    if _is_runtime(top):
        caller = next((f for f in frames[1:] if f.library and not _is_runtime(f)), None)
        if caller is not None and not (named_caller and caller.function is None):
            text += "<-" + _signature_part(caller)
    return text


def _is_runtime(frame: Frame) -> bool:
    from reprospec.native.symbols import short_library

    return _runtime_library(short_library(frame.library))


def _runtime_library(lib: str | None) -> bool:
    """Whether a library (by its short name, `libc`) is the C runtime's or the interpreter's."""
    if lib is None or _RUNTIME.match(lib) or is_interpreter_file(lib):
        return True  # python3.13t, libpython3.11d, PyPy's libpypy3.10-c too
    # The standard library's extension modules (_ctypes, _struct, ...) are the interpreter's.
    return lib in sys.stdlib_module_names


def runs_own_code(place: str) -> bool:
    """Whether a hang's native place (`hung_frame`'s) has its innermost frame in the
    program's own executable (`alpha@busy`: a busy thread, caught wherever it runs, in
    alpha() at one look and beta() at the next), not in the C runtime (`lll_lock_wait@libc
    <-stuck@reap`, `clock_nanosleep@libc`: where it waits) nor in a shared library, whose
    own waits (libgomp's barrier, `gomp_barrier_wait_end@libgomp`, spins on a futex inline)
    read as running. A shared library is told by its name (`libgomp`: the linker's `lib`
    prefix, the place keeps no file name): a program's own `libwork.so` busy in it is
    compared whole, a move where it was caught elsewhere, as a wait is. A place names a
    caller only after a runtime frame (`_named_place`), so one that names a caller is the
    runtime's."""
    if "<-" in place:
        return False
    _, at, lib = place.rpartition("@")
    return bool(at) and not lib.startswith("lib") and not _runtime_library(lib)


def _signature_part(frame: Frame) -> str:
    name = frame.symbol
    if len(name) > 120:
        name = name[:117] + "..."
    from reprospec.native.symbols import short_library

    lib = short_library(frame.library)
    return f"{name}@{lib}" if lib else name


def with_native_frame(signature: str, stacks: NativeStacks | None, pid: int | None = None) -> str:
    """`crash:SIGSEGV:main:validation` + `:strlen@libc`, for a crash with native stacks
    (`pid`: the crashed process's core, when known)."""
    frame = signature_frame(stacks, pid) if stacks is not None else None
    return f"{signature}:{frame}" if frame and signature.startswith("crash") else signature


def read_none(markdown: str | None) -> bool:
    """Whether an attempt's native-stacks fragment (`markdown` below) says none were read:
    no core (another crash in the same folder replaced it), no gdb, native stacks off."""
    return markdown is None or markdown.startswith("_native stacks unavailable")


def attempt_agrees(attempt: AttemptResult, target: str) -> bool:
    """Whether the attempt ran and failed as `target` (`agrees`, its native frame unknown
    where its native stacks were not read): what capture's verify, minimize's candidates
    and its DIR check each count as the same failure."""
    ran = attempt.ran
    unknown = read_none(attempt.native)
    return ran is not None and agrees(
        ran.signature, target, native_unknown=unknown, across_builds=False
    )


def agrees(signature: str, target: str, *, native_unknown: bool, across_builds: bool) -> bool:
    """Whether a failure's signature names the target's failure.

    Equal, or, for a crash whose native stacks were not read (`native_unknown`), the
    target's without its native frame: unknown is not different. Parallel attempts
    in one folder under `kernel.core_pattern=core` lose cores to each other, and a
    comparison that counted those as another failure measured a deterministic crash
    at 90% (minimize, isolate and amplify judge candidates by that rate).
    `across_builds`: whether the two may come from different builds of a library
    (`unnamed_agrees`). An exception group's signatures agree where one's members are
    among the other's (`group_agrees`: which of a TaskGroup's tasks failed before it was
    cancelled is timing's; `[KeyError,ValueError]` counted its own `[ValueError]` attempts
    as another failure). Every comparison of a failure with a target asks it: capture's
    verify and its grouping of the failures it saw, minimize (its candidates and its
    settings check), isolate, amplify, and the report's signatures.
    """
    if signature == target or unnamed_agrees(signature, target, across_builds=across_builds):
        return True
    if signature.startswith("error:") and "[" in signature + target:
        return group_agrees(signature, target)
    if not native_unknown or not signature.startswith("crash:"):
        return False
    # crash:SIGNAL:where[:stage]:frame[:kernel=NAME]: the frame is the last part before
    # the GPU kernel's (with_gpu_findings adds that after this module's frame).
    theirs = target.split(":")
    at = len(theirs) - (2 if theirs[-1].startswith("kernel=") else 1)
    return at >= 3 and ":".join(theirs[:at] + theirs[at + 1 :]) == signature


# A signature's native frame with a part that has no name: its top (`??@python3.11`, an
# image's Python without symbols) or its caller (`strlen@libc<-??@libfoo`, a stripped
# library's), to the frame's end or the GPU kernel's part.
_UNNAMED = Lazy(r"(?:(?<!:):|<-)\?\?(?=@|<-|:kernel=|$)")
# A signature's field separator: a `:` that is not part of C++'s `::`.
_FIELD = Lazy(r"(?<!:):(?!:)")


def unnamed_agrees(one: str, other: str, *, across_builds: bool) -> bool:
    """Whether two crash signatures differ only where one could not name a native frame
    (`crash:SIGSEGV:main:??@python3.11` and `...:main:os_kill_impl@libpython3.11`, the
    same `os.kill` in a container's Python without symbols and in a venv's;
    `strlen@libc<-??@libfoo` and `strlen@libc<-parse@libfoo`, one library stripped on
    one machine and built with symbols on another): an unknown frame is not a different
    crash, as an unread one is not (`agrees`). Each unnamed part only in the same library
    (the interpreter's executable and its libpython count as one), every other part the
    same: `??@libcudnn` is not `f@libtorch_cpu`, nor is the same top under another caller.

    `across_builds`: whether the two may come from different builds (cells of a matrix,
    two runs: compare, the run's report). Where they cannot (the attempts of one target
    in its own environment: minimize's candidates, capture's verify), only the top may be
    unnamed and every caller must be equal: one library file symbolised by address names
    a function in every attempt or in none, so `abort@libc<-??@libtorch_cpu` (a hidden
    function) and `abort@libc<-torchCheckFail@libtorch_cpu` (an exported one) are two
    crash sites."""
    return _covers(one, other, across_builds) or _covers(other, one, across_builds)


def unnamed_frame(signature: str) -> bool:
    """Whether a crash signature's native frame has a part with no name, its top
    (`??@python3.11`) or its caller (`strlen@libc<-??@libfoo`)."""
    return signature.startswith("crash:") and _UNNAMED.search(signature) is not None


def _covers(unnamed: str, named: str, across_builds: bool) -> bool:
    found = _UNNAMED.search(unnamed) if unnamed.startswith("crash:") else None
    if found is None:
        return False
    # The frame starts after the field separator before its top: the `:` matched, or, where
    # the caller is the unnamed part, the last one before it (C++'s `::` is no separator).
    if found.group().startswith(":"):
        begin = found.start()
    else:
        begin = [m.start() for m in _FIELD.finditer(unnamed, 0, found.start())][-1]
    before = unnamed[:begin]
    kernel = unnamed.find(":kernel=", found.end())
    after = unnamed[kernel:] if kernel >= 0 else ""
    if not named.startswith(before + ":") or not named.endswith(after):
        return False
    ours = unnamed[begin + 1 : kernel if kernel >= 0 else None].split("<-")
    frame = named[len(before) + 1 : len(named) - len(after)]
    # One frame (`os_kill_impl@libpython3.11`, `at::native::f@libtorch_cpu<-g@libx`): no
    # part of its own past C++'s `::`, so no stage or other field is taken for a frame.
    if not frame or _FIELD.search(frame):
        return False
    theirs = frame.split("<-")
    if len(ours) == 1 and ours[0].startswith("??"):
        theirs = theirs[:1]  # an unnamed top whose caller was not read: any caller
    if not across_builds and ours[1:] != theirs[1:]:
        return False  # one build: an unnamed caller is another function than a named one
    return len(ours) == len(theirs) and all(map(_part_agrees, ours, theirs))


def _part_agrees(one: str, other: str) -> bool:
    """Whether two parts of a native frame (`f@libfoo`) name one place: the same, or one
    unnamed (`??@libfoo`) in the other's library (or the interpreter both ways: a venv's
    libpython3.11, an image's python3.11). Within one run an unnamed frame is more often
    another library without symbols (a stripped driver, cuDNN) than the same place
    unnamed: another crash site."""
    if one == other:
        return True
    if not (one.startswith("??@") or other.startswith("??@")):
        return False
    lib, their_lib = _library(one), _library(other)
    return lib == their_lib or (is_interpreter_file(lib) and is_interpreter_file(their_lib))


def _library(part: str) -> str:
    """`f@libfoo` -> `libfoo`; a frame part without a library (`f`) -> ``."""
    return part.rpartition("@")[2] if "@" in part else ""


def stuck_first(stacks: NativeStacks, stuck: int | None) -> list[ProcessStacks]:
    """The processes, the stuck worker's (`stuck`, a pid read) first: else in their order."""
    processes = list(stacks.processes)
    # Read with an attach error and no threads, it still comes first: its error is what
    # the report can say of the process the hang is stuck in.
    found = [p for p in processes if stuck is not None and p.pid == stuck]
    return found + [p for p in processes if p not in found]


def thread_tops(stacks: NativeStacks, limit: int = 3, stuck: int | None = None) -> list[str]:
    """One line per thread: `pid 12 thread 1 (LWP 12): futex_wait (libc.so.6) <- ...`.

    `stuck`: the pid of the DataLoader worker a hang's summary names stuck fetching an item:
    its process comes first and its main thread (LWP = pid: torch's worker loop runs there,
    in the thread that fetched) first of its threads, marked (STUCK_MARK), where every
    process's threads look alike at a hang (a futex, a poll) and the list is cut at 20.
    """
    lines = []
    waiting: list[str] = []
    for process in stuck_first(stacks, stuck):
        if (call := shell_waiting(process)) is not None:
            # The wrapper shell of a string command (`/bin/sh -c LINE`, `bash run.sh`) only
            # waits for its program: true of every such command, and no place of the hang.
            # One line, after the others; its frames stay in the full text.
            waiting.append(f"pid {process.pid} ({process.command}): {SHELL_WAITING} {call}")
            continue
        if process.error and not process.threads:
            unread = STUCK_UNREAD if stuck is not None and process.pid == stuck else ""
            lines.append(f"pid {process.pid}{unread}: {process.error}")
        for thread, mark in _stuck_thread_first(process, stuck):
            named = [f for f in thread.frames if f.function or f.library]
            where = " <- ".join(f.describe() for f in named[:limit]) or "(no frames)"
            if all(_is_runtime(f) for f in named[:limit]):
                # Whose code waits there: the first frame outside libc and the interpreter.
                caller = next((f for f in named[limit:] if not _is_runtime(f)), None)
                if caller is not None:
                    where += f" <- ... <- {caller.describe()}"
            lwp = f" (LWP {thread.lwp})" if thread.lwp is not None else ""
            lines.append(f"pid {process.pid} thread {thread.id}{lwp}{mark}: {where}")
    return lines + waiting


def shell_waiting(process: ProcessStacks) -> str | None:
    """Where `process` is a shell attached at a hang that only waits for its child (its one
    thread's first C library frame a wait: `wait4 (libc.so.6)`), that frame; else None.
    Not a shell's core (it crashed), nor a shell hung in anything else (a `read`, a loop of
    builtins): there the hang is the shell's own, its frames listed as any process's."""
    if process.source != "attach" or len(process.threads) != 1:
        return None
    words = process.command.split()
    if not words or Path(words[0]).name not in SHELLS:
        return None
    wait = _child_wait(_interrupted(process.threads[0]))
    return wait.describe() if wait is not None else None


def _child_wait(thread: Thread) -> Frame | None:
    """The thread's first C library frame, where that is a wait for a child (`wait4`,
    `waitpid`): the one rule of a process that only waits for another (`shell_waiting`,
    `hung_frame`)."""
    libc = next((f for f in thread.frames if _is_libc(f)), None)
    return libc if libc is not None and libc.symbol.lstrip("_") in _WAITS else None


def _main_thread(process: ProcessStacks) -> Thread:
    """The process's main thread (its LWP is the pid), else its first as read (eu-stack and
    gdb list main first; a pid read in another namespace than its threads' matches none)."""
    return next((t for t in process.threads if t.lwp == process.pid), process.threads[0])


def _is_libc(frame: Frame) -> bool:
    return (frame.library or "").startswith("libc.")


def _stuck_thread_first(process: ProcessStacks, stuck: int | None) -> list[tuple[Thread, str]]:
    """The process's threads, each with its mark: where it is the stuck worker's (`stuck`),
    its main thread (LWP = pid, the one that fetched) first and marked STUCK_MARK. One rule
    for thread_tops and full_text, so report.md and the file it links say the same."""
    threads = list(process.threads)
    if stuck is None or process.pid != stuck:
        return [(thread, "") for thread in threads]
    threads.sort(key=lambda thread: thread.lwp != stuck)
    return [(thread, STUCK_MARK if thread.lwp == stuck else "") for thread in threads]


def _frame_line(frame: Frame) -> str:
    if frame.signal_handler:
        return f"#{frame.number:<3}<signal handler called>"
    where = f" at {frame.file}:{frame.line}" if frame.file else ""
    lib = f" ({frame.library})" if frame.library else ""
    function = frame.function or "??"
    return f"#{frame.number:<3}{function}{lib}{where}"


def full_text(stacks: NativeStacks, stuck: int | None = None) -> str:
    """Every process's native stacks as text (native-stacks.txt; the report's `<details>`).

    `stuck`: the pid of the DataLoader worker a hang is stuck in, ordered and marked as
    thread_tops does (its process first, its fetching thread first and STUCK_MARK, or
    STUCK_UNREAD where its stacks could not be read), where the full text listed it
    unmarked in pid order among threads that look alike at a hang.
    """
    parts: list[str] = []
    if stacks.unavailable:
        parts.append(stacks.unavailable)
    parts.extend(stacks.notes)
    for process in stuck_first(stacks, stuck):
        what = "core" if process.source == "core" else "attached"
        if process.signal:
            what += f", {process.signal}"
        if process.source == "core":
            what += ", the attempt's main process" if process.root else ", a child process"
        is_stuck = stuck is not None and process.pid == stuck
        unread = STUCK_UNREAD if is_stuck and not process.threads else ""
        lines = [stack_header(process.pid, process.command, f"[native, {what}]{unread}")]
        if process.error:
            lines.append(f"({process.error})")
        if process.core:
            lines.append(f"core kept: {process.core}")
        for thread, stuck_mark in _stuck_thread_first(process, stuck):
            mark = " (crashed)" if process.crashed_lwp and thread.lwp == process.crashed_lwp else ""
            mark += stuck_mark
            name = f' "{thread.name}"' if thread.name else ""
            lwp = f" (LWP {thread.lwp})" if thread.lwp is not None else ""
            lines.append(f"Thread {thread.id}{lwp}{name}{mark}:")
            lines.extend(_frame_line(frame) for frame in thread.frames)
            lines.append("")
        if process.python:
            # py-spy's (beside eu-stack) or gdb's py-bt: both are written in py-bt's form.
            lines += ["Python stacks (read from the core):", process.python, ""]
        parts.append("\n".join(lines).rstrip() + "\n")
    return "\n".join(parts).rstrip() + "\n"


def render_markdown(
    stacks: NativeStacks,
    pid: int | None = None,
    link: str | None = None,
    stuck: int | None = None,
) -> str:
    """A report fragment: the crashing thread's top frames (each thread's at a hang), the text.

    `link`: where the full text is (the attempt folder's native-stacks.txt, relative to
    the report): then the report links it instead of carrying gdb's whole output, which
    for a few hung processes of many threads is hundreds of lines per cell.
    `stuck`: the pid of the DataLoader worker a hang is stuck in (thread_tops): said
    first, as the hang's summary names it.
    """
    lines: list[str] = []
    if stacks.unavailable and not stacks.processes:
        return f"_{stacks.unavailable}_\n"  # read_none() knows this shape
    if not any(process.threads for process in stacks.processes):
        # Not one thread read (each core lost to a later crash or unreadable, no process
        # attached): the same shape, so that a signature without its native frame is taken
        # for unknown, not for another failure (agrees(); minimize, isolate and amplify).
        said = "; ".join(f"pid {p.pid}: {p.error}" for p in stacks.processes if p.error)
        return f"_native stacks unavailable: {said or 'no thread was read'}_\n"
    top = top_frames(stacks, pid=pid)
    if top:
        lines.append(f"Native frames of the crashing thread: `{top}`")
        caller = python_caller(stacks, pid=pid)
        if caller:
            lines.append(
                "The crashing thread ran no Python code; the process's Python frames (read "
                f"from its core): `{caller}`"
            )
    else:
        tops = thread_tops(stacks, stuck=stuck)
        heading = "Native frames of every thread"
        if stuck is not None and any(p.pid == stuck for p in stacks.processes):
            # Its threads, or the error that kept them unread (an attach refused), first.
            heading += f", the stuck DataLoader worker's (pid {stuck}) first"
        elif stuck is not None:
            # Its pid is not among those read (another pid namespace, gone before it was
            # read): said, so that no thread below is taken for it.
            heading += f" (the stuck DataLoader worker, pid {stuck}, is not among them)"
        if tops:
            lines.append(f"{heading}:")
            lines += [f"- `{line}`" for line in tops[:20]]
            if len(tops) > 20:
                lines.append(f"- ... and {len(tops) - 20} more threads")
    if link is not None:
        # No reader named: eu-stack, gdb or py-spy may each have read a part.
        lines += ["", f"Full native stacks: [{link}]({link})", ""]
        return "\n".join(lines)
    lines += ["", "<details><summary>Native stacks</summary>", "", "```"]
    lines.append(full_text(stacks, stuck).replace("```", "'''").rstrip())
    lines += ["```", "", "</details>", ""]
    return "\n".join(lines)


def write(stacks: NativeStacks, out_dir: Path) -> Path:
    """`native-stacks.txt` and `native-stacks.json` in the attempt folder; the text's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / JSON_NAME).write_text(json.dumps(stacks.to_dict(), indent=1), encoding="utf-8")
    return write_text(stacks, out_dir)


def write_text(stacks: NativeStacks, out_dir: Path, stuck: int | None = None) -> Path:
    """`native-stacks.txt` alone, its stuck DataLoader worker marked (`stuck`, full_text):
    written again once the hang is classified, which the stacks are read before."""
    path = out_dir / TEXT_NAME
    path.write_text(full_text(stacks, stuck), encoding="utf-8")
    return path


def read(attempt_dir: Path) -> NativeStacks | None:
    """The native stacks an attempt folder holds; None when it has none (or they cannot be read).

    Every attempt's evidence asks; only a folder that holds stacks imports their classes.
    """
    try:
        text = (attempt_dir / JSON_NAME).read_text(encoding="utf-8")
    except OSError:
        return None
    from reprospec.native.stacks import NativeStacks

    try:
        data = json.loads(text)
        return NativeStacks.from_dict(data) if isinstance(data, dict) else None
    except (ValueError, TypeError, KeyError):
        return None
