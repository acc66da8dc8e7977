"""Run one attempt's process tree from its start to the end of its last process.

Its output is pumped into sinks (output.py) by the calling thread; at the timeout, when
`run.stall` finds no progress for that long (progress.py, asked by the same loop), or on
cancel, every Python process of the attempt is asked for its stacks (stacks.py)
before the whole tree is killed (tree.py); whatever the outcome, no process of the
attempt survives `run_process`. The root is started by start.py, or by a preload
server (forkserver.py); the watchdog and the attempt's in-flight record (leftovers.py)
end the rest when the engine itself is killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reprospec import native as native_stacks
from reprospec.core.frozen import frozen
from reprospec.core.words import plural, process_limit_reached
from reprospec.process import leftovers, pidlimit, stacks, tree
from reprospec.process.childprotocol import RAISED
from reprospec.process.cpuwait import CpuWait
from reprospec.process.output import Sink
from reprospec.process.progress import ProgressWatch
from reprospec.process.start import ChildHandle, Start, popen_attempt

if TYPE_CHECKING:
    from reprospec.core.childexit import ChildExit  # made where tree.py reaps one

DRAIN_WAIT_S = 1.0
# How long an attempt whose program had begun to end of its own as the stop came
# (`tree.program_ending`: a core being written, an exit under way) is given to finish: then
# its status is its own, where a kill in the middle of its core made it SIGKILL's. A core
# larger than this writes is cut short and the attempt with it (run again on resume); a
# stop waits no longer.
ENDING_WAIT_S = 2.0
_READ_SIZE = 1 << 16
# A pipe's capacity at its making (Linux): a read that takes this much found it full.
_PIPE_DEFAULT = 1 << 16
# How often a running attempt's dead, re-parented processes are reaped.
ZOMBIE_SWEEP_S = 0.5
# The most reads of the pipes before a stall is judged (64 KiB each): a child that floods
# them is not stalled, and what is left unread is read by the next turn of the loop.
_DRAIN_STEPS = 64


@frozen
class ProcessResult:
    """What happened to one process tree."""

    returncode: int | None
    # At the timeout, or stalled: a hang either way (`stalled` says it was the stall).
    timed_out: bool
    interrupted: bool
    duration_s: float
    started: str
    finished: str
    stack_path: Path | None
    warnings: tuple[str, ...]
    # native-stacks.txt, when native stacks were asked for and something was found (native.py)
    native_path: Path | None = None
    # Descendants that died as orphans of ours (the subreaper) before the attempt ended.
    child_exits: tuple[ChildExit, ...] = ()
    # time.monotonic() when the root process was seen to end (or was killed).
    ended_at: float | None = None
    # `run.stall` ended it: no progress for that long (`timed_out` is set too).
    stalled: bool = False
    # Whether a process other than the root ran in the attempt (None: not known), from
    # the root's own count of the children it reaped and what the engine found and reaped.
    descendants: bool | None = None
    # The root `/bin/sh -c LINE`'s 128 + N reports its one program's death by signal N, as
    # the program's own record tells (tree.program_died): the main process's death.
    program_died: bool = False
    # The attempt's pids cgroup refused a fork or a thread: the warning's words (also a
    # warning), for the classifier to name in a failure's detail.
    process_limit: str | None = None
    # The names in `stack_dir` once the attempt is over and the engine wrote what it writes
    # there (the program's RAISED kept, the dumps removed, native stacks written); None
    # where it could not be listed. One listing an attempt, for Evidence.read.
    names: frozenset[str] | None = None


class AttemptLost(OSError):
    """The engine failed after the attempt's root started (its tree was killed): the
    attempt ran, so this is never "cannot start"."""


def _after_start_failure(exc: OSError) -> AttemptLost:
    why = "fork failed: process limit" if pidlimit.fork_failed(exc) else exc.strerror or str(exc)
    return AttemptLost(exc.errno, f"the engine lost the attempt after it started: {why}")


class OutputLost(OSError):
    """The attempt's output could not be written (a full disk): the attempt was stopped.

    Its own class, so a runner tells it from a program that could not be started.
    """


def utc_now() -> str:
    """The current time as ISO-8601 UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _lost(exc: OSError) -> OutputLost:
    return OutputLost(exc.errno, f"its output could not be written: {exc.strerror or exc}")


def _close_sinks(*sinks: Sink) -> None:
    """Close every sink; a failure (the tail written to a full disk) is OutputLost."""
    failure: OSError | None = None
    for sink in sinks:
        try:
            sink.close()
        except OSError as exc:
            failure = failure or exc
    if failure is not None:
        raise _lost(failure) from failure


class _Pump:
    """Moves bytes from the child's pipes to sinks, and notices when the child exits.

    A `select.poll` of the pipes and the pidfd: it keeps no descriptor of its own in the
    kernel (an epoll selector costs a create, a control call per pipe in and out, and a
    close, per attempt) and no key objects in Python.

    A pipe is enlarged (1 MiB: fewer, larger reads of a child that floods its output) at
    the first read that finds it full, not at the start: most attempts never fill their
    64 KiB, and the two resizes were two system calls and a buffer table made and freed
    at every attempt (issue 30, item 5).
    """

    def __init__(self, proc: ChildHandle, stdout: Sink, stderr: Sink) -> None:
        self.proc = proc
        self.poller = select.poll()
        self.sinks: dict[int, Sink] = {}
        self.exited = False
        self.open_pipes = 0
        self.pidfd = -1
        # Every byte read from the child's pipes: whether it printed since one last looked.
        self.bytes_read = 0
        # The pipes enlarged so far (`_grow`).
        self.grown: set[int] = set()
        for pipe, sink in ((proc.stdout, stdout), (proc.stderr, stderr)):
            assert pipe is not None
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            self.poller.register(fd, select.POLLIN)
            self.sinks[fd] = sink
            self.open_pipes += 1
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(proc.pid)
                self.poller.register(self.pidfd, select.POLLIN)

    def step(self, timeout: float) -> None:
        """Wait up to `timeout` for output or the child's exit, and handle what came."""
        if self.pidfd < 0 and not self.exited:
            # Without a pidfd, exits are only seen by polling.
            timeout = min(timeout, 0.02)
        # Milliseconds, rounded up by poll itself (as the selectors module did).
        for fd, _ in self.poller.poll(max(0.0, timeout) * 1000):
            sink = self.sinks.get(fd)
            if sink is None:  # the pidfd: the root ended
                self.exited = True
                self.poller.unregister(fd)
                continue
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                self.bytes_read += len(chunk)
                if len(chunk) >= _PIPE_DEFAULT and fd not in self.grown:
                    self._grow(fd)
                try:
                    sink.write(chunk)
                except OSError as exc:
                    raise _lost(exc) from exc
            else:
                self.poller.unregister(fd)
                del self.sinks[fd]
                self.open_pipes -= 1
        if self.pidfd < 0 and not self.exited and self.proc.poll() is not None:
            # With a pidfd its event says so, and the root stays unreaped until run_process
            # waits for it: its zombie tells whether it ran children (tree.waited_for_children).
            self.exited = True

    def _grow(self, fd: int) -> None:
        """The child fills pipe `fd`: fewer, larger reads from now on (once a pipe)."""
        self.grown.add(fd)
        with contextlib.suppress(OSError):  # over the user's pipe quota: it stays as it is
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)

    def drain(self, most: int = _DRAIN_STEPS) -> int:
        """Read what the child's pipes hold now, without waiting (at most `most` reads of
        each): the bytes read. The child's end is noticed too (`exited`)."""
        before = self.bytes_read
        for _ in range(most):
            read = self.bytes_read
            self.step(0.0)
            if self.bytes_read == read:
                break
        return self.bytes_read - before

    def close(self) -> None:
        """Release the pidfd (the poll object holds nothing in the kernel)."""
        self.sinks.clear()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


class StallJudge:
    """`run.stall` asked at a sweep of the loop, on what the attempt has written by then.

    The loop's last read of the pipes may be old: an engine descheduled for the whole
    stall window (a loaded machine) left the child's lines unread in the pipe, and a
    judgement on the output count of the previous step called a stall of a child that
    printed all along. So a stall the watch sees is judged again once the pipes are read
    (`drain`): their bytes are output (progress where output counts); where only markers
    count, the lines read go to the markers' thread, whose events the next sweep reads,
    so the stall is held back once, to that sweep, for each progress it was seen after.
    Lines count there whichever read took them since the last sweep: the engine's wake
    from its starved poll is a step of the loop, which reads the waiting lines just before
    the sweep, and the drain then finds the pipes empty.
    """

    def __init__(self, watch: ProgressWatch, pump: _Drained) -> None:
        self.watch = watch
        self.pump = pump
        # The last progress (`watch.last`) a stall was held back at.
        self._held: float | None = None
        # The pump's bytes at the last sweep: those read since are in the markers' queue.
        self._swept = pump.bytes_read

    def stalled(self, now: float) -> bool:
        """Whether the attempt has stalled by `now`, its pipes read first."""
        watch, pump = self.watch, self.pump
        watch.poll(now)
        swept, self._swept = self._swept, pump.bytes_read
        if not watch.stalled(now):
            return False
        pump.drain()
        self._swept = pump.bytes_read
        read = pump.bytes_read - swept
        if pump.exited:
            return False  # it ended: the loop sees it
        watch.output(now, pump.bytes_read)
        watch.poll(now)
        if not watch.stalled(now):
            return False
        if read and self._held != watch.last:
            self._held = watch.last
            return False
        return True


class _Drained(Protocol):
    """What `StallJudge` asks of the pump (a seam: its test hands a pipe of its own; the
    docker runner's output thread, runners/docker/engine.py OutputPump)."""

    bytes_read: int

    @property
    def exited(self) -> bool: ...

    def drain(self) -> int: ...


def _ended_at_stop(pump: _Pump, argv: Sequence[str], pid: int) -> bool:
    """At a stop, before the engine signals anything of the attempt: whether its root has
    ended, or its program was ending of its own (`tree.program_ending`) and the root ends
    within ENDING_WAIT_S. The pipes are read meanwhile, so that what it printed last is in
    its logs."""
    pump.drain()
    if pump.exited:
        return True
    if not tree.program_ending(argv, pid):
        return False
    deadline = time.monotonic() + ENDING_WAIT_S
    while not pump.exited:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        pump.step(min(left, 0.05))
    return True


def _root_waited(proc: ChildHandle, own_root: bool) -> bool | None:
    """`tree.waited_for_children` of the attempt's root: read now, before the wait that
    reaps it, where the engine started it; for an attempt a preload server forked, what the
    server read of its zombie before reaping it, known once it ended (waited for here). Read
    by the engine, a forked root was a zombie or already reaped as the race went, and one
    program's attempts were judged two ways."""
    if own_root:
        return tree.waited_for_children(proc.pid)
    # Imported here: a run without run.preload never imports the fork server's client.
    from reprospec.process.forkserver import ForkedChild

    proc.wait()
    stat = proc.zombie_stat if isinstance(proc, ForkedChild) else None
    return tree.waited_in(stat) if stat is not None else None


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdout: Sink,
    stderr: Sink,
    timeout_s: float | None,
    stack_dir: Path,
    stack_path: Path,
    cancel: threading.Event | None = None,
    native: native_stacks.Capture | None = None,
    start: Start | None = None,
    record: Path | str | None = None,
    stall: ProgressWatch | None = None,
    reuse_record: bool = False,
) -> ProcessResult:
    """Run `argv` as an attempt in its own session and return once every process of it is gone.

    Adds REPROSPEC_ATTEMPT_TOKEN and REPROSPEC_STACK_DIR (`stack_dir`, an existing folder:
    the attempt's) to `env`; the dumps its processes leave there are removed after. Closes
    both sinks.
    With `native`, the attempt may dump core (read, then deleted, after it ends) and a
    hang's processes get gdb attached before they are killed (native.py). `record`:
    the attempt's in-flight record while it runs (leftovers.py: what `--resume` ends
    if the engine dies); with `reuse_record` it is written over one already there and left
    blank at the end (`leftovers.Flight`'s `reuse`: the folder is the run folder's to
    reuse or clear). `start` starts the root instead of `popen_attempt(argv, ...)`
    (a fork of a preload server: forkserver.py); the root must be in a session of its
    own and carry the tag. `stall`: `run.stall`'s watch, asked at each sweep of the loop
    below; when it says the attempt stalled, the attempt ends as at the timeout (its
    stacks, native stacks, the kill), with `stalled` set. Raises OSError when the program
    cannot be started.
    """
    tree.become_subreaper()
    token = tree.new_token()
    tag = leftovers.new_tag()
    child_env = {**env, tree.TOKEN_VAR: token, stacks.STACK_DIR_VAR: str(stack_dir)}
    started = utc_now()
    started_wall = time.time()
    begin = time.monotonic()
    flight = leftovers.Flight(record, token, tag, reuse=reuse_record)
    flight.begin()
    tree.RUNNING_TAGS.add(tag)
    limit = pidlimit.create()
    proc: ChildHandle
    try:
        # The root joins the cgroup itself, whichever way it starts.
        cgroup = pidlimit.procs_file(limit)
        nproc = pidlimit.user_limit(limit)
        if start is not None:
            proc = start(child_env, tag, cgroup)
            pidlimit.after_start(proc.pid, nproc)
        else:
            proc = popen_attempt(
                argv, env=child_env, cwd=cwd, native=native, tag=tag, cgroup=cgroup, nproc=nproc
            )
    except BaseException as exc:
        tree.RUNNING_TAGS.discard(tag)
        pidlimit.kill(limit)
        pidlimit.remove(limit)
        flight.end()
        stdout.close()
        stderr.close()
        stacks.remove_stack_dumps(stack_dir)
        if isinstance(exc, OSError) and pidlimit.fork_failed(exc):
            raise OSError(exc.errno, "fork failed: process limit", exc.filename) from None
        raise
    # A fork of a preload server is the server's child: its strays are looked for as ever.
    own_root = start is None
    if own_root:
        tree.RUNNING_ROOTS.add(proc.pid)
    # Whether nothing of the attempt can be left: then no search, and no zombie to reap.
    nothing_left = False
    warnings: list[str] = []
    process_limit: str | None = None
    timed_out = interrupted = stalled = program_died = False
    stack: Path | None = None
    hang_native: native_stacks.NativeStacks | None = None
    # Reaped while the attempt ran (re-parented to us, dead): their wait statuses.
    reaped: tuple[ChildExit, ...] = ()
    child_exits: tuple[ChildExit, ...] = ()
    pump = _Pump(proc, stdout, stderr)
    finished_cleanly = False
    # Whether the root, a zombie before its wait, ever reaped a child other than the
    # program a root shell ran; and whether the engine found another process of the
    # attempt (left behind, in its cgroup): `ProcessResult.descendants`.
    root_waited: bool | None = None
    others = False
    judge = StallJudge(stall, pump) if stall is not None else None
    if stall is not None:
        root_pid = proc.pid
        # The cgroup holds every process of the attempt, escaped daemons included; without
        # one, the root's tree.
        stall.count_cpu_wait(CpuWait(lambda: pidlimit.members(limit) or tree.descendants(root_pid)))
    try:
        deadline = begin + timeout_s if timeout_s and timeout_s > 0 else float("inf")
        next_sweep = time.monotonic() + ZOMBIE_SWEEP_S
        while not pump.exited:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if cancel is not None and cancel.is_set():
                # A root that had ended (its exit not read yet) or was ending as the stop
                # came is finished, classified as any other end: only an attempt still
                # running is cut short. Neither a Ctrl-C (the attempt runs in a session of
                # its own) nor the API's `cancel` reaches it, so such an end is the
                # program's; a SIGTERM that reached it too is the scheduler's to set aside
                # (pipeline/slack.py).
                interrupted = not _ended_at_stop(pump, argv, proc.pid)
                break
            if stall is not None:
                stall.output(now, pump.bytes_read)
            if now >= next_sweep:
                reaped += tree.reap_tagged_zombies(tag, proc.pid)
                next_sweep = now + ZOMBIE_SWEEP_S
                # At the sweep's pace (half a second): a stall is seconds long.
                if judge is not None and judge.stalled(now):
                    timed_out = stalled = True
                    # The hang's native stacks are read within their deadline of now.
                    deadline = now
                    break
            wait = min(deadline, next_sweep) - now
            if cancel is not None:
                wait = min(wait, 0.05)
            pump.step(min(wait, 3600.0))
        if timed_out or interrupted:
            procs = tree.find_attempt_processes(token, proc.pid, tag)
            child_exits = tree.reap_orphans(procs, proc.pid)
            resume: Callable[[], None] | None = None
            if timed_out and native is not None:
                # The root first: at the deadline the processes gdb did not reach go without.
                order = sorted(procs, key=lambda pid: (pid != proc.pid, pid))
                alive = {pid: procs[pid].cmdline for pid in order if procs[pid].alive}
                # Frozen and read before the Python stacks are asked for: the asking signal
                # (SIGURG) ends a wait the kernel never restarts after a handler (pause,
                # sigsuspend, a C library's poll without an EINTR retry), and native frames
                # read after it were of where the process went next. Frozen, a process that
                # was leaving at the deadline (exiting after its `done`) stays to be read
                # instead of vanishing under the reader, and every stack is of one instant.
                tree.stop_processes(alive, proc.pid)
                # Imported at a hang alone, as the stacks' classes are.
                from reprospec.process.pipes import held_pipes

                hung = native.hang(alive, timed_out_at=deadline)
                # Pipes read only where a process waits as a reader of a child's output:
                # a hang of a process with thousands of descriptors pays for no links.
                hang_native = native_stacks.with_parents(
                    hung,
                    {pid: procs[pid].ppid for pid in alive},
                    held_pipes(alive) if native_stacks.waits_on_a_descriptor(hung) else None,
                )
                # Continued once asked: the thread that takes the pending SIGURG dumps
                # before it runs anything else, so one that was leaving still answers.
                resume = functools.partial(tree.continue_processes, alive, proc.pid)
            stack = stacks.collect_stacks(
                procs, stack_dir, stack_path, root_pid=proc.pid, pause=pump.step, asked=resume
            )
            others = any(pid != proc.pid for pid in procs)
            tree.kill_attempt(token, proc.pid, proc.pid, tag)
            root_waited = _root_waited(proc, own_root)
            proc.wait()
            duration = time.monotonic() - begin
        else:
            root_waited = _root_waited(proc, own_root)
            asked = (
                tree.program_ran_alone(argv, proc.pid, stack_dir)
                if root_waited and own_root
                else None
            )
            proc.wait()
            if proc.returncode is not None and tree.ran_alone_with(asked, proc.returncode):
                # `/bin/sh -c 'python x.py'`: dash forks the one program it runs, and the
                # program's own record says it reaped no child and asked for this status.
                root_waited = False
            # Read before the records are removed (keep_program_raised, remove_stack_dumps).
            program_died = own_root and tree.program_died(
                argv, proc.pid, stack_dir, proc.returncode
            )
            duration = time.monotonic() - begin
            tree.RUNNING_ROOTS.discard(proc.pid)
            nothing_left = own_root and tree.only_known_children()
            procs = {} if nothing_left else tree.find_attempt_processes(token, proc.pid, tag)
            child_exits = tree.reap_orphans(procs, proc.pid)
            others = bool(procs)
            left = {pid: info for pid, info in procs.items() if info.alive}
            if left:
                tree.kill_attempt(token, proc.pid, proc.pid, tag)
                names = ", ".join(
                    f"{pid} ({tree.short(info.cmdline, 60)})" for pid, info in left.items()
                )
                warnings.append(
                    f"killed {plural(len(left), 'process', 'processes')} left behind by the "
                    f"attempt: {names}"
                )
        drain_deadline = time.monotonic() + DRAIN_WAIT_S
        while pump.open_pipes and time.monotonic() < drain_deadline:
            pump.step(drain_deadline - time.monotonic())
        if pump.open_pipes:
            warnings.append(
                "the attempt's output was still open after its processes were killed: "
                "a process outside the attempt's reach holds it"
            )
        finished_cleanly = True
    except OutputLost:
        raise
    except OSError as exc:
        # The root started: whatever failed here (a pid table full of the attempt's own
        # forks among them) is no reason to call it "cannot start", nor to leave its tree.
        lost = _after_start_failure(exc)
        raise lost from None
    finally:
        if not finished_cleanly:
            # An exception in the engine itself: never leave the tree behind, even when
            # its root is gone (a fork bomb's root exits at once).
            with contextlib.suppress(OSError):
                tree.kill_attempt(token, proc.pid, proc.pid, tag)
            pidlimit.kill(limit)
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                proc.wait()
        elif proc.poll() is None:
            tree.kill_attempt(token, proc.pid, proc.pid, tag)
            proc.wait()
        # What the cgroup still holds escaped the tag (or outran the kill): it goes too.
        # Nothing can be left where the engine's children showed none of the attempt.
        killed, reached = pidlimit.release(limit, left_nothing=nothing_left and finished_cleanly)
        others = others or bool(killed)
        if killed:
            warnings.append(
                "killed processes of the attempt that outlived its other processes "
                "(found in its process-limit cgroup)"
            )
        if reached:
            process_limit = process_limit_reached(limit.max_processes)
            warnings.append(process_limit)
        tree.RUNNING_TAGS.discard(tag)
        tree.RUNNING_ROOTS.discard(proc.pid)
        if not nothing_left:
            # Dead strays of attempts that already ended: nobody else will reap them.
            tree.reap_tagged_zombies(None, None)
        flight.end()
        pump.close()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        # Every process is gone: the program's record of the exception it died of is whole.
        listed = stacks.listing(stack_dir)
        # What the folder holds after the two below (its logs, made at their first byte,
        # are there already): Evidence.read's listing, where it was its third this attempt.
        folder_names: frozenset[str] | None = None
        if listed is not None:
            kept = stacks.keep_program_raised(argv, proc.pid, stack_dir, listed)
            folder_names = stacks.remove_stack_dumps(stack_dir, listed)
            if folder_names is not None and (kept or RAISED in folder_names):
                folder_names = folder_names | {RAISED} if kept else folder_names - {RAISED}
        _close_sinks(stdout, stderr)
    child_exits = (*reaped, *child_exits)
    descendants = True if others or child_exits else root_waited
    finished = utc_now()
    native_path: Path | None = None
    if native is not None:
        # An exit status 128+N of a program that ran alone is its own, no death's to look for.
        status = proc.returncode
        died = status if descendants is not False or status is None or status < 0 else None
        # Every process is gone: each core is complete, and the attempt's to claim.
        found = native_stacks.merge(
            hang_native,
            native.crash(
                token,
                cwd,
                proc.pid,
                died,
                started_wall,
                read_cores=not interrupted,
                # The same folder (the attempt's): what its processes wrote there is listed.
                listed=listed if native.out_dir == stack_dir else None,
            ),
        )
        if found is not None:
            native_path = native_stacks.write(found, native.out_dir)
            if folder_names is not None and native.out_dir == stack_dir:
                folder_names = folder_names | {native_stacks.JSON_NAME, native_stacks.TEXT_NAME}
            if found.unavailable and native_stacks.say_once(found.unavailable):
                warnings.append(found.unavailable)
        if native.keep_cores and native.out_dir == stack_dir:
            # The cores kept were moved into the folder after its listing (cores.move_cores):
            # Evidence lists it again, a debugging option's cost (review).
            folder_names = None
    return ProcessResult(
        returncode=proc.returncode,
        timed_out=timed_out,
        interrupted=interrupted,
        duration_s=round(duration, 6),
        started=started,
        finished=finished,
        stack_path=stack,
        warnings=tuple(warnings),
        native_path=native_path,
        child_exits=child_exits,
        ended_at=begin + duration,
        stalled=stalled,
        descendants=descendants,
        program_died=program_died,
        process_limit=process_limit,
        names=folder_names,
    )
