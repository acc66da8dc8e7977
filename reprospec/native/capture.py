"""What the process layer does about native stacks for one attempt (`process.run.run_process`).

Crash: the attempt's cores are claimed (cores.py), moved into the attempt folder,
read, and deleted unless kept. A core_pattern that pipes cores to a handler
(`|/usr/share/apport/apport ...`) is said once; crashes then have no native stacks.
Hang: before a timed-out attempt is killed, every live process of the tree is read,
stopped `hang_deadline_s` after the timeout.

The reader is eu-stack where it is installed (eustack.py: the same frames in a fraction
of gdb's time, with py-spy's Python stacks of a core), else gdb (gdb.py), and the
stacks then say that eu-stack was missing. gdb stays the reader of what only it reads:
a core or process eu-stack could not unwind is read again with gdb. Both are imported at
the first crash or hang to read (which of them this machine has is readers.py's): an
attempt that neither crashes nor hangs needs no parser.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.frozen import frozen
from reprospec.core.jobreport import a_pipelines_child
from reprospec.core.logtext import with_bytes_written
from reprospec.native.cores import (
    REPLACED,
    CorePattern,
    core_pattern,
    core_written_since,
    dumped_signal,
    find_cores,
    looked_in,
    move_cores,
    moved_to,
    walked_to,
)
from reprospec.native.corewatch import WATCH
from reprospec.native.readers import (
    CORE_GDB_TIMEOUT_S,
    EUSTACK_INSTALL_HINT,
    GDB_INSTALL_HINT,
    HANG_DEADLINE_S,
    HANG_MIN_BUDGET_S,
    can_read,
    eustack_path,
    gdb_path,
    load_stretch,
    unavailable_reason,
)

if TYPE_CHECKING:
    # Built at a crash or a hang only (as their readers are imported): an attempt that
    # passes creates none of these classes.
    from reprospec.native.coreinfo import CoreInfo
    from reprospec.native.stacks import NativeStacks, ProcessStacks

# At most this many cores of one attempt are read (the first to die first); the others
# are listed, and deleted unless kept. Eight workers dying together cost 8 cores of 150 MB.
MAX_CORES = 3


@frozen
class Capture:
    """What the process layer does about native stacks for one attempt (process.run.run_process)."""

    out_dir: Path
    keep_cores: bool = False
    hang_deadline_s: float = HANG_DEADLINE_S  # after the timeout, the reader is stopped
    core_timeout_s: float = CORE_GDB_TIMEOUT_S
    # Folders the command's shell line moves to (`cd build && ./test`): a crash there leaves
    # its core there, as one in a folder a Python process moved to (cores.moved_to).
    elsewhere: tuple[Path, ...] = ()
    # The attempt's stderr log, where bash reports a pipeline's processes (main_core).
    stderr: Path | None = None

    def dumps_cores(self) -> bool:
        """Whether the attempt's root gets RLIMIT_CORE raised (allow_cores) before its exec."""
        if not can_read() and not self.keep_cores:
            return False  # nothing could read a core: do not write one
        return not core_pattern().piped

    def watch(self, workdir: Path) -> tuple[Path, ...]:
        """Where every core of a folder has one name (CorePattern.shared_name), hold each
        core created there from its creation while the attempt runs (corewatch.py), so
        that a later crash cannot take it away before it is claimed: in the workdir and in
        the folders the shell line moves to (`elsewhere`: `run.instances` of `cd build &&
        ./prog` crashing together in build/). The folders watched, each for WATCH.release
        once the attempt ended and claimed its cores."""
        pattern = core_pattern()
        if not pattern.shared_name or not self.dumps_cores():
            return ()
        found = [pattern.watched(folder) for folder in dict.fromkeys([workdir, *self.elsewhere])]
        return tuple(w[0] for w in found if w is not None and WATCH.acquire(*w))

    def hang(self, pids: Mapping[int, str], timed_out_at: float) -> NativeStacks:
        """Native stacks of the live processes `{pid: command}` of a timed-out attempt.

        `timed_out_at` is the time.monotonic() of the timeout: the reader is stopped
        `hang_deadline_s` after it (stretched on a loaded machine: `load_stretch`), whatever
        it has done by then.
        """
        left = timed_out_at + self.hang_deadline_s * load_stretch() - time.monotonic()
        return live_stacks(pids, budget_s=max(HANG_MIN_BUDGET_S, left))

    def crash(
        self,
        token: str,
        workdir: Path,
        root_pid: int,
        returncode: int | None,
        started: float,
        read_cores: bool = True,
        listed: frozenset[str] | None = None,
    ) -> NativeStacks | None:
        """Native stacks from the cores the attempt left; None when it left none and needed none.

        With `read_cores` False (an interrupted run) cores are only cleared away. `listed`:
        the names in `out_dir` once the attempt's processes were gone (cores.moved_to).
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
            elsewhere=self.elsewhere,
            stderr=self.stderr,
            listed=listed,
        )


# Said beside stacks gdb read because eu-stack was not there to read them faster.
GDB_FALLBACK = (
    f"eu-stack not found ({EUSTACK_INSTALL_HINT}): read with gdb, which takes seconds "
    "where eu-stack takes a fraction of one"
)


def live_stacks(pids: Mapping[int, str], budget_s: float = HANG_DEADLINE_S) -> NativeStacks:
    """Native stacks of live processes `{pid: command}` within `budget_s`: eu-stack where
    installed (each process that it could not read and time is left for, gdb again), else
    gdb, with a note that eu-stack is missing."""
    from reprospec.native.eustack import attach_eustack
    from reprospec.native.gdb import attach_stacks
    from reprospec.native.stacks import NativeStacks

    reason = unavailable_reason(crash=False)
    if reason is not None:
        return NativeStacks(unavailable=reason)
    if eustack_path() is None:
        found = attach_stacks(pids, budget_s)
        return replace(found, notes=(*found.notes, GDB_FALLBACK))
    deadline = time.monotonic() + budget_s
    found = attach_eustack(pids, budget_s)
    unread = {
        p.pid: p.command
        for p in found.processes
        if not p.threads and p.error and p.error.startswith("eu-stack printed no stack")
    }
    left = deadline - time.monotonic()
    if not unread or gdb_path() is None or left < HANG_MIN_BUDGET_S:
        return found
    again = {p.pid: p for p in attach_stacks(unread, left).processes if p.threads}
    processes = tuple(again.get(p.pid, p) for p in found.processes)
    return replace(found, processes=processes)


def core_stacks_of(info: CoreInfo, timeout_s: float) -> tuple[ProcessStacks, str | None]:
    """One core's stacks: eu-stack where installed, else gdb; a core eu-stack printed
    nothing for is read again with gdb. The note to say beside them (eu-stack missing)."""
    from reprospec.native.eustack import eustack_core_stacks
    from reprospec.native.gdb import core_stacks

    if eustack_path() is None:
        return core_stacks(info, timeout_s), GDB_FALLBACK
    stacks = eustack_core_stacks(info, timeout_s)
    if stacks.threads or gdb_path() is None or stacks.error is None:
        return stacks, None
    if not stacks.error.startswith(("eu-stack printed no stack", "eu-stack:")):
        return stacks, None  # stopped at its timeout: gdb would take longer still
    again = core_stacks(info, timeout_s)
    return (again if again.threads else stacks), None


_said_lock = threading.Lock()
_said: set[str] = set()


def say_once(message: str) -> bool:
    """True the first time this engine process sees `message` (a warning said once per run)."""
    with _said_lock:
        if message in _said:
            return False
        _said.add(message)
        return True


def _no_core(
    returncode: int | None,
    workdir: Path,
    started: float,
    pattern: CorePattern,
    elsewhere: Sequence[Path] = (),
    cut: bool = False,
) -> str:
    """Why an attempt whose process died of a core-dumping signal left no core to read;
    `elsewhere` the folders its processes moved to, looked in too; `cut` whether the walk
    under the workdir stopped at its bound (walked_to)."""
    signal = dumped_signal(returncode)
    died = f"a process died of {signal}"
    if returncode is not None and returncode > 0:
        # Only the exit status says so: the root may have exited with it on its own.
        died = (
            f"the attempt exited {returncode} (128 + {signal}, as a shell reports a child "
            "that died of it)"
        )
    said = f"native stacks unavailable: {died} but left no core"
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        # allow_cores raises the child's soft limit up to the hard one, which is then 0:
        # no folder was at fault, and none is worth naming.
        return (
            f"{said}: the hard core size limit (ulimit -Hc) is 0, so no process of the "
            "attempt could write one (raise it: limits.conf, or ulimit -Hc unlimited as root)"
        )
    # Attempts at once (-j, instances) in one workdir, or one folder its line `cd`s to: the
    # kernel unlinks `core` before it writes the next one, so the earlier crash's core is
    # gone before it is claimed (unless the watch held it: corewatch.py).
    replaced = [f for f in [workdir, *elsewhere] if core_written_since(f, started, pattern)]
    if pattern.shared_name and replaced:
        return (
            f"{said}: another crash in {with_bytes_written(str(pattern.folder(replaced[0])))} "
            "since this attempt started "
            f"most likely replaced it (kernel.core_pattern={pattern.raw!r} gives every core "
            "there the same name; `sysctl kernel.core_uses_pid=1` gives each process its own)"
        )
    return (
        f"{said} (kernel.core_pattern={pattern.raw!r}, "
        f"{looked_in(workdir, pattern, len(elsewhere), cut)}; "
        "the folder must be writable and the hard RLIMIT_CORE above 0)"
    )


def main_core(
    cores: Sequence[CoreInfo],
    root_pid: int | None,
    returncode: int | None,
    stderr: Path | None = None,
) -> int | None:
    """The index of the core of the attempt's main program among `cores` (oldest first):
    the root's own, else, where the root exited 128 + N (a `/bin/sh -c` root whose program
    died of signal N, which the outcome takes for the main process's crash), the last core
    of a child of the root dead of that signal: the header said the program the command
    runs was "a child process". Not a pipeline's later process that bash's report in the
    attempt's `stderr` lists (`set -o pipefail; a | b | c` whose b crashed): the outcome
    reads its crash as a child's (core/jobreport.py). None where neither is among them."""
    own = [i for i, info in enumerate(cores) if root_pid is not None and info.pid == root_pid]
    if own:
        return own[0]
    said = dumped_signal(returncode) if returncode is not None and returncode > 0 else None
    ran = [i for i, c in enumerate(cores) if said and c.ppid == root_pid and c.signal == said]
    if not ran or root_pid is None:
        return None
    pid = cores[ran[-1]].pid
    report = _tail(stderr) if stderr is not None and pid is not None else ""
    if pid is not None and report and a_pipelines_child(report, pid):
        return None
    return ran[-1]


# What of the attempt's stderr main_core reads for bash's report of a job: its end, as
# much as the outcome's reader keeps of it (outcome/evidence.py TAIL_BYTES).
_REPORT_TAIL_BYTES = 256 * 1024


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _REPORT_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


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
    elsewhere: Sequence[Path] = (),
    stderr: Path | None = None,
    listed: frozenset[str] | None = None,
) -> NativeStacks | None:
    """Claim the attempt's cores, move them into `out_dir`, read them; None when there were none.

    `started` is the attempt's start (time.time()). An attempt whose root died of a
    core-dumping signal (or exited 128 + one, as a shell says a child died of it) but that
    left no core gets a NativeStacks that says why. `listed`: the names in `out_dir` once
    the attempt's processes were gone, where the caller listed it (cores.moved_to).
    """
    pattern = core_pattern()
    root_signal = dumped_signal(returncode)
    dumped = root_signal is not None
    unreadable = (not can_read() and not keep_cores) or pattern.piped
    # Where its processes moved (os.chdir; `elsewhere`: its shell line's `cd`s): a relative
    # core_pattern's core lies there.
    elsewhere = list(dict.fromkeys([*elsewhere, *moved_to(out_dir, workdir, listed)]))
    cores = [] if unreadable else find_cores(token, workdir, root_pid, started, pattern, elsewhere)
    cut = False  # whether the walk under the workdir stopped at its bound
    walk = dumped and not unreadable and resource.getrlimit(resource.RLIMIT_CORE)[1] != 0
    if not cores and walk:
        # None where the records say: a process moved without one (a C program's chdir(),
        # a child started in another folder), and its core lies under the workdir. Not where
        # the hard core limit is 0 (`ulimit -Hc 0`): no process could write one (_no_core).
        walked, cut = walked_to(workdir, started, pattern)
        walked = [f for f in walked if f not in elsewhere]
        if walked:
            cores = find_cores(token, workdir, root_pid, started, pattern, walked)
    if not cores and not dumped:
        return None
    # A crash from here on: its stacks' classes are created now (a pass never gets here).
    from reprospec.native.stacks import NativeStacks, ProcessStacks

    if unreadable:
        return NativeStacks(unavailable=unavailable_reason())
    if not cores:
        why = _no_core(returncode, workdir, started, pattern, elsewhere, cut)
        return NativeStacks(unavailable=why)
    processes: list[ProcessStacks] = []
    notes: list[str] = []
    main = main_core(cores, root_pid, returncode, stderr)
    for index, (info, kept) in enumerate(move_cores(cores, out_dir)):
        if kept is not None and read_cores and index < MAX_CORES and can_read():
            stacks, note = core_stacks_of(replace(info, path=kept), timeout_s)
            if note is not None and note not in notes:
                notes.append(note)
        else:
            if kept is None:
                why = REPLACED
            elif not read_cores:
                why = "not read: the run was interrupted"
            elif not can_read():
                why = f"not read: gdb not found ({GDB_INSTALL_HINT})"
            else:
                why = f"not read: only the first {MAX_CORES} cores of an attempt are read"
            stacks = ProcessStacks(info.pid or 0, "core", info.command, info.signal, error=why)
        stacks = replace(stacks, root=index == main)
        if kept is None:
            pass  # nothing of it to keep or delete
        elif keep_cores:
            stacks = replace(stacks, core=str(kept))
        else:
            with contextlib.suppress(OSError):
                kept.unlink()
        processes.append(stacks)
    if len(cores) > MAX_CORES:
        notes.append(f"{len(cores)} processes left cores; the first {MAX_CORES} were read")
    return NativeStacks(processes=tuple(processes), notes=tuple(notes))


def merge(*parts: NativeStacks | None) -> NativeStacks | None:
    """One NativeStacks from several (a hang's attach plus the cores of earlier crashes)."""
    present = [p for p in parts if p is not None]
    if not present:
        return None  # every attempt that neither crashed nor hung
    from reprospec.native.stacks import NativeStacks

    processes = tuple(proc for p in present for proc in p.processes)
    reasons = [p.unavailable for p in present if p.unavailable]
    notes = [note for p in present for note in p.notes]
    if processes or len(reasons) > 1:
        # Some stacks were taken: what could not be taken is a note beside them.
        notes += reasons[0 if processes else 1 :]
        reasons = reasons[:0] if processes else reasons[:1]
    return NativeStacks(processes, reasons[0] if reasons else None, tuple(notes))
