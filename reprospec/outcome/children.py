"""Which descendant of an attempt crashed: a child process other than a DataLoader worker.

The main process often survives its child's crash and exits 1 with an error of
its own (`RuntimeError: child failed`, `BrokenProcessPool`,
`CalledProcessError`), so the exit status alone says `error`. The evidence of
the child's death, strongest first:

1. a wait status the engine reaped itself (the subreaper adopts orphans):
   pid, command line and signal (`Execution.child_exits`);
   the core it left, when native stacks are on (native.py read it): pid,
   command line and signal, as the kernel recorded them;
   the status a Python parent's multiprocessing reaped (`child_exit` events, the
   engine's sitecustomize's): pid, process name (`ForkPoolWorker-2`) and signal, the
   one evidence of a SIGKILL (the OOM killer's), which leaves no core and no report;
2. what the parent printed about it: a shell's `line 3: 4242 Segmentation
   fault   ./test_ops --gtest_filter=...` (pid, command, signal), Python's
   `CalledProcessError: Command '[...]' died with <Signals.SIGSEGV: 11>`
   (command, signal);
3. the child's own faulthandler report, `Fatal Python error: Segmentation
   fault` with its Python stack (signal and stack, no pid);
4. `concurrent.futures`' "A process in the process pool was terminated
   abruptly" (a crash whose signal only a faulthandler report can tell; none where the
   program's hooks, which write a worker's death by a signal, wrote none of a crash
   signal and the program died of its own pool's BrokenProcessPool: the worker exited or
   was terminated, `pool_worker_no_crash`).

Evidence 2-4 is text, and a program may print it without any child: a triage
script that prints an old CI log, a test of a crash handler, `tail` of a log.
Where the runner knows that no process besides the root ran in the attempt
(`Execution.descendants` is False: the root, read as a zombie before its wait,
never reaped a child, and the engine found and reaped none), no child can have
made it: it is the program's output, not a death (`printed_only` gives it, for the
outcome's detail to say so). Where a descendant ran, or the runner cannot tell (a
container, a batch job), the text counts as before, and the detail says when only
the text tells of the death while the main process ended with an uncaught
traceback of its own (`ChildCrash.seen`).

Only signals that end a process abnormally count (SIGSEGV, SIGABRT, SIGBUS,
...; SIGKILL too, the OOM killer's): the processes the engine kills itself at a
timeout never reach here, and those the harness says it killed itself (its
`teardown` events: a distributed supervisor ending the ranks that did not fail,
and their DataLoader workers, once one rank failed) or a Python process of the attempt
sent the signal it died of (`signalled` events: a test's teardown SIGKILLs the server
it started) are not counted. Nor is a SIGKILL at all where the kernel counted no OOM kill
on the machine while the attempt ran (`Execution.no_oom_kill`): the OOM killer is what
makes a SIGKILL a crash, and without it a process sent it, whatever the process (a
script's `timeout -s KILL`, which no sitecustomize sees, a `kill -9`, a process killing
itself); `killed_by_a_process` names that child for the outcome's detail.
"""

from __future__ import annotations

import re

from reprospec.core.childexit import ChildExit
from reprospec.core.frozen import frozen
from reprospec.core.jobreport import a_pipelines_child, pipeline_stage
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import TRACEBACK_HEADER
from reprospec.core.results import Execution, bare_type
from reprospec.core.signals import (
    CRASH_SIGNALS,
    canonical_signal,
    describe_signal,
    signal_from_description,
)
from reprospec.core.words import shorten_command
from reprospec.native import NativeStacks
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.tracebacks import (
    RANK_TAG,
    FatalError,
    PythonException,
    fatal_errors,
    parse_chain,
)

_SHELL_DESCRIPTIONS = "|".join(
    re.escape(describe_signal(name)) for name in sorted(CRASH_SIGNALS, key=len, reverse=True)
)
# bash: `./run.sh: line 3:  4242 Segmentation fault      (core dumped) ./test_ops --x`
# (the pid right-aligned in 5 columns)
_SHELL_REPORT = Lazy(
    rf"^(?:[^\n]*?: )?(?:line \d+: )?[ \t]*(?P<pid>\d+) (?P<desc>{_SHELL_DESCRIPTIONS})"
    r"(?:\s+\(core dumped\))?\s+(?P<cmd>\S[^\n]*?)\s*$",
    re.M,
)
# subprocess.CalledProcessError: Command '['./test_ops']' died with <Signals.SIGSEGV: 11>.
_CALLED_PROCESS = Lazy(
    r"Command (?P<cmd>'.*?'|\".*?\"|\[.*?\]) died with <Signals\.(?P<signal>SIG\w+): \d+>"
)
_POOL_BROKEN = Lazy(r"A (?:child )?process (?:in the process pool )?(?:was )?terminated abruptly")
# The program's record of the BrokenProcessPool it died of (or chained), its pool's words:
# `concurrent.futures.process.BrokenProcessPool: A process in the process pool was ...`.
_POOL_RAISED = Lazy(
    r"^[ |+-]*(?:concurrent\.futures\.process\.)?BrokenProcessPool: "
    r"A (?:child )?process (?:in the process pool )?(?:was )?terminated abruptly",
    re.M,
)
_CMDLINE_CHARS = 200


@frozen
class ChildCrash:
    """A descendant (not the main process) that died of a signal, and how we know."""

    signal: str | None
    pid: int | None
    cmdline: str | None
    evidence: str
    stack: str | None = None
    # The engine saw the process itself (its wait status, its core), not only text about it.
    seen: bool = False

    def describe(self) -> str:
        """`child pid 4242 (./test_ops) died of SIGSEGV (Segmentation fault)`, for `detail`."""
        who = "a child process"
        if self.pid is not None:
            who = f"child pid {self.pid}"
        if self.cmdline:
            who += f" ({self.cmdline})"
        if self.signal:
            return f"{who} died of {self.signal} ({describe_signal(self.signal)}), {self.evidence}"
        return f"{who} terminated abruptly, {self.evidence}"


def child_crash(
    execution: Execution, evidence: Evidence, *, kills_sent: bool | None = None
) -> ChildCrash | None:
    """The first descendant that crashed, from the strongest evidence there is; None: none did.

    Text alone (evidence 2-4) names no death where no process besides the root ran.
    `kills_sent`: a SIGKILL was a process's doing, no crash (by default where the kernel
    counted no OOM kill during the attempt, `Execution.no_oom_kill`).
    """
    sent = execution.no_oom_kill if kills_sent is None else kills_sent
    fatal = _crash_reports(evidence.stderr)
    seen = _seen_crash(execution, evidence, fatal, sent)
    if seen is not None:
        return seen
    if execution.descendants is False:
        return None
    printed = _printed(evidence, fatal, sent)
    # concurrent.futures' "terminated abruptly" names no signal: where the engine saw a
    # SIGKILL (the only death `_seen_crash` passed over), that kill, a process's, is the
    # death it reports, no crash (nu-c: a worker's own os.kill read `crash (child)`).
    if (
        printed is not None
        and printed.signal is None
        and sent
        and _seen_crash(execution, evidence, fatal, kills_sent=False) is not None
    ):
        return None
    if printed is not None and printed.signal is None and pool_worker_no_crash(evidence):
        return None
    return printed


def pool_worker_no_crash(evidence: Evidence) -> bool:
    """Whether concurrent.futures' "terminated abruptly", which names no signal, reports a
    worker's end that was no crash: the pool is the program's own, a Python process that
    ran the engine's sitecustomize and died of the pool's BrokenProcessPool (its own record
    of how it ended, `Evidence.raised`, holds it), whose
    multiprocessing reaping writes each child dead of a signal it did not send itself as a
    `child_exit` event, and no event names one (`child_crash` reads them first). The worker
    exited (`os._exit(3)`) or died of a signal its parent sent (the pool's own terminate(),
    which ends a worker a SIGTERM had already stopped): rule 6 counts only a death by a
    crash signal. Where the program left no record (no Python, a container without the
    engine's hooks), or its record is of another exception than its pool's
    BrokenProcessPool (a `CalledProcessError` of a child Python run with `-I`, `-S`, `-E`
    or an env without the hooks, whose own pool it was and whose workers' deaths nobody
    wrote), the words are all there is, and they stay a crash."""
    raised = evidence.raised
    return (
        raised is not None
        and _POOL_RAISED.search(raised) is not None
        and _POOL_BROKEN.search(evidence.stderr) is not None
    )


def killed_by_a_process(execution: Execution, evidence: Evidence) -> ChildCrash | None:
    """The descendant that died of a SIGKILL `child_crash` did not count, for no OOM kill
    happened while the attempt ran (a process sent it); None where there was none, or an
    OOM kill may have been its death."""
    if not execution.no_oom_kill:
        return None
    killed = child_crash(execution, evidence, kills_sent=False)
    return killed if killed is not None and killed.signal == "SIGKILL" else None


def _counts(signal: str | None, kills_sent: bool) -> bool:
    """Whether a death by `signal` is a crash: one that ends a process abnormally, and a
    SIGKILL only where it may have been the OOM killer's."""
    return signal in CRASH_SIGNALS and not (kills_sent and signal == "SIGKILL")


def printed_only(execution: Execution, evidence: Evidence) -> ChildCrash | None:
    """A child's death the output reports where no process besides the root ran: the
    program printed it (an old log, a test's expected output), no child suffered it."""
    if execution.descendants is not False:
        return None
    return _printed(evidence, _crash_reports(evidence.stderr))


def _crash_reports(stderr: str) -> list[FatalError]:
    """The faulthandler reports on `stderr` of a signal that ends a process abnormally."""
    return [f for f in fatal_errors(stderr) if f.signal in CRASH_SIGNALS]


def _seen_crash(
    execution: Execution, evidence: Evidence, fatal: list[FatalError], kills_sent: bool
) -> ChildCrash | None:
    """A descendant's death the engine saw itself: the wait status it reaped, the core."""
    events = evidence.events
    reaped = _reaped(execution.child_exits, events.killed, events.signalled, kills_sent)
    if reaped is not None:
        return ChildCrash(
            reaped.signal,
            reaped.pid,
            _short(reaped.cmdline),
            "reaped by the engine",
            _stack_for(fatal, reaped.signal),
            seen=True,
        )
    cored = _cored(evidence.native)
    if cored is not None and not _sent(cored[1], cored[0], events.killed, events.signalled):
        return ChildCrash(
            cored[0],
            cored[1],
            _short(cored[2]),
            "as its core says",
            _stack_for(fatal, cored[0]),
            seen=True,
        )
    for event in events.child_exits:
        raw = event.get("signal")
        signal = canonical_signal(raw) if isinstance(raw, str) and raw else None
        pid = event.get("pid")
        pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
        if _counts(signal, kills_sent) and not _sent(pid, signal, events.killed, events.signalled):
            name, parent = event.get("name"), event.get("parent")
            how = "reaped by its parent" + (f" (pid {parent})" if isinstance(parent, int) else "")
            return ChildCrash(
                signal,
                pid,
                _short(name) if isinstance(name, str) and name else None,
                how,
                _stack_for(fatal, signal),
                seen=True,
            )
    return None


def _printed(
    evidence: Evidence, fatal: list[FatalError], kills_sent: bool = False
) -> ChildCrash | None:
    """A descendant's death as the output tells it (evidence 2-4)."""
    stderr = evidence.stderr
    reported = _reported(stderr, kills_sent) or _reported(evidence.stdout, kills_sent)
    if reported is not None:
        signal, pid, cmdline, how = reported
        return ChildCrash(signal, pid, _short(cmdline), how, _stack_for(fatal, signal))
    if fatal:
        first = fatal[0]
        return ChildCrash(first.signal, None, None, "as its faulthandler report says", first.stack)
    if _POOL_BROKEN.search(stderr):
        return ChildCrash(None, None, None, "as concurrent.futures reports it")
    return None


def pipeline_death(text: str) -> tuple[ChildCrash, int] | None:
    """The first process bash's report of a pipeline says died of a crash signal, and its
    stage there (`pipeline_stage`): a log's `run.sh: line 2: 25853 Done  seq 1 10` then
    `     25854 Segmentation fault      | python3 crash.py`. None where no pipeline's
    process died so (a process the shell ran alone: its report is one line)."""
    for shell in _SHELL_REPORT.finditer(text):
        signal = signal_from_description(shell["desc"])
        if signal is None or not _counts(signal, kills_sent=False):
            continue
        pid = int(shell["pid"])
        stage = pipeline_stage(text, pid)
        if stage is not None:
            command = _short(shell["cmd"].removeprefix("| "))
            return ChildCrash(signal, pid, command, _BY_SHELL), stage
    return None


def names_a_death(text: str) -> bool:
    """Whether `text` (an exception's message) is subprocess's "died with <Signals...>" or
    concurrent.futures' "terminated abruptly": the program's own word of a child's death."""
    return bool(_CALLED_PROCESS.search(text) or _POOL_BROKEN.search(text))


def _reaped(
    exits: tuple[ChildExit, ...],
    killed: frozenset[int],
    signalled: frozenset[tuple[int, str]],
    kills_sent: bool,
) -> ChildExit | None:
    """The first reaped descendant that died of a crash signal no process of the attempt
    sent it (`_sent`, `_counts`)."""
    for child in exits:
        signal = canonical_signal(child.signal) if child.signal is not None else None
        if _counts(signal, kills_sent) and not _sent(
            child.pid, signal, killed, signalled, child.group
        ):
            return child
    return None


def _sent(
    pid: int | None,
    signal: str | None,
    killed: frozenset[int],
    signalled: frozenset[tuple[int, str]],
    group: int | None = None,
) -> bool:
    """Whether a process of the attempt sent `pid` the `signal` it died of: a SIGKILL of
    the harness's teardown (`killed`), or the program's own `os.kill` or `os.killpg` of
    its `group` (`signalled`, a group as its negative number: a test's teardown SIGKILLs
    the server it started, then fails). That death is its doing, not the failure."""
    return (
        (signal == "SIGKILL" and pid in killed)
        or (pid, signal) in signalled
        or (group is not None and (-group, signal) in signalled)
    )


def _cored(stacks: NativeStacks | None) -> tuple[str, int, str] | None:
    """(signal, pid, command) of the first descendant that left a core (not the main process):
    the command line its core holds, argv read whole from its stack (native/coreargv.py)."""
    for process in stacks.processes if stacks is not None else ():
        signal = canonical_signal(process.signal) if process.signal else None
        if process.source == "core" and not process.root and signal in CRASH_SIGNALS:
            assert signal is not None
            return signal, process.pid, process.command
    return None


def _reported(text: str, kills_sent: bool = False) -> tuple[str, int | None, str, str] | None:
    """(signal, pid, command, how) from a shell's or Python's report of a child's death,
    the first in the text that `_counts` (a shell's `Killed` of a `timeout -s KILL` passed
    over where kills were sent, for a segfault it reported after)."""
    found: list[tuple[int, tuple[str, int | None, str, str]]] = []
    for shell in _SHELL_REPORT.finditer(text):
        signal = signal_from_description(shell["desc"])
        if signal is not None and _counts(signal, kills_sent):
            # (A pipeline's later process: `| python3 filter.py`, its command after the bar.)
            command = shell["cmd"].removeprefix("| ")
            found.append((shell.start(), (signal, int(shell["pid"]), command, _BY_SHELL)))
            break
    for called in _CALLED_PROCESS.finditer(text):
        signal = canonical_signal(called["signal"])
        if signal is not None and _counts(signal, kills_sent):
            found.append((called.start(), (signal, None, _command_of(called["cmd"]), _BY_PY)))
            break
    return min(found)[1] if found else None


_BY_SHELL = "as the shell reports it"
_BY_PY = "as subprocess reports it"


def _command_of(text: str) -> str:
    """`'['./t', '--x']'` (a list's repr, quoted) -> `./t --x`; a string command as it is."""
    import ast
    import shlex

    inner = text[1:-1] if text[:1] in "'\"" else text
    try:
        value = ast.literal_eval(inner)
    except (ValueError, SyntaxError):
        return inner
    if isinstance(value, (list, tuple)):
        return shlex.join(str(part) for part in value)
    return str(value)


def _stack_for(fatal: list[FatalError], signal: str | None) -> str | None:
    """The faulthandler stack of a crash with this signal (the child's, when it is Python)."""
    for report in fatal:
        if signal is None or report.signal == signal:
            return report.stack
    return None


def _short(text: str) -> str:
    """The command line on one line, cut between arguments (words.shorten_command)."""
    return shorten_command(" ".join(text.split()), _CMDLINE_CHARS)


__all__ = [
    "ChildCrash",
    "a_pipelines_child",
    "child_crash",
    "killed_by_a_process",
    "names_a_death",
    "pipeline_death",
    "pipeline_stage",
    "printed_only",
]


# torch.distributed.elastic's line for a rank that failed, torchrun's log of it before its
# own ChildFailedError: `... api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 20916)
# of binary: /usr/bin/python3`.
_RANK_FAILED = Lazy(r"\bfailed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<rank>\d+)\b")
# A rank's output line as torchrun prefixes it (`--log-line-prefix-template`, `--tee`:
# `[default1]:`, the local rank) or as torch's own excepthook in a rank prints an uncaught
# exception (`[rank1]:`, the global rank).
# One rule for the run's outcome and for capture's reading of a pasted log (ticket.py).
RANK_PREFIX = Lazy(rf"^{RANK_TAG}\s?", re.M)
RANK_LINE = Lazy(rf"^{RANK_TAG}")
# The entry of torchrun's report under its `Root Cause (first observed failure):` title, up
# to the next rule: `rank : 1 (local_rank: 1)`, `exitcode : 1 (pid: 24927)`, and where the
# rank's entry point is `@record`-decorated, `traceback : Traceback (most recent call
# last):` and the traceback its error file holds, each line indented two spaces more.
_ROOT_TITLE = Lazy(r"Root Cause \(first observed failure\):[ \t]*$", re.M)
_RULE = Lazy(r"^\s*(?:={20,}|-{20,})\s*$")
_ENTRY_FIELD = Lazy(r"^\s*(?P<name>rank|exitcode|traceback)\s*:\s?(?P<value>.*)$")
_ENTRY_RANKS = Lazy(r"(?P<rank>\d+) \(local_rank: (?P<local>\d+)\)")
_ENTRY_CODE = Lazy(r"(?P<code>-?\d+)")
_ENTRY_START = Lazy(r"^\[\d+\]:\s*$")
CHILD_FAILED = "ChildFailedError"


def launcher_failed(chain: tuple[PythonException, ...]) -> bool:
    """Whether torch.distributed.elastic's ChildFailedError (torchrun's, a launcher's
    `elastic_launch`) is anywhere in `chain`: the launcher's own exception, last; the cause
    a wrapper re-raised (`raise RuntimeError("training failed") from e`); or before a
    report's copy of the rank's traceback, read as chained after it. Each says only that a
    rank failed: the rank's exception (rank_exception) is the failure, live and from a
    ticket alike (outcome/classify.py, capture/ticket.py)."""
    return any(bare_type(e.type) == CHILD_FAILED for e in chain)


@frozen
class RankException:
    """The exception a rank torchrun started raised, for a launcher that ended with
    torch.distributed.elastic's ChildFailedError: the launcher's own exception says only
    that a rank failed, and the rank's (`RuntimeError: CUDA error: ...`) is the failure a
    ticket reports and a spec expects. `chain` is empty where the rank that failed first
    printed no traceback of its own (`sys.exit(3)`): then `peers` are the other ranks'
    exceptions (a collective's `Connection closed by peer`), its consequences."""

    local_rank: int
    chain: tuple[PythonException, ...]
    exit_code: int = 1
    peers: tuple[tuple[int, str], ...] = ()

    def describe(self) -> str:
        if self.chain:
            return (
                f"local rank {self.local_rank} raised it (torchrun ended with {CHILD_FAILED}, "
                "its report of a failed rank)"
            )
        after = "".join(
            f"; rank {rank}'s {name} came after it (its peer had gone)" for rank, name in self.peers
        )
        return (
            f"local rank {self.local_rank} failed first: it exited with code "
            f"{self.exit_code}, with no traceback (torchrun's root cause, its "
            f"{CHILD_FAILED}){after}"
        )


@frozen
class _RootCause:
    """torchrun's `Root Cause (first observed failure)` entry: the rank that failed first
    (`rank : 1 (local_rank: 1)`, its global rank and its local one; None where the entry
    names none so: `rank : 1`, or no rank line), its exit code, and the traceback its error
    file recorded ('' where there is none)."""

    local: int | None
    code: int | None
    traceback: str
    rank: int | None = None


def _root_cause(stderr: str) -> _RootCause | None:
    """The report's root-cause entry, or None where the text has none. Its exit code is read
    whether or not it names the rank: the code alone tells torchrun's SIGTERM of the ranks
    left (elastic_exit) from the failure."""
    found = _ROOT_TITLE.search(stderr)
    if found is None:
        return None
    local: int | None = None
    rank: int | None = None
    code: int | None = None
    traceback: list[str] = []
    indent = 2  # the field's lines are its value's, two spaces further in
    for line in stderr[found.end() :].split("\n")[1:]:
        if _RULE.match(line):
            break
        field = _ENTRY_FIELD.match(line)
        if traceback:
            # The entry's last field, to its rule (or another entry, `[1]:`): a chain's
            # blank lines, and a paste's lines re-indented (capture's reader moves an
            # indented `Traceback` to the margin), are the traceback's still.
            if _ENTRY_START.match(line):
                break
            if line.strip() == TRACEBACK_HEADER:
                indent = len(line) - len(line.lstrip())  # a chain's next traceback
            cut = min(indent, len(line) - len(line.lstrip()))
            traceback.append(line[cut:])
        elif field is not None and field["name"] == "rank":
            ranks = _ENTRY_RANKS.search(field["value"])
            local = int(ranks["local"]) if ranks is not None else None
            rank = int(ranks["rank"]) if ranks is not None else None
        elif field is not None and field["name"] == "exitcode":
            number = _ENTRY_CODE.match(field["value"].strip())
            code = int(number["code"]) if number is not None else None
        elif field is not None and field["name"] == "traceback":
            traceback.append(field["value"])
    return _RootCause(local, code, "\n".join(traceback) + "\n", rank)


@frozen
class ElasticExit:
    """torchrun's word of the rank that failed first: its exit code, and where the word
    begins in the text read (the ranks' own output is before it)."""

    code: int
    start: int


def elastic_exit(text: str) -> ElasticExit | None:
    """The exit code of the rank torchrun saw fail first, from the `failed (exitcode: N)
    local_rank: R` line of its log or its report's `Root Cause (first observed failure)`
    entry (from its title), whichever comes first; None where neither says one. A ticket's
    reader (capture/ticket.py) takes it as the failure among the ranks' codes (the others'
    `exitcode : -15 (SIGTERM)` are torchrun ending them) and cuts the ranks' lines there:
    one reader of the block for a live run's rank_exception and a ticket, which kept a
    regex of its own for it."""
    failed = _RANK_FAILED.search(text)
    title = _ROOT_TITLE.search(text)
    if title is not None and (failed is None or title.start() < failed.start()):
        entry = _root_cause(text[title.start() :])
        if entry is not None and entry.code is not None:
            return ElasticExit(entry.code, title.start())
    if failed is not None:
        return ElasticExit(int(failed["code"]), failed.start())
    return None


def rank_exception(stderr: str) -> RankException | None:
    """The failed rank's exception chain: the last uncaught traceback it printed before
    torchrun's `failed (exitcode: N) local_rank: R` line, its `[rankR]:` prefixes read past;
    None where there is no such line or its exit code is a signal's (a crash, said as such).

    Where the ranks' lines are prefixed, only the failed rank's own are read: the last
    traceback before torchrun's line was another rank's (rank 1 `sys.exit(3)`, rank 0's
    all-reduce then `RuntimeError: Connection closed by peer`), and read as rank 1's it
    made the consequence the cause. Where the failed rank printed none, the chain is empty
    and the other ranks' exceptions are said as what followed it."""
    failed = _RANK_FAILED.search(stderr)
    entry = _root_cause(stderr)
    if failed is None:
        # Only torchrun's report is pasted (the ranks' output went to its `--log-dir`, or
        # the paste starts at its traceback): its root cause says which rank and how.
        if entry is None or entry.local is None or entry.code is None or entry.code <= 0:
            return None
        chain = parse_chain(entry.traceback)
        return RankException(entry.local, chain, entry.code)
    if int(failed["code"]) <= 0:
        return None
    local = int(failed["rank"])
    if entry is not None and entry.local == local and (recorded := parse_chain(entry.traceback)):
        # The rank's `@record` error file, copied into the report: its own traceback,
        # whoever's lines the output interleaves (unprefixed, the last traceback before
        # torchrun's line may be another rank's).
        return RankException(local, recorded, int(failed["code"]))
    ranks = {"default": local, "rank": local}
    if entry is not None and entry.local == local and entry.rank is not None:
        ranks["rank"] = entry.rank  # `[rankN]:` prefixes name the global rank
    # (up to the start of the line: torchrun's log header, `E1205 ... api.py:1002] `)
    before = stderr[: stderr.rfind("\n", 0, failed.start()) + 1]
    own: list[str] = []
    others: dict[int, list[str]] = {}
    for line in before.splitlines(keepends=True):
        prefix = RANK_LINE.match(line)
        if prefix is None or int(prefix["rank"]) == ranks[prefix["kind"]]:
            own.append(line)
        else:
            others.setdefault(int(prefix["rank"]), []).append(line)
    chain = parse_chain(RANK_PREFIX.sub("", "".join(own)))
    if chain:
        return RankException(local, chain, int(failed["code"]))
    peers = tuple(
        (rank, found[-1].type)
        for rank, lines in sorted(others.items())
        if (found := parse_chain(RANK_PREFIX.sub("", "".join(lines))))
    )
    return RankException(local, (), int(failed["code"]), peers)
