"""Classify one attempt: what a runner observed (`Execution` + `Evidence`) -> `Outcome | NotRun`.

First, whether it ran at all: the runner's infra error, the harness's
`infra_error` event (from a workload attempt whose harness exited with
EXIT_INFRA; evidence.py says which events a child may write), or no exit
status make it `NotRun(reason)`. Then the
rules, in order:

1. `timed_out` -> `hang`, at the timeout or at `run.stall` (no progress for that long
   after the first: `stalled`); the detail says which limit fired. A DataLoader worker
   still stuck on an item then (a `worker_busy` event with no `worker_free`) makes it
   `where: worker`, named in the detail; where no event says so, a worker whose stack
   shows it fetching an item does too (hungstacks.py), with its pid and frame. The
   signature stays `hang`: it never named where a hang is. A program that had said it
   finished (a `done` event, or progress in the phase `exit`) hangs at exit: phase `exit`
   (`hang @ exit`), whatever step it had reached. A hang whose last event came shortly before the
   timeout says so (still progressing?). A descendant that died of a signal before
   it (children.py's evidence: a `multiprocessing.Pool` worker's SIGSEGV, which the
   pool never notices, leaves its `map` waiting forever) is the hang's
   `crashed_child`, named first in its detail and in its signature
   (`hang:after-child-SIGSEGV`); the outcome stays a hang, as it was observed.
   So is exit status 1 with no uncaught exception where faulthandler's watchdog dump
   (`Timeout (0:00:05)!` and the threads' stacks, watchdog.py) ends stderr: the program
   timed itself out (`dump_traceback_later(T, exit=True)`), as a ticket of it reads; and
   where pytest-timeout ended a test (its thread method's `+++ Timeout +++` dump ends the
   output, exit status 1; its signal method's `Failed: Timeout (>2.0s) from
   pytest-timeout.` is pytest's first failure): the test hung (watchdog.py).
2. returncode < 0 -> `crash` with that signal, `where: main` (an uncaught
   KeyboardInterrupt re-raises SIGINT, so it is a SIGINT crash too).
3. returncode 0 -> `pass`.
4. returncode 128+N -> `crash` with signal N, `where: main`, when N is one of
   `signals.SHELL_FATAL_SIGNALS` (a shell wrapper turns -11 into 139), or for
   any other N when the output proves it ("Fatal Python error: <strsignal N>"
   or a shell's "<pid> <strsignal N>" report). Not where the runner knows that no
   process besides the program ran (`Execution.descendants` False): the program
   was not killed (it exited 139), and no child's death can be what it reports, so
   139 is its own exit status (`sys.exit(139)`): rule 7, its detail saying so. Nor
   137 (128 + SIGKILL) where the kernel counted no OOM kill on the machine while the
   attempt ran (`Execution.no_oom_kill`): a SIGKILL is a crash only as the OOM killer's,
   so the death it reports (a `timeout -s KILL` the shell ran) was sent by a process,
   as a child's is under rule 6; rules 5-7 read the rest, `error` exit 137 by default.
   But where the root `/bin/sh -c LINE` forked one program whose own record says it died
   of a signal (`Execution.program_died`: begun, never ended, its parent the root and a
   shell), its 128+N is that main process's death by N, any N, as a list command's -N is
   and as under bash, which execs it. No record (no Python, `python -S`/`-I`/`-E`, a root
   the shell exec'd: bash's `timeout -s KILL 60 python x.py`) leaves it to the rules here.
   Nor where the command runs no program at all (builtins, nested `sh -c` lines and
   sh/dash/bash scripts of builtins: no trap, pipeline, substitution, `$?`) and tells a
   shell to `exit N` for that very status (`sh -c 'exit 139'`: shellexit.py) and nothing
   shows the death (no shell's report of it in the output, no core of it, no OOM kill
   counted for a 137): a shell exits with 128+N of its own only when told to; rule 7, its
   detail saying so.
5. a DataLoader worker died (a `worker_exit` event with a signal, a `child_exit`
   event of a DataLoader worker dead of a crash signal (the status the main process
   reaped, where torch's words race with its own ConnectionResetError), "DataLoader
   worker (pid N) is killed by signal: X" (X a crash signal, by its words or its number:
   `Segmentation fault`, older torch's `11`; not SIGTERM, which
   multiprocessing's atexit sends the workers of a main process that failed), torch's
   "ERROR: Unexpected X encountered in worker", or "exited unexpectedly" with no exit code) ->
   `crash`, `where: worker`, even though the main process exited 1.
   Where no process besides the program ran, no worker did: its output's words are
   no death (rule 7). A worker's SIGKILL with no OOM kill counted (`no_oom_kill`) was a
   process's, no crash, as a child's is not (rule 6): `error`, `where: worker` (rule 7).
   A worker that exited with a code (even 0: a worker exits only when its loader shuts it
   down) is an `error`, `where: worker` (rule 7).
6. any other descendant crashed (children.py: a wait status the engine reaped,
   a shell's or subprocess's report, the child's faulthandler report, a broken
   process pool) -> `crash`, `where: child`, with its pid and command line when
   known. A report in the output is no death where no process besides the
   program ran (the program printed it: an old log, a test's output); where
   only text tells of it and the main process ended with its own uncaught
   exception (not subprocess's "died with"), the detail says so. A pool's "terminated
   abruptly", which names no signal, is no crash where the program's hooks (its own
   record, of the pool's BrokenProcessPool) wrote no worker's death by a crash signal
   (children.pool_worker_no_crash). A process the
   harness killed itself (its `teardown` events: a distributed supervisor ending the
   other ranks and their workers once one rank failed) is neither a dead worker nor a
   crashed child: the job ends as the rank that failed first did, as the supervisor's
   `rank_exit` says.
7. anything else -> `error` with the exit code (and, where no process besides the
   program ran, what its 128+N status or its output's report of a death is not).

Before these, a command that never started (setupfail.py: not found, not
executable, a declared package missing) is `NotRun`. Exception type and message
come from the last uncaught Python traceback on stderr, and the chain it ended
(tracebacks.py), when that traceback ended the process: Python exits 1 after
printing an uncaught exception (an uncaught KeyboardInterrupt dies of SIGINT).
Exited with another status, hung or killed by another signal, the process went on
after it (it logged a handled exception, or the traceback was a child's): the
traceback is the outcome's `last_traceback`, named as the last one printed, and an
`error` takes its message from stderr's last line as for any other exit (none where
that line ends a warning: evidence.ends_with_warning). A crash by SIGABRT with no
exception of its own takes C++'s: the type and `what()` std::terminate printed before its
abort (cxxterminate.py), however the abort was seen (the program's signal, a shell's 134,
a child's death), unless another abort is reported after it (a failed assert()); phase,
step, stage and module from the events. A command that is
pytest (`pytest=True`) catches what its tests raise: an `error` with no uncaught
traceback takes the exception and message pytest reports for its first failing test
(pytestreport.py), and that test as its phase where the events name no phase or
another test (pytest -v's lines give the last test that ran, not the one that failed),
so a live run reports what a pasted pytest log says; a crash of a pytest-xdist worker
takes as its phase the test xdist says the worker died running, and a hang under xdist
the one test its workers had started and not ended (none where several had: the detail
lists them), not -v's last line, which may be another worker's.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime
from signal import SIGINT
from typing import TYPE_CHECKING, Literal, NamedTuple

from reprospec import native
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import TRACEBACK_HEADER, without_escapes
from reprospec.core.results import (
    ChainLink,
    CrashedChild,
    Execution,
    GroupMember,
    NotRun,
    Outcome,
    OutcomeKind,
    PythonFrame,
    Where,
    bare_type,
    group_named,
)
from reprospec.core.signals import (
    CRASH_SIGNALS,
    canonical_signal,
    describe_signal,
    exit_status_signal,
    signal_from_description,
    signal_from_words,
    signal_name,
)
from reprospec.core.words import (
    A_PROCESS_OF_THE_PIPELINE,
    A_SHELLS_137_OR_AN_EXIT_STATUS,
    A_SHELLS_SIGKILL_SENT_BY_A_PROCESS,
    AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN,
    AS_A_SHELL_REPORTS_IT,
    KNOWN_FROM_THE_OUTPUT_ALONE,
    NO_OTHER_PROCESS_RAN,
    POOL_WORKER_NO_CRASH,
    SENT_BY_A_PROCESS,
    THE_ONE_PROGRAM_DIED_OF_IT,
    THE_PIPELINES_PROGRAM,
    WATCHDOG_ENDED_IT,
    a_shells_own_exit,
    plural,
    threads_died,
)
from reprospec.outcome.evidence import EXIT_PHASE, Event, Events, Evidence, ends_with_warning
from reprospec.outcome.setupfail import setup_failure
from reprospec.outcome.shellexit import own_exit

if TYPE_CHECKING:
    from pathlib import Path

    from reprospec.outcome.children import ChildCrash
    from reprospec.outcome.hangsource import Source
    from reprospec.outcome.hungstacks import HungProcess
    from reprospec.outcome.tracebacks import FatalError, PythonException
    from reprospec.outcome.watchdog import PytestTimeout, WatchdogTimeout

# The harness's exit status after an `infra_error` event (reprospec_harness.config.EXIT_INFRA).
HARNESS_EXIT_INFRA = 3
# CPython's exit status after it printed an uncaught exception's traceback.
PYTHON_UNCAUGHT_EXIT = 1

_WORKER_KILLED = Lazy(
    r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: (?P<desc>[^.\n]+)"
)
_WORKER_HANDLER = Lazy(
    r"ERROR: Unexpected (?P<desc>segmentation fault|bus error|floating-point exception)"
    r" encountered in worker"
)
_WORKER_EXITED = Lazy(
    r"DataLoader worker \(pids?(?:\(s\))? (?P<pids>[\d, ]+)\) exited unexpectedly"
    r"(?: with exit code (?P<code>-?\d+))?"
)

_UUID = Lazy(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")
_HEX = Lazy(r"\b0x[0-9a-fA-F]+\b")
_PATH = Lazy(r"(?<![\w.])(?:~|\.{1,2})?/[^\s'\"()\[\]{}<>,;:]+")
_NUMBER = Lazy(r"(?<![\w.])\d+(?:\.\d+)*(?!\w)")


# A NamedTuple, not a frozen dataclass (ARCHITECTURE.md, the objects between stages).
class WorkerDeath(NamedTuple):
    """Evidence that a DataLoader worker died: its signal, or its exit code."""

    signal: str | None
    exit_code: int | None
    pid: int | None
    evidence: str
    # From the harness's worker_exit event: which worker, fetching which dataset item (a
    # child_exit event names the worker too, where the sitecustomize read its index).
    worker: int | None = None
    item: int | None = None
    item_phase: str | None = None
    item_step: int | None = None


def classify(
    execution: Execution,
    evidence: Evidence | None = None,
    *,
    pytest: bool = False,
    argv: Sequence[str] | None = None,
    declared: Collection[str] = (),
    workdir: Path | None = None,
) -> Outcome | NotRun:
    """What happened in one attempt, or why it never ran.

    `evidence` is what `Evidence.read(execution)` gives; it is read here when not given.
    `pytest`: the command runs pytest, whose report names a failing test's exception.
    `argv`: the command's, where the attempt runs one (what it started, setupfail.py);
    `declared`: the normalized names the cell's `environment.packages` requires.
    `workdir`: where the command ran, to read a shell script it names (shellexit.py).
    A hang's threads are ranked by the lines of the workdir's files (hangsource.source_at),
    which its stack dump names as the container it ran in did, where it ran in one
    (`execution.container_workdir`, the runner's record: `/work`), not as this host.
    """
    evidence = evidence if evidence is not None else Evidence.read(execution)
    not_run = _not_run(execution, evidence) or setup_failure(
        execution, evidence, pytest=pytest, argv=argv, declared=declared
    )
    if not_run is not None:
        return not_run
    stderr = evidence.stderr
    events = evidence.events
    # The threads that died of an exception: the report shows them as theirs (the detail).
    threads: tuple[PythonException, ...] = ()
    dead_threads = 0
    if stderr:
        from reprospec.outcome.tracebacks import THREAD_LABEL, thread_exceptions

        if TRACEBACK_HEADER in stderr:
            threads = thread_exceptions(stderr)
        # Each thread's report begins with one write of `Exception in thread NAME:`, whole
        # however the rest of it interleaves: the count of threads; the types, where read.
        dead_threads = max(stderr.count(f"{THREAD_LABEL} "), len(threads))
    chain: tuple[PythonException, ...] = ()
    recorded = evidence.raised
    if recorded or (stderr and not (recorded == "" and dead_threads)):
        # (A silent attempt's reader is not even imported.)
        from reprospec.outcome.tracebacks import parse_chain, recorded_chain

        # The program's own record of the exception its main thread died of, where it left
        # one: on stderr the threads' tracebacks interleave with it (a thread's TypeError
        # read as what ended the process). Where it recorded that it died of none and its
        # threads died, stderr's tracebacks are theirs, which no parse can tell apart once
        # interleaved: none ended the process. Where it left no record (not Python, a hook
        # of the program's own, a container's attempt), stderr: its parse skips the
        # threads' blocks it can tell.
        chain = (recorded_chain(recorded) if recorded else ()) or parse_chain(stderr)
    last_traceback: PythonException | None = None
    if chain and not _ended_by(chain[-1], execution, evidence):
        from reprospec.outcome.tracebacks import went_on

        last_traceback, chain = went_on(chain[-1]), ()
    exception = chain[-1] if chain else None
    worker = worker_death(stderr, events.worker_exit, events.child_exits)
    if worker is not None and worker.signal == "SIGKILL" and worker.pid in events.killed:
        # The harness's own teardown (a distributed supervisor ending the ranks that did not
        # fail, and their workers): the failure is the rank's that ended the job.
        worker = None
    # A worker's SIGKILL where the kernel counted no OOM kill while the attempt ran was
    # a process's (a `kill -9` from outside, the worker's own os.kill): no crash, as a
    # child's is not (rule 6); the main process's exit is the outcome, the worker named.
    worker_sent = worker is not None and worker.signal == "SIGKILL" and execution.no_oom_kill
    printed_worker: WorkerDeath | None = None
    if worker is not None and execution.descendants is False:
        # No process besides the program ran, so no DataLoader worker: it printed the words.
        printed_worker, worker = worker, None
    returncode = execution.returncode

    kind: OutcomeKind
    signal: str | None = None
    exit_code: int | None = None
    where: Where | None = None
    child: ChildCrash | None = None
    crashed: CrashedChild | None = None  # a hang's: a descendant that died before it
    hung_pid: int | None = None  # a hang's: the DataLoader worker its events or stacks show stuck
    hung_in: PythonFrame | None = None  # a hang's: the frame of the user's code it sat in
    phase, step = events.phase, events.step
    stage, module = events.stage, events.module
    if execution.timed_out:
        kind = "hang"
        detail = f"{hang_limit(execution)}; killed after {execution.duration_s:.1f}s"
        # The attempt's text, one for every reading of its dump: a child's threads said in
        # the detail by this host's `/work` under docker, `hung_in` by the workdir's, and
        # the two named different threads (review).
        source = _source(workdir, execution.container_workdir)
        if events.done:
            # Its work was done: what hangs is the way out (atexit, a thread, a pool).
            phase, step, stage, module = EXIT_PHASE, None, None, None
            detail = f"it said its work was done, but had not exited; {detail}"
        elif pytest and (started := _xdist_running(evidence.stdout)) is not None:
            # pytest-xdist's workers report in any order: the last test line is not the
            # hung test (another worker's test, started and passed after it, was the phase).
            # Several running: none is named (the phase), the detail lists them.
            phase = started[0] if len(started) == 1 else None
            step, stage, module = None, None, None
            if len(started) > 1:
                more = f" and {len(started) - 3} more" if len(started) > 3 else ""
                detail += (
                    f"; pytest-xdist's workers were running {len(started)} tests: "
                    + ", ".join(started[:3])
                    + more
                )
            elif not started:
                detail += "; every test pytest-xdist's workers started had ended"
        elif pytest and evidence.stack and (doing := _pytest_hung_in(evidence.stack, phase)):
            # What its stack shows pytest doing: a first test that hangs leaves its line
            # unended, and a run without -v names no test (`pytest was running test_one
            # (t.py:4)`, a fixture's setup, a collection); of a test the phase names
            # already, only its place (`the test was at t.py:4`).
            detail += f"; {doing}"
        if events.done or execution.stalled:
            pass  # no progress for run.stall: not "still progressing?"
        elif (late := _progress_before_timeout(execution, events)) is not None:
            detail += f"; {still_progressing(late)}"
        if worker is not None:
            detail += f"; {_describe_worker(worker, worker_sent)}"
        elif events.busy:
            # The worker it names (the longest stuck): its pid marks its native threads.
            where, hung_pid = "worker", _int_or_none(_first_busy(events.busy).get("pid"))
            detail += f"; {_describe_busy(events.busy, execution.finished)}"
        elif evidence.stack and (stuck := _stuck_worker(evidence.stack)) is not None:
            # No harness to say so (a command's DataLoader): its stacks show the worker
            # fetching an item, where the main process only waits for it.
            where, hung_pid = "worker", stuck.pid
            detail += f"; {stuck.describe()}"
        elif evidence.stack and (waited := _stuck_child(evidence.stack, source)) is not None:
            # The main process waits for a child (multiprocessing's join, subprocess's
            # wait) that was in the user's code: the hang sits in the child.
            where, hung_pid = "child", waited.pid
            detail += f"; child {waited.describe()}, {WAITED_FOR_BY_THE_MAIN_PROCESS}"
        if worker is None and (dead := _child_crash(execution, evidence)) is not None:
            # The death leads: it is the likely cause, and the hang's stacks show only the
            # processes left waiting for the work it took with it.
            crashed = CrashedChild(dead.signal, dead.pid, dead.cmdline, dead.evidence)
            detail = f"{dead.describe()}, before the hang: {LOST_WORK}; {detail}"
        else:
            if worker is None and (sent := _killed_by_a_process(execution, evidence)):
                # A SIGKILL no OOM kill explains is no crash, but a pool whose worker it
                # killed waits forever all the same: unsaid, the hang's stacks show only
                # the wait, and nothing tells a maintainer that a worker was lost.
                detail += f"; before the hang, {sent.describe()}, {SENT_BY_A_PROCESS}; {LOST_WORK}"
            if evidence.stack and not pytest:
                # Where it sat: two hangs in different places share the signature `hang`,
                # and read as one. Not after a child's death, the hang's likely
                # cause, which names it (its stacks show only the wait for the lost work),
                # nor pytest's, said by its test (the phase, the detail).
                hung_in = _hung_frame(evidence.stack, source)
    elif returncode == PYTHON_UNCAUGHT_EXIT and not chain and (watched := _watchdog(stderr)):
        # It hung, and its own faulthandler watchdog ended it (`_exit(1)` after its dump),
        # as a ticket of the same dump reads it (capture/ticket.py): not `error exit 1`.
        kind, hung_in = (
            "hang",
            _watchdog_frame(watched, _source(workdir, execution.container_workdir)),
        )
        detail = f"{WATCHDOG_ENDED_IT} ({watched.header}), exit status 1"
    elif returncode == PYTHON_UNCAUGHT_EXIT and not chain and (ended := _pytest_timeout(evidence)):
        # A test hung, and pytest-timeout's thread method ended the run (`os._exit(1)` after
        # its `+++ Timeout +++` dump), as a ticket of it reads: not `error exit 1`.
        kind, detail = "hang", ended.describe()
    elif returncode is not None and returncode < 0:
        kind, signal, where = "crash", signal_name(-returncode), "main"
        detail = f"killed by {signal} ({describe_signal(signal)})"
        if worker is not None:
            detail += f"; {_describe_worker(worker, worker_sent)}"
    elif returncode == 0:
        kind, exit_code, detail = "pass", 0, None
        exception = None
    else:
        assert returncode is not None
        # No process besides the root ran: its 128+N is its own exit status, no report of a
        # death (`sys.exit(139)`), whatever its output says. (A program's record of its end
        # vouches only for the status it asked for: process/tree.py `ran_alone_with`.)
        # `sh -c 'python kill.py'`: the shell's 128+N is its one program's death by N, as
        # that program's own record says (it asked for no status): the main process died of
        # it, as under bash, which execs the program, and as a list command's -N reads.
        died = execution.program_died and exit_status_signal(returncode, any_signal=True)
        shell_signal = (
            _shell_signal(returncode, stderr, evidence.stdout)
            if execution.descendants is not False
            else None
        )
        # 128 + SIGKILL with no OOM kill counted on the machine while the attempt ran: the
        # death it reports was sent by a process (a script's `timeout -s KILL`, a `kill -9`),
        # as a child's SIGKILL is under rule 6; the status is the program's (rule 7).
        sent_kill = shell_signal == "SIGKILL" and execution.no_oom_kill
        # Not the one program's own death, which is the main process's whatever the count
        # (rule 2), and whatever N (the record says it died); said where it decided.
        decided = bool(died) and (shell_signal is None or sent_kill)
        if died:
            shell_signal, sent_kill = died, False
        if sent_kill:
            shell_signal = None
        # `sh -c 'exit 139'`, a run.sh of builtins ending `exit 139`: a shell told to exit
        # with 128+N by a command that runs no program exits with it of its own, nothing
        # dead. Read so only where nothing shows the death (no shell's report of it, no
        # core of it, no record of the program's).
        asked = (
            own_exit(returncode, argv, workdir)
            if shell_signal is not None
            and not died
            and not _death_shown(shell_signal, execution, evidence)
            else None
        )
        if asked is not None:
            shell_signal = None
        if shell_signal is not None:
            kind, signal, where = "crash", shell_signal, "main"
            detail = f"exit status {returncode} = 128 + {shell_signal}{AS_A_SHELL_REPORTS_IT}"
            if decided:
                detail += f"; {THE_ONE_PROGRAM_DIED_OF_IT}"
            member = _pipeline_member(execution, evidence, shell_signal)
            if member is not None and member[1] > 0:
                # `set -o pipefail; a | b | c`: the status is the pipeline's process that died
                # (b), which bash's report lists after the first: a child, not the main one.
                child, where = member[0], "child"
                detail += f"; {member[0].describe()}, {A_PROCESS_OF_THE_PIPELINE}"
            elif member is not None:
                # `python train.py 2>&1 | tee log.txt`: its first process, the command's
                # program, died: the main process's crash, said with its pid and command.
                first = member[0]
                detail += f"; pid {first.pid} ({first.cmdline}), {THE_PIPELINES_PROGRAM}"
        elif worker is not None and worker.exit_code is None and not worker_sent:
            kind, signal, where = "crash", worker.signal, "worker"
            detail = f"{_describe_worker(worker)}; the main process exited {returncode}"
            if worker.item_phase is not None and worker.item_step is not None:
                # Located at the batch the worker died fetching: the main process, some steps
                # behind its prefetching workers, hears of the death at a step that depends
                # on the machine's load (validation step 5 or 7 for one fault at step 7).
                phase, step, stage, module = worker.item_phase, worker.item_step, "data", None
        elif worker is None and (child := _child_crash(execution, evidence)) is not None:
            kind, signal, where = "crash", child.signal, "child"
            detail = f"{child.describe()}; the main process exited {returncode}"
            from reprospec.outcome.children import names_a_death

            if not child.seen and chain and not any(names_a_death(e.message or "") for e in chain):
                # Its own exception, not subprocess's "died with": only text tells of a death.
                detail += f" with its own uncaught {chain[-1].type}; {KNOWN_FROM_THE_OUTPUT_ALONE}"
            if pytest:
                from reprospec.outcome.pytestreport import XDIST_CRASHED, crashed_test

                # A pytest-xdist worker's death: xdist names the test it ran, where `-v`'s
                # lines (the phase) are the workers' tests in the order they reported.
                running = crashed_test(evidence.stdout) or crashed_test(stderr)
                if running is not None:
                    phase, step, stage, module = running, None, None, None
                    detail += f"; {XDIST_CRASHED} {running}"
        else:
            kind, exit_code = "error", returncode
            detail = f"exit code {returncode}"
            if execution.descendants is False:
                detail += _no_other_process(returncode, execution, evidence, printed_worker)
            elif asked is not None:
                signal_named = exit_status_signal(returncode, any_signal=True)
                detail += f"; {returncode} = 128 + {signal_named}{a_shells_own_exit(asked)}"
            else:
                sent = _killed_by_a_process(execution, evidence) if worker is None else None
                if sent_kill:
                    # Why 137 is no crash; then the child it reports, where one is named
                    # (`timeout -s KILL`'s step, reaped by the engine), said once. A kill is
                    # said only where something shows one: the process the engine saw die
                    # of it (a DataLoader worker's too), or the shell's own report of the
                    # death (dash's `Killed`).
                    seen = (
                        sent is not None
                        or worker_sent
                        or _signal_reported("SIGKILL", stderr, evidence.stdout)
                    )
                    why = (
                        A_SHELLS_SIGKILL_SENT_BY_A_PROCESS
                        if seen
                        else A_SHELLS_137_OR_AN_EXIT_STATUS
                    )
                    detail += f"; {returncode} = 128 + SIGKILL{why}"
                    detail += f"; {sent.describe()}" if sent is not None else ""
                elif sent is not None:
                    # A SIGKILL with no OOM kill anywhere: `timeout -s KILL` in the script.
                    detail += f"; {sent.describe()}, {SENT_BY_A_PROCESS}"
                elif worker is None and _pool_worker_no_crash(evidence):
                    # "terminated abruptly" of a worker that exited or was terminated: no
                    # crash signal, which the program's parent hooks would have written.
                    detail += f"; {POOL_WORKER_NO_CRASH}"
            if last_traceback is not None:
                detail += f"; {_went_on(last_traceback)}"
            if worker is not None:
                where = "worker"
                detail += f"; {_describe_worker(worker, worker_sent)}"
            elif exception is not None and _launcher_failed(chain):
                from reprospec.outcome.children import rank_exception

                # torchrun's own exception says a rank failed; the rank's is the failure
                # (a ticket's `RuntimeError: CUDA error`), which read as ChildFailedError
                # never matched the spec capture wrote from that ticket. So does a
                # launcher's that wraps it (`raise RuntimeError(...) from e`): the ticket
                # of it expects the rank's.
                rank = rank_exception(stderr)
                if rank is not None and rank.chain:
                    chain, exception, where = rank.chain, rank.chain[-1], "child"
                    detail += f"; {rank.describe()}"
                elif rank is not None:
                    # The rank that failed first raised nothing (`sys.exit(3)`): torchrun's
                    # own error stands, and the peers' errors are said as its consequences.
                    where = "child"
                    detail += f"; {rank.describe()}"
            if exception is None and pytest:
                from reprospec.outcome.pytestreport import first_failure, is_test_id
                from reprospec.outcome.tracebacks import PythonException

                test = first_failure(evidence.stdout) or first_failure(stderr)
                if test is not None:
                    exception = PythonException(
                        test.exception or "", test.message, members=test.members
                    )
                    # `raise RuntimeError(...) from group`: its group's members are met by
                    # expect.exception, as where the same code runs outside pytest.
                    chain = (*test.chain[:-1], exception) if test.chain else ()
                    detail += f"; pytest reports {test.reported()}"
                    if phase is None or is_test_id(phase):
                        phase, step, stage, module = test.test, None, None, None
            if exception is None:
                from reprospec.outcome.tracebacks import (
                    PythonException,
                    closes_a_group,
                    group_printed_last,
                    last_line,
                )

                # `raise SystemExit("msg")` and `sys.exit("msg")` print only the message;
                # a warning printed last is none (evidence.ends_with_warning), nor a
                # thread's exception line (`TypeError: worker failed`). A group's closing
                # rule (`+------`) is none either: the group's own line, where the main
                # thread printed it (`traceback.print_exc()`, then `sys.exit(2)`).
                last = None if ends_with_warning(stderr) else last_line(stderr)
                group = group_printed_last(stderr) if last and closes_a_group(last) else None
                if group is not None:
                    last = group
                elif last is not None and dead_threads and _a_threads(last, threads, stderr):
                    last = None
                exception = PythonException("", last) if last else None

    if kind == "error" and pytest and exception is not None:
        bound = _pytest_timeout_failed(exception) or _pytest_timeout_worker(evidence, where)
        if bound is not None:
            # A test hung, and pytest-timeout's signal method failed it at its bound (`Failed:
            # Timeout (>2.0s) from pytest-timeout.`): a hang of that test (the phase), as a
            # ticket of it reads, not the test's error.
            kind, exit_code, exception, chain = "hang", None, None, ()
            detail = f"{bound.describe()}; {detail}" if detail else bound.describe()
    if kind == "crash" and signal == "SIGABRT" and exception is None:
        # std::terminate's report of the C++ exception no handler caught, whose abort() the
        # SIGABRT is, read by whichever way the abort was seen: the program's own signal, a
        # shell's 134, a child's death (its report is on the same stderr).
        from reprospec.outcome.cxxterminate import uncaught_cxx

        if (thrown := uncaught_cxx(stderr)) is not None:
            from reprospec.outcome.tracebacks import PythonException

            exception = PythonException(thrown.type, thrown.message)
    if dead_threads and kind != "pass":
        # A thread's exception group by its members too (`ExceptionGroup[KeyError]`), as
        # the outcome's own: every TaskGroup a thread ran fails as `ExceptionGroup`.
        named = (group_named(e.type, _members(e)) for e in threads)
        died = threads_died(dead_threads, list(dict.fromkeys(named)))
        detail = f"{detail}; {died}" if detail else died
    exception_type = (exception.type or None) if exception else None
    message = exception.message if exception else None
    # An exception group's members (a TaskGroup's failure is always `ExceptionGroup`): what
    # its signature, its words and `expect.exception` tell one group from another by.
    members = _members(exception) if exception is not None and kind != "pass" else ()
    # The OOM killer's signal is SIGKILL, and it says nothing else: where the runner saw
    # the kernel count a kill while the attempt ran, that is who sent it (memcgroup.py).
    oom_killed = kind == "crash" and signal == "SIGKILL" and execution.oom is not None
    if oom_killed:
        detail = f"{detail}; {execution.oom}" if detail else execution.oom
    limited = execution.process_limit
    if limited is not None and kind != "pass":
        # Its pids cgroup refused a fork or a thread: whatever failed next (a thread pool's
        # abort, `can't start new thread`, a BlockingIOError) may be the limit's doing, not
        # the program's alone; said with the failure, as an OOM kill is.
        detail = f"{detail}; {limited}" if detail else limited
    if where is None and kind != "pass":
        where = "main"  # CLI.md: a failure happened in the main process or in a worker
    failed = kind != "pass"
    injected = events.injected() if failed else None
    return Outcome(
        kind=kind,
        signal=signal,
        exit_code=exit_code,
        where=where,
        exception=exception_type,
        message=message,
        phase=phase,
        step=step,
        duration_s=execution.duration_s,
        signature=failure_signature(
            kind,
            signal,
            where,
            group_named(exception_type, members),
            exit_code,
            phase,
            injected,
            crashed=crashed,
        ),
        detail=detail,
        # Where a failure stopped inside a step or an import; a pass ran to its end.
        module=module if failed else None,
        stage=stage if failed else None,
        chain=_chain(chain) if failed and len(chain) > 1 else (),
        pid=(
            child.pid
            if child is not None
            else hung_pid or _dead_worker_pid(kind, where, worker, evidence)
        ),
        cmdline=child.cmdline if child is not None else None,
        injected=injected,
        last_traceback=(
            ChainLink(
                last_traceback.type,
                last_traceback.message,
                members=_members(last_traceback),
            )
            if failed and last_traceback is not None
            else None
        ),
        crashed_child=crashed,
        oom_killed=oom_killed,
        hung_in=hung_in,
        members=members,
    )


def _ended_by(exception: PythonException, execution: Execution, evidence: Evidence) -> bool:
    """Whether the traceback of `exception`, the last uncaught-looking one, ended the process.

    Python exits 1 after an uncaught exception (a KeyboardInterrupt re-raises SIGINT).
    Any other end means the process went on after the traceback: `logging.exception`
    prints the same block for a handled exception, which then `sys.exit(2)` follows; a
    child's traceback before its parent exited its own way (`make` exits 2 when its
    recipe failed); a hang; a signal. Where compute-sanitizer found errors, the exit
    status is its `--error-exitcode` (core/gpudebug.py), which says nothing of how the
    program ended: its last traceback is taken at its word, as before the status was read.
    """
    if execution.timed_out:
        return False
    if exception.type == "KeyboardInterrupt" and execution.returncode == -SIGINT:
        return True
    if evidence.gpu is not None and evidence.gpu.errors_found:
        return True
    return execution.returncode == PYTHON_UNCAUGHT_EXIT


def _no_other_process(
    returncode: int, execution: Execution, evidence: Evidence, worker: WorkerDeath | None
) -> str:
    """What an attempt that ran one process only did not mean: `; 139 = 128 + SIGSEGV is ...`.

    `worker`: a DataLoader worker's death its output reports (no worker ran).
    """
    from reprospec.outcome.children import printed_only

    notes = []
    if (conventional := exit_status_signal(returncode)) is not None:
        notes.append(f"{returncode} = 128 + {conventional}{AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN}")
    printed = printed_only(execution, evidence)
    said = printed.describe() if printed is not None else None
    if worker is not None:
        said = _describe_worker(worker)
    if said is not None:
        notes.append(f"the output reports a death ({said}), {NO_OTHER_PROCESS_RAN}")
    return "".join(f"; {note}" for note in notes)


def _a_threads(line: str, threads: Sequence[PythonException], stderr: str) -> bool:
    """Whether the last line of an attempt whose threads died is (a piece of) a thread's
    exception line, `TypeError: worker failed` or, cut and mixed by the others' interleaved
    writes, `: worker failed`, `: : worker failedworker failed`, `worker failed` or
    `TypeErrorworker failed: worker failed`: a line with a thread's message read whole in
    it, one cut before its `:`, one of a type named as exceptions are (`shutil.Error: copy
    failed` too), a group's closing rule (`+------`), or one whose message
    (its text after the last `: `) other lines print too, alone or as an exception line's
    (the reports interleaved past reading, in about 1 attempt in 70 of eight threads'). A
    `sys.exit("msg")`'s message it is not: that prints once."""
    for exception in threads:
        first = (exception.message or "").partition("\n")[0]
        printed = f"{exception.type}: {first}" if first else exception.type
        if line in printed or (first or printed) in line:
            return True
    if line.startswith(":"):
        return True  # an exception line whose type another thread's write took away
    from reprospec.outcome.tracebacks import EXCEPTION_LINE, closes_a_group, named_as_a_class

    if closes_a_group(line):
        return True  # a thread's group's closing rule (`+------`), printed last: no message

    found = EXCEPTION_LINE.match(line)
    if found is not None and named_as_a_class(found["type"]):
        return True
    message = line.rpartition(": ")[2]
    said = 0
    for other in stderr.splitlines():
        other = other.strip()
        said += other == message or other.endswith(f": {message}")
    return said > 1


def _went_on(exception: PythonException) -> str:
    """`the last traceback printed (KeyError) did not end the process (...)`."""
    return (
        f"the last traceback printed ({exception.type}) did not end the process: Python "
        f"exits {PYTHON_UNCAUGHT_EXIT} on an uncaught exception"
    )


def _xdist_running(stdout: str) -> tuple[str, ...] | None:
    from reprospec.outcome.pytestreport import xdist_running

    return xdist_running(stdout)


def hang_limit(execution: Execution) -> str:
    """Which limit ended a hang: `no progress for 10 s (run.stall)` or `timeout 60 s`."""
    if execution.stalled and execution.stall_s is not None:
        return f"no progress for {_seconds(execution.stall_s)} (run.stall)"
    if execution.timeout_s:
        return f"no exit within the timeout ({_seconds(execution.timeout_s)})"
    return "no exit within the timeout"


def _seconds(value: float) -> str:
    return f"{value:g} s"


# A hang whose last progress came within this share of the timeout (at least
# _LATE_MIN_S, at most _LATE_MAX_S before it) may have been slow, not stuck.
_LATE_SHARE = 0.1
_LATE_MIN_S = 0.5
_LATE_MAX_S = 5.0
STILL_PROGRESSING = "still progressing?"
# Why a descendant's death before a hang is named first: the hang is where it shows.
LOST_WORK = (
    "whatever waited for its work may wait forever (a multiprocessing.Pool never "
    "notices that a worker died with its task)"
)


# Why a hang in a child is not the main process's: its stack only waits for the child.
WAITED_FOR_BY_THE_MAIN_PROCESS = "where the main process only waits for it"


def still_progressing(seconds: float) -> str:
    """`last progress 1.4 s before the timeout: still progressing?` (the detail of a hang)."""
    return (
        f"last progress {seconds:.1f} s before the timeout: {STILL_PROGRESSING} "
        "A longer timeout (`run.timeout`, `run --timeout`) tells slow from stuck"
    )


def _progress_before_timeout(execution: Execution, events: Events) -> float | None:
    """How long before the timeout the last event came, when that was shortly before it."""
    timeout = execution.timeout_s
    if not timeout or events.last_t is None:
        return None
    try:
        started = datetime.fromisoformat(execution.started).timestamp()
    except (TypeError, ValueError):
        return None
    gap = started + timeout - events.last_t
    late = min(_LATE_MAX_S, max(_LATE_MIN_S, _LATE_SHARE * timeout))
    return max(gap, 0.0) if gap < late else None


def _chain(chain: Sequence[PythonException]) -> tuple[ChainLink, ...]:
    links: dict[str | None, Literal["cause", "context"] | None] = {
        "cause": "cause",
        "context": "context",
    }
    return tuple(
        ChainLink(
            e.type,
            e.message,
            links.get(e.link),
            _members(e),
        )
        for e in chain
    )


def _members(exception: PythonException) -> tuple[GroupMember, ...]:
    """An exception group's members as a result holds them (`Outcome.members`,
    `ChainLink.members`); () for any other exception."""
    return tuple(GroupMember(m.type, m.message) for m in exception.members)


def crash_stack(execution: Execution, evidence: Evidence) -> str | None:
    """The crashed child's own stack (its faulthandler report), for `where: child`."""
    child = _child_crash(execution, evidence)
    return child.stack if child is not None else None


def worker_stack(outcome: Outcome, evidence: Evidence) -> FatalError | None:
    """The Python stack of the DataLoader worker that died, as the worker itself printed it.

    The harness puts faulthandler back in front of torch's handlers in its workers, so
    a dying worker prints `Fatal Python error: <signal>` and its Python stack (the
    main process did not die of a signal, so such a report is a descendant's). Else,
    the Python stacks read from the worker's core (py-spy's, or gdb's `py-bt`), when native
    stacks were taken.
    """
    if outcome.kind != "crash" or outcome.where != "worker":
        return None
    from reprospec.outcome.tracebacks import FatalError, fatal_errors

    for text in (evidence.stderr, evidence.stdout):
        for report in fatal_errors(text):
            if outcome.signal is None or report.signal in (outcome.signal, None):
                return report
    stacks = evidence.native
    process = native.crashed_process(stacks, outcome.pid) if stacks is not None else None
    if (
        process is not None
        and process.python
        and (outcome.pid is None or process.pid == outcome.pid)
    ):
        return FatalError("", _crashed_thread_first(process.python.strip(), process.crashed_lwp))
    return None


_PY_BT_THREAD = Lazy(r"^Thread \d+ \(", re.M)


def _crashed_thread_first(text: str, lwp: int | None) -> str:
    """gdb's `py-bt` of every thread, the thread that took the signal first."""
    starts = [m.start() for m in _PY_BT_THREAD.finditer(text)]
    if lwp is None or not starts:
        return text
    blocks = [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    blocks.sort(key=lambda block: f"(LWP {lwp}))" not in block.split("\n", 1)[0])
    return "\n\n".join([text[: starts[0]].strip(), *blocks]).strip()


def _pytest_hung_in(stack: str, phase: str | None) -> str | None:
    from reprospec.outcome.hungstacks import pytest_hung_in

    return pytest_hung_in(stack, phase)


def _stuck_worker(stack: str) -> HungProcess | None:
    from reprospec.outcome.hungstacks import stuck_worker

    return stuck_worker(stack)


def _stuck_child(stack: str, source: Source) -> HungProcess | None:
    from reprospec.outcome.hungstacks import stuck_child

    return stuck_child(stack, source=source)


def _watchdog(stderr: str) -> WatchdogTimeout | None:
    if "Timeout (" not in stderr:
        return None  # (an attempt with no watchdog's dump does not import its reader)
    from reprospec.outcome.watchdog import watchdog_timeout

    return watchdog_timeout(stderr)


def _pytest_timeout(evidence: Evidence) -> PytestTimeout | None:
    if "Timeout +" not in evidence.stdout and "Timeout +" not in evidence.stderr:
        return None  # (an attempt with no pytest-timeout dump does not import its reader)
    from reprospec.outcome.watchdog import pytest_timeout_dump

    return pytest_timeout_dump(evidence.stdout) or pytest_timeout_dump(evidence.stderr)


def _pytest_timeout_failed(exception: PythonException) -> PytestTimeout | None:
    if bare_type(exception.type) != "Failed" or "Timeout (>" not in (exception.message or ""):
        return None  # (`--tb=no`'s summary may cut `from pytest-timeout.`)
    from reprospec.outcome.watchdog import pytest_timeout_failure

    return pytest_timeout_failure(exception.message)


def _launcher_failed(chain: tuple[PythonException, ...]) -> bool:
    from reprospec.outcome.children import launcher_failed

    return launcher_failed(chain)


def _pytest_timeout_worker(evidence: Evidence, where: str | None) -> PytestTimeout | None:
    """pytest-timeout's thread method where a pytest-xdist worker exited with no signal
    (`crashed while running`, this error's) and the output shows the bound fired (its
    rule, or a session at least that long): its `os._exit(1)`, the test's hang, which a
    ticket of the same output reads as such (capture/ticket.py)."""
    from reprospec.outcome.pytestreport import crashed_test

    if where not in (None, "main") or crashed_test(evidence.stdout) is None:
        return None
    from reprospec.outcome.watchdog import pytest_timeout_worker

    return pytest_timeout_worker(f"{evidence.stdout}\n{evidence.stderr}")


def _watchdog_frame(timeout: WatchdogTimeout, source: Source) -> PythonFrame | None:
    from reprospec.outcome.watchdog import hung_frame

    return hung_frame(timeout, source=source)


def _hung_frame(stack: str, source: Source) -> PythonFrame | None:
    from reprospec.outcome.hungstacks import hung_frame

    return hung_frame(stack, source=source)


def _source(workdir: Path | None, container: str | None) -> Source:
    """The text of the attempt's files by the paths its dumps name (a hang's only: it is
    made where one is read); this host's files (`on_disk`) where no workdir is given, and
    none (`unread`) where a container's (`container`: its workdir's name there) were not
    mapped back: its paths (`/work/...`) are not this host's files (review)."""
    from reprospec.outcome.hangsource import on_disk, remembered, source_at, unread

    if workdir is None:
        return unread if container is not None else remembered(on_disk)
    return source_at(workdir, container=container)


def _dead_worker_pid(
    kind: str, where: str | None, worker: WorkerDeath | None, evidence: Evidence
) -> int | None:
    """The pid of the DataLoader worker whose death made the attempt a worker crash.

    torch's one-line report names none; the core the worker left does.
    """
    if kind != "crash" or where != "worker" or worker is None:
        return None
    if worker.pid is not None:
        return worker.pid
    cored = [
        p
        for p in (evidence.native.processes if evidence.native is not None else ())
        if p.source == "core"
        and not p.root
        and (worker.signal is None or canonical_signal(p.signal or "") == worker.signal)
    ]
    return cored[0].pid if len(cored) == 1 else None


def _not_run(execution: Execution, evidence: Evidence) -> NotRun | None:
    """Why the attempt did not run what the spec asks (the runner or harness says); None: it did."""
    if execution.infra_error:
        return NotRun(execution.infra_error)
    if evidence.events.infra_error and execution.returncode == HARNESS_EXIT_INFRA:
        # The harness writes the event and exits with EXIT_INFRA; an event alone (written
        # by code the harness ran, which then crashed) does not make a crash "not run".
        return NotRun(evidence.events.infra_error)
    if execution.timed_out and evidence.events.probing is not None:
        # The harness's probe of an entrypoint dataset (reading item 0 in a spawned process
        # to size the built-in model) never answered: the training never began, so a
        # `hang @ setup` would be a verdict on code the spec never ran as it asks.
        return NotRun(
            f"workload.data.dataset: cannot size the built-in model: reading item 0 in a "
            f"probe process (pid {evidence.events.probing}) never answered "
            f"({hang_limit(execution)}); declare `shape` and `classes` under "
            "workload.data.dataset"
        )
    if execution.returncode is None and not execution.timed_out:
        if execution.interrupted:
            return NotRun("interrupted before it finished")
        return NotRun("the runner recorded no exit status")
    return None


def failure_signature(
    kind: str,
    signal: str | None,
    where: str | None,
    exception: str | None,
    exit_code: int | None,
    phase: str | None,
    injected: str | None = None,
    *,
    crashed: CrashedChild | None = None,
) -> str:
    """`crash:SIGSEGV:worker:validation`, `error:RuntimeError:train`, `hang:validation`, `pass`.

    A hang after a descendant died of a signal says so (`hang:after-child-SIGSEGV`,
    `hang:after-child-crash` where no signal is known): a pool left waiting for a dead
    worker's task is another failure than a deadlock, which no child's death preceded.
    A failure the spec injected says so (`...:validation:injected=faults[0]`): it is
    told apart from the same failure of the code under test.
    """
    if kind == "pass":
        return "pass"
    parts: list[str | None] = [kind]
    if kind == "crash":
        parts += [signal or "unknown-signal", where]
    elif kind == "error":
        parts += [exception or f"exit-{exit_code}", "worker" if where == "worker" else None]
    elif kind == "hang" and crashed is not None:
        parts.append(f"after-child-{crashed.signal or 'crash'}")
    parts.append(phase)
    if injected:
        parts.append("injected=" + injected.replace("workload.", "").replace(", ", "+"))
    return ":".join(p for p in parts if p)


def normalize_message(text: str) -> str:
    """A message with what varies between runs and machines replaced (pids, paths, addresses)."""
    text = without_escapes(text)
    text = _UUID.sub("<uuid>", text)
    text = _HEX.sub("<hex>", text)
    text = _PATH.sub("<path>", text)
    text = _NUMBER.sub("<N>", text)
    return " ".join(text.split())[:300]


def worker_death(
    stderr: str, worker_exit: Event | None = None, child_exits: Sequence[Event] = ()
) -> WorkerDeath | None:
    """How a DataLoader worker died: from the harness's event (which worker, which item),
    from the status the main process reaped (a `child_exit` event of a DataLoader worker
    dead of a crash signal), or from torch's messages, which race with the main process's
    own failure (a worker SIGKILLed just after it sent a batch: ConnectionResetError)."""
    if worker_exit is not None:
        raw = worker_exit.get("signal")
        signal = canonical_signal(raw) if isinstance(raw, (str, int)) and raw else None
        pid = worker_exit.get("pid")
        code = worker_exit.get("exit_code")
        return WorkerDeath(
            signal,
            code if isinstance(code, int) and signal is None else None,
            pid if isinstance(pid, int) else None,
            "worker_exit event",
            worker=_int_or_none(worker_exit.get("worker")),
            item=_int_or_none(worker_exit.get("index")),
            item_phase=phase if isinstance(phase := worker_exit.get("phase"), str) else None,
            item_step=_int_or_none(worker_exit.get("step")),
        )
    for event in child_exits:
        raw = event.get("signal")
        signal = canonical_signal(raw) if isinstance(raw, str) and raw else None
        if event.get("dataloader") is True and signal in CRASH_SIGNALS:
            pid = _int_or_none(event.get("pid"))
            # Its index where the sitecustomize read it from the worker's start.
            worker = _int_or_none(event.get("worker"))
            return WorkerDeath(signal, None, pid, "child_exit event", worker=worker)
    if not stderr:  # most attempts that pass: none of torch's messages to look for
        return None
    # A worker "killed by signal: Terminated" (SIGTERM, SIGINT, SIGPIPE) was stopped, as a
    # reaped one is (above): multiprocessing's atexit terminate() of the workers of a main
    # process that failed on its own, whose SIGCHLD handler then says so. Not the failure.
    kills = [
        killed
        for killed in _WORKER_KILLED.finditer(stderr)
        if (named := signal_from_words(killed["desc"])) is None or named in CRASH_SIGNALS
    ]
    if kills:
        killed = kills[-1]
        signal = signal_from_words(killed["desc"])
        return WorkerDeath(signal, None, int(killed["pid"]), killed.group(0).strip())
    handler = _WORKER_HANDLER.search(stderr)
    if handler is not None:
        return WorkerDeath(signal_from_description(handler["desc"]), None, None, handler.group(0))
    exited = _WORKER_EXITED.search(stderr)
    if exited is not None:
        code = int(exited["code"]) if exited["code"] else None
        pid = exited["pids"].split(",")[0].strip()
        return WorkerDeath(None, code, int(pid) if pid.isdigit() else None, exited.group(0))
    return None


def _shell_signal(returncode: int, stderr: str, stdout: str) -> str | None:
    conventional = exit_status_signal(returncode)
    if conventional is not None:
        return conventional
    candidate = exit_status_signal(returncode, any_signal=True)
    if candidate is None:
        return None
    return candidate if _signal_reported(candidate, stderr, stdout) else None


def _death_shown(signal: str, execution: Execution, evidence: Evidence) -> bool:
    """Whether anything besides the exit status shows a death by `signal`: the output's
    report of it (`_signal_reported`), a core of a process that died of it, or, for
    SIGKILL, an OOM kill the runner counted for the attempt (it leaves no core, and bash
    prints no report of a pipeline's member)."""
    if _signal_reported(signal, evidence.stderr, evidence.stdout):
        return True
    if signal == "SIGKILL" and execution.oom is not None:
        return True
    cores = evidence.native.processes if evidence.native is not None else ()
    return any(p.source == "core" and p.signal == signal for p in cores)


def _signal_reported(signal: str, stderr: str, stdout: str) -> bool:
    """Whether the output shows a death by `signal`: a faulthandler report of it, a shell's
    "4242 Segmentation fault" (bash's), or the description alone on a line of stderr, as
    dash (/bin/sh here, the engine's own shell for a string command) prints it: `Hangup`,
    `Alarm clock`, `Killed`, and `File size limit exceeded (core dumped)` where the death
    wrote a core."""
    from reprospec.outcome.tracebacks import fatal_errors

    described = re.escape(describe_signal(signal))
    shell = re.compile(rf"\b\d+ {described}\b")
    if re.search(rf"^{described}(?: \(core dumped\))?$", stderr, re.MULTILINE):
        return True
    return any(
        shell.search(text) or any(f.signal == signal for f in fatal_errors(text))
        for text in (stderr, stdout)
    )


def _describe_worker(worker: WorkerDeath, sent: bool = False) -> str:
    """`DataLoader worker 1 (pid 42) died of SIGSEGV (...) fetching item 37 (validation step 7)`;
    `sent`: its SIGKILL was a process's (no OOM kill counted), which the words say."""
    who = "a DataLoader worker" if worker.worker is None else f"DataLoader worker {worker.worker}"
    if worker.pid:
        who += f" (pid {worker.pid})" if worker.worker is not None else f" pid {worker.pid}"
    if worker.signal:
        text = f"{who} died of {worker.signal} ({describe_signal(worker.signal)})"
    elif worker.exit_code is not None:
        text = f"{who} exited with code {worker.exit_code}"
    else:
        text = f"{who} exited unexpectedly"
    if worker.item is not None:
        text += f" fetching item {worker.item}"
        if worker.item_phase and worker.item_step is not None:
            text += f" ({worker.item_phase} step {worker.item_step})"
    if sent:
        text += f", {SENT_BY_A_PROCESS}"
    return text


def _first_busy(busy: tuple[Event, ...]) -> Event:
    """The `worker_busy` event stuck the longest: the one a hang names."""
    return min(busy, key=lambda e: _number(e.get("since")) or _number(e.get("t")) or 0.0)


def _describe_busy(busy: tuple[Event, ...], finished: str) -> str:
    """`DataLoader worker 0 (pid 42) stuck fetching item 37 (train step 6) for 8.1 s`."""
    first = _first_busy(busy)
    worker, pid, index = (_int_or_none(first.get(k)) for k in ("worker", "pid", "index"))
    text = "a DataLoader worker" if worker is None else f"DataLoader worker {worker}"
    if pid is not None:
        text += f" (pid {pid})" if worker is not None else f" pid {pid}"
    text += " stuck fetching"
    text += " an item" if index is None else f" item {index}"
    phase, step = first.get("phase"), _int_or_none(first.get("step"))
    if isinstance(phase, str) and step is not None:
        text += f" ({phase} step {step})"
    seconds = _number(first.get("seconds"))
    since = _number(first.get("since"))
    try:
        end = datetime.fromisoformat(finished).timestamp()
    except (TypeError, ValueError):
        end = None
    if since is not None and end is not None and end > since:
        text += f" for {end - since:.1f}s"
    elif seconds is not None:
        text += f" for over {seconds:.1f}s"
    if len(busy) > 1:
        text += f" (and {plural(len(busy) - 1, 'more stuck item')})"
    return text


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _pool_worker_no_crash(evidence: Evidence) -> bool:
    """children.pool_worker_no_crash, imported only where the pool's words were printed."""
    if "terminated abruptly" not in evidence.stderr:
        return False
    from reprospec.outcome.children import pool_worker_no_crash

    return pool_worker_no_crash(evidence)


def _killed_by_a_process(execution: Execution, evidence: Evidence) -> ChildCrash | None:
    """children.killed_by_a_process, imported only where the kernel counted no OOM kill."""
    if not execution.no_oom_kill:
        return None
    from reprospec.outcome.children import killed_by_a_process

    return killed_by_a_process(execution, evidence)


def _pipeline_member(
    execution: Execution, evidence: Evidence, signal: str
) -> tuple[ChildCrash, int] | None:
    """The process of a shell's pipeline whose death by `signal` the root's 128+N reports,
    and its stage there (0: the first, the command's program; children.pipeline_stage),
    where bash's report lists it in a pipeline; None otherwise (a script's last command,
    `sh run.sh`'s python: the main program, as rule 4 reads it)."""
    if "| " not in evidence.stderr:
        return None  # (no pipeline in bash's words: its reader is not even imported)
    from reprospec.outcome.children import pipeline_stage

    dead = _child_crash(execution, evidence)
    if dead is None or dead.signal != signal or dead.pid is None:
        return None
    stage = pipeline_stage(evidence.stderr, dead.pid)
    return (dead, stage) if stage is not None else None


def _child_crash(execution: Execution, evidence: Evidence) -> ChildCrash | None:
    """children.child_crash, imported at an exit that may be a child's crash: an attempt
    that passes (or ended on a signal) never reads its children's exits (issue 30, item 4)."""
    from reprospec.outcome.children import child_crash

    return child_crash(execution, evidence)
