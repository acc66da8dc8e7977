"""The one vocabulary: how outcomes, expectations, rates, sizes and durations read to people.

Every renderer words results through here (the console's progress lines and
table, the markdown report, JUnit, the GitHub summary, the judge's reasons), so
a crash reads the same wherever it is shown:

    outcome       crash SIGSEGV (worker) @ validation:7     error exit 1 ValueError @ train:3
                  error exit 2 (last traceback: KeyError)   (a traceback that did not end it)
                  crash SIGSEGV (child pid 4242: ./test_ops)  hang @ import (wandb)
                  hang after a child died of SIGSEGV (pid 4242: python pool.py)
                  crash SIGBUS @ train:3 (backward)
                  crash SIGSEGV (worker) @ validation:7 — injected by the spec: workload.faults[0]
    not run       infra-error: docker engine not reachable
    expectation   crash SIGSEGV or SIGBUS @ validation:6..8 rate >=0.3
    a miss        exception: expected RuntimeError, got ConnectionResetError
    rate          3/4 (95% CI 0.30–0.96)     (bounds rounded outward)
    attempts      2× hang @ import, 1× pass
    a pass        pass, but a process died of SIGSEGV     (`python app.py | tee log`)

The raw values (`6..8`, `>=0.3`, byte counts) are formatted by units.py.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from reprospec.core.inputs import Expectation
from reprospec.core.lazyre import Lazy
from reprospec.core.results import (
    AttemptResult,
    CrashedChild,
    NotRun,
    Outcome,
    Rate,
    SetAside,
    VerdictKind,
)
from reprospec.core.signals import canonical_signal
from reprospec.core.units import RateBound, format_size

if TYPE_CHECKING:
    from pathlib import Path

    from reprospec.core.resumed import Resumed, ResumedPart

VERDICT_MARKS: dict[VerdictKind, str] = {
    "reproduced": "✅",
    "not-reproduced": "❌",
    "undecided": "❔",
    "infra-error": "⚠️",
    "observed": "🔍",
    "not-run": "⏸️",
}
# An expected outcome as a verb ("crashes when fused=1"; "never crashes as expect says").
OUTCOME_VERBS = {"crash": "crashes", "hang": "hangs", "error": "errors", "fail": "fails"}
# A cell an interrupted run never reached: nothing went wrong in it.
NOT_RUN = "not run (interrupted)"
NOT_RUN_LEGEND = f"⏸️ {NOT_RUN}"
# A cell whose every attempt could not run (a command not found, no docker engine).
COULD_NOT_RUN = "could not run (infra-error)"
# The headline of an interrupted run that kept no attempt. Not "Nothing ran": the attempts
# in flight ran, and one may have run to its end after the stop, as its stacks were asked
# for (its logs say so); one that had ended before it is kept (unless a SIGTERM, which
# reaches the attempts too, came within 0.25 s of its end: set aside, its own warning).
NOTHING_KEPT = "Nothing finished before the stop"
# A cell `run.stop_on` stopped before its planned attempts all ran, as its reason ends in
# results.json, report.md and the JUnit report: the attempts it never ran were skipped on
# purpose, not lost (nothing said so; an interrupted cell did say it).
STOPPED_BY_STOP_ON = "stopped by run.stop_on"


def stopped_phrase(stop_on: str, ran: int, planned: int, missed: int = 0) -> str:
    """`stopped by run.stop_on: first-miss after 2 of 3 attempts`.

    `missed`: of a cell without `expect.rate` that first-reproduction stopped, the attempts
    that missed before its first match. One miss already made it not-reproduced, so the
    bare phrase on a `not-reproduced` cell read as if it had reproduced: it says
    it stopped at its first match, and what the misses made of the verdict."""
    phrase = f"{STOPPED_BY_STOP_ON}: {stop_on} after {ran} of {planned} attempts"
    if missed and stop_on == "first-reproduction":
        phrase += (
            f", at its first that matched; {missed} missed before it, and without an "
            "expect.rate one miss makes the cell not-reproduced"
        )
    return phrase


def stopped_of(reason: str) -> str:
    """The `stopped_phrase` a cell's reason ends in ("" where stop_on did not stop it):
    what report.md's rate column and the JUnit report say of a cell whose reason they do
    not show (a reproduced one's)."""
    start = reason.rfind(f"({STOPPED_BY_STOP_ON}: ")
    return reason[start + 1 : -1] if start >= 0 and reason.endswith(")") else ""


INTERRUPTED_AFTER = "interrupted after"


def interrupted_phrase(ran: int, planned: int) -> str:
    """`interrupted after 1 of 3 attempts`: a cell a Ctrl-C cut short."""
    return f"{INTERRUPTED_AFTER} {ran} of {planned} attempts"


def interrupted_of(reason: str) -> str:
    """The `interrupted_phrase` in a cell's reason ("" where the run did not cut it short):
    what a rate column says beside `1/1`, which read as a whole cell's (nu62b)."""
    start = reason.rfind(f"({INTERRUPTED_AFTER} ")
    end = reason.find(" attempts", start)
    return reason[start + 1 : end + len(" attempts")] if start >= 0 and end > start else ""


def stopped_counts(reason: str) -> tuple[str, int, int] | None:
    """(stop_on, attempts ran, attempts planned) of the `stopped_phrase` a cell's reason
    ends in; None where stop_on did not stop it. What `merge` adds up over a cell's shards,
    each of which stop_on stopped on its own share."""
    phrase = stopped_of(reason).removeprefix(f"{STOPPED_BY_STOP_ON}: ")
    stop_on, sep, counts = phrase.partition(" after ")
    # What follows the counts (`, at its first that matched; ...`) is no count.
    ran, of, planned = counts.partition(" attempts")[0].partition(" of ")
    if not sep or not of or not ran.isdigit() or not planned.isdigit():
        return None
    return stop_on, int(ran), int(planned)


VERDICT_LEGEND = "✅ reproduced · ❌ not reproduced · ⚠️ infra-error"
OBSERVE_LEGEND = "🔍 observed (no expectation) · ⚠️ infra-error"
# The fix of a module missing where the command's `python` ran reprospec's own interpreter,
# one that was not chosen (`Execution.unchosen_python`): the import's reason
# (outcome/setupfail.py) and `python -m`'s (core/notstarted.py) go on as each needs.
PASS_YOUR_PYTHON = "pass --python PATH (the interpreter that has"
# How an attempt's warning begins when its private TMPDIR or XDG_CACHE_HOME held files
# (process/scratch.py): a failure that needs them shared across attempts is then hidden.
PRIVATE_TMP_LEFT = "removed what the attempt left in its private "
PRIVATE_TMP_HINT = (
    "its attempts left files in their private TMPDIR or XDG_CACHE_HOME, removed after "
    "each: a failure that needs attempts to share them (a cache in /tmp) needs "
    "`environment.shared_tmp: true`, or `run.instances` to run them at once"
)
# How a hang's list of native threads marks the stuck DataLoader worker's thread, the one
# the hang's summary names (native/render.py), and its process where its stacks could not
# be read (an attach refused): what is said of it then is that error.
STUCK_MARK = " (stuck: the DataLoader worker fetching an item)"
STUCK_UNREAD = " (the stuck DataLoader worker: its stacks could not be read)"
# Child command lines are cut to this in a phrase (the outcome's `cmdline` keeps more).
_CMDLINE_WIDTH = 60


def verdict_legend(verdicts: Iterable[VerdictKind] = ()) -> str:
    """The marks' legend; `❔ undecided` and `⏸️ not run` only when some cell is."""
    seen = set(verdicts)
    legend = VERDICT_LEGEND
    if "undecided" in seen:
        legend = "✅ reproduced · ❌ not reproduced · ❔ undecided · ⚠️ infra-error"
    if "not-run" in seen:
        legend += f" · {NOT_RUN_LEGEND}"
    return legend


def location(
    phase: str | None, step: object, stage: str | None = None, module: str | None = None
) -> str:
    """`validation:7`, `train:3 (backward)`, `import (wandb)`, `validation`, `step 7` or ''."""
    if phase and step is not None:
        spot = f"{phase}:{step}"
    elif phase:
        spot = phase
    else:
        spot = f"step {step}" if step is not None else ""
    detail = module or stage
    if detail:
        spot = f"{spot} ({detail})" if spot else f"({detail})"
    return spot


def signals_phrase(signals: Iterable[str]) -> str:
    """`SIGSEGV`, `SIGSEGV or SIGBUS`: the signals an expectation accepts, canonical."""
    return " or ".join(canonical_signal(s) or s for s in signals)


def outcome_phrase(
    outcome: Outcome | NotRun, *, where: bool = True, message: bool = False, pid: bool = True
) -> str:
    """`crash SIGSEGV (worker) @ validation:7`: one outcome in a few words (`crash SIGKILL by
    the OOM killer (worker)` where the kernel's OOM killer sent the signal, `hang in work
    (hangkid.py:3)` where a hang's stacks show the user's frame it sat in, or a C program's
    native place, `hang in clock_nanosleep@libc<-main@nap`).

    `where=False` leaves out the phase and step, and a hang's frame (a grid cell, or a
    reason whose expectation does not ask where); `message=True` adds the message's first line;
    `pid=False` leaves a crashed child's pid out (to count alike attempts together).
    A failure the spec's `faults` caused says so, wherever it is shown: it is no bug.
    """
    if isinstance(outcome, NotRun):
        return f"infra-error: {outcome.reason}" if where else "infra-error"
    parts: list[str] = [outcome.kind]
    if outcome.signal:
        parts.append(outcome.signal)
    if outcome.oom_killed:
        parts.append(BY_THE_OOM_KILLER)
    if outcome.kind == "error" and outcome.exit_code is not None:
        parts.append(f"exit {outcome.exit_code}")
    if outcome.exception and outcome.kind != "crash":
        # A worker crash surfaces as a RuntimeError in the main process: the signal is the news.
        # A group says its members (`ExceptionGroup[ValueError]`): every TaskGroup's is one.
        parts.append(outcome.named_exception or outcome.exception)
    elif outcome.last_traceback is not None and outcome.kind in ("error", "pass"):
        # Printed, but the process went on (a handled exception it logged, a child's) and
        # exited its own way. Not a hang's: `hang (last traceback: PermissionError)` named a
        # child's error, ended long before, as the hang, where its process slept on in its
        # own code; the report says where it hung and quotes the traceback apart.
        printed = outcome.last_traceback
        parts.append(f"(last traceback: {printed.named})")
    if message:
        parts.append(repr(shorten(outcome.message.splitlines()[0], 60)) if outcome.message else "")
    if outcome.where == "worker":
        parts.append("(worker)")
    elif outcome.where == "child":
        parts.append(_child(outcome, pid=pid and where))
    if where and outcome.kind == "hang" and (place := outcome.hung_place) is not None:
        # Where it sat: hangs in two places share the signature `hang`.
        # A launcher's child's native place names that process, as capture's title does.
        ran = outcome.hung_process if outcome.hung_in is None else None
        parts.append(f"in {ran_process(ran)}, in {place}" if ran else f"in {place}")
    spot = location(outcome.phase, outcome.step, outcome.stage, outcome.module) if where else ""
    if spot:
        parts.append(f"@ {spot}")
    if outcome.kind == "hang" and outcome.crashed_child is not None:
        parts.append(_after_child(outcome.crashed_child, pid=pid and where))
    if outcome.injected:
        parts.append("— " + injected_phrase(outcome.injected) if where else "(injected)")
    return " ".join(p for p in parts if p)


def ran_process(cmdline: str) -> str:
    """`a process it ran (nap)`: a process of the attempt's own program's (a launcher's or a
    shell's child) where a hang's or a crash's place is, by its program's file name and its
    arguments (`/w/nap 3` -> `nap 3`): capture's title and the run's words alike."""
    program, _, rest = cmdline.strip().partition(" ")
    return f"a process it ran ({program.rsplit('/', 1)[-1]} {rest}".strip() + ")"


def injected_phrase(injected: str) -> str:
    """`injected by the spec: workload.faults[0]`: the label of a failure the spec caused."""
    return f"injected by the spec: {injected}"


def child_named(outcome: Outcome) -> str:
    """The crashed child an outcome names, as its phrase words it without a pid:
    `(child: python3 a_child.py)`, `after a child died of SIGSEGV (python pool.py)`; ""
    where it names none. The signature leaves the child out (`crash:SIGSEGV:child:...`),
    so attempts whose children differ count apart by this too: an observe run grouped
    two children's crashes under the first one's command line."""
    if outcome.where == "child":
        return _child(outcome, pid=False)
    if outcome.kind == "hang" and outcome.crashed_child is not None:
        return _after_child(outcome.crashed_child, pid=False)
    return ""


# The nouns the engine's phrasings put before a process's id (`child pid 4242`, `a
# DataLoader worker pid 42`), each of which names the process without it: what stays of
# the phrase where capture takes the pid out (capture/command.py's without_pids).
PID_NOUNS = frozenset({"worker", "process", "child"})


def _child(outcome: Outcome, *, pid: bool) -> str:
    """`(child pid 4242: ./test_ops --gtest_filter=A.B)`, `(child: ...)` or `(child)`."""
    who = f"child pid {outcome.pid}" if pid and outcome.pid is not None else "child"
    if outcome.cmdline:
        return f"({who}: {shorten_command(outcome.cmdline, _CMDLINE_WIDTH)})"
    return f"({who})"


def _after_child(child: CrashedChild, *, pid: bool) -> str:
    """`after a child died of SIGSEGV (pid 4242: python pool.py)`: a hang's likely cause."""
    what = f"died of {child.signal}" if child.signal else "terminated abruptly"
    who = [f"pid {child.pid}"] if pid and child.pid is not None else []
    if child.cmdline:
        who.append(shorten_command(child.cmdline, _CMDLINE_WIDTH))
    return f"after a child {what}" + (f" ({': '.join(who)})" if who else "")


def died_before_the_hang(child: CrashedChild) -> str:
    """`--- pid 4242 (python pool.py): died of SIGSEGV before the hang ---`: the line over
    the dead child's own stack (`AttemptResult.dead_child_stack`) where the report's Stacks
    section shows it before the hung processes' (each under process/stacks.py's
    `--- pid N (command) ---`)."""
    who = "a child" if child.pid is None else f"pid {child.pid}"
    if child.cmdline:
        who += f" ({child.cmdline})"
    what = f"died of {child.signal}" if child.signal else "terminated abruptly"
    return f"--- {who}: {what} before the hang ---"


# The first line of the spec text a run with `--set` stores (its document written out):
# `compare` writes the other run's out the same way before it diffs them.
RESOLVED_SPEC = "# resolved from "

# The end of a crash's detail when the root's exit status 128+N named the signal, not a
# signal that killed it: the status a shell gives when a process it ran dies of it
# (`sh run.sh`'s python), where a process besides the program ran (classify.py, rule 4).
AS_A_SHELL_REPORTS_IT = ", as a shell reports it"

# After it, where bash's report lists the dead process in a pipeline after its first
# (`set -o pipefail; a | b | c`'s b, classify.py rule 4): the crash is that process's, not
# the main program's.
A_PROCESS_OF_THE_PIPELINE = "a process of the pipeline the shell ran, whose status it took"
# The first process of a pipeline (`python train.py 2>&1 | tee log.txt`) is the command's
# program: its death is the main process's crash (outcome/classify.py, rule 4).
THE_PIPELINES_PROGRAM = (
    "the first process of the pipeline the shell ran, the command's program, whose status it took"
)

# Where the runner knows no process besides the root ran (classify.py, rule 7): after
# `139 = 128 + SIGSEGV`, why that status is no death; after the death its output reports,
# why it is none. Tests and docs quote them; one spelling keeps them true.
AS_A_SHELL_REPORTS_A_DEATH_BUT_ITS_OWN = (
    ", as a shell reports a death, but no process besides the main one ran and it was not "
    "killed: its own exit status"
)
NO_OTHER_PROCESS_RAN = (
    "but the attempt ran no process besides the main one: it is the program's output"
)


def a_shells_own_exit(said: str) -> str:
    """The end of an error's detail after `139 = 128 + SIGSEGV` where the command tells a
    shell to exit with that status (`said`: `exit 139`, or `exit 139 in run.sh`, a script
    it names) and nothing shows a death by the signal (classify.py rule 4, shellexit.py):
    the shell's own exit status, as `sh -c 'exit 139'` gives, no death's report. `no core
    read`, not `no core`: with native stacks off, or cores piped away (apport,
    systemd-coredump), none is looked for, and the engine cannot tell that from none made."""
    return (
        f", as a shell reports a death, but the command tells a shell to exit with it "
        f"({said!r}) and nothing shows a death (no shell's report, no core read): its own "
        "exit status"
    )


# The end of a crashed child's detail where only the output tells of the death (a child's
# report, then the main process's own exception), not the engine (classify.py, rule 6).
def threads_died(count: int, types: Sequence[str]) -> str:
    """What a failure's detail says of the threads whose tracebacks its stderr holds (`4
    threads died of an exception (TypeError; ...)`): shown as the threads', never taken for
    the exception that ended the process (outcome/classify.py). `types`: those read whole,
    each once; the threads' reports interleave on stderr, and a cut one names none."""
    named = f"{', '.join(types)}; " if types else ""
    return f"{plural(count, 'thread')} died of an exception ({named}{THREADS_ARE_NOT_THE_END})"


# Why a thread's exception is no verdict's: Python ends the thread, and the process goes on.
THREADS_ARE_NOT_THE_END = "threading.excepthook's reports: a thread's exception ends no process"


_MET_IN_ANY_GROUP = "as the judge meets it in any group that holds one"


def guessed_from_pytest(test: str | None = None) -> str:
    """What a ticket's command is where the log shows pytest's report of `test` and no
    command line: the one phrase of the ticket's evidence line and the skeleton's note,
    which said it two ways (review). The evidence line gives no `test`: the command it
    follows names the test already."""
    of = f" of {test}" if test else ""
    return f"a guess from pytest's report{of} (the log shows no command line)"


def programs_name(path: str, name: str, *, own: bool) -> str:
    """A ticket's evidence line for the command's program that a path of the sender's
    named and the spec names by `name`: an environment's console script, which the run's
    environment provides, or (`own`) a program of its own (uv), which its PATH must."""
    if own:
        return (
            f"the command's {path}: {name}, by its name (a program of its own: the run needs "
            f"{name} on PATH)"
        )
    return f"the command's {path}: an environment's console script, by its name"


def group_member_note(
    group: str, member: Literal["common", "first", "none"], *, ended: bool = True
) -> str:
    """A captured spec's comment on `expect.exception` for an exception group (every
    asyncio.TaskGroup failure) expected by a member (capture/writer.group_expectation):
    `common`, one every attempt of it held (a live capture); `first`, a log's first member
    to fail (its one attempt), which timing may change; `none`, the attempts held no
    member in common, so the group's type is expected alone. `ended`: the group ended the
    process, else it was the last traceback printed before the process went on."""
    if member == "common":
        which = "that ended it" if ended else "printed last"
        return f"a member of the {group} {which}, held by every attempt of it, " + _MET_IN_ANY_GROUP
    if member == "first":
        return (
            f"a member of the log's {group}, the first to fail, {_MET_IN_ANY_GROUP}; "
            "which member fails first can vary from run to run"
        )
    return f"the {group}'s members varied from attempt to attempt, none in all: its type alone"


# A hang the program timed out itself (outcome/watchdog.py): classify.py's detail, and
# capture/ticket.py's evidence of the same dump in a log.
WATCHDOG_ENDED_IT = (
    "its own faulthandler watchdog (dump_traceback_later with exit=True) ended it as hung"
)

KNOWN_FROM_THE_OUTPUT_ALONE = (
    "the death is known from the output alone (the engine saw no such process end)"
)

# The end of an error's detail where a child or a DataLoader worker died of a SIGKILL with
# no OOM kill counted on the machine (classify.py, rules 5 and 6): a process sent it, which
# one unknown (a script's `timeout -s KILL`, a `kill -9` from outside, its own os.kill), so
# never said to be the main process's doing; no crash.
SENT_BY_A_PROCESS = (
    "sent by a process (no OOM kill during the attempt: a kill -9, a timeout -s KILL, "
    "its own os.kill): not a crash"
)

# After an error's `exit code 1` where concurrent.futures' "terminated abruptly" names no
# signal and the program's hooks wrote no worker's death by one (outcome/children.py
# `pool_worker_no_crash`): the worker exited, or its parent terminated it.
POOL_WORKER_NO_CRASH = (
    "concurrent.futures reports that a process of its pool terminated abruptly, but no "
    "worker died of a crash signal (the program's multiprocessing reaped none: an os._exit, "
    "a SIGTERM, its own terminate()): not a crash"
)

# After it, where the shell's 128+N is its one program's death (classify.py rule 4,
# process/tree.py `program_died`): the main process died of it, as a list command's does.
THE_ONE_PROGRAM_DIED_OF_IT = (
    "the one program the shell ran died of it (its own record: it asked for no exit status)"
)

# The end of an error's detail after `137 = 128 + SIGKILL` where the kernel counted no OOM
# kill on the machine while the attempt ran (classify.py, rule 4): the death the status
# reports (a script's `timeout -s KILL`, a `kill -9`) was sent by a process, no crash.
A_SHELLS_SIGKILL_SENT_BY_A_PROCESS = (
    ", as a shell reports a death, sent by a process (no OOM kill during the attempt): not a crash"
)
# Its end instead where nothing the engine saw shows a death by SIGKILL (no process of the
# attempt seen to die of it, no shell's `Killed`): the status is a SIGKILL's report only by
# convention, as likely a program's own `exit 137` (`sh -c 'exit 137'`, a program a Python
# one exec'd), which said `sent by a process` though no process had been killed.
A_SHELLS_137_OR_AN_EXIT_STATUS = (
    ", as a shell reports a death, or a program's own exit status (no process of the "
    "attempt was seen to die of SIGKILL, and no OOM kill during the attempt): not a crash"
)
# The head of capture's comment on a spec's `exit_code: 137` of either (capture/command.py).
SIGKILL_SENT_BY_A_PROCESS = "128 + SIGKILL sent by a process"
SIGKILL_OR_AN_EXIT_STATUS = "128 + SIGKILL, or a program's own exit status"

# The start of the warning of a pass whose tree held a process that died of a signal
# (`python app.py | tee log`: the pipeline's status is tee's), then the signal.
PASSED_BESIDE_A_CRASH = "passed, but a process of the attempt died of"

# The start of the warning of a pass whose stderr holds a Python traceback (a program that
# caught its failure, printed it and exited 0), then the exception: the pass is what its
# status says, the traceback must not go unseen.
PASSED_AFTER_A_TRACEBACK = "passed (exit status 0), but printed a traceback:"


def build_log_phrase(reason: str, log: object) -> str:
    """An environment's infra-error reason with the file that keeps uv's whole output of its
    failed build (the reason says one line of it): the console, report.md, results.json
    and Slurm's refusal say where to read the rest."""
    return f"{reason} (uv's whole output: {log})"


# A SIGKILL the kernel's OOM killer sent, as an outcome's phrase says it (`crash SIGKILL by
# the OOM killer (worker)`): the runner saw the kernel count a kill while the attempt ran.
BY_THE_OOM_KILLER = "by the OOM killer"


def oom_killed(kills: int | None = None) -> str:
    """`the kernel's OOM killer killed 2 processes`, or `... killed it` where the runner
    knows no count (a container's `OOMKilled`): how every runner starts the sentence."""
    if kills is None:
        return "the kernel's OOM killer killed it"
    return f"the kernel's OOM killer killed {plural(kills, 'process', 'processes')}"


def crash_beside_pass(attempt: AttemptResult) -> str | None:
    """The signal a process of this passing attempt died of (its warning says so), or None."""
    for warning in attempt.warnings:
        if warning.startswith(PASSED_BESIDE_A_CRASH):
            return warning[len(PASSED_BESIDE_A_CRASH) :].split()[0]
    return None


# The start of the warning of an attempt that reached a limit on what it may use (the
# process limit, `environment.memory`): attempt_phrase says it beside the outcome, where
# a reader of the verdict alone did not learn that the attempt ran into its limit.
_REACHED = "the attempt reached "
LIMIT_REACHED = _REACHED + "its "


def process_limit_reached(max_processes: int) -> str:
    """The warning of an attempt whose pids limit refused a fork or a thread: the local
    runner's (its cgroup's count, process/run.py) and the docker runner's (its container's,
    runners/docker/pidswatch.py) alike."""
    return (
        f"{LIMIT_REACHED}process limit "
        f"({plural(max_processes, 'process', 'processes')}): "
        "a fork or a new thread was refused (fork failed: process limit; "
        "docs/limits.md)"
    )


def limit_reached(attempt: AttemptResult) -> str | None:
    """`its process limit (1 process)`: the limit the attempt reached, as its warning
    (LIMIT_REACHED) says it; None where it reached none."""
    for warning in attempt.warnings:
        if warning.startswith(LIMIT_REACHED):
            return warning.removeprefix(_REACHED).split(":", 1)[0]
    return None


def attempt_phrase(attempt: AttemptResult, *, where: bool = True, pid: bool = True) -> str:
    """An attempt's outcome, or why it did not run; `pass, but a process died of SIGSEGV`
    where its root passed over a crash beside it; `error exit 2, at its process limit (1
    process)` where it reached a limit (limit_reached)."""
    phrase = outcome_phrase(attempt.outcome, where=where, pid=pid)
    signal = crash_beside_pass(attempt) if attempt.warnings else None
    phrase = f"{phrase}, but a process died of {signal}" if signal else phrase
    limit = limit_reached(attempt) if attempt.warnings else None
    return f"{phrase}, at {limit}" if limit else phrase


# Why an attempt that ended as its engine was stopped by a signal is not kept (SetAside).
ENDED_AS_STOPPED = "ended as the engine was stopped: run again on resume"
# The attempts a run's warning names; the rest are counted.
_SET_ASIDE_NAMED = 8


def set_aside_warning(set_aside: Sequence[SetAside]) -> str:
    """The run's warning for the attempts it set aside: `default #1 (pass): ended as the
    engine was stopped: run again on resume (set aside: ...)`."""
    named = ", ".join(
        f"{each.cell_id or 'the cell'} #{each.attempt} ({attempt_phrase(each.result)})"
        for each in set_aside[:_SET_ASIDE_NAMED]
    )
    more = len(set_aside) - _SET_ASIDE_NAMED
    if more > 0:
        named += f" and {plural(more, 'more attempt')}"
    return (
        f"{named}: {ENDED_AS_STOPPED} (set aside: a stop sent to every process reaches an "
        "attempt's before the engine, and what the attempt did then, a shell whose child it "
        "killed exiting 0, is the stop's, not the program's)"
    )


def chain_phrase(outcome: Outcome) -> str:
    """`ZeroDivisionError → (during handling) RuntimeError`: an exception chain, primary first."""
    words = {"cause": "(direct cause)", "context": "(during handling)"}
    text = ""
    for link in outcome.exceptions:
        text += link.type
        if link.link:
            text += f" → {words[link.link]} "
    return text


def expectation_phrase(expected: Expectation, *, rate: bool = True) -> str:
    """`crash SIGSEGV @ validation:6..8 rate >=0.3`: what a cell was expected to do."""
    if expected.observes:
        return "anything (observed)"
    parts: list[str] = [expected.outcome]
    if expected.signals:
        parts.append(signals_phrase(expected.signals))
    if expected.exit_code is not None:
        parts.append(f"exit {expected.exit_code}")
    if expected.exception:
        parts.append(expected.exception)
    if expected.message:
        parts.append(f"/{expected.message}/")
    if expected.where:
        parts.append(f"({expected.where})")  # as outcome_phrase names the process
    spot = location(expected.phase, expected.step, expected.stage, expected.module)
    if spot:
        parts.append(f"@ {spot}")
    if rate and expected.rate is not None:
        parts.append(f"rate {expected.rate}")
    return " ".join(parts)


def mismatch(key: str, expected: str, got: str) -> str:
    """`exception: expected RuntimeError, got ConnectionResetError`: one way an attempt
    missed, led by the `expect` key it missed, so that a reader (and `missed_keys`) sees
    which line of the spec to question before any other explanation of the miss."""
    return f"{key}: expected {expected}, got {got}"


def missed_keys(mismatches: Iterable[str]) -> tuple[str, ...]:
    """The `expect` keys `mismatch` texts name, once each, in order: `('exception',)`."""
    return tuple(dict.fromkeys(m.partition(": ")[0] for m in mismatches))


def interval_bounds(
    low: float, high: float, *, digits: int = 2, percent: bool = False
) -> tuple[str, str]:
    """A rate's 95% interval's bounds as printed, `('0.09', '0.71')` (`('9%', '71%')` with
    `percent`), rounded outward: the lower down, the upper up. Every interval printed
    beside a judgment is written here, since a verdict reads the true bounds and the
    printed ones must agree with it: 2/6 is 0.0968–0.7000, undecided against `>=0.1`, and
    rounded to the nearest it read `0.10–0.70`, which shows no straddle. Rounded outward,
    the printed interval always holds the true one."""
    scale = 10 ** (digits + 2 if percent else digits)
    # The slack keeps an exact bound (0.3 stored as 0.29999999999999998) where it is.
    down = math.floor(low * scale + 1e-9) / scale
    up = math.ceil(high * scale - 1e-9) / scale
    spec = f".{digits}{'%' if percent else 'f'}"
    return format(down, spec), format(up, spec)


def interval_phrase(low: float, high: float, *, digits: int = 2, dash: str = "–") -> str:
    """`0.09–0.71`: the interval from `interval_bounds`."""
    return dash.join(interval_bounds(low, high, digits=digits))


class PrintedInterval(NamedTuple):
    """A rate's 95% interval as minimize and isolate print it: each bound in whole percents,
    rounded outward (`5%`, `36%`). Kept as its bounds, so that a sentence saying one of them
    (minimize's `up to 36%`) takes it from here, not by cutting the printed `5%-36%` apart;
    `str` is its one spelling. A NamedTuple, not a dataclass: every run imports this module,
    and a frozen dataclass's methods are compiled as it is made (issue 30, item 4)."""

    low: str
    high: str

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


def percent_bounds(low: float, high: float) -> PrintedInterval:
    """The interval from `interval_bounds` in whole percents, its bounds as printed."""
    return PrintedInterval(*interval_bounds(low, high, digits=0, percent=True))


def percent_interval(low: float, high: float) -> str:
    """`9%-71%`: the interval from `interval_bounds` in whole percents (minimize, isolate)."""
    return str(percent_bounds(low, high))


def rate_phrase(rate: Rate, *, fraction: bool = False, interval: bool = False) -> str:
    """`3/4 (95% CI 0.30–0.96)`; the interval only when there were several attempts, or
    with `interval=True` of one too (a cell judged by a rate's bound: its reason says the
    interval straddles it, and `1/1` alone did not show it).

    `fraction=True` adds the observed fraction: `6/20 = 0.30 (95% CI 0.14–0.52)`.
    """
    text = f"{rate.matched}/{rate.attempts}"
    if fraction and rate.attempts:
        text += f" = {rate.matched / rate.attempts:.2f}"
    if rate.attempts > 1 or (interval and rate.attempts):
        text += f" (95% CI {interval_phrase(rate.low, rate.high)})"
    return text


def cell_rate_phrase(rate: Rate, expected: Expectation) -> str:
    """A cell's attempts column: its rate of the expected failure, or, for a cell observed
    (`--observe`: nothing expected, nothing judged), how many attempts ran: `4/4 (95% CI
    0.51–1.00)` of "anything" read as a failure rate where two of the four passed."""
    if expected.observes:
        return str(rate.attempts)
    return rate_phrase(rate)


class Deciding(NamedTuple):  # (not a dataclass: see PrintedInterval)
    """What more attempts do to an undecided rate against its bound, as judge.deciding
    works it out, for `more_attempts_phrase` to say: the seam between the two. `case`:
    "count", `needed` attempts decide it, `verdict` which way, at the rate seen;
    "above-zero" (`>0`, no failure seen: one meets it, no count of clean attempts refutes
    it) and "below-one" (`<1`, every attempt failed: the mirror), with the `expect.rate`
    that `attempts` would refute (`refuted`, `>=` and `<=` of it); "none-ran"; "at-bound",
    the rate seen is the bound itself; "past-limit", it takes more than `--repeat`'s limit.
    The fields a case does not name keep their defaults (`needed` is None but for "count")."""

    case: Literal["count", "above-zero", "below-one", "none-ran", "at-bound", "past-limit"]
    needed: int | None = None
    verdict: str = ""
    refuted: float = 0.0
    attempts: int = 0


def more_attempts_phrase(deciding: Deciding, bound: RateBound) -> str:
    """`Deciding` in words, as the cell's reason and `run`'s undecided line both say it
    (report.md, JUnit, pytest, GitHub and the terminal): `at the rate seen, about 40
    attempts decide it (reproduced)`, or why no count does."""
    from reprospec.core.bounds import MAX_REPEAT

    case, refuted, attempts = deciding.case, deciding.refuted, deciding.attempts
    if case == "count":
        assert deciding.needed is not None, deciding
        return f"at the rate seen, about {deciding.needed} attempts decide it ({deciding.verdict})"
    if case == "above-zero":
        return (
            f"one failure meets {bound} and no count of clean attempts refutes it: "
            f"expect.rate: '>={refuted:g}' is refuted by {attempts} clean attempts"
        )
    if case == "below-one":
        return (
            f"one clean attempt meets {bound} and no count of failures refutes it: "
            f"expect.rate: '<={refuted:g}' is refuted by {attempts} failing attempts"
        )
    if case == "none-ran":
        return "run more attempts"
    if case == "at-bound":
        return "the rate seen is the bound itself: more attempts may not decide it"
    return f"at the rate seen, it takes more than {MAX_REPEAT:,} attempts (--repeat's limit)"


def attempts_phrase(attempts: Iterable[AttemptResult]) -> str:
    """What a cell's attempts did: one phrase, or how many did each (`2× hang, 1× pass`)."""
    counts = Counter(attempt_phrase(a, pid=False) for a in attempts)
    if not counts:
        return "not run"
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n}× {text}" for text, n in counts.most_common())


FRESH_PREFIX = "ran fresh: "
# A forked attempt's note names its server (preload_note), which `launch_summary` counts.
_FORKED_FROM = Lazy(r"^forked from preload server (\d+)( \(started again after server \d+ died\))?")


def preload_note(number: int, replaces: int | None, modules: Sequence[str]) -> str:
    """Where a forked attempt came from: `forked from preload server 2 (started again after
    server 1 died), which preloaded torch`. Numbered per runner, as its servers start."""
    again = f" (started again after server {replaces} died)" if replaces is not None else ""
    return f"forked from preload server {number}{again}, which preloaded {', '.join(modules)}"


def _servers_phrase(forked: Sequence[AttemptResult]) -> str:
    """`a server that imported run.preload once`, or, where the attempts came from several
    (a server died and was started again, an idle one stopped for another key's), how many,
    and how many were restarts: each imported the modules again."""
    servers: set[str] = set()
    restarted: set[str] = set()
    for attempt in forked:
        match = _FORKED_FROM.match(attempt.launch_note or "")
        if match:
            servers.add(match[1])
            if match[2]:
                restarted.add(match[1])
    if len(servers) <= 1 and not restarted:
        return "a server that imported run.preload once"
    again = f" ({plural(len(restarted), 'restart')} after a server died)" if restarted else ""
    if len(servers) == 1:  # the others' attempts not among these
        return "a server started again after another died, which imported run.preload once"
    return f"{len(servers)} servers{again}, each of which imported run.preload once"


def launch_summary(attempts: Iterable[AttemptResult]) -> str | None:
    """How the attempts were started, when a preload was asked; None when it was not.

    `40 of 50 attempts were forked from a preload server (...); 10 ran fresh: why (10)`.
    """
    attempts = list(attempts)
    forked = [a for a in attempts if a.launch == "forked"]
    reasons = Counter(
        (a.launch_note or "").removeprefix(FRESH_PREFIX)
        for a in attempts
        if a.launch == "fresh" and a.launch_note
    )
    if not forked and not reasons:
        return None
    parts: list[str] = []
    if forked:
        parts.append(
            f"{len(forked)} of {plural(len(attempts), 'attempt')} "
            f"{agree(len(forked))} forked from {_servers_phrase(forked)}"
            ": random, numpy and torch reseeded per attempt "
            "(each seed is in results.json), no interpreter teardown at exit"
        )
        if any("OpenBLAS" in (a.launch_note or "") for a in forked):
            parts.append("OpenBLAS ran single-threaded in them (OPENBLAS_NUM_THREADS=1)")
    fresh = len(attempts) - len(forked)
    if fresh:
        # One reason for every fresh attempt is counted once: `2 ran fresh: why (2)` said
        # the count twice.
        if len(reasons) == 1 and sum(reasons.values()) == fresh:
            why = next(iter(reasons))
        else:
            why = "; ".join(f"{reason} ({n})" for reason, n in reasons.most_common())
        parts.append(f"{fresh} ran fresh" + (f": {why}" if why else ""))
    return "; ".join(parts)


def seconds(value: float) -> str:
    """A measured duration: `5.02s`."""
    return f"{value:.2f}s"


def time_left(value: float) -> str:
    """An estimate of the time a run has left, coarse as an estimate is: `eta 42s`,
    `eta 3m10s`, `eta 1h05m`."""
    return f"eta {coarse(value)}"


def coarse(value: float) -> str:
    """A long duration to the second, or the minute past an hour: `42s`, `3m10s`, `1h05m`."""
    whole = max(0, round(value))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def size(value: object) -> str:
    """Bytes for people (`64.0 MiB`); '' for anything not a number."""
    return format_size(value)


def plural(n: int, word: str, many: str = "") -> str:
    """`1 cell`, `4 cells` (`many`: the plural where it is not the word and an s, `2
    processes`): every count a person reads is worded here, never `cell(s)`, which a person
    has to read past ("1 attempt(s)") and which no test could tell from the wrong count."""
    return f"{n} {noun(n, word, many)}"


def plural_verb(
    n: int,
    word: str,
    one: str = "was",
    other: str = "were",
    many: str = "",
    *,
    the: bool = False,
) -> str:
    """`1 cell was`, `4 cells were`: a count, its noun and a verb agreeing with it (`one`
    for 1, `other` for any other count: `is`/`are`, `has`/`have`). `the`: `the instance was`,
    `the 4 instances were`, a count of one said without its number."""
    counted = f"the {word}" if the and n == 1 else f"{'the ' if the else ''}{plural(n, word, many)}"
    return f"{counted} {agree(n, one, other)}"


def agree(n: int, one: str = "was", other: str = "were") -> str:
    """`was` for a count of 1, `were` for any other (`is`/`are`, `has`/`have`): the verb of a
    count said apart from it (`its a.json and b.md are`, `rank 1, 3 are out of step`),
    where `plural_verb`'s `4 cells were` does not fit the sentence. Named `agree`, not
    `verb`: a verb is also a command's subcommand here, a local name in the modules that
    import this (slurm's `_refuse_unused(args, verb)`), whose call it would shadow."""
    return one if n == 1 else other


def cells_not_run(kind: str = "", *, of: str = "it", that: str = "", why: str = "") -> str:
    """`every cell of it is an infra error, not run`: the one way doctor says which cells a
    problem it found makes infra errors. `kind`: the cells' where only those are
    (`workload`, `such`); `of`: what they are the cells of (`it`, the interpreter or image
    just named; a matrix's pythons by their labels; "" for none); `that`: in its place, what
    the cells do (`names it`, of a package: not every cell of the spec); `why`: in brackets."""
    whose = f" that {that}" if that else f" of {of}" if of else ""
    cells = f"every {kind + ' ' if kind else ''}cell{whose}"
    return f"{cells} is an infra error{f' ({why})' if why else ''}, not run"


def names_them(problems: Sequence[str]) -> str:
    """What the cells do that a problem doctor found makes infra errors, for
    `cells_not_run`'s `that`: `names it` of one package's, `names one` of several."""
    return "names it" if len(problems) == 1 else "names one"


def noun(n: int, word: str, many: str = "") -> str:
    """`cell` for 1, `cells` for any other count: the word after a count written apart
    from it (`1/1 cell reproduced`, `3/4 attempts`, `0 other sets on the way`)."""
    return word if n == 1 else many or word + "s"


def attempts_not_stored(n: int, why: str) -> str:
    """`1 attempt not stored (WHY); --resume runs it again`: the run's warning for the
    attempts a commit at its end lost (one was "runs them again")."""
    return f"{plural(n, 'attempt')} not stored ({why}); --resume runs {noun(n, 'it', 'them')} again"


# The tag of a process in a stacks file that runs no Python (`sleep 100` a Python program
# started and waits for): named there, with no stack, so a hang can sit in it.
NOT_PYTHON = "[not Python]"

# The tag of a process in a stacks file that had left the attempt's tree (a daemon that
# forked away, its parent gone): still running, but not what the program waits for, so no
# hang sits in it (`python daemon.py; sleep 100` hangs in the shell's sleep).
LEFT_THE_TREE = "[left the tree]"

# What a hung process's main thread does where the hang sits in other threads of it (the
# report's where-line, `pid 4200's threads were in t.py:6 in one, its main thread joining
# them in t.py:16 in <module>`): joins them, polls them in a sleep loop (`while
# w.is_alive(): time.sleep(0.1)`), or has left the program's code and waits at exit for
# threads it never joined (threading's `_shutdown`); each is printed as it is, before the
# place's `in` (the at-exit one's comma closes its aside).
MAIN_THREAD_JOINING = "joining them"
MAIN_THREAD_POLLING = "waiting for them in a sleep loop"
MAIN_THREAD_AT_EXIT = "waiting at exit for them, never joined,"
MAIN_THREAD_RUNNING_LOOP = "running the event loop that awaits them"


def stacks_omitted(count: int) -> str:
    """The line a stacks file ends in where its size budget ran out with `count` processes
    left (the local runner's and the docker runner's stacks files alike)."""
    return f"[... the stacks of {plural(count, 'more process', 'more processes')} omitted ...]\n"


def stack_header(pid: int, command: str, *tags: str) -> str:
    """`--- pid N (command) [tag] ---`: the line that opens a process's block in a stacks
    file, as outcome/hungstacks.py reads it (the local and docker runners' Python stacks,
    native/render.py's native ones). One line: a `python -c` program's newlines are `\\n`
    (the docker runner's broke its header across lines, and the block was not read)."""
    shown = shorten_command(command.replace("\n", "\\n"), 200)
    return " ".join(["---", "pid", str(pid), f"({shown})", *tags, "---"])


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters, ending in `...` when cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


# multiprocessing's bootstrap of a child it spawned (or of its fork server, its resource
# tracker): `python -B -c from multiprocessing.spawn import spawn_main; spawn_main(...)
# --multiprocessing-fork`, which cut read `python -B -c from ...`.
_MULTIPROCESSING_CHILD = re.compile(
    r"(?P<exe>\S+)(?: -\S+)*? -c from multiprocessing\.(?P<kind>spawn|forkserver|resource_tracker)"
    r" import .*"
)


def shorten_command(text: str, width: int) -> str:
    """A command line cut to about `width` characters between its arguments, never inside one.

    `python cf...` names no file; `python cffi_crash.py ...` does. The first argument is
    kept whole however long it is. A multiprocessing child's bootstrap is named so:
    `python3 [multiprocessing spawn]`.
    """
    child = _MULTIPROCESSING_CHILD.fullmatch(text)
    if child is not None:
        kind = child["kind"].replace("_", " ")
        text = f"{child['exe']} [multiprocessing {kind}]"
    if len(text) <= width:
        return text
    words = text.split(" ")
    out = words[0]
    for word in words[1:]:
        if len(out) + 1 + len(word) > width - 4:
            return out + " ..."
        out += " " + word
    return out


__all__ = [
    "COULD_NOT_RUN",
    "MAIN_THREAD_AT_EXIT",
    "MAIN_THREAD_JOINING",
    "MAIN_THREAD_POLLING",
    "MAIN_THREAD_RUNNING_LOOP",
    "NOTHING_KEPT",
    "NOT_PYTHON",
    "NOT_RUN",
    "NOT_RUN_LEGEND",
    "OBSERVE_LEGEND",
    "STOPPED_BY_STOP_ON",
    "STUCK_MARK",
    "STUCK_UNREAD",
    "VERDICT_LEGEND",
    "VERDICT_MARKS",
    "PrintedInterval",
    "agree",
    "attempt_phrase",
    "attempts_phrase",
    "budget_continues",
    "chain_phrase",
    "child_named",
    "expectation_phrase",
    "injected_phrase",
    "interval_bounds",
    "interval_phrase",
    "launch_summary",
    "location",
    "noun",
    "outcome_phrase",
    "percent_bounds",
    "percent_interval",
    "plural",
    "plural_verb",
    "rate_phrase",
    "replayed_phrase",
    "resume_command",
    "resumed_note",
    "resumed_phrase",
    "seconds",
    "shorten",
    "shorten_command",
    "signals_phrase",
    "size",
    "stacks_omitted",
    "stopped_counts",
    "stopped_of",
    "stopped_phrase",
    "timestamp",
    "verdict_legend",
]


def perturbed_phrase(perturbed: Iterable[str]) -> str:
    """The first line of a result found under environment.perturb: amplified, and how.

    `amplified: found under environment.perturb (switch_interval=1e-06); without it the
    failure is rarer`.
    """
    return (
        f"amplified: found under environment.perturb ({'; '.join(perturbed)}); "
        f"without it the failure is rarer"
    )


def replayed_phrase(attempts: int, probes: int) -> str:
    """` (12 of them replayed from an earlier run: 5 probes)`, after a search's attempt count:
    what this run answered from the state of an earlier one (interrupted, out of budget, or
    finished) and did not run; "" when nothing was. The same words for isolate, amplify and
    minimize."""
    if not probes:
        return ""
    return f" ({attempts} of them replayed from an earlier run: {plural(probes, 'probe')})"


def missed_chance(
    passed: int,
    other: int,
    min_rate: float,
    ways: str,
    hung: int | None = None,
    timeout: str = "--timeout",
) -> str:
    """The clause a search's refusal of a side that never matched adds: how likely its
    `passed` passes were at the assumed `min_rate`, and `ways` on for a rarer failure (the
    caller's own: amplify it first, a lower --min-rate, each as the CLI or the API says it).
    Where it failed otherwise (`other`) at least as often as it passed, the expect, not the
    rate, is the question, and the clause says so instead (it said nothing, and "seen: pass
    x1, hang x9" offered no way on); `timeout` (the caller's name of it) as well only where
    some of them hung (`hung`; None where the caller does not count hangs): an error exit
    was sent to change the timeout. "" where nothing ran. The chance counts the passes
    alone: an attempt that failed otherwise could not have shown the expected failure.
    Isolate's and minimize's (`Tally.missed_at`) and bisect's bad end (`_bad_end_refused`)."""
    if passed <= other:
        if not other:
            return ""
        how = (
            "in every attempt"
            if not passed
            else "as often as it passed"
            if passed == other
            else "more often than it passed"
        )
        check = "the expect" if hung == 0 else f"the expect or {timeout}"
        return f"; it failed otherwise {how}: check {check}"
    return (
        f"; at the assumed minimum rate {min_rate:g}, {plural(passed, 'passing attempt')} "
        f"had a chance of {(1 - min_rate) ** passed:.2g}: for a rarer failure, {ways}"
    )


def budget_continues(search: str, attempts: int, before: str = "", said: str = "--budget") -> str:
    """The line of a search that stopped at its `--budget`: the same command with a larger
    one goes on from here (the search's folder is not keyed on the budget), and what it
    ran so far is not run again; `before`: of what it ran, only what came before this
    (minimize's `the final check`, of a program the longer search may not check); `said`:
    how the answer names its budget (`IsolateOptions(budget=...)` to the Python API's
    caller, who typed no `--budget`: core/caller.argument)."""
    return (
        f"a larger {said} continues this {search}: its {plural(attempts, 'attempt')}"
        f"{f' before {before}' if before else ''} {agree(attempts, 'is', 'are')} "
        f"replayed, not run again"
    )


def timestamp(iso: str, *, zone: bool = True) -> str:
    """`2026-12-01 09:28:58 UTC` of the store's `2026-12-01T09:28:58.123456+00:00`: to the
    second, and (with `zone`) UTC said where the time says it (history's column leaves it)."""
    utc = zone and iso.endswith(("+00:00", "Z"))  # the store's times are UTC
    return iso.replace("T", " ")[:19] + (" UTC" if utc else "")


def _ended(part: ResumedPart, first: bool) -> str:
    """`the run interrupted at 2026-12-01 09:28:58 UTC`, `its resume whose engine was killed`."""
    who = "the run" if first else "its resume"
    when = f" at {timestamp(part.stopped_at)}" if part.stopped_at else ""
    if part.stopped == "killed":
        return f"{who} whose engine was killed"
    return f"{who} {part.stopped}{when}"


def resumed_phrase(resumed: Resumed) -> str:
    """How a resumed run came to be, the console's `resumed:` line and report.md's note:
    `2 attempts carried over from the run interrupted at 2026-12-01 09:28:58 UTC, 2 run
    now`; one resumed before names each earlier part, `3 attempts carried over: 1 from
    the run interrupted at ..., 2 from its resume interrupted at ...; 1 run now`."""
    # A part that stored no attempt (a resume that found nothing left to run) carries none
    # over: named, it read `0 from its resume finished at ...`.
    parts = [part for n, part in enumerate(resumed.parts) if part.attempts or n == 0]
    written = " (its folder written again from the store)" if resumed.rewritten else ""
    carried = f"{plural(resumed.carried, 'attempt')} carried over"
    ran = f"{resumed.ran} run now"
    if len(parts) == 1:
        return f"{carried} from {_ended(parts[0], first=True)}{written}, {ran}"
    each = ", ".join(f"{part.attempts} from {_ended(part, n == 0)}" for n, part in enumerate(parts))
    return f"{carried}: {each}{written}; {ran}"


def resume_command(run_id: str, out: Path | None) -> str:
    """The command that finishes (or made) a run of the store `out`, to copy as it is:
    `--out` only where the store is not the default one, without which a run of another
    store was looked for in `.reprospec` ("no results store"). `out` None: not known (a
    run read from a folder under no `runs/`), as `reprospec run --resume ID` said before."""
    import shlex

    from reprospec.core.runoptions import DEFAULT_OUT

    words = ["reprospec", "run", "--resume", run_id]
    if out is not None and not _is_default_out(out, DEFAULT_OUT):
        words += ["--out", str(out)]
    return shlex.join(words)


def _is_default_out(out: Path, default: Path) -> bool:
    """Whether `out` is the default store of the folder the command is typed in: a report
    or a bundle read the store as an absolute path (`/home/u/proj/.reprospec`), and the
    command they gave named `--out` for the store it would find without one."""
    if out == default:
        return True
    try:
        return out.resolve() == default.resolve()
    except (OSError, RuntimeError):
        return False


def interrupted_before_run(resume_id: str | None, out: Path | None) -> str:
    """What `run` says when a stop came as the cells' environments were got ready, before
    the run was stored (errors.InterruptedBeforeRun): that nothing was stored, and what
    to run instead of a `--resume` that has no run to finish."""
    if resume_id is None:
        return (
            "reprospec: interrupted while getting the cells' environments ready, before the "
            "run began: no run was stored (nothing to resume); run the spec again, which "
            "reuses the environments already built"
        )
    return (
        "reprospec: interrupted while getting the cells' environments ready, before the "
        f"resumed run began: run {resume_id} is as it was; finish it with: "
        f"{resume_command(resume_id, out)}"
    )


def resumed_note(command: str, resumed: Resumed) -> str:
    """The `Resumed` note in plain text, for a reader with no markup (JUnit's testsuite
    `system-out`): `Resumed (reprospec run --resume ID --out OUT): 2 attempts carried over from
    ..., 2 run now.` report.md (report.md.j2), the HTML page (report.html.j2) and the
    GitHub summary (report/github.py) write the same sentence with their own markup around
    `resumed_phrase`: a change here is a change there (test_markdown_junit.py holds the
    JUnit and report.md ones to one text)."""
    return f"Resumed ({command}): {resumed_phrase(resumed)}."


def shard_phrase(shard: str) -> str:
    """What a shard run's verdicts are of, where a CI shows them (the GitHub job summary and
    annotations): `shard 2/3: each cell judged on this shard's share of its attempts; merge
    judges them on all`. A shard's `undecided` (1 of a rate cell's 4 attempts) read as the
    cell's, with "run more attempts", where the merged run reproduced it."""
    count = shard.partition("/")[2]
    if count == "1":  # the one shard holds every attempt: no merge has more to judge
        return f"shard {shard}: the only shard, every attempt of each cell"
    return (
        f"shard {shard}: each cell judged on this shard's share of its attempts; "
        f"`reprospec merge` of the {count} shards judges them on all"
    )


def paths_refused(paths: Sequence[str]) -> str:
    """Why a built image (the docker runner's, materialize's) refuses entries of
    `environment.packages` that are paths of this machine: its build sees only its context.
    One text for image.py's refusal and `doctor --runner docker`, which said "the docker
    runner installs the spec's packages" of the same entries."""
    return (
        f"environment.packages {', '.join(repr(p) for p in paths)}: a path on this "
        "machine, which the image's build cannot see (it installs from an index): "
        "give its wheel with --find-links DIR and name the package (mypkg==1.0), or "
        "install it in an environment.dockerfile"
    )
