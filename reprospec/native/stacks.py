"""Native stacks as typed frozen values: `NativeStacks` -> `ProcessStacks` -> `Thread` -> `Frame`.

What gdb found, kept as data (the attempt folder's `native-stacks.json`); `render.py`
words it, writes it and reads it back, `gdb.py` and `capture.py` take it. Imported at a
crash or a hang to read, or where an attempt folder holds stacks: not by an attempt that
passed (these classes are a few milliseconds of a short run's start).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import (
    JsonObject,
    JsonValue,
    as_text,
    as_texts,
    checked_array,
    checked_integer,
    checked_object,
)
from reprospec.native.symbols import libc_name, short_symbol

Source = Literal["core", "attach"]


@frozen
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


@frozen
class Thread:
    """One thread's frames, innermost first. `id` is gdb's thread id (`2`, or `3.1`)."""

    id: str
    lwp: int | None
    name: str | None
    frames: tuple[Frame, ...]


@frozen
class Pipes:
    """The pipes and sockets a live process held while its hang's tree was held, by their
    inodes (`pipe:[N]`, `socket:[N]` in /proc/PID/fd; a Unix socket pair's two ends by the
    lower one's): `reads`, those it can read, but its own stdout and stderr; `writes`, those
    it can write, at any descriptor (a pipe's write end, any socket). A reader's wait is its
    own hang only where no process between it and a placed child writes what it reads
    (render's `hung_frame`); a process not known (process/pipes.py) has none."""

    reads: tuple[int, ...]
    writes: tuple[int, ...]


@frozen
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
    # The attempt's own process, or the program its `/bin/sh -c` root ran and reported the
    # death of (cores.main_core): not a worker or other descendant.
    root: bool = False
    # attach: its parent's pid, as /proc said while the tree was held (`with_parents`): a
    # hang's place is a hung descendant's, not its parent's `read` of the child's output
    # (render's `hung_frame`); None where not known (a core, stacks written before it).
    ppid: int | None = None
    # attach: its pipes and sockets (`with_parents`), by which a reader is told from a process
    # that waits on a descriptor of its own; None where not known (a core, the docker
    # runner's, stacks written before they were kept).
    pipes: Pipes | None = None

    @property
    def crashing_thread(self) -> Thread | None:
        """The thread that took the fatal signal (cores only)."""
        for thread in self.threads:
            if self.crashed_lwp is not None and thread.lwp == self.crashed_lwp:
                return thread
        return None


@frozen
class NativeStacks:
    """All native stacks of one attempt; `unavailable` says why there are none."""

    processes: tuple[ProcessStacks, ...] = ()
    unavailable: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        """The JSON of native-stacks.json (`from_dict` reads it back equal)."""
        return {
            "version": 1,
            "processes": [_process_json(p) for p in self.processes],
            "unavailable": self.unavailable,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> NativeStacks:
        """What `to_dict` wrote; KeyError or TypeError when it is not that."""
        return cls(
            processes=tuple(_process(p) for p in checked_array(data.get("processes"))),
            unavailable=as_text(data.get("unavailable")),
            notes=as_texts(data.get("notes")),
        )


# What a hung native thread waits in, by its innermost frame's function that says (glibc's
# internal prefixes taken off, symbols' `libc_name`): another thread (a mutex's, a condition's or an
# untimed semaphore's wait, the interpreter's own lock, which a Python `join`, `with lock`
# and `queue.get()` all wait in), one to end (a join), or time (a sleep). A timed wait
# (`sem_clockwait`, `pthread_cond_timedwait`: a Python wait given a timeout) wakes, as a
# loop that runs does: neither.
_ON_ANOTHER_THREAD = frozenset(
    (
        "lll_lock_wait",
        "lll_lock_wait_private",
        "pthread_mutex_lock",
        "pthread_cond_wait",
        "pthread_rwlock_rdlock",
        "pthread_rwlock_wrlock",
        "new_sem_wait",
        "sem_wait",
    )
)
_JOINS = frozenset(
    ("pthread_join", "pthread_clockjoin_ex", "pthread_clockjoin_np", "pthread_timedjoin_np")
)
_SLEEPS = frozenset(("nanosleep", "clock_nanosleep", "sleep", "usleep", "pysleep", "time_sleep"))
_TIMED = frozenset(
    ("sem_clockwait", "sem_timedwait", "pthread_cond_timedwait", "pthread_cond_clockwait")
)


# A wait on an event that may never come, not on a thread: a file descriptor's (a poll, a
# select, a read of a pipe or a socket): a supervisor's or a server's main loop idles there.
_POLLS = frozenset(
    (
        "poll",
        "ppoll",
        "select",
        "pselect",
        "pselect6",
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "read",
        "recv",
        "recvfrom",
        "recvmsg",
        "accept",
        "accept4",
    )
)
# Of the waits on another thread, those for an event (a condition, an untimed semaphore:
# `std::async(...).get()`, a thread's result), not for a lock the thread may itself hold.
_AWAITS = frozenset(("pthread_cond_wait", "new_sem_wait", "sem_wait"))


def _wait(functions: Sequence[str]) -> tuple[str, str]:
    """What a thread whose frames are `functions` (innermost first) waits in: its kind
    (`lock`, `join`, `sleep`, `timed`, `poll`, or "": it runs, or waits in nothing said) and
    the function that says it (glibc's name)."""
    for function in functions:
        name = libc_name(function)
        for kind, names in (
            ("lock", _ON_ANOTHER_THREAD),
            ("join", _JOINS),
            ("sleep", _SLEEPS),
            ("timed", _TIMED),
            ("poll", _POLLS),
        ):
            if name in names:
                return kind, name
    return "", ""


def _waits_in(functions: Sequence[str]) -> str:
    return _wait(functions)[0]


def waits_for_an_end(functions: Sequence[str]) -> bool:
    """Whether a hung thread waits for another thread to end or to give a result: in a join,
    on a condition or an untimed semaphore (`t.join()`, `std::async(...).get()`), not on a
    mutex (which it may hold itself: a deadlock of its own). A main thread that waits so
    while its only other threads reap a child waits for that child (render's `hung_frame`)."""
    kind, name = _wait(functions)
    return kind == "join" or name in _AWAITS


# Of the waits on a file descriptor, those that can be for a child's output: a pipe is read
# with `read` (a launcher's `Command::output`, `subprocess`'s `communicate`, ctest's epoll
# loop over it). Not `accept` (a server waiting for a client; a pre-forked worker idling
# beside it is no child whose output it waits for: review), nor `recv`/`recvfrom`/`recvmsg`,
# a socket's: its peer is a client or a server, and a child's stdout, even a socketpair's
# (libuv's), is read with `read`.
_OUTPUT_WAITS = _POLLS - frozenset(("accept", "accept4", "recv", "recvfrom", "recvmsg"))


def waits_on_output(functions: Sequence[str]) -> bool:
    """Whether a hung thread waits on a file descriptor as a reader of a child's output does
    (a `read` of a pipe, a `poll`, an `epoll_wait`, a `select`): where its process has a hung
    descendant, the output or the end of that child is what it waits for (render's
    `hung_frame`). A server's `accept` or a socket's `recv` is not: it waits for a client."""
    kind, name = _wait(functions)
    return kind == "poll" and name in _OUTPUT_WAITS


def with_parents(
    stacks: NativeStacks, parents: Mapping[int, int], pipes: Mapping[int, Pipes] | None = None
) -> NativeStacks:
    """`stacks` with each live process's parent pid from `parents` (pid -> ppid, the
    runner's listing of the held tree) and its pipes from `pipes` (where the runner read
    them): the readers take pids and commands alone."""
    held = pipes or {}
    processes = tuple(
        replace(p, ppid=parents.get(p.pid), pipes=held.get(p.pid)) if p.source == "attach" else p
        for p in stacks.processes
    )
    return replace(stacks, processes=processes)


def idles(functions: Sequence[str]) -> bool:
    """Whether a hung thread only idles: it sleeps, waits with a timeout or polls (a
    supervisor's main loop), where code that runs (a busy loop in `strlen`) or a wait for
    another thread is a hang of its own (render's `hung_frame`)."""
    return _waits_in(functions) in ("sleep", "timed", "poll")


# Each wait kind's rank for where a hang sits, lowest first (`hung_thread_order`).
_RANK = {"lock": 0, "join": 0, "": 1, "timed": 1, "poll": 1, "sleep": 2}


def hang_rank(functions: Sequence[str]) -> tuple[int, bool]:
    """How surely a hung thread (its functions innermost first) is where a hang sits, lowest
    first, as `hung_thread_order` ranks them: a wait on another thread (a lock, a join)
    before code that runs, which is before an idle wait (a timed one, a poll), before a
    sleep. Render's `hung_frame` ranks a reader's hung descendants so: a child that sleeps
    beside one deadlocked on its mutex was taken for the hang as the first listed (review)."""
    kind = _waits_in(functions)
    return _RANK[kind], kind in ("sleep", "timed", "poll")


def hung_thread_order(threads: Sequence[tuple[bool, Sequence[str]]]) -> list[int]:
    """The threads of a hung process (each: whether it is the main thread, its functions
    innermost first), as indexes, most surely where the hang sits first, by outcome's
    ranking of a hang's Python threads (hungstacks' `_stuck_rank`): one waiting for
    another thread (a lock, a condition, an untimed semaphore: a Python join, `with lock`,
    `q.get()`) first, one that sleeps last; the main thread after the others of its rank
    (its Python `join` is a lock's wait too), and never first where it waits in a C join
    beside other threads (that join waits for them). gdb's `thread apply all bt` prints the
    newest thread first: a daemon heartbeat in `nanosleep` was taken for where a hang sat,
    beside the thread on a held mutex (review)."""
    kinds = [_waits_in(functions) for _, functions in threads]
    rank = _RANK

    def key(index: int) -> tuple[bool, int, bool]:
        main = threads[index][0]
        joining = main and kinds[index] == "join" and len(threads) > 1
        return (joining, rank[kinds[index]], main)

    return sorted(range(len(threads)), key=key)


def _frame_json(frame: Frame) -> JsonObject:
    return {
        "number": frame.number,
        "function": frame.function,
        "library": frame.library,
        "address": frame.address,
        "file": frame.file,
        "line": frame.line,
        "signal_handler": frame.signal_handler,
    }


def _process_json(process: ProcessStacks) -> JsonObject:
    threads: list[JsonValue] = [
        {
            "id": t.id,
            "lwp": t.lwp,
            "name": t.name,
            "frames": [_frame_json(f) for f in t.frames],
        }
        for t in process.threads
    ]
    return {
        "pid": process.pid,
        "source": process.source,
        "command": process.command,
        "signal": process.signal,
        "crashed_lwp": process.crashed_lwp,
        "threads": threads,
        "python": process.python,
        "error": process.error,
        "core": process.core,
        "root": process.root,
        "ppid": process.ppid,
        "pipes": None
        if process.pipes is None
        else {"reads": list(process.pipes.reads), "writes": list(process.pipes.writes)},
    }


def _frame(data: JsonValue) -> Frame:
    fields = checked_object(data)
    return Frame(
        number=checked_integer(fields["number"]) or 0,
        function=as_text(fields.get("function")),
        library=as_text(fields.get("library")),
        address=checked_integer(fields.get("address")),
        file=as_text(fields.get("file")),
        line=checked_integer(fields.get("line")),
        signal_handler=fields.get("signal_handler") is True,
    )


def _thread(data: JsonValue) -> Thread:
    fields = checked_object(data)
    return Thread(
        id=str(fields["id"]),
        lwp=checked_integer(fields.get("lwp")),
        name=as_text(fields.get("name")),
        frames=tuple(_frame(f) for f in checked_array(fields.get("frames"))),
    )


def _process(data: JsonValue) -> ProcessStacks:
    fields = checked_object(data)
    source: Source
    if fields.get("source") == "core":
        source = "core"
    elif fields.get("source") == "attach":
        source = "attach"
    else:
        raise TypeError(f"unknown source {fields.get('source')!r}")
    return ProcessStacks(
        pid=checked_integer(fields["pid"]) or 0,
        source=source,
        command=str(fields.get("command") or ""),
        signal=as_text(fields.get("signal")),
        crashed_lwp=checked_integer(fields.get("crashed_lwp")),
        threads=tuple(_thread(t) for t in checked_array(fields.get("threads"))),
        python=str(fields.get("python") or ""),
        error=as_text(fields.get("error")),
        core=as_text(fields.get("core")),
        root=fields.get("root") is True,
        ppid=checked_integer(fields.get("ppid")),
        pipes=_pipes(fields.get("pipes")),
    )


def _pipes(data: JsonValue) -> Pipes | None:
    """`_process_json`'s `pipes`; None where absent (stacks written before they were kept)."""
    if data is None:
        return None
    fields = checked_object(data)
    return Pipes(
        reads=tuple(checked_integer(i) or 0 for i in checked_array(fields.get("reads"))),
        writes=tuple(checked_integer(i) or 0 for i in checked_array(fields.get("writes"))),
    )
