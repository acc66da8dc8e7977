"""Ask every Python process of a live attempt for its stacks, and gather them into stack.txt.

Each Python process of an attempt has faulthandler armed on STACK_DUMP_SIGNAL (SIGURG,
ignored by default) by the stackdump sitecustomize (STACKDUMP_DIR on its
PYTHONPATH) and writes `stack-PID.txt` into the attempt's folder (STACK_DIR_VAR) when
asked; py-spy, when installed, covers the ones that do not answer. Done at a timeout or
a cancel, before the tree is killed (run.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from reprospec.core import capped
from reprospec.core.pythonargs import is_python
from reprospec.core.signals import STACK_DUMP_SIGNAL
from reprospec.core.words import LEFT_THE_TREE, NOT_PYTHON, stack_header, stacks_omitted
from reprospec.process.childprotocol import RAISED
from reprospec.process.tree import ProcInfo, read_proc, shell_of_one_program

STACK_DIR_VAR = "REPROSPEC_STACK_DIR"
STACKDUMP_DIR = Path(__file__).resolve().parent.parent / "stackdump"

STACK_WAIT_S = 1.0
# How long a dump whose threads are written waits for its asyncio tasks (`wait_for_stack_files`)
# where its main thread is not waiting in the event loop's selector (`_loop_idle`).
TASKS_GRACE_S = 0.2
PY_SPY_TIMEOUT_S = 0.8
# A process's stack dump is the child's to write: it is read as its head and tail, and
# stack.txt holds at most STACKS_TOTAL_BYTES of them (a fork bomb's 300 dumps included).
STACK_HEAD_BYTES = 512 << 10
STACK_TAIL_BYTES = 128 << 10
STACKS_TOTAL_BYTES = 4 << 20
# The stackdump sitecustomize's lines around an asyncio process's tasks (its _TASKS_FOLLOW,
# _TASKS_END): the first begins the file where a SIGURG dumps tasks too, the second ends
# each such dump. Its tasks are written by a Python handler after faulthandler's threads, at
# the main thread's next bytecode: a file that stopped growing between two looks can still
# lack them, and the hang read `hang in <module>` again.
TASKS_FOLLOW = "# tasks follow each dump\n"
TASKS_END = "# tasks end\n"


# A frame of the stackdump sitecustomize itself, in faulthandler's words, gdb's (`line 577,
# in __init__`: a stack read from a core) or py-spy's: it wraps multiprocessing's Popen (its
# __init__, its poll), so a program's stacks showed `sitecustomize.py:450 in watched`
# between multiprocessing's frames (nu62b), and a forked DataLoader worker's stack read from
# its core still did. Not the program's: left out of stack.txt and the report.
_OUR_FRAME = re.compile(
    r'^\s+(?:File "[^"]*/stackdump/sitecustomize\.py", line \d+,? in .*'
    r"|\S.*? \([^()]*/stackdump/sitecustomize\.py:\d+\))$"
)
# A frame of the preload fork server, which runs the program's main in the attempt it
# forked: `_run_main`, `_become` and its `<module>` under every frame of the program where
# `python prog.py` has none. Left out only below a frame of the program's, so
# a process stopped in the server's own code still shows where.
_LAUNCHER_FRAME = re.compile(
    r'^\s+(?:File "[^"]*/reprospec_forkserver\.py", line \d+,? in .*'
    r"|\S.*? \([^()]*/reprospec_forkserver\.py:\d+\))$"
)
_ANY_FRAME = re.compile(r'^\s+(?:File "[^"]*", line \d+|\S.*? \([^()]*:\d+\)$)')


def without_our_frames(dump: str) -> str:
    """A stack dump (or a log holding one) without reprospec's own frames.

    The stackdump sitecustomize's wrappers (`_OUR_FRAME`) go wherever they are; the fork
    server's (`_LAUNCHER_FRAME`) where a frame of the program's is above them in the same
    stack, which is where `python prog.py` itself starts.
    """
    if "stackdump/sitecustomize.py" not in dump and "reprospec_forkserver.py" not in dump:
        return dump
    kept: list[str] = []
    below_theirs = False  # a frame of the program's came earlier in this stack
    for line in dump.split("\n"):
        if _OUR_FRAME.match(line):
            continue
        if _LAUNCHER_FRAME.match(line):
            if below_theirs:
                continue
        elif _ANY_FRAME.match(line):
            below_theirs = True
        else:
            below_theirs = False
        kept.append(line)
    return "\n".join(kept)


def _catches_dump_signal(pid: int) -> bool:
    try:
        status = read_proc(f"/proc/{pid}/status")
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith(b"SigCgt:"):
            mask = int(line.split()[1], 16)
            return bool(mask & (1 << (STACK_DUMP_SIGNAL - 1)))
    return False


def _looks_like_python(info: ProcInfo) -> bool:
    """Whether a process's executable is an interpreter's, by pythonargs' one name rule
    (`python3.13t`, `python3.11d`, PyPy's `pypy3.10-c`; not `python3-config`). An
    interpreter replaced while it runs (a venv rebuilt, an upgrade) reads
    `python3.11 (deleted)`: still one."""
    try:
        link = os.readlink(f"/proc/{info.pid}/exe")  # noqa: PTH115
        exe = os.path.basename(link.removesuffix(" (deleted)"))  # noqa: PTH119
    except OSError:
        exe = os.path.basename(info.cmdline.split(" ", 1)[0])  # noqa: PTH119
    return is_python(exe)


def _py_spy_dumps(pids: Sequence[int], budget_s: float, out_dir: Path) -> dict[int, str]:
    """`py-spy dump` for each pid in parallel, bounded; only successful dumps are returned.

    Each dump goes to a file in `out_dir` and is read back head + tail: a recursion a
    million frames deep makes py-spy print a million lines.
    """
    # Beside the engine's interpreter first, then PATH: `.venv/bin/reprospec` run without
    # the venv activated has py-spy in .venv/bin, which shutil.which never looked in, and a
    # hang's silent processes went without stacks. doctor finds it the same way.
    # Imported at a hang only: the native readers are no passing run's (test_imports).
    from reprospec.native.pyspy import pyspy_path

    exe = pyspy_path()
    if exe is None or not pids or budget_s <= 0:
        return {}
    running: dict[int, subprocess.Popen[bytes]] = {}
    for pid in pids:
        with contextlib.suppress(OSError), (out_dir / f"py-spy-{pid}.txt").open("wb") as out:
            # --full-filenames: py-spy otherwise names a file by its package part alone
            # (`threading.py`, `subprocess.py`), and a hang read by it was placed in the
            # standard library's frame (`Condition.wait (threading.py:327)`), where
            # faulthandler's full paths place it in the user's code that called it.
            running[pid] = subprocess.Popen(
                [exe, "dump", "--full-filenames", "--pid", str(pid)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
    deadline = time.monotonic() + budget_s
    dumps: dict[int, str] = {}
    for pid, spy in running.items():
        try:
            spy.wait(timeout=max(0.01, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(spy.pid, signal.SIGKILL)
            spy.wait()
            continue
        text = read_stack_dump(out_dir / f"py-spy-{pid}.txt")
        if spy.returncode == 0 and text.strip():
            dumps[pid] = text
    return dumps


def read_stack_dump(path: Path) -> str:
    """A stack dump's head and tail as text ('' when there is none), without the lines
    around its tasks (TASKS_FOLLOW, TASKS_END)."""
    try:
        data = capped.head_tail(path, STACK_HEAD_BYTES, STACK_TAIL_BYTES)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if text.startswith(TASKS_FOLLOW):
        text = text[len(TASKS_FOLLOW) :].replace("\n" + TASKS_END, "")
    return text


def _tasks_pending(path: Path) -> bool:
    """Whether the dump at `path` is a process's that dumps its asyncio tasks too
    (TASKS_FOLLOW) and does not end with their TASKS_END yet."""
    follow, end = TASKS_FOLLOW.encode(), TASKS_END.encode()
    try:
        with path.open("rb") as file:
            if file.read(len(follow)) != follow:
                return False
            file.seek(max(file.seek(0, os.SEEK_END) - len(end), len(follow)))
            return file.read() != end
    except OSError:
        return False


# The innermost frame of a thread waiting in its event loop's selector, in faulthandler's
# words: `selectors.py ... in select`, or `_run_once` where the select is native.
_LOOP_WAIT_FRAME = re.compile(
    r'^\s+File "[^"]*selectors\.py", line \d+ in select$'
    r'|^\s+File "[^"]*base_events\.py", line \d+ in _run_once$'
)
_LOOP_HEAD_BYTES = 64 << 10


def _loop_idle(path: Path) -> bool:
    """Whether the dump at `path` shows its current thread (the main thread, the one a
    process-directed signal interrupts first) waiting in its event loop's selector: the
    usual asyncio hang, whose tasks' handler does run, only late on a loaded machine."""
    try:
        with path.open("rb") as file:
            head = file.read(_LOOP_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    lines = head.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("Current thread ")), None)
    if at is None or at + 1 >= len(lines):
        return False
    return _LOOP_WAIT_FRAME.match(lines[at + 1]) is not None


def _idle(idle: dict[int, bool], pid: int, path: Path) -> bool:
    """`_loop_idle(path)`, kept in `idle` for `pid` until its dump changes size."""
    if pid not in idle:
        idle[pid] = _loop_idle(path)
    return idle[pid]


def wait_for_stack_files(
    stack_dir: Path, pids: Iterable[int], pause: Callable[[float], object] = time.sleep
) -> None:
    """Wait (at most STACK_WAIT_S) until each pid's `stack-PID.txt` is written out.

    `pause` passes the time: a plain sleep, or a step of the output pump so a
    child blocked on a full pipe can still write its dump. A dump whose asyncio tasks
    never come (a Python handler's, which runs at the main thread's next bytecode: never
    while it is blocked in native code, a CUDA sync or an NCCL collective) is read without
    them TASKS_GRACE_S after its threads stopped growing, not at the deadline: such a
    hang, the kind diagnosed, paid the whole STACK_WAIT_S (review). Not one whose main
    thread waits in the loop's selector (`_loop_idle`, the usual asyncio deadlock): its
    handler runs, late under load, and a dump read without its tasks titled the hang at
    `asyncio.run(main())`, so attempts of one hang differed; it waits to the deadline.
    """
    pending = list(pids)
    sizes: dict[int, int] = {}
    stable_since: dict[int, float] = {}  # when a pid's dump last stopped growing
    # `_loop_idle`'s answer for a pid's dump at its size: read once, not at every poll
    # past the grace, 40 reads of a file that had not changed (review).
    idle: dict[int, bool] = {}
    done: set[int] = set()
    deadline = time.monotonic() + STACK_WAIT_S
    while len(done) < len(pending) and time.monotonic() < deadline:
        pause(0.02)
        now = time.monotonic()
        for pid in pending:
            path = stack_dir / f"stack-{pid}.txt"
            size = capped.size(path)
            # Non-empty and unchanged since the last look: faulthandler has finished writing,
            # and the tasks' handler, where one dumps them (or its grace has passed).
            if size and size == sizes.get(pid):
                since = stable_since.setdefault(pid, now)
                if not _tasks_pending(path) or (
                    now - since >= TASKS_GRACE_S and not _idle(idle, pid, path)
                ):
                    done.add(pid)
            else:
                stable_since.pop(pid, None)
                idle.pop(pid, None)
            sizes[pid] = size


def collect_stacks(
    procs: Mapping[int, ProcInfo],
    stack_dir: Path,
    out_path: Path,
    root_pid: int | None = None,
    pause: Callable[[float], object] = time.sleep,
    asked: Callable[[], object] | None = None,
) -> Path | None:
    """Ask every Python process for its stacks and write them into `out_path`.

    STACK_DUMP_SIGNAL goes only to processes that catch it (our sitecustomize registered
    faulthandler there); py-spy, when installed, covers the Python processes that
    produced nothing. `pause` passes the time while the dumps are written (run.py's output
    pump, so a child blocked on a full pipe can still write). `asked` runs once the signals
    are sent: run.py asks a hang's processes while they are stopped for the native reader,
    and continues them there. Returns `out_path` when some stack was written.
    """
    alive = {pid: info for pid, info in procs.items() if info.alive}
    signalled: list[int] = []
    for pid in alive:
        if _catches_dump_signal(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, STACK_DUMP_SIGNAL)
                signalled.append(pid)
    if asked is not None:
        asked()
    wait_for_stack_files(stack_dir, signalled, pause)
    dumps: dict[int, str] = {}
    skipped: set[int] = set()
    budget = STACKS_TOTAL_BYTES
    for pid in sorted(signalled, key=lambda pid: (pid != root_pid, pid)):
        if budget <= 0:
            skipped.add(pid)  # the root's and the first ones' are in; memory stays bounded
            continue
        text = without_our_frames(read_stack_dump(stack_dir / f"stack-{pid}.txt"))
        if text.strip():
            dumps[pid] = text
            budget -= len(text)
    silent = [
        pid
        for pid, info in alive.items()
        if pid not in dumps and pid not in skipped and _looks_like_python(info)
    ]
    spied = _py_spy_dumps(silent, PY_SPY_TIMEOUT_S, stack_dir) if budget > 0 else {}
    if not dumps and not spied:
        return None
    python = {*dumps, *spied, *silent, *skipped}
    # The other programs the Python processes started (`subprocess.run(["sleep", "100"])`):
    # named with no stack, for a hang that sits in one while its parent only waits for it.
    started = {pid for pid, info in alive.items() if pid not in python and info.ppid in python}
    shown = [
        pid
        for pid in sorted(alive, key=lambda pid: (pid != root_pid, pid))
        if pid in python or pid in started
    ]
    left = _left_the_tree(alive, root_pid)
    parts: list[str] = []
    budget = STACKS_TOTAL_BYTES
    for index, pid in enumerate(shown):
        if budget <= 0:
            parts.append(stacks_omitted(len(shown) - index))
            break
        cmd = alive[pid].cmdline
        tags = (LEFT_THE_TREE,) if pid in left else ()
        if pid in dumps:
            parts.append(f"{stack_header(pid, cmd, *tags)}\n{dumps[pid].rstrip()}\n")
        elif pid in spied:
            spy = without_our_frames(spied[pid]).rstrip()
            parts.append(f"{stack_header(pid, cmd, '[py-spy]', *tags)}\n{spy}\n")
        elif pid in started:
            parts.append(f"{stack_header(pid, cmd, NOT_PYTHON)}\n(no Python stack)\n")
        else:
            note = (
                "(stack omitted: the dumps above reached the limit)"
                if pid in skipped
                else "(no Python stack: the process did not answer)"
            )
            parts.append(f"{stack_header(pid, cmd)}\n{note}\n")
        budget -= len(parts[-1])
    out_path.write_text("\n".join(parts), encoding="utf-8")
    return out_path


def _left_the_tree(alive: Mapping[int, ProcInfo], root_pid: int | None) -> set[int]:
    """The processes whose parents lead to no live root: a daemon that forked away and was
    reparented (its stack is no hang's place while the root waits on something else). None
    where the root is not among them (no tree to leave)."""
    if root_pid is None or root_pid not in alive:
        return set()
    left = set()
    for pid in alive:
        seen, at = {pid}, pid
        while at != root_pid and (parent := alive[at].ppid) in alive and parent not in seen:
            seen.add(parent)
            at = parent
        if at != root_pid:
            left.add(pid)
    return left


def remove_stack_dumps(folder: Path, names: frozenset[str] | None = None) -> frozenset[str] | None:
    """Remove the per-process dumps of an attempt from its folder: each Python process's
    `stack-PID.txt` (empty unless it was asked), `ended-PID.txt` (run.py read it) and
    `raised-PID.txt` (`keep_program_raised` kept the program's), and py-spy's
    `py-spy-PID.txt`. stack.txt holds what they said; the logs and the rest of the
    folder stay. `names`: the folder's listing (`listing`), where the caller has one.

    The names left (`names` less the dumps), for the readers after it (run.py hands them
    to `Evidence.read`, which then does not list the folder again); None where the folder
    could not be listed."""
    if names is None:
        names = listing(folder)
        if names is None:
            return None
    removed = []
    for name in names:
        kind, dash, pid = name.removesuffix(".txt").rpartition("-")
        if dash and kind in ("stack", "py-spy", "ended", "raised") and pid.isdigit():
            removed.append(name)
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))  # noqa: PTH108, PTH118 (per attempt)
    return names.difference(removed) if removed else names


def listing(folder: Path) -> frozenset[str] | None:
    """The names in an attempt's folder once its processes are gone, for
    `keep_program_raised` and `remove_stack_dumps` both (None: it cannot be listed). One
    listing where each looked for its files apart (an unlink, a stat, a scandir per
    attempt, for records that only a Python process writes). The docker runner keeps the
    record as the container ends and removes the dumps once its streams are closed, two
    moments apart: it lists the folder at each."""
    try:
        return frozenset(os.listdir(folder))  # noqa: PTH208 (names, not a Path each)
    except OSError:
        return None


_RAISED_PREFIX = "raised-"


def keep_program_raised(
    argv: Sequence[str],
    root_pid: int | None,
    folder: Path,
    names: frozenset[str] | None = None,
) -> bool:
    """Keep the program's record of how its main thread ended as RAISED; whether one was
    kept (RAISED is then in the folder, and an earlier one never is).

    Every Python process of an attempt writes `raised-PID.txt` (its parent's pid, then the
    traceback of the uncaught exception its main thread died of, or, at exit, nothing more:
    it died of none; stackdump/sitecustomize.py). Only the program's tells how the attempt
    ended: the root's own (a `python` root, a fork server's attempt, a shell that exec'd
    its one program), else, for a root `/bin/sh -c LINE` that runs one program
    (tree.one_program), the one record whose parent is the root. A child's (a worker's, a
    subprocess's) is not, and a line that may run several programs has none that is:
    nothing is kept, and classify reads stderr as before. Never raises: the record is a
    clue, not an input the outcome cannot do without.

    `root_pid` is the root's pid as the program's processes see it: the host's for the
    local runner, the container's for the docker runner (its init's ExitRecord), whose
    sitecustomize writes the container's pids; None where the root's is not known (a
    container without that init), and nothing is kept.

    `names`: the folder's `listing` once the attempt's processes are gone, where the caller
    has one: a folder no Python process wrote a record into (`true`, a C program) is then
    not looked into again.
    """
    if names is None:
        names = listing(folder)
        if names is None:
            return False
    if RAISED in names:
        with contextlib.suppress(OSError):
            (folder / RAISED).unlink()  # an earlier attempt's in this folder is not this one's
    if root_pid is None:
        return False
    own = f"{_RAISED_PREFIX}{root_pid}.txt"
    chosen: Path | None = folder / own if own in names else None
    if chosen is None and shell_of_one_program(argv):
        children = []
        for name in names:
            if name.startswith(_RAISED_PREFIX):
                path = folder / name
                with contextlib.suppress(OSError, ValueError):
                    head = capped.head_tail(path, 32, 0).split(b"\n", 1)[0]
                    if int(head) == root_pid:
                        children.append(path)
        chosen = children[0] if len(children) == 1 else None
    if chosen is None:
        return False
    try:
        chosen.rename(folder / RAISED)
    except OSError:
        return False
    return True
