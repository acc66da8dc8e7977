"""Find, reap and kill the processes of an attempt's tree.

An attempt is a child in its own session, tagged with a token in its environment
that every descendant inherits, and with a tag (a soft RLIMIT_LOCKS, watchdog.py)
that setsid, a cleared environment and a double fork all keep. The engine is a
subreaper: a descendant re-parented to it is found in its own tree, and the dead
ones are reaped as they appear (their wait status kept for the attempt). This module
reads that tree and kills it; starting a root is start.py's, running it to its end
run.py's, its stacks stacks.py's.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core import shellline
from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.signals import signal_name
from reprospec.process import leftovers, watchdog

if TYPE_CHECKING:
    from reprospec.core.childexit import ChildExit  # where a child was reaped

TOKEN_VAR = "REPROSPEC_ATTEMPT_TOKEN"
KILL_WAIT_S = 2.0
_PR_SET_CHILD_SUBREAPER = 36

_subreaper_lock = threading.Lock()
_subreaper_done = False
# Whether this kernel has /proc/PID/task/TID/children (`_tree_readable`).
_children_files = False
# The tags of the attempts running now (run.py adds and drops them): a stray tagged zombie
# of no running attempt is reaped by whichever attempt ends next.
RUNNING_TAGS: set[int] = set()
# The roots this engine started itself (start.popen_attempt, run.py) and has not yet
# waited for.
RUNNING_ROOTS: set[int] = set()
# The long-lived helpers started by start.start_helper (preload servers), by pid: they
# belong to no attempt.
HELPERS: dict[int, subprocess.Popen[bytes]] = {}


@frozen
class ProcInfo:
    """One process as seen in /proc."""

    pid: int
    ppid: int
    pgid: int
    state: str
    cmdline: str

    @property
    def alive(self) -> bool:
        """Running or sleeping, not a zombie waiting to be reaped."""
        return self.state not in ("Z", "X", "x")


def new_token() -> str:
    """A fresh attempt token: 32 random hex digits (what uuid4 gives, without importing
    uuid, which imports platform, at every start-up)."""
    return os.urandom(16).hex()


def become_subreaper() -> bool:
    """Make this process adopt orphaned descendants (Linux; best effort, once per process).

    Double-forked and setsid'd descendants then reparent to us instead of init, so
    they stay findable and we reap them.
    """
    global _subreaper_done
    with _subreaper_lock:
        if _subreaper_done:
            return True
        if not sys.platform.startswith("linux"):
            return False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper_done = bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
        except (OSError, AttributeError):
            return False
        return _subreaper_done


# /proc is read through str paths and os calls in this file, no Path object per pid: a
# scan reads files of every process of the machine (33 ms at 1,085 processes, issue 15).
# Those lines carry a PTH noqa.
def read_proc(path: str) -> bytes:
    # os calls, no file object: open() adds an fstat, an isatty ioctl and an lseek to every
    # file, and the engine reads a dozen of these per attempt (issue 15). /proc files are
    # made on read; read until the end, since a large one comes in several pieces.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(chunks)


def _proc_info(pid: int) -> ProcInfo | None:
    try:
        stat = read_proc(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = _stat_fields(stat)
    return ProcInfo(
        pid=pid,
        ppid=int(fields[_PPID]),
        pgid=int(fields[_PGRP]),
        state=fields[_STATE].decode(),
        cmdline="[" + stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode("utf-8", "replace") + "]",
    )


# /proc/PID/stat's fields (1-based, man 5 proc) as `_stat_fields` gives them, counted from the
# state (field 3): state, ppid (4), pgrp (5), cminflt (11), cutime and cstime (16, 17),
# sigignore (33).
_STATE = 3 - 3
_PPID = 4 - 3
_PGRP = 5 - 3
_CMINFLT = 11 - 3
_CUTIME = 16 - 3
_CSTIME = 17 - 3
_SIGIGNORE = 33 - 3
_FLAGS = 9 - 3
# The kernel's per-task flags (include/linux/sched.h) that say a process is on its way out:
# the task is exiting; it was killed by a signal (set on every thread of a group exit, a
# fatal signal's or exit_group's, before any core is written); it is writing a core.
_PF_EXITING = 0x4
_PF_DUMPCORE = 0x200
_PF_SIGNALED = 0x400
_TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")


def _stat_fields(stat: bytes) -> list[bytes]:
    """The fields of a /proc/PID/stat text after the command name, from the state on: the
    one parser of `_proc_info` (a scan's every process) and `waited_in` (an ended root).
    The command name may hold spaces and parentheses: the fields start after the last `)`."""
    return stat[stat.rfind(b")") + 2 :].split()


def ending(pid: int) -> bool:
    """Whether process `pid` has begun to end of its own (read before the engine signals it):
    a group exit under way, of a fatal signal (writing its core) or of exit_group, or every
    thread of it exiting or dead. Its exit status is fixed by then, and the kernel has it
    end without running another instruction of the program: a core being written takes a
    second or more for a large process, which is not the program still running.

    False where it cannot be read (gone: the caller's wait says so) or one thread of many
    ended on its own (a thread's exit is not the process's)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")  # noqa: PTH208
    except OSError:
        return False
    read = exiting = 0
    for tid in tids:
        try:
            fields = _stat_fields(read_proc(f"/proc/{pid}/task/{tid}/stat"))
            state, flags = fields[_STATE], int(fields[_FLAGS])
        except (OSError, IndexError, ValueError):
            continue  # a thread gone between the two reads: it ended
        read += 1
        if flags & (_PF_SIGNALED | _PF_DUMPCORE):
            return True
        exiting += bool(flags & _PF_EXITING) or state in (b"Z", b"X")
    return read > 0 and exiting == read


def reaped_children_cpu(pid: int) -> int | None:
    """The CPU nanoseconds of the children `pid` has waited for (cutime + cstime); None
    where it is gone or cannot be read."""
    try:
        fields = _stat_fields(read_proc(f"/proc/{pid}/stat"))
        return int((int(fields[_CUTIME]) + int(fields[_CSTIME])) * _TICK_NS)
    except (OSError, IndexError, ValueError):
        return None


def waited_for_children(pid: int) -> bool | None:
    """Whether the ended root `pid`, a zombie not yet reaped, ever waited for a child.

    The kernel adds a reaped child's page faults (and those of every descendant it
    reaped in turn) to its parent's `cminflt`, and any process that ran takes page
    faults: 0 means the root reaped no child, ever. With the engine's own record (the
    orphans it reaped, the processes it found left), this tells an attempt that ran one
    process from one that ran more (classify.py: a printed report of a child's death
    that no child can have made). None where it cannot be read: the root already reaped,
    or a root that ignores SIGCHLD (the kernel then reaps its children uncounted).
    """
    try:
        stat = read_stat(pid)
    except OSError:
        return None
    return waited_in(stat)


def read_stat(pid: int) -> bytes:
    """/proc/PID/stat in one read: a line of about 50 numbers and a command name of at most
    64 bytes, made whole into a page by the kernel (single_open), so a read of a page takes
    all of it, and `read_proc`'s read to the end (a second call, which finds none) is spared
    at every attempt's end (issue 30, item 5)."""
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def waited_in(stat: bytes) -> bool | None:
    """`waited_for_children` of a zombie's /proc/PID/stat read already: a forked attempt's,
    which its preload server reads before it reaps it (ForkedChild.zombie_stat)."""
    fields = _stat_fields(stat)
    try:
        if fields[_STATE] != b"Z":
            return None
        if int(fields[_CMINFLT]) > 0:
            return True
        # Its children, while it ignores SIGCHLD, are reaped by the kernel, uncounted. A root
        # that ignored it only for a while, or set SA_NOCLDWAIT, is not told from one that
        # ran none: programs that run children and report their deaths wait for them.
        return None if int(fields[_SIGIGNORE]) & (1 << (signal.SIGCHLD - 1)) else False
    except (IndexError, ValueError):
        return None


# A `/bin/sh -c` line's parts, outside quotes (core/shellline.py), that may fork a process
# of their own: a subshell, a brace group, a here-document or a process substitution.
_MAY_FORK = Lazy(r"[(){}<]")
# The operators of a list (`a; b`, `a && b`, `a || b`, one a line), and what is left of a
# pipeline or a background job once they are taken out.
_LIST = Lazy(r"&&|\|\||;|\n")
# Commands every POSIX /bin/sh (dash, bash, busybox) runs itself, without a fork.
_BUILTINS = frozenset(
    {":", "true", "false", "exit", "cd", "export", "unset", "set", "shift", "umask", "echo",
     "printf", "test", "["}
)  # fmt: skip
_ENDED_PREFIX = "ended-"


def one_program(line: str) -> bool:
    """Whether a `/bin/sh -c` line forks one program and nothing else: one simple command
    (`A=1 python x.py --n 3`), or a list of it and the shell's own builtins (`cd sub &&
    python x.py`, `python x.py; exit $?`). What is quoted is one word, whatever it holds
    (`python -c "import sys; sys.exit(139)"`: its `;` and `(` are Python's, where they
    made the line "may fork" and its exit 139 read as a shell's SIGSEGV)."""
    unquoted = shellline.skeleton(line)
    if unquoted is None or _MAY_FORK.search(unquoted):
        return False
    unquoted = shellline.DUPLICATE.sub(" ", unquoted)
    if "&" in unquoted.replace("&&", "") or "|" in unquoted.replace("||", ""):
        return False  # a background job or a pipeline
    programs = 0
    for part in _LIST.split(unquoted):
        # Its first word past the leading assignments (`A=1 python`) names what it runs.
        words = (part or "").split()
        while words and shellline.ASSIGNMENT.match(words[0]):
            words.pop(0)
        if words and words[0] not in _BUILTINS:
            programs += 1
    return programs == 1


def exec_target(argv: Sequence[str]) -> Sequence[str]:
    """What `argv` runs as the same process: past the prefixes that apply something and
    exec the rest, `nice -n N` (the docker runner's perturbation, perturb/container.py) and
    launch.py with its options (rlimits.wrap_argv: the local runner's limits, perturbations
    and barrier). launch.py's `--init` runs its command as a child instead: not looked past.
    Without this, a perturbed attempt's root read as no `/bin/sh -c` (`perturb:
    {nice: 5}` kept no record of the program's exception, and stderr decided)."""
    while True:
        if len(argv) > 3 and argv[0] == "nice" and argv[1] == "-n":
            argv = argv[3:]
        elif (
            len(argv) > 4
            and Path(argv[3]).name == "launch.py"
            and tuple(argv[1:3]) == ("-S", "-E")
            and "--" in argv
            and "--init" not in argv[: list(argv).index("--")]
        ):
            argv = argv[list(argv).index("--") + 1 :]
        else:
            return argv


def shell_of_one_program(argv: Sequence[str]) -> bool:
    """Whether `argv` is, or execs (`exec_target`), a root `/bin/sh -c LINE` whose line forks
    one program (`one_program`): the shell whose one child is the attempt's program, as
    `program_ran_alone`, `program_ending` and stacks.keep_program_raised read it."""
    argv = exec_target(argv)
    return len(argv) == 3 and tuple(argv[:2]) == ("/bin/sh", "-c") and one_program(argv[2])


def _is_shell(executable: bytes) -> bool:
    """Whether a record's parent may be the shell that forked the program, by its
    executable's name (/proc/PPID/exe, read by the program as it began:
    stackdump/sitecustomize.py): one of shellline.SHELLS."""
    name = os.path.basename(executable.removesuffix(b" (deleted)"))  # noqa: PTH119
    return name.decode("utf-8", "replace") in shellline.SHELLS


def _programs_of(root_pid: int, folder: Path) -> list[list[str]] | None:
    """The records (ended-PID.txt's first line, split) of the Python programs the root
    forked as a shell; None where that is not known: the root is itself a Python program
    (its own record: a shell that exec'd it, bash as /bin/sh, `exec python x.py`, whose
    children's records name it their parent), or a record whose parent is the root was
    begun under no shell (bash exec'd `timeout -s KILL 60 python x.py`, whose 137 is
    timeout's report of its child), or the folder cannot be read.

    A record is its fields (the parent's pid alone where begun, four where ended) on its
    first line, and the parent's executable as the program began on its second."""
    root_record = f"{_ENDED_PREFIX}{root_pid}.txt"
    mine: list[list[str]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name == root_record:
                    return None
                if not entry.name.startswith(_ENDED_PREFIX):
                    continue
                with contextlib.suppress(OSError, ValueError):
                    first, _, parent = read_proc(entry.path).partition(b"\n")
                    fields = first.decode().split()
                    if fields and int(fields[0]) == root_pid:
                        if not _is_shell(parent.removesuffix(b"\n")):
                            return None
                        mine.append(fields)
    except OSError:
        return None
    return mine


def program_ran_alone(argv: Sequence[str], root_pid: int, folder: Path) -> int | None:
    """Where `argv`, a root `/bin/sh -c LINE` that forks one program (`one_program`), ran
    only that program, a Python process that ended normally and never reaped a child: the
    exit status the program asked for (its record's; None otherwise).

    The shell's own count (`waited_for_children`) includes its one child, the program;
    the program's count is what its ended-PID.txt says (the engine's sitecustomize writes
    it at a normal exit: stackdump/sitecustomize.py). A program that died of a signal, a
    program that is no Python, a line that may run more, or a root the shell exec'd
    (`_programs_of`) writes none, is not one program or is not the shell: not known, None.
    The record is written before the interpreter's shutdown, so it vouches for the status
    it asked for only (`ran_alone_with`).
    """
    if not shell_of_one_program(argv):
        return None
    mine = _programs_of(root_pid, folder)
    if mine is None or len(mine) != 1 or len(mine[0]) != 4:
        return None
    try:
        _, cminflt, ignored, asked = (int(field) for field in mine[0])
    except ValueError:
        return None
    if cminflt != 0 or ignored & (1 << (signal.SIGCHLD - 1)):
        return None
    return asked


def _exits_with_a_status_of_its_own(line: str) -> bool:
    """Whether the line's shell may exit with a status it was given, not its program's: an
    `exit N` (`python3 segv.py; exit 137`, whose SIGSEGV read as the program's SIGKILL).
    `exit` and `exit $?` pass the program's on; a quoted word (`exit "$?"`) is not read,
    so not known."""
    unquoted = shellline.skeleton(line) or ""
    for part in _LIST.split(unquoted):
        words = (part or "").split()
        if len(words) > 1 and words[0] == "exit" and words[1] != "$?":
            return True
    return False


def program_died(argv: Sequence[str], root_pid: int, folder: Path, returncode: int | None) -> bool:
    """Whether the shell's `returncode` 128 + N reports the death by a signal of the one
    program a root `/bin/sh -c LINE` forks (`one_program`): a Python process whose record
    (ended-PID.txt, its parent the root, a shell as it began) was begun at its start and
    never ended, so it asked for no status (sys.exit, os._exit, a SystemExit raised and a
    run to its end all end it).

    dash forks the program and reports its SIGKILL as 137, where bash execs it and the
    engine reads -9 itself, as it does of a list command: the shell's word is then the
    main process's own death (rule 2). False where it is not known (`_programs_of`): a
    program that is no Python or started without the sitecustomize (`python -S`, `-I`,
    `-E`), a root the shell exec'd (bash's `timeout -s KILL 60 python x.py`: timeout's 137
    may be its report of its child; `bash -c 'python x.py'`: the root is the program, and
    its own status no shell's word), a line that may run more than one, no record or two.
    An ended record is no death, whatever status it asked: the status a SystemExit raised
    asks is not known to the record, which says 0 (`raise SystemExit(137)`).
    """
    if returncode is None or not 128 < returncode < 256 or not shell_of_one_program(argv):
        return False
    if _exits_with_a_status_of_its_own(argv[2]):
        return False
    mine = _programs_of(root_pid, folder)
    return mine is not None and len(mine) == 1 and len(mine[0]) == 1


def program_ending(argv: Sequence[str], root_pid: int) -> bool:
    """Whether the attempt whose root `root_pid` runs `argv` has begun to end of its own: its
    root (`ending`), or the one program a root `/bin/sh -c LINE` forks (`one_program`), after
    which the shell runs its builtins alone and ends with the program's status."""
    if ending(root_pid):
        return True
    if not shell_of_one_program(argv):
        return False
    kids = _children_of(root_pid)
    return len(kids) == 1 and ending(kids[0])


def ran_alone_with(asked: int | None, returncode: int) -> bool:
    """Whether the program's record (`program_ran_alone`: the status it asked for) holds
    for the shell's `returncode`: where the shell reports 128 + N that the program did not
    ask for, it died after its record, in its shutdown (a `__del__`, a native library's
    destructor, with no faulthandler left to report it), and the shell's status is that
    death's."""
    return asked is not None and (returncode == asked or not 128 < returncode < 256)


def _with_cmdline(info: ProcInfo) -> ProcInfo:
    try:
        cmdline = read_proc(f"/proc/{info.pid}/cmdline").rstrip(b"\0").replace(b"\0", b" ")
    except OSError:
        return info
    if not cmdline:
        return info
    return dataclasses.replace(info, cmdline=cmdline.decode("utf-8", "replace"))


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        environ = read_proc(f"/proc/{pid}/environ")
    except OSError:
        return False
    return needle in environ.split(b"\0")


def _children_of(pid: int) -> list[int]:
    """The children of every thread of `pid` (/proc/PID/task/TID/children); [] when unreadable."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")  # noqa: PTH208
    except OSError:
        return found
    for tid in tids:
        found.extend(_steady_children(f"/proc/{pid}/task/{tid}/children"))
    return found


def children(pid: int) -> list[int]:
    """The children of `pid` (of every thread of it); [] when unreadable."""
    return _children_of(pid)


def _steady_children(path: str, lasting: frozenset[int] = frozenset()) -> set[int]:
    """A `children` file read until two reads agree; every pid any read listed.

    The kernel writes the list a child at a time and, when the child it listed last is
    reaped meanwhile (an engine thread waiting for its root), goes on by position: the
    child after it is left out of that read (proc(5): reliable only with the children
    stopped). A skipping read lists the reaped child, which no later read does, so two
    equal reads in a row mean the first skipped nothing; the union keeps the reads'
    extra pids (dead or unrelated), which callers read and drop.

    `lasting`: children no one reaps while the engine runs (its watchdog). A read that
    lists only those skipped nothing either (only a child it listed, gone from the list
    meanwhile, can be skipped past): one read, where the engine's main thread, the
    watchdog's parent, was read twice at every attempt's end (issue 30, item 5).
    """
    seen: set[int] = set()
    last: bytes | None = None
    for _ in range(4):
        try:
            text = read_proc(path)
        except OSError:
            break
        if text == last or not text.strip():
            # An empty read skipped nothing: the kernel found no child at its first
            # position, and only a child it had listed can be skipped past. Most engine
            # threads have no child: one read each, not two.
            break
        try:
            listed = {int(c) for c in text.split()}
        except ValueError:
            break
        seen |= listed
        if listed <= lasting:
            break
        last = text
    return seen


def _tree_readable() -> bool:
    """Whether the engine's own tree holds every process of its attempts, and can be read:
    it is a subreaper, and the kernel has the `children` files."""
    global _children_files
    if not _subreaper_done:
        return False
    if not _children_files:
        # The kernel has the files or not (CONFIG_PROC_CHILDREN): asked until found once,
        # not at every attempt's end.
        here = f"/proc/self/task/{threading.get_native_id()}/children"
        _children_files = os.path.exists(here)  # noqa: PTH110
    return _children_files


def own_tree() -> list[int] | None:
    """Every descendant of this engine, or None when that cannot stand for the whole machine.

    The engine is a subreaper: an attempt's process that outlives its parent (a daemon,
    a setsid'd double fork) is re-parented to the engine, never to init, so all of an
    attempt's processes stay in the engine's own tree. Walking that tree reads a handful of
    files where a scan of /proc reads three per process of the machine (33 ms at 1,085
    processes, more than a `python -c pass` attempt). Without the subreaper, or without
    the kernel's `children` files, callers scan all of /proc as before.
    """
    if not _tree_readable():
        return None
    return descendants(os.getpid())[1:]


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, read from the `children` files (`pid` alone where
    the kernel has none)."""
    seen: list[int] = []
    stack = [pid]
    visited: set[int] = set()
    while stack:
        found = stack.pop()
        if found in visited:
            continue
        visited.add(found)
        seen.append(found)
        stack.extend(_children_of(found))
    return seen


def _all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]  # noqa: PTH208
    except OSError:
        return []


def find_attempt_processes(
    token: str, root_pid: int | None = None, tag: int | None = None
) -> dict[int, ProcInfo]:
    """Every process of an attempt: the root's process group, its descendants, and token holders.

    With `tag`, also the engine's own children that carry it: descendants that left
    the group and the environment (setsid, `env -i`) and were re-parented to us.

    Looked for in the engine's own process tree (see `own_tree`), else in all of /proc.
    """
    needle = f"{TOKEN_VAR}={token}".encode()
    me = os.getpid()
    uid = os.getuid()
    infos: dict[int, ProcInfo] = {}
    found: set[int] = set()
    # The engine's helpers (its watchdog, preload servers) belong to no attempt; a
    # server's children (its forks) are attempts all the same.
    helpers = helper_pids()
    candidates = own_tree()
    if candidates is None:
        candidates = _all_pids()
    elif root_pid is not None and root_pid not in candidates:
        candidates.append(root_pid)  # not ours (a test's own Popen): read it all the same
    for pid in candidates:
        if pid == me or pid in helpers:
            continue
        info = _proc_info(pid)
        if info is None:
            continue
        infos[pid] = info
        if root_pid is not None and (pid == root_pid or info.pgid == root_pid):
            found.add(pid)
            continue
        if tag is not None:
            owner = watchdog.tag_of(pid)
            if owner == tag:
                found.add(pid)
                continue
            if watchdog.is_tag(owner):
                continue  # another attempt's (running alongside): its environment is not read
        with contextlib.suppress(OSError):
            # Only our own processes can carry the token (and be read).
            if os.stat(f"/proc/{pid}").st_uid == uid and _has_token(pid, needle):  # noqa: PTH116
                found.add(pid)
    # Descendants through parent links catch zombies and processes that dropped the token.
    children: dict[int, list[int]] = {}
    for info in infos.values():
        children.setdefault(info.ppid, []).append(info.pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found and child != me:
                found.add(child)
                stack.append(child)
    return {pid: _with_cmdline(infos[pid]) for pid in found}


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def stop_processes(pids: Iterable[int], pgid: int | None) -> None:
    """SIGSTOP the attempt's processes (its group first): held where they are, not killed.

    A stopped process cannot exit, fork or run, and gdb (or any ptrace reader) reads it
    as it was when stopped; SIGKILL still ends it afterwards without a SIGCONT.
    """
    _signal_processes(pids, pgid, signal.SIGSTOP)


def continue_processes(pids: Iterable[int], pgid: int | None) -> None:
    """SIGCONT what `stop_processes` stopped (its group first): a hang's processes, read by
    the native reader while stopped, then asked for their Python stacks (run.py)."""
    _signal_processes(pids, pgid, signal.SIGCONT)


def _signal_processes(pids: Iterable[int], pgid: int | None, sig: signal.Signals) -> None:
    """`sig` to the group `pgid`, then to each of `pids` (one that left the group too);
    a process already gone is no error."""
    if pgid is not None:
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def kill_attempt(
    token: str, root_pid: int | None, pgid: int | None, tag: int | None = None
) -> dict[int, ProcInfo]:
    """SIGKILL every process of the attempt until none is left; returns all it found.

    Done only after a pass that finds nothing alive follows another such pass: a
    process re-parented to the engine while a pass read the tree (its parent dying of
    the SIGKILL between the read of our children and the read of its own) is missed by
    that pass alone. Its parent shows as dead only once the re-parenting is done, so
    the pass after sees it.
    """
    seen: dict[int, ProcInfo] = {}
    deadline = time.monotonic() + KILL_WAIT_S
    quiet_passes = 0
    while True:
        # Stopped first, killed after: a stopped process cannot fork, so a growing tree
        # (a fork bomb) cannot outrun the pass that reads it.
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            if pgid is not None:
                with contextlib.suppress(OSError):
                    os.killpg(pgid, sig)
        procs = find_attempt_processes(token, root_pid, tag)
        seen.update(procs)
        alive = [pid for pid, info in procs.items() if info.alive]
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        _reap(set(seen) - {root_pid}, wait_s=0)
        quiet_passes = 0 if alive else quiet_passes + 1
        if quiet_passes == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    # The last ones killed are zombies only now; orphans among them are ours to reap.
    _reap(set(seen) - {root_pid}, wait_s=max(0.0, deadline - time.monotonic()))
    return seen


def reap_orphans(procs: Mapping[int, ProcInfo], root_pid: int | None) -> tuple[ChildExit, ...]:
    """Reap the attempt's dead processes re-parented to us, and say how each one ended.

    A descendant whose parent exited before it died is ours to wait for (the
    subreaper): its wait status is the only record of a crash nobody printed.
    Call it before killing anything, so the statuses are the attempt's own doing.
    """
    me = os.getpid()
    exits: list[ChildExit] = []
    for pid in sorted(procs):
        info = procs[pid]
        if pid == root_pid or info.alive or info.ppid != me:
            continue
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if done != pid:
            continue
        ended = _exit_of(status, info)
        if ended is not None:
            exits.append(ended)
    return tuple(exits)


def _own_children() -> list[int]:
    """The pids of this process's children (every thread's), from /proc."""
    return _children_of(os.getpid())


def only_known_children() -> bool:
    """Whether every child of the engine is a root of a running attempt or a helper.

    Then no process of an attempt that just ended (its root waited for) is left
    anywhere, and no stray of an earlier one: the engine is a subreaper, so a process
    that outlives its parent, or a zombie nobody reaped, becomes the engine's own child,
    never another attempt's. The search of `find_attempt_processes` and the zombie
    sweep read /proc files of every process of the running attempts, about 0.2 ms per
    attempt (issue 15); one look at the engine's children settles most attempts.

    Two threads' children are looked at, not every thread's: the kernel gives a process
    whose parent exits to the subreaper's first live thread, its main one (`find_new_reaper`,
    then `find_alive_thread`: the thread group's leader, alive while the engine runs), so
    every process an attempt left, alive or dead, is that thread's child; and the calling
    thread's, which started the attempt's root (waited for) and any other child it made.
    Another thread's child is one it started (another attempt's root, a helper), never a
    process of this attempt: listing every thread and reading each one's file cost 50 us
    of CPU per attempt beside six threads, these two reads 21 us (issue 30, item 5).
    """
    if not _tree_readable():
        return False
    known = RUNNING_ROOTS | helper_pids()
    # The watchdog, the main thread's child, is reaped by no one while the engine runs.
    dog = leftovers.watchdog_pid()
    lasting = frozenset(() if dog is None else (dog,))
    me, caller = os.getpid(), threading.get_native_id()
    for tid in (me,) if caller == me else (me, caller):
        listed = _steady_children(f"/proc/{me}/task/{tid}/children", lasting)
        if any(pid not in known for pid in listed):
            return False
    return True


def _exit_of(status: int, info: ProcInfo) -> ChildExit | None:
    """How the reaped process `info` ended (its group kept: a program's `os.killpg`)."""
    # Imported at the first child reaped: a program that starts none never needs it.
    from reprospec.core.childexit import ChildExit

    if os.WIFSIGNALED(status):
        died = signal_name(os.WTERMSIG(status))
        return ChildExit(info.pid, info.cmdline, signal=died, group=info.pgid)
    if os.WIFEXITED(status):
        return ChildExit(info.pid, info.cmdline, exit_code=os.WEXITSTATUS(status))
    return None


def reap_tagged_zombies(tag: int | None, root_pid: int | None) -> tuple[ChildExit, ...]:
    """Reap the dead processes re-parented to us that carry `tag`, and say how each ended.

    Also reaps, without a word, the dead tagged processes of attempts no longer
    running (any tag of no running attempt): nobody else will. Never the root (its
    Popen waits for it) and never a process without a tag (a helper's own child).
    """
    exits: list[ChildExit] = []
    for pid in _own_children():
        if pid == root_pid:
            continue
        info = _proc_info(pid)
        if info is None or info.alive:
            continue
        owner = watchdog.tag_of(pid)
        if not watchdog.is_tag(owner) or (owner != tag and owner in RUNNING_TAGS):
            continue
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if done == pid and owner == tag:
            ended = _exit_of(status, info)
            if ended is not None:
                exits.append(ended)
    return tuple(exits)


def _reap(pids: set[int], wait_s: float) -> set[int]:
    """waitpid() each pid that became our child (subreaper); returns those still around."""
    left = set(pids)
    deadline = time.monotonic() + wait_s
    while left:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                # Not ours (yet): gone, or still waiting for its own parent to reap it.
                if not os.path.exists(f"/proc/{pid}"):  # noqa: PTH110
                    left.discard(pid)
                continue
            if done == pid:
                left.discard(pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.005)
    return left


def helper_pids() -> set[int]:
    """The engine's own helpers, its watchdog and preload servers, while not reaped.

    A helper not reaped keeps its pid (a zombie holds it), so no process of an
    attempt can have it; once reaped, its pid may be anyone's and is not skipped.
    """
    pids = {pid for pid, proc in list(HELPERS.items()) if proc.returncode is None}
    dog = leftovers.watchdog_pid()
    if dog is not None:
        pids.add(dog)
    return pids
