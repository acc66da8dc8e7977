"""Where a hang sits, read from its stack dump: which process is a DataLoader worker, and
the innermost frame of the user's code each process was in when the engine asked.

stack.txt (process/stacks.py) holds one block per process, `--- pid N (command) ---`,
each thread's frames most recent first, as faulthandler writes them (`File "x.py", line 19
in f`) or as py-spy does (`f (x.py:19)`). The processes of a DataLoader share one command
line: a worker is told by its stack, which runs torch's `_worker_loop` (a forked worker's
also holds its parent's frames, below that loop). A worker with torch's `fetch` on its
stack was fetching an item when the engine asked: the hang sits there, in the user's
`__getitem__`, not in the main process, which only waits for the item (the
report said `hang`, `where: main`, and the worker's frame showed only in the folded
Stacks block, under the same command line as the two other processes).

A reading of text (but for the line a joined thread sits at, read to tell a thread on a
lock from one that sleeps, `_stuck_rank`, from the text the attempt ran: a `Source`,
hangsource.py's, which the classifier makes of the attempt's workdir, a docker container's
`/work` mapped back): the classifier names the stuck worker (`where: worker`, as the
harness's `worker_busy` events do for a workload), and the report labels the workers'
stacks and says where each hang sits, reading no file again (the place the classifier
stored ranked first: today's files, or another machine's, are not the attempt's).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import unescaped_name
from reprospec.core.pythonargs import LIBRARY_CODE_RE, is_python, python_program
from reprospec.core.results import PythonFrame as Frame
from reprospec.core.words import (
    LEFT_THE_TREE,
    MAIN_THREAD_AT_EXIT,
    MAIN_THREAD_JOINING,
    MAIN_THREAD_POLLING,
    MAIN_THREAD_RUNNING_LOOP,
    NOT_PYTHON,
)
from reprospec.outcome.hangsource import (
    WITH,
    Source,
    blocking_line,
    called,
    code_at,
    in_file,
    loop_at,
    under_timeout,
    unread,
    waits_for_a_thread,
)

# `Frame`: one frame as the dump names it, the type an outcome keeps of a hang
# (`Outcome.hung_in`), so the place read here is the place stored.

_HEADER = Lazy(r"^--- pid (?P<pid>\d+) \((?P<cmd>.*)\)(?P<tags>(?: \[[^\]]*\])*) ---$")
_THREAD = Lazy(r"^(?:(?P<current>Current thread)|Thread) (?P<id>\S+)")
# An asyncio task the stackdump sitecustomize appends after the threads (`_dump_tasks`):
# its coroutines, innermost first, as faulthandler writes a thread's frames; tagged where
# the task awaits another task or a gather (`_awaited` ranks it after the others).
_TASK = Lazy(r"^Task (?P<name>.+?) \(most recent call first\):(?P<awaits> \[awaits a task\])?$")
# Where a main thread runs an asyncio event loop: it waits for the loop's tasks.
_EVENT_LOOP = ("asyncio/base_events.py", ("run_forever", "run_until_complete"))
# A task's sleep: it wakes, as a thread's `time.sleep` does (`_stuck_rank`).
_ASYNC_SLEEP = ("asyncio/tasks.py", "sleep")
# A task's wait for another task's act, for good: an asyncio Event's, Lock's, Condition's,
# Semaphore's or Queue's (`_stuck_rank` 0, as a thread's lock), unless under a `wait_for`
# (3.12's, whose frame is the task's) or in the body of a timeout's `async with` at the
# task's own line (`asyncio.timeout(1)`, which leaves no frame: hangsource's
# `under_timeout`). Not seen: a timeout's `with` in an outer coroutine of the task, and
# 3.11's `wait_for`, which awaits the wait in a task of its own.
_ASYNC_WAITS = (
    ("asyncio/locks.py", ("wait", "acquire", "wait_for")),
    ("asyncio/queues.py", ("get", "put", "join")),
)
_ASYNC_TIMED = ("asyncio/tasks.py", "wait_for")
_FAULTHANDLER_FRAME = Lazy(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>.+)$')
_PY_SPY_FRAME = Lazy(r"^\s+(?P<function>\S.*?) \((?P<path>[^()]+):(?P<line>\d+)\)$")
# reprospec's own frames in a program's stacks (the stackdump sitecustomize wraps
# multiprocessing's Popen; the preload fork server runs the program's main): never the
# user's code, nor where a hang sits.
_OURS = re.compile(r"/stackdump/sitecustomize\.py$|/reprospec_forkserver\.py$")
# The harness's own files (reprospec/harness/): a workload's code, not where a user's hang is.
_HARNESS = re.compile(r"/reprospec_harness/")
# A process's frames of waiting for another process: multiprocessing's join, a queue or
# pipe a child writes to, a pool's result; subprocess's wait and communicate.
_WAITS_FOR_A_CHILD = re.compile(r"/multiprocessing/[\w/]+\.py$|/subprocess\.py$")
# Of those, the frames of waiting for a program it ran (subprocess's wait, communicate,
# _try_wait, a read of its pipes) or for a process that may have become one (a
# multiprocessing Process's join, process.py and popen_*.py: its target may exec `./nap` or
# wait in subprocess.call for it): the only waits that can be for one with no Python stack.
# A multiprocessing Lock, Event or Queue's get is for a Python process or for the program
# itself: a lock it holds twice beside an idle `./nap` was placed in the nap.
_WAITS_FOR_A_PROGRAM = re.compile(r"/subprocess\.py$|/multiprocessing/(?:process|popen_\w+)\.py$")
# A process's frames of waiting for its peers: a torch.distributed collective (all_reduce,
# barrier) returns when every rank has called it, so a rank in one waits for another.
_WAITS_FOR_PEERS = re.compile(r"/torch/distributed/distributed_c10d\.py$")
# A thread's frames of waiting for other threads: threading's join, a thread pool's result.
_JOINS = (
    ("threading.py", ("join", "_wait_for_tstate_lock")),
    ("concurrent/futures/_base.py", ("result", "wait", "as_completed")),
)
# Where the main thread waits at exit for the non-daemon threads it never joined.
_EXIT_WAIT = ("threading.py", "_shutdown")
# Where a multiprocessing child begins: frames below it are its parent's, copied by fork.
_FORKED = ("multiprocessing/process.py", "_bootstrap")
_WORKER_LOOP = ("torch/utils/data/_utils/worker.py", "_worker_loop")
_FETCH = "torch/utils/data/_utils/fetch.py"
WORKER_LABEL = "[DataLoader worker]"


@frozen
class HungProcess:
    """One process of a stack dump: whether it is a DataLoader worker, whether it was
    fetching an item, and the innermost frame of the user's code in its main thread."""

    pid: int
    worker: bool
    fetching: bool
    frame: Frame | None
    # The main thread waits for another process (multiprocessing's join, subprocess's wait).
    waits_for_a_child: bool = False
    # `frame` is the process's own, not a forked child's copy of its parent's frames (below
    # multiprocessing's _bootstrap): an idle Pool worker waits for a task in no code of
    # the user's, its frames under that line its parent's `<module>`.
    own_frame: bool = True
    # Where the main thread joins threads: each other thread's innermost frame of the user's
    # code. A deadlock between two threads sits there, not in the join (nu62b).
    joined: tuple[Frame, ...] = ()
    # A process with no Python stack to read (`sleep 100` a Python program started): stack.txt
    # names it, `[not Python]`, for a hang that sits in it. Its command line.
    python: bool = True
    command: str = ""
    # The main thread waits in a torch.distributed collective: for a peer rank, where the
    # hang is when a peer sits elsewhere (torchrun's rank 1 asleep, rank 0 in all_reduce).
    waits_for_peers: bool = False
    # The main thread has left the program's code and waits at exit for the non-daemon
    # threads it never joined (threading's `_shutdown`, `frame`): the same wait as a join,
    # `joined` those threads, where the hang sits.
    at_exit: bool = False
    # The main thread sleeps in a loop that polls a thread (`while w.is_alive():
    # time.sleep(0.1)`) beside a thread that waits for good: a join by another name,
    # `joined` the other threads.
    polled: bool = False
    # The main thread runs an asyncio event loop, `joined` its tasks' innermost frames of
    # the user's code (the stackdump sitecustomize's `Task` blocks): a coroutine waits
    # there, on no thread's stack.
    awaits: bool = False
    # The main thread waits in subprocess (`_WAITS_FOR_A_PROGRAM`): for a program it ran,
    # which may have no Python stack; a multiprocessing wait never is for one of those.
    waits_for_a_program: bool = False

    def describe(self, frame: Callable[[str], str] = str) -> str:
        """`the DataLoader worker pid 4242 was fetching an item, in train.py:19 in
        __getitem__`, or `pid 4200 was in train.py:22 in <module>`, or `pid 4200's threads
        were in t.py:6 in one, t.py:11 in two, its main thread joining them in t.py:16 in
        <module>`; `frame` words the frame (the report's inline code)."""
        who = f"the DataLoader worker pid {self.pid}" if self.worker else f"pid {self.pid}"
        doing = " was fetching an item" if self.fetching else ""
        if not self.python:
            return f"{who} ({frame(self.command)}, not a Python program)"
        if self.frame is None:
            return who + doing
        if doing:
            return f"{who}{doing}, in {frame(self.frame.text())}"
        if self.joined:
            threads = ", ".join(frame(f.text()) for f in self.joined)
            if self.awaits:
                return (
                    f"{who}'s asyncio tasks were in {threads}, its main thread "
                    f"{MAIN_THREAD_RUNNING_LOOP} in {frame(self.frame.text())}"
                )
            if self.at_exit:
                doing = MAIN_THREAD_AT_EXIT
            elif self.polled:
                doing = MAIN_THREAD_POLLING
            else:
                doing = MAIN_THREAD_JOINING
            return (
                f"{who}'s threads were in {threads}, its main thread {doing} in "
                f"{frame(self.frame.text())}"
            )
        return f"{who} was in {frame(self.frame.text())}"


def _is_user(frame: Frame, command_string: bool = False) -> bool:
    """A frame of the user's code: no library's, none of ours; `<string>` only in a program
    given as a string (`python -c`), whose every frame of its own is named so."""
    if frame.path == "<string>":
        return command_string
    return (
        not frame.path.startswith("<")
        and not LIBRARY_CODE_RE.search(frame.path)
        and not _OURS.search(frame.path)
    )


def _runs_a_string(main: list[Frame]) -> bool:
    """The main thread runs a program given as a string: `python -c "..."` (its outermost
    frame `<string>`'s `<module>`). Elsewhere `<string>` is generated code (a dataclass's
    `__init__`), no place of the user's (a hung `python -c` child had none)."""
    return bool(main) and main[-1].path == "<string>" and main[-1].function == "<module>"


def _waiting(frames: list[Frame], command_string: bool = False) -> list[Frame]:
    """A thread's innermost frames, up to its first of the user's code: what it waits in."""
    out: list[Frame] = []
    for frame in frames:
        if _is_user(frame, command_string):
            break
        out.append(frame)
    return out


def _frame(line: str) -> Frame | None:
    found = _FAULTHANDLER_FRAME.match(line)
    if found is not None:
        # faulthandler escapes what is not ASCII (`w\udc80x.py`, `caf\xe9.py`): the names
        # as the report shows text, each byte that was not UTF-8 as U+FFFD.
        path, function = unescaped_name(found["path"]), unescaped_name(found["function"])
        return Frame(path, int(found["line"]), function.strip())
    found = _PY_SPY_FRAME.match(line)
    if found is None:
        return None
    return Frame(found["path"], int(found["line"]), found["function"].strip())


def readable_frames(stack: str) -> str:
    """`stack` with each faulthandler frame's names as `_frame` reads them (`File "w�x.py"`,
    not `File "w\udc80x.py"`): the report's Stacks block says a path as its headline does."""
    if "\\" not in stack:
        return stack
    return "\n".join(
        _FAULTHANDLER_FRAME.sub(lambda m: unescaped_name(m.group()), line) if "\\" in line else line
        for line in stack.split("\n")
    )


def _main_thread(threads: list[tuple[bool, list[Frame]]]) -> list[Frame]:
    """The main thread's frames: the one that runs the program (its outermost frame a
    `<module>`, a forked worker's too, or runpy's for `python -m`), else the one that took
    the signal unless `threading` started it, else the first `threading` did not start,
    else the first.

    The signal's thread is no sure sign: the dump's signal reaches any thread that does
    not block it, and a plugin's server thread (pytest-rerunfailures' `accept`) took it
    in about half of `python -m pytest`'s hangs, where the main thread's outermost frames
    are runpy's."""
    for _, frames in threads:
        if frames and (frames[-1].function == "<module>" or _runs_module(frames[-1])):
            return frames
    for current, frames in threads:
        if current and not (frames and _threading_started(frames[-1])):
            return frames
    for _, frames in threads:
        if frames and not _threading_started(frames[-1]):
            return frames
    return threads[0][1] if threads else []


def _runs_module(frame: Frame) -> bool:
    """runpy's outermost frame of `python -m` (`<frozen runpy>` from 3.11, runpy.py before)."""
    return frame.function == "_run_module_as_main" and "runpy" in frame.path


def _threading_started(frame: Frame) -> bool:
    """A thread `threading` started: its outermost frame is its `_bootstrap`."""
    return frame.function == "_bootstrap" and in_file(frame, "threading.py")


def hung_frames(stack: str | None) -> list[list[Frame]]:
    """The main thread's frames of each process of a stack dump, most recent first, in its
    order (the attempt's root first)."""
    return [_main_thread(threads) for _, threads, _, _, _ in _blocks(stack)]


_Threads = list[tuple[bool, list[Frame]]]
# pid, threads (whether current, frames), command, tags, asyncio tasks (whether it awaits
# a task, frames: each read as a thread's)
_Block = tuple[int, _Threads, str, str, _Threads]


def _blocks(stack: str | None) -> list[_Block]:
    """Each process of a dump, read in one pass: its threads' frames, and its asyncio
    tasks' (`_TASK`, after the threads), each a thread's list of frames, its flag whether
    the task awaits another task."""
    blocks: list[_Block] = []
    into: _Threads = []  # the threads, or the tasks, that the frames read now are of
    for line in (stack or "").splitlines():
        if (header := _HEADER.match(line)) is not None:
            blocks.append((int(header["pid"]), [], header["cmd"], header["tags"], []))
            into = blocks[-1][1]
        elif not blocks:
            continue
        elif (thread := _THREAD.match(line)) is not None:
            into = blocks[-1][1]
            into.append((thread["current"] is not None, []))
        elif (named := _TASK.match(line)) is not None:
            into = blocks[-1][4]
            into.append((named["awaits"] is not None, []))
        elif (frame := _frame(line)) is not None:
            if not into:
                into.append((False, []))  # a thread's frames under no thread line
            into[-1][1].append(frame)
    return blocks


def hung_processes(
    stack: str | None, *, source: Source, first: Frame | None = None
) -> tuple[HungProcess, ...]:
    """Each process of a stack dump, in its order (the attempt's root first). `source`: the
    text of the files the attempt ran (hangsource's `source_at`: a docker container's
    `/work` mapped back), a thread's own line read from it (`_stuck_rank`); `first`: the
    thread a hang was found in when the attempt was classified (`Outcome.hung_in`), ranked
    first, where the dump is read again with no file to read (the report's `unread`)."""
    rank = _ranker(source, first)
    out = []
    for pid, threads, command, tags, tasks in _blocks(stack):
        if NOT_PYTHON in tags:
            out.append(HungProcess(pid, False, False, None, python=False, command=command))
            continue
        every = [f for _, frames in threads for f in frames]
        worker = any(in_file(f, _WORKER_LOOP[0]) and f.function == _WORKER_LOOP[1] for f in every)
        main = _main_thread(threads)
        fetching = worker and any(in_file(f, _FETCH) for f in main)
        string = _runs_a_string(main)
        # A daemon away from the tree: no hang sits in it, nor in its wait at exit.
        away = LEFT_THE_TREE in tags
        frame = None if away else next((f for f in main if _is_user(f, string)), None)
        joined: tuple[Frame, ...] = ()
        at_exit = False
        if frame is None and not away and (left := _left_waiting(threads, command, rank)):
            # Its main thread waits at exit for threads it never joined: a join's place,
            # in those threads (the title `hang in worker (t.py:6)`, as with the join).
            frame = next(f for f in main if _is(f, _EXIT_WAIT))
            joined, at_exit = tuple(t[0] for t in left), True
        waiting = _waiting(main, string)
        child = frame is not None and any(_WAITS_FOR_A_CHILD.search(f.path) for f in waiting)
        program = child and any(_WAITS_FOR_A_PROGRAM.search(f.path) for f in waiting)
        polled = awaits = False
        if frame is not None and any(_is(f, j) for f in waiting for j in _JOINS):
            joined = tuple(t[0] for t in _other_threads(threads, main, string, rank))
        elif frame is not None and (awaited := _awaited(tasks, main, string, rank)):
            # The main thread runs an event loop: the hang sits in its tasks' coroutines,
            # on no thread's stack (`hang in <module>` at `asyncio.run(main())`).
            joined, awaits = tuple(t[0] for t in awaited), True
        elif frame is not None and not away and not at_exit:
            # (`_left_waiting` read a wait at exit's threads, the harness's left out.)
            # `while w.is_alive(): time.sleep(0.1)`: a join by another name. Where another
            # thread waits for good (a lock, a join, a queue), the hang sits there, not in
            # the main thread's sleep (`hang in <module> (poll.py:14)` named no stuck thread);
            # only where its loop polls a thread (`_polls_a_thread`), not one that sleeps
            # between its own work beside an idle consumer.
            sleeps = _sleeps(frame, waiting, source)
            if _named_elsewhere(first, frame, threads) or sleeps:
                others = _other_threads(threads, main, string, rank)
                if others and (
                    others[0][0] == first
                    or (rank(others[0]) == 0 and sleeps and _polls_a_thread(frame, source))
                ):
                    joined, polled = tuple(t[0] for t in others), True
        forked = next((i for i, f in enumerate(main) if _is(f, _FORKED)), len(main))
        own = frame is not None and main.index(frame) < forked
        peers = frame is not None and any(_WAITS_FOR_PEERS.search(f.path) for f in waiting)
        out.append(
            HungProcess(
                pid,
                worker,
                fetching,
                frame,
                child,
                own,
                joined,
                command=command,
                waits_for_peers=peers,
                at_exit=at_exit,
                polled=polled,
                awaits=awaits,
                waits_for_a_program=program,
            )
        )
    return tuple(out)


def _awaited(
    tasks: _Threads, main: list[Frame], string: bool, rank: _Rank
) -> tuple[_HungThread, ...]:
    """Where a main thread runs an asyncio event loop (`asyncio.run`'s `run_until_complete`
    among the frames it waits in), its process's `tasks` (`_blocks`) that are in the user's
    code, as a join's threads (`_other_threads`, ranked); else (). A task that awaits
    another task or a gather (tagged by the dump, `_TASK`) waits for that one: it comes after
    the others of its rank (1, its `await t` line), which may be where the hang sits."""
    if not any(_is(f, _EVENT_LOOP) for f in _waiting(main, string)):
        return ()
    return _other_threads(sorted(tasks, key=lambda t: t[0]), main, string, rank)


def _named_elsewhere(
    first: Frame | None, frame: Frame, threads: list[tuple[bool, list[Frame]]]
) -> bool:
    """Whether the thread a classified hang named (`first`) is another than the main
    thread's own `frame`, in this process: its main thread waited for it."""
    return first is not None and first != frame and any(first in f for _, f in threads)


def stuck_worker(stack: str | None) -> HungProcess | None:
    """The first DataLoader worker that was fetching an item in the user's code, if any: no
    line of a file says which (`unread`), nor where it was."""
    return _first_stuck_worker(hung_processes(stack, source=unread))


def stuck_child(
    stack: str | None, *, source: Source, first: Frame | None = None
) -> HungProcess | None:
    """The process the attempt's first one waits for, where a hang sits in a child: the
    first one's main thread waits for another process (multiprocessing's join, a queue a
    child fills, subprocess's wait) and a later process, no DataLoader worker, was in the
    user's code. Its first process only waits: `where: main` named the wrong one (nu62b)."""
    every = hung_processes(stack, source=source, first=first)
    processes = [p for p in every if p.python]
    if not processes or not processes[0].waits_for_a_child:
        return None
    children = [p for p in processes[1:] if p.frame and p.own_frame and not p.worker]
    # A child that itself only waits for its own child is not where the hang sits, nor one
    # that waits in a collective for a peer that sits elsewhere (a launcher's ranks: the
    # first rank's all_reduce was named, where rank 1 slept); one with no Python stack
    # (`subprocess.run(["sleep", "100"])`) is where no Python child is, only where the first
    # process waits in subprocess: one in its own multiprocessing Lock, Event or Queue beside
    # an idle `./nap` hangs in its own code (`where: main`), not in the nap.
    return (
        next((p for p in children if not p.waits_for_a_child and not p.waits_for_peers), None)
        or next((p for p in children if not p.waits_for_a_child), None)
        or next(iter(children), None)
        or next(
            (p for p in every if not p.python and any(q.waits_for_a_program for q in processes)),
            None,
        )
    )


def where_stuck(
    stack: str | None, *, source: Source, first: Frame | None = None
) -> HungProcess | None:
    """Where a hang sits as far as its stacks show: a worker stuck fetching an item in the
    user's code, else a child the first process waits for (`stuck_child`), else the first
    process whose main thread was in the user's code. `source` and `first` as
    `hung_processes` takes them."""
    processes = hung_processes(stack, source=source, first=first)
    return (
        _first_stuck_worker(processes)
        or stuck_child(stack, source=source, first=first)
        or next((p for p in processes if p.frame and not p.worker), None)
    )


def hung_frame(stack: str | None, *, source: Source) -> Frame | None:
    """The frame a hang sits in, in the process `where_stuck` finds: the first thread its main
    thread joins (a deadlock between threads sits there, not in the join), else its own
    frame. None where the stacks show no frame of the user's code in it (a child that is
    no Python program, an idle pool worker), or only the harness's (an injected hang: its
    phase and step say where). `source`: the text of the attempt's files, as
    `hung_processes` reads it."""
    process = where_stuck(stack, source=source)
    if process is None or process.frame is None or not process.own_frame:
        return None
    frame = process.joined[0] if process.joined else process.frame
    return None if _HARNESS.search(frame.path) else frame


# A hung thread: its innermost frame of the user's code, the library frames it waits in
# below it, and its outermost frame of the user's code.
_HungThread = tuple[Frame, tuple[Frame, ...], Frame]


def hung_threads(stack: str | None, *, source: Source) -> tuple[_HungThread, ...] | None:
    """Each thread a hang sits in, as `hung_frame` reads the place: the threads the stuck
    process's main thread joins (a deadlock sits in both of them), else that main thread;
    each thread's innermost frame of the user's code, the frames it waits in below it
    (`_waiting`: Barrier.wait's threading.py frames; none where its own line waits in C
    code, a lock's acquire, a sleep), and its outermost frame of the user's code (the
    thread's target; the main thread's outermost function, `_main_entry`); where the main
    thread has left the program's code and waits at exit for threads it never joined,
    those threads. None
    where no stacks were read or they show only the harness's code (an injected hang: its
    phase and step say where, not this); () where they show no frame of the user's code.

    minimize compares two hangs by it (minimize/hangplace.py): `Outcome.hung_in` is one
    frame, its line moves as the program shrinks, and it says nothing of what it waits in."""
    blocks = _blocks(stack)
    if not blocks:
        return None
    rank = _ranker(source)
    process = where_stuck(stack, source=source)
    if process is None or process.frame is None or not process.own_frame:
        return _left_waiting(blocks[0][1], blocks[0][2], rank)
    if process.at_exit:
        # Its wait at exit, read as `hung_processes` read it (the harness's threads left out).
        threads, command = next((t, c) for pid, t, c, _, _ in blocks if pid == process.pid)
        return _left_waiting(threads, command, rank)
    if _HARNESS.search(process.frame.path) or any(_HARNESS.search(f.path) for f in process.joined):
        return None
    threads, tasks = next(((t, a) for pid, t, _, _, a in blocks if pid == process.pid), ([], []))
    main = _main_thread(threads)
    string = _runs_a_string(main)
    if process.awaits:
        return _awaited(tasks, main, string, rank)
    if process.joined:
        # The threads `hung_processes` read `joined` from, as it read them.
        return _other_threads(threads, main, string, rank)
    return ((process.frame, tuple(_waiting(main, string)), _main_entry(main, string)),)


def _outermost(frames: list[Frame], string: bool) -> Frame:
    """A thread's outermost frame of the user's code (frames most recent first; one is)."""
    return next(f for f in reversed(frames) if _is_user(f, string))


def _main_entry(frames: list[Frame], string: bool) -> Frame:
    """A main thread's outermost named function of the user's code, of its own process
    (above a forked child's `_bootstrap`): `main`, `train`, a test function; its
    `<module>` only where it hangs at module level. Its outermost frame is almost always
    `<module>`, and every hang of a lone main thread read so (a lock's self-deadlock, a
    sleep, a busy loop in another function), which told none of them apart (review).
    Comprehensions' and lambdas' frames (`<listcomp>`) are their scope's, no function.

    Asked only of a main thread `hung_processes` found its own frame of the user's code
    in (`own_frame`), so the frames above `_bootstrap` hold one."""
    own = frames[: next((i for i, f in enumerate(frames) if _is(f, _FORKED)), len(frames))]
    user = [f for f in reversed(own) if _is_user(f, string)]
    named = (f for f in user if not (f.function.startswith("<") and f.function.endswith(">")))
    return next(named, user[0])


def _left_waiting(
    threads: list[tuple[bool, list[Frame]]], command: str, rank: _Rank
) -> tuple[_HungThread, ...]:
    """Where the root's main thread has left the program's code and waits at exit for the
    threads it started (threading's `_shutdown`: no `join`, the same wait), those threads,
    as a join's; else (). `command`: the process's command line, its dump's header's."""
    main = _main_thread(threads)
    # A `python -c` program's own frames are `<string>`'s, as in hung_threads: else its
    # hang at exit read as in no frame of its own, where the same one joined read `w2`.
    # Its main thread has left `<string>`'s `<module>` here: its command line says it.
    string = _runs_a_string(main) or _command_string(command)
    if not any(_is(f, _EXIT_WAIT) for f in main) or any(_is_user(f, string) for f in main):
        return ()
    others = _other_threads(threads, main, string, rank)
    return tuple(t for t in others if not _HARNESS.search(t[0].path))


def _command_string(command: str) -> bool:
    """Whether a dump header's command line runs a program given as a string: the
    interpreter's own `-c` (`python -u -c CODE`), not a program's (`python app.py -c
    conf.yaml`, `pytest -c pytest.ini`), whose `<string>` frames are generated code."""
    words = command.split()
    return bool(words) and is_python(words[0]) and python_program(words[1:]).kind == "code"


def _other_threads(
    threads: list[tuple[bool, list[Frame]]], main: list[Frame], string: bool, rank: _Rank
) -> tuple[_HungThread, ...]:
    """Each thread but `main` that has a frame of the user's code: its innermost one, the
    frames it waits in below it (`_waiting`), and its outermost one. What a main thread's
    join waits for (`HungProcess.joined`, `hung_threads`), or its wait at exit (`_left_waiting`)."""
    out = []
    for _, frames in threads:
        user = next((f for f in frames if _is_user(f, string)), None)
        if frames is not main and user is not None:
            out.append((user, tuple(_waiting(frames, string)), _outermost(frames, string)))
    return tuple(sorted(out, key=rank))


# A joined thread's rank (`_stuck_rank`), the attempt's files read from a `Source`.
_Rank = Callable[[_HungThread], int]


def _ranker(source: Source, first: Frame | None = None) -> _Rank:
    """`_stuck_rank` of a thread, its lines read from `source`; -1, before every other,
    for the thread whose innermost frame of the user's code is `first`."""

    def rank(thread: _HungThread) -> int:
        if first is not None and thread[0] == first:
            return -1
        return _stuck_rank(thread, source=source)

    return rank


def _stuck_rank(thread: _HungThread, *, source: Source) -> int:
    """How surely a joined thread is where the hang sits, for `_other_threads`' order (the
    first is the hang's title, `hang_frame`): 0 where it waits for another thread (a lock's
    `with`, an `acquire()`, a join, a Condition's or a queue's wait; an asyncio task's
    Event, Lock, Condition or Queue wait given no `wait_for`), 2 where it sleeps (a
    heartbeat's `time.sleep` in its loop, or its Event's `stop.wait(0.5)`: it wakes and
    sleeps again, stuck on nothing), 1 otherwise (a busy loop, a line that cannot be read,
    a queue's `get(timeout=...)`, a future's `result(timeout=...)`, a Condition's
    `cond.wait(0.2)`).

    faulthandler's dump says neither which thread a join waits for nor whether a thread
    runs: a lock's wait and a sleep both stop in C code, below the user's line, so a
    daemon `heartbeat` dumped before the joined `w` (threads are dumped newest first) titled
    the hang `hang in beat`, where `w` sat on a held lock. The library frames below the
    user's say what it waits in, else the user's own line, read from the text the attempt
    ran (`source`, as minimize's hangplace reads it: under docker the dump names the
    container's `/work`, read on the host as no file, or another's); a dump's order stays
    among threads of one rank. A wait given a timeout wakes, where the same frames with
    none (`q.get()`) wait for good: the user's line says which, by the timeout its wait
    call passes (`_timed`), else threading.py's own line (`waiter.acquire(True, timeout)`),
    read through `source` too: a local attempt's is this host's file, a docker attempt's
    the image's, which `source_at` reads as none. Only an Event's wait called from the
    user's code (Event.wait over Condition.wait, both threading.py's: a heartbeat's `while
    not stop.wait(0.5)`) sleeps; one under a queue's get or a future's result, or a bare
    Condition's (`with cond: while not items: cond.wait(0.2)`), is a consumer polling for
    work in a loop that never ends, a thread that never ends (the title `hang in beat`
    named the heartbeat beside it, review): it ranks between a thread blocked for good and
    a sleeper."""
    frame, waiting, _ = thread
    if waiting:
        if _is(waiting[0], _ASYNC_SLEEP):
            return 2  # an asyncio task's heartbeat: `await asyncio.sleep(0.5)` in its loop
        if any(_is(waiting[0], w) for w in _ASYNC_WAITS):
            # A task's `await ev.wait()`, `async with lock`, `await q.get()`: for good,
            # unless given a timeout (`asyncio.wait_for(ev.wait(), 1)`, or in `async with
            # asyncio.timeout(1):` at its line).
            timed = any(_is(f, _ASYNC_TIMED) for f in waiting)
            return 1 if timed or under_timeout(frame, source=source) else 0
        if not waits_for_a_thread(waiting[0]):
            return 1
        if not _timed(frame, waiting, source):
            return 0
        # An Event's wait: its `wait` over the Condition's, both threading.py's.
        event = len(waiting) == 2 and all(_is(f, ("threading.py", "wait")) for f in waiting)
        return 2 if event else 1
    blocked = blocking_line(frame, source=source)
    if blocked in _ON_ANOTHER_THREAD:
        return 0
    return 2 if blocked == _SLEEP else 1


# A user's own line that waits in C code for another thread (hangsource's `blocking_line`):
# a lock's `with`, its acquire. Only those: a join's, an Event's or a Condition's wait has
# threading.py's frames below the line (`waiting`), so a `join(` on the line itself is a
# thread that runs (`s = ", ".join(parts)`), which ranked with the lock's and, dumped
# first, titled the hang (review). A line that sleeps: time's sleep (`sleep(0.05)`).
_ON_ANOTHER_THREAD = (WITH, called("acquire"))
_SLEEP = called("sleep")
# A user's wait call that passes a timeout to the library's wait: `timeout=` (but None),
# `stop.wait(0.5)`, `t.join(1)`, `f.result(5)`, `q.get(True, 0.2)`, `cond.wait_for(ready, 1)`.
_TIMED_CALL = Lazy(
    r"\btimeout\s*=\s*(?!None\b)[^\s)]"
    r"|\b(?:wait|join|result)\s*\(\s*(?!None\b|timeout\s*=)[^\s)]"
    r"|\b(?:get|wait_for)\s*\([^,)]*,\s*(?!None\b|timeout\s*=)[^\s)]"
)
# The library's waits a user's line calls, by name (the call whose frames are below it).
_WAIT_CALL = Lazy(r"\b(?:wait_for|wait|join|result|get)\s*\(")
# threading's Condition.wait given a timeout, its own line (`gotit = waiter.acquire(True,
# timeout)`), where an untimed one is `waiter.acquire()`.
_TIMED_WAIT = Lazy(r"\.acquire\(True, timeout\)")


def _timed(frame: Frame, waiting: list[Frame] | tuple[Frame, ...], source: Source) -> bool:
    """Whether a thread's wait below its own line was given a timeout: its line's wait call
    passes one (`_wait_call`), else threading.py's own line says so (`_TIMED_WAIT`: a
    heartbeat's helper in a library does the `stop.wait(1)`, its line `hb.run_forever()`;
    a call split over lines, `while not stop.wait(` with `timeout=` on the next). Both read
    through `source`: under docker threading.py is the image's, which `source_at` reads
    as no file (a host's file of another version says anything at that line). No where
    neither can be read."""
    if _TIMED_CALL.search(_wait_call(code_at(frame, source=source) or "")):
        return True
    return bool(waiting) and bool(_TIMED_WAIT.search(code_at(waiting[0], source=source) or ""))


def _wait_call(code: str) -> str:
    """The wait call of a user's line, its name and arguments (to its closing bracket, or
    the line's end where it goes on): the last on the line not inside another's brackets,
    so a timeout another call passes is not its (`", ".join(parts); ev.wait()`, `d.get(k,
    0); q.get()` read as timed waits). The whole line where it calls none by name (a
    helper that waits, `hb.beat_forever(timeout=1)`)."""
    # Brackets by Python's tokenizer: one in a string is none (`d.get("(", 0); ev.wait()`
    # read the get's `0` as the wait's timeout, its `(` never closed).
    # (`code` is one line, `code_at`'s: a token's column is its offset.)
    opens = {call.end() - 1: call.start() for call in _WAIT_CALL.finditer(code)}
    found, depth, level = "", 0, 0
    start: int | None = None  # where the wait call read now begins
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type != tokenize.OP or token.string not in _BRACKETS:
                continue
            at = token.start[1]
            if token.string in "([{":
                if start is None and at in opens:
                    start, level = opens[at], depth
                depth += 1
                continue
            depth -= 1
            if start is not None and depth == level:
                # Not one inside it: `stop.wait(cfg.get("t", 1))`.
                found, start = code[start : at + 1], None
    except (tokenize.TokenError, SyntaxError):
        pass  # a bracket the line leaves open (or a string): the wait goes on past it
    if start is not None:
        found = code[start:]
    return found or code


_BRACKETS = frozenset("()[]{}")


def _sleeps(frame: Frame, waiting: list[Frame], source: Source) -> bool:
    """Whether a main thread sleeps where it is, to wake again: in `time.sleep` on its own
    line, or in any wait for another thread given a timeout (`stop.wait(0.1)`, a queue's
    `results.get(timeout=0.1)`, a future's `result(timeout=1)`). Not `_stuck_rank`'s
    sleeper: that ranks a joined thread, where a timed queue get is a consumer that never
    ends; a main thread's timed get in a loop that asks `w.is_alive()` polls `w` as a sleep
    does (`_polls_a_thread` asks the loop), and read as one that runs it titled the hang
    `hang in <module>` at the get, beside `w` on a held lock (review)."""
    if waiting:
        return waits_for_a_thread(waiting[0]) and _timed(frame, waiting, source)
    return blocking_line(frame, source=source) == _SLEEP


# What a sleep loop asks of the thread it waits for: a thread's `is_alive()`, a future's
# `done()` or `running()`, or of them all: `threading.active_count() > 1`, what
# `threading.enumerate()` lists.
_POLL = Lazy(
    r"\.is_alive\s*\(|\.(?:done|running)\s*\(\s*\)|\bactive_count\s*\(|\bthreading\.enumerate\s*\("
)


def _polls_a_thread(frame: Frame, source: Source) -> bool:
    """Whether the loop a main thread sleeps in polls another thread (`while w.is_alive():`,
    an `if f.done(): break` in it), its lines read from `source` (hangsource's `loop_at`).
    A main loop that only sleeps between its own work (`while True: q.put(job());
    time.sleep(1)`) waits for no thread: the idle consumer beside it, blocked in `q.get()`
    by design, was named the hang (`hang in consumer`, review)."""
    return any(_POLL.search(line) for line in loop_at(frame, source=source))


def _first_stuck_worker(processes: tuple[HungProcess, ...]) -> HungProcess | None:
    return next((p for p in processes if p.fetching and p.frame), None)


def label_workers(stack: str) -> str:
    """The dump with each DataLoader worker's header labelled (`--- pid 4242 (python
    train.py) [DataLoader worker] ---`): its processes share one command line. A worker
    is told by its frames: no file is read (`unread`; the report reads none)."""
    workers = {p.pid for p in hung_processes(stack, source=unread) if p.worker}
    if not workers:
        return stack

    def label(line: str) -> str:
        header = _HEADER.match(line)
        if header is None or int(header["pid"]) not in workers:
            return line
        return f"{line.removesuffix(' ---')} {WORKER_LABEL} ---"

    return "\n".join(label(line) for line in stack.split("\n"))


# pytest's frames that say what it was doing: the test's call (the frame after it is the
# test function), a fixture's setup (the fixture), a test module's import (collection).
_PYTEST_CALL = ("_pytest/python.py", "pytest_pyfunc_call")
_PYTEST_FIXTURE = ("_pytest/fixtures.py", "call_fixture_func")
_PYTEST_IMPORT = ("_pytest/python.py", ("importtestmodule", "_importtestmodule"))
_PYTEST_CONFTEST = ("_pytest/config/__init__.py", "_importconftest")
_PYTEST_COLLECT = ("_pytest/main.py", "perform_collect")


def pytest_hung_in(stack: str | None, named: str | None = None) -> str | None:
    """What a hung pytest was doing, read from its root's stack (the main thread's): `pytest
    was running test_one (test_h.py:4)`, `... setting up the fixture db (conftest.py:8)`,
    `pytest was collecting test_c.py (test_c.py:1, importing slowmod.py:2)`, `... importing
    conftest.py`, `pytest was collecting`; None where its stack shows none of them (no
    dump, or no pytest). The first test that hangs prints no ended `-v` line, and a run
    without `-v` names no test at all (pt40): the stack does, whatever pytest printed.
    Files are named by their last part (the dump's paths are the machine's). Where the
    test is the one `named` (the phase, a node id `-v`'s lines gave) only its place is
    said, not its name again: `the test was at test_h.py:4` (pt42)."""
    blocks = hung_frames(stack)
    if not blocks:
        return None
    frames = blocks[0]
    for index, frame in enumerate(frames):
        if index and _is(frame, _PYTEST_CALL):
            test = frames[index - 1]
            if named is not None and _names(named, test):
                return f"the test was at {_short(test)}"
            return f"pytest was running {test.function} ({_short(test)})"
        if index and _is(frame, _PYTEST_FIXTURE):
            fixture = frames[index - 1]
            return f"pytest was setting up the fixture {fixture.function} ({_short(fixture)})"
        if _is(frame, _PYTEST_IMPORT) or _is(frame, _PYTEST_CONFTEST):
            # The test module (or conftest) is the outermost `<module>` frame after it.
            modules = [f for f in frames[:index] if f.function == "<module>" and _is_user(f)]
            if not modules:
                return "pytest was collecting"
            module, inner = modules[-1], modules[0]
            name = module.path.rsplit("/", 1)[-1]
            where = _short(module) + (f", importing {_short(inner)}" if inner != module else "")
            return f"pytest was collecting {name} ({where})"
        if _is(frame, _PYTEST_COLLECT):
            return "pytest was collecting"
    return None


def _names(node: str, frame: Frame) -> bool:
    """Whether a pytest node id names the test `frame` runs: its function, and its file
    (`tests/t.py::TestC::test_one[1-a]` names test_one of .../tests/t.py), so a test of the
    same name in another module is still named."""
    file, _, rest = node.partition("::")
    function = rest.rsplit("::", 1)[-1].split("[", 1)[0]
    return function == frame.function and in_file(frame, file)


def _is(frame: Frame, where: tuple[str, str | tuple[str, ...]]) -> bool:
    path, function = where
    names = (function,) if isinstance(function, str) else function
    return in_file(frame, path) and frame.function in names


def _short(frame: Frame) -> str:
    return f"{frame.path.rsplit('/', 1)[-1]}:{frame.line}"


__all__ = [
    "WORKER_LABEL",
    "Frame",
    "HungProcess",
    "hung_frame",
    "hung_frames",
    "hung_processes",
    "hung_threads",
    "in_file",
    "label_workers",
    "pytest_hung_in",
    "readable_frames",
    "stuck_child",
    "stuck_worker",
    "where_stuck",
]
