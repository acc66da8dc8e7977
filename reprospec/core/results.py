"""The objects of what ran: the runner's raw facts, the classified outcome, the verdicts,
and the results the store keeps and the renderers read.

    execute -> classify -> judge -> store -> render
    Execution  Outcome    Verdict   RunResult

`models.py` holds what comes before (Spec, Cell, AttemptPlan): `validate` and `plan`
import only that side, and never pay for creating these classes.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from reprospec.core.frozen import frozen
from reprospec.core.frozenjson import FrozenDict, freeze_mapping
from reprospec.core.inputs import Cell, Expectation
from reprospec.core.inputs import Where as Where  # outcome.where's type, named here too
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.lazysequence import LazySequence

if TYPE_CHECKING:
    from reprospec.core.childexit import ChildExit  # where a child was reaped
    from reprospec.core.resumed import Resumed  # a resumed run's: made by one only

OutcomeKind = Literal["pass", "error", "crash", "hang"]
# "not-run": a cell an interrupted run never reached (no attempt ran, none failed to).
VerdictKind = Literal[
    "reproduced", "not-reproduced", "undecided", "infra-error", "observed", "not-run"
]
# fresh: a new interpreter (or container); forked: a fork of a preload server (run.preload).
Launch = Literal["fresh", "forked"]


@frozen
class Execution:
    """What a runner observed of one attempt: raw facts, no interpretation.

    `returncode` follows subprocess: negative means killed by that signal.
    `infra_error` is set when the attempt could not be run at all (interpreter
    missing, image missing); then nothing else is meaningful.
    """

    cell_id: str
    attempt: int
    log_dir: Path
    returncode: int | None
    timed_out: bool
    duration_s: float
    started: str
    finished: str
    stdout_path: Path
    stderr_path: Path
    events_path: Path
    stack_path: Path | None = None
    # The names in `log_dir` once the attempt was over and the runner had written what it
    # writes there, where the runner listed it (process/run.py): Evidence.read does not list
    # it again. None: not listed (the docker runner, an instance, cores kept in it after
    # the listing, cuda-gdb's files), and Evidence lists it.
    names: frozenset[str] | None = None
    gpu_slot: tuple[str, ...] = ()
    infra_error: str | None = None
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    # Descendants the engine reaped itself (orphans re-parented to it), in reaping order.
    child_exits: tuple[ChildExit, ...] = ()
    # Whether any process besides the root ran in the attempt: True, False (the root never
    # reaped a child and the engine found none: a printed report of a child's death is
    # the program's words, and an exit status 128+N its own), None where the runner cannot
    # tell (a container's, a batch job's, a root reaped before it was read).
    descendants: bool | None = None
    # The root is a `/bin/sh -c LINE` that forks one program, and the program's own record
    # says it died of a signal (it asked for no status): the shell's 128 + N is the main
    # process's death by N, as a list command's -N is (bash execs the program, dash forks
    # it). False: not so, or not known (another runner, a program that is no Python).
    program_died: bool = False
    # How the attempt's process was started, and (with preload) what to know about it:
    # why it ran fresh, or the seed its random generators got when forked.
    launch: Launch = "fresh"
    launch_note: str | None = None
    # environment.perturb as applied (`memory_limit=256 MiB (cgroup v1 ...)`), one per field.
    perturbed: tuple[str, ...] = ()
    # time.monotonic() when the attempt's root process ended (CLOCK_MONOTONIC: the same
    # clock in every process of this machine); None when nothing ran.
    ended_at: float | None = None
    # One instance of `run.instances`: its number and when it reached the start barrier
    # and was released from it (CLOCK_MONOTONIC seconds, as the instance itself read them).
    instance: int | None = None
    ready_at: float | None = None
    released_at: float | None = None
    # The attempt's workdir as the container it ran in names it (the docker runner's
    # `/work` for a workdir under /root, /opt, /usr or /var; else the host's path), set by
    # the runner that ran it there; None: it ran on this host. Its stack dumps name the
    # workdir's files by it, and a hang's lines are read from the workdir through it
    # (hangsource.source_at), every other path of the dump being the image's, not this host's.
    container_workdir: str | None = None
    # The attempt's main process is reprospec's harness (a workload): only then are the
    # harness's own events (an infra error, a worker's death, ranks) believed (evidence.py).
    harness: bool = False
    # The attempt's timeout (seconds; None: none): a hang's last progress is measured from it.
    timeout_s: float | None = None
    # `run.stall` (seconds; None: not set), and whether it ended the attempt: `timed_out`
    # is then set too (a hang either way), and the hang says which limit fired.
    stall_s: float | None = None
    stalled: bool = False
    # Set when `python` in the command ran an interpreter the person did not choose (no
    # --python, not the one of their PATH: reprospec's own, as pipx installs it): says which.
    unchosen_python: str | None = None
    # What the kernel's OOM killer did while the attempt ran, as the runner saw it (its
    # count rose in the attempt's memory cgroup, or the container's state says OOMKilled):
    # `the kernel's OOM killer killed 1 process at perturb.memory_limit`. None: not seen.
    # The classifier names it in a SIGKILL's outcome; anything else keeps it as a warning.
    oom: str | None = None
    # The kernel counted no OOM kill on the whole machine while the attempt ran (the local
    # and venv runners read /proc/vmstat): a descendant's SIGKILL, and a shell's 137 that
    # reports one, was sent by a process (`timeout -s KILL`, a `kill -9`), no crash of the
    # program's (the main process's own -9 still is). False: a kill was
    # counted, or no count was read (another runner, an old kernel): a SIGKILL is a crash.
    no_oom_kill: bool = False
    # The attempt's pids cgroup refused it a fork or a thread (process/pidlimit.py): its
    # process limit, not the program alone, may have made it fail (`the attempt reached its
    # process limit (10 processes): ...`). The classifier names it in a failure's detail;
    # None: not reached, or not known (no cgroup: RLIMIT_NPROC counts no refusal).
    process_limit: str | None = None


@frozen
class GroupMember:
    """One exception an exception group held, as its `| `-prefixed sub-traceback printed it
    (a nested group's members in its place): its type and message.

    A class of its own, not a `ChainLink`: a ChainLink that held ChainLinks would hold
    itself, which core/redact.py reads as a type that may hold a mapping (it walks every
    result it is given then, where it passes a plain one as it is)."""

    type: str
    message: str | None = None

    def to_dict(self) -> JsonObject:
        """Its results.json form (`members`' items): `{"type": ..., "message": ...}`."""
        return {"type": self.type, "message": self.message}


@frozen
class ChainLink:
    """One exception of a chain: its type and message, and how it led to the next one.

    `link` says how this exception is tied to the one printed after it: "cause"
    (`raise ... from`: "The above exception was the direct cause") or "context"
    ("During handling of the above exception"); None for the last one. `members`: an
    exception group's (`Outcome.members`), where one stands in a chain (a library's
    `raise RuntimeError(...) from group` of a TaskGroup's failure); () for any other.
    """

    type: str
    message: str | None = None
    link: Literal["cause", "context"] | None = None
    members: tuple[GroupMember, ...] = ()

    @property
    def named(self) -> str:
        """Its type, with an exception group's members' types after it:
        `ExceptionGroup[ValueError]` (`group_named`), as `Outcome.named_exception`."""
        return group_named(self.type, self.members)

    def to_dict(self, *, link: bool = True) -> JsonObject:
        """Its results.json form: a chain's item; `link=False`, `last_traceback`'s (the
        last traceback printed stands in no chain)."""
        out: JsonObject = {"type": self.type, "message": self.message}
        if link:
            out["link"] = self.link
        if self.members:
            out["members"] = [m.to_dict() for m in self.members]
        return out


@frozen
class CrashedChild:
    """A descendant that died of a signal while the attempt went on to hang.

    A `multiprocessing.Pool` never notices that a worker died mid-task (a SIGSEGV): its
    `map` waits for the lost result forever, and the hang's stacks show only the waiting
    parent. The death is the cause, so the hang names it (outcome/children.py found it).
    `signal` is None where only "terminated abruptly" is known (concurrent.futures);
    `pid` and `cmdline` when the evidence names them; `evidence` says how it is known
    (`as its core says`, `reaped by the engine`, `as its faulthandler report says`).
    """

    signal: str | None
    pid: int | None = None
    cmdline: str | None = None
    evidence: str = ""

    def to_dict(self) -> JsonObject:
        return asdict(self)


@frozen
class PythonFrame:
    """One frame of a Python stack, as a dump names it: the file, its line, its function.

    An outcome's `hung_in`: where a hang sits, the innermost frame of the user's code in
    the process its stacks show stuck (outcome/hungstacks.py), so that two hangs in
    different places are told apart where their signature (`hang`) is one."""

    path: str
    line: int
    function: str

    def text(self) -> str:
        """`/work/train.py:19 in __getitem__`."""
        return f"{self.path}:{self.line} in {self.function}"

    def short(self) -> str:
        """`__getitem__ (train.py:19)`: the file by its last part (the path is the machine's)."""
        return f"{self.function} ({self.path.rsplit('/', 1)[-1]}:{self.line})"

    def to_dict(self) -> JsonObject:
        return asdict(self)


@frozen
class Outcome:
    """What happened in one attempt, classified.

    `exception`/`message` are the exception that ended the process; `chain` the
    whole chain it ended (primary first) when it had more than one. A traceback on
    stderr that did not end it (the process exited with another status than Python's
    1 for an uncaught exception: a handled exception it logged, a child's, or it then
    hung or died of a signal) is `last_traceback`, its last exception: worth naming,
    never to be taken for what ended the run. `pid` and
    `cmdline` name the crashed process for `where: child`. `module` is the module
    being imported when the attempt stopped in the import phase; `stage` the
    stage of the step it was in (forward, backward, optimizer, ...). `injected` names
    the spec's fault that caused a failure (`workload.faults[0]`): the spec made it
    happen, it is no bug of the code under test. `crashed_child` (a hang) names a
    descendant that died of a signal before it: the hang's likely cause.
    `oom_killed`: the crash's SIGKILL was the kernel's OOM killer's. `hung_in` (a hang)
    is the frame of the user's code it sat in, where its stacks show one; `hung_native`, where
    it has no Python stack (a C program), the place its native stacks show it sat in, named
    as a crash's signature frame is but for a caller with no name, left out where the
    signature keeps it (`??@sleep`: a title's reader learns nothing of it), as
    `clock_nanosleep@libc<-main@nap` (`native.hung_frame`); one live sample, so the report
    does not count hangs apart by it (`signatures.group_key`). `hung_process`, the command
    line of the process that place is in where it is a process the attempt's own ran (`./nap`
    under `./pp` reading its pipe, or under make), as capture's title names it: its line and
    report said `hang in clock_nanosleep@libc<-main@nap`, as if the launcher slept.
    `members`: where `exception` is an exception group (`ExceptionGroup`, an
    `asyncio.TaskGroup`'s failure), the exceptions it held (a nested group's in its place),
    as its traceback printed them: every TaskGroup failure is an `ExceptionGroup`, its
    members tell one bug from another.
    """

    kind: OutcomeKind
    signal: str | None = None
    exit_code: int | None = None
    where: Where | None = None
    exception: str | None = None
    message: str | None = None
    phase: str | None = None
    step: int | None = None
    duration_s: float = 0.0
    signature: str = ""
    detail: str | None = None
    module: str | None = None
    stage: str | None = None
    chain: tuple[ChainLink, ...] = ()
    pid: int | None = None
    cmdline: str | None = None
    injected: str | None = None
    last_traceback: ChainLink | None = None
    crashed_child: CrashedChild | None = None
    # A SIGKILL the kernel's OOM killer sent: the runner saw it count a kill while the
    # attempt ran (Execution.oom), which the detail then says.
    oom_killed: bool = False
    hung_in: PythonFrame | None = None
    members: tuple[GroupMember, ...] = ()
    hung_native: str | None = None
    hung_process: str | None = None

    @property
    def hung_place(self) -> str | None:
        """Where a hang sat, as its words and a report name it: `work (hangkid.py:3)`
        (`hung_in`), else its native place (`clock_nanosleep@libc<-main@nap`); None where
        neither is known. Its process, where `hung_process` names one, the words add
        (`words.outcome_phrase`: `a process it ran (nap), in ...`)."""
        return self.hung_in.short() if self.hung_in is not None else self.hung_native

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @property
    def named_exception(self) -> str | None:
        """`exception`, with an exception group's members' types after it:
        `ExceptionGroup[ValueError]` (`group_named`)."""
        return group_named(self.exception, self.members)

    @property
    def crashed_pid(self) -> int | None:
        """The pid of the process that crashed (a worker or child, or the child that died
        before a hang), whose core the report shows and whose native frame the signature
        gains; None where the outcome names none (the main process's: its core is read first)."""
        if self.crashed_child is not None:
            return self.crashed_child.pid
        return self.pid

    @property
    def exceptions(self) -> tuple[ChainLink, ...]:
        """Every exception of the chain, primary first (just the one when there is no chain)."""
        if self.chain:
            return self.chain
        if self.exception:
            return (ChainLink(self.exception, self.message),)
        return ()

    def raised(self) -> tuple[ChainLink | GroupMember, ...]:
        """Every exception the chain that ended the process printed: its own, primary
        first, then the members of the exception groups in it, the one that ended it
        (`members`) and one in the chain (`raise RuntimeError(...) from group`): what
        `expect.exception` meets, and what ran out of memory where a MemoryError did."""
        chained = [m for link in self.chain[:-1] for m in link.members]
        return (*self.exceptions, *self.members, *chained)


def bare_type(exception: str) -> str:
    """`Error` of `pkg.mod.Error`: an exception's type without its module (pytest, a
    traceback and a spec write a type with it or without it)."""
    return exception.rsplit(".", 1)[-1]


@overload
def group_named(exception: str, members: Sequence[GroupMember]) -> str: ...
@overload
def group_named(exception: str | None, members: Sequence[GroupMember]) -> str | None: ...
def group_named(exception: str | None, members: Sequence[GroupMember]) -> str | None:
    """`ExceptionGroup[KeyError,ValueError]`: an exception group's type and its members'
    types, each once, sorted (a TaskGroup's members come in the order its tasks failed,
    which differs from attempt to attempt); `exception` as it is where it holds none."""
    if exception is None or not members:
        return exception
    return f"{exception}[{','.join(sorted({m.type for m in members}))}]"


# An exception group as `group_named` writes it (`ExceptionGroup[KeyError,ValueError]`),
# read back: the group's type and its members' (`, ` too: a person's copy of it).
GROUP_NAMED = Lazy(r"(?P<group>[^\W\d][\w.]*)\[(?P<members>[^\W\d][\w.]*(?:, ?[^\W\d][\w.]*)*)\]")


def split_group(signature: str) -> tuple[str, frozenset[str] | None]:
    """An error's signature as `group_named` wrote its exception, read back: the signature
    with the members left out (`error:ExceptionGroup:train`) and the members' types
    (`{KeyError, ValueError}`); `(signature, None)` where its exception names none (no
    group, or a group stored before members were read, or whose members' lines were cut).
    Only the exception's part is read (`error:TYPE[:...]`): a pytest test id's `[param]`
    later in the signature is no member."""
    kind, colon, rest = signature.partition(":")
    if kind != "error" or not colon:
        return signature, None
    exception, sep, tail = rest.partition(":")
    group = GROUP_NAMED.fullmatch(exception)
    if group is None:
        return signature, None
    members = frozenset(m.strip() for m in group["members"].split(","))
    return f"error:{group['group']}{sep}{tail}", members


def group_agrees(signature: str, target: str) -> bool:
    """Whether two error signatures name one exception group's failure: the same group
    type (and the rest alike) where the members of one are among the other's, or one names
    none. A TaskGroup's tasks fail in the order timing gives them, and the group holds
    those that failed before it was cancelled: one two-task TaskGroup gave
    `[KeyError,ValueError]` 9 times in 12, `[ValueError]` twice and `[KeyError]` once,
    one failure; two groups of members apart (`[KeyError]`, `[ValueError]`) differ.
    Read where signatures are compared as one failure: every comparison of a failure
    with a target (`native.agrees`: capture's verify, minimize, isolate, amplify) and
    `compare`'s cells."""
    if signature == target:
        return True
    ours_bare, ours = split_group(signature)
    theirs_bare, theirs = split_group(target)
    if ours_bare != theirs_bare or (ours is None and theirs is None):
        return False
    return ours is None or theirs is None or ours <= theirs or theirs <= ours


@frozen
class NotRun:
    """An attempt that never ran what the spec asks (no interpreter, no GPU, no image): why.

    It is no outcome of the workload, so it never counts as a miss: a cell
    whose attempts are all NotRun is `infra-error`.
    """

    reason: str


# What classifying an attempt gives: what happened, or why nothing could happen.
Classified = Outcome | NotRun


@frozen
class Rate:
    """matched / attempts with a Wilson 95% interval."""

    matched: int
    attempts: int
    low: float
    high: float

    @property
    def value(self) -> float:
        """matched / attempts (0 when nothing ran)."""
        return self.matched / self.attempts if self.attempts else 0.0

    def to_dict(self) -> JsonObject:
        return asdict(self)


@frozen
class AttemptVerdict:
    """One attempt judged against its expectation: matched, or each way it did not."""

    matched: bool
    mismatches: tuple[str, ...] = ()


@frozen
class Verdict:
    """A cell judged from its attempts: the verdict, a one-line reason, the match rate."""

    kind: VerdictKind
    reason: str
    rate: Rate


@frozen
class ChildWarning:
    """A warning the attempt's processes printed (Python's `file:line: Category: message`).

    `where` is the `file:line` it was issued from; the same category and message
    from another line is the same warning.
    """

    category: str
    message: str
    where: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """What makes two warnings the same one."""
        return self.category, self.message

    def text(self) -> str:
        """`UserWarning: message`."""
        return f"{self.category}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"category": self.category, "message": self.message, "where": self.where}


@frozen
class InstanceResult:
    """One instance of an attempt with `run.instances`: how it ended, on which GPU slot.

    `start_s` is when it was released from the start barrier, in seconds after the
    first instance of its attempt was; `ready_s` when it reached the barrier (<= 0:
    every instance waits there before any is released); `end_s` when its process
    ended (the attempt's outcome is the failure with the smallest `end_s`), all on
    the same scale. `logs` is its own folder, relative to the run folder.
    """

    instance: int
    outcome: Outcome | NotRun
    matched: bool
    gpu_slot: tuple[str, ...] = ()
    duration_s: float = 0.0
    ready_s: float | None = None
    start_s: float | None = None
    end_s: float | None = None
    logs: str = ""

    @property
    def ran(self) -> Outcome | None:
        """The outcome when the instance ran; None when it did not (`NotRun`)."""
        return self.outcome if isinstance(self.outcome, Outcome) else None

    @property
    def failed(self) -> bool:
        """It ran and did not pass."""
        return isinstance(self.outcome, Outcome) and self.outcome.kind != "pass"


@frozen
class AttemptResult:
    """One attempt as stored: the execution facts, the outcome, whether it matched.

    `stack` (a hang's thread stacks) and `excerpt` (the relevant lines of a
    failure's log) are taken from the attempt's files when it ends, so reports
    are made from the result alone. `dead_child_stack` is the own stack of the child
    that died before a hang (`Outcome.crashed_child`), apart from the hung processes'
    `stack`: a field of its own, so no reader has to find where one ends in the other.
    """

    attempt: int
    duration_s: float
    outcome: Outcome | NotRun
    matched: bool
    mismatches: tuple[str, ...]
    logs: str
    started: str = ""
    finished: str = ""
    gpu_slot: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    stack: str | None = None
    excerpt: str | None = None
    # A hang after a child's death (`outcome.crashed_child`): the dead child's own stack
    # (its faulthandler report, or as read from its core); None where it left none.
    dead_child_stack: str | None = None
    # gdb's native stacks of the failure, as markdown (top frames, then the full stacks).
    native: str | None = None
    # What environment.debug's GPU diagnostics found, as markdown (outcome/gpufindings.py).
    gpu: str | None = None
    # Forked from a preload server, or a fresh process; the note says why or with what seed.
    launch: Launch = "fresh"
    launch_note: str | None = None
    # environment.perturb as the runner applied it, one phrase per perturbation.
    perturbed: tuple[str, ...] = ()
    # `run.instances`: every instance, in instance order; `instance` is the one whose
    # outcome is the attempt's (the first failure by time, else instance 0), and
    # `start_spread_s` how far apart the instances were released from the start barrier.
    instances: tuple[InstanceResult, ...] = ()
    instance: int | None = None
    start_spread_s: float | None = None
    # The warnings the child printed, each once, in the order first printed.
    child_warnings: tuple[ChildWarning, ...] = ()

    @property
    def ran(self) -> Outcome | None:
        """The outcome when the attempt ran; None when it did not (`NotRun`)."""
        return self.outcome if isinstance(self.outcome, Outcome) else None

    @property
    def infra_error(self) -> str | None:
        """Why the attempt could not run; None when it ran."""
        return self.outcome.reason if isinstance(self.outcome, NotRun) else None

    @property
    def failed(self) -> bool:
        """It ran and did not pass."""
        return isinstance(self.outcome, Outcome) and self.outcome.kind != "pass"

    @classmethod
    def not_run(cls, attempt: int, reason: str, logs: str = "") -> AttemptResult:
        """An attempt the engine could not run: no outcome, and the reason why."""
        from datetime import datetime, timezone  # not at import: validate never needs it

        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return cls(
            attempt=attempt,
            duration_s=0.0,
            outcome=NotRun(reason),
            matched=False,
            mismatches=(),
            logs=logs,
            started=now,
            finished=now,
        )


@frozen
class SetAside:
    """An attempt that ended as the engine was stopped by a signal, not kept: the stop may
    have reached its processes first (a shell whose `sleep` it killed went on and exited 0),
    so its end may be the stop's and not the program's. A resume runs it again."""

    cell_id: str
    attempt: int
    result: AttemptResult


@frozen
class CellResult:
    """One cell as stored: its expectation, its attempts and the verdict judged from them.

    `environment` is the cell's resolved `environment` section as JSON
    (`sections.Environment.to_json()`): what this cell ran with, which a toggle
    may change from cell to cell (env variables, packages, image).
    """

    cell: Cell
    expected: Expectation
    verdict: VerdictKind
    reason: str
    rate: Rate
    attempts: tuple[AttemptResult, ...]
    command: str = ""
    environment: Mapping[str, JsonValue] = field(default_factory=dict)

    @classmethod
    def judged(
        cls,
        cell: Cell,
        expected: Expectation,
        verdict: Verdict,
        attempts: tuple[AttemptResult, ...],
        command: str = "",
        environment: Mapping[str, JsonValue] | None = None,
    ) -> CellResult:
        """A cell from the judge's `Verdict` of its attempts.

        `environment` is kept, not copied: the judge gives the cells that ran the same
        environment one shared mapping (a copy each would grow with the matrix).
        """
        return cls(
            cell,
            expected,
            verdict.kind,
            verdict.reason,
            verdict.rate,
            attempts,
            command,
            environment if environment is not None else {},
        )

    @property
    def judgement(self) -> Verdict:
        """The verdict as one object (kind, reason, rate)."""
        return Verdict(self.verdict, self.reason, self.rate)

    @property
    def failure_reproduced(self) -> bool:
        """Whether the cell failed as `expect` says it should: the failure a report leads
        with, and the one its standalone repro is for."""
        return self.verdict == "reproduced" and self.expected.outcome != "pass"


class AlikeCells(LazySequence[CellResult]):
    """A run's cells made as they are read, most of them alike but for their `Cell`
    (outcome/judgedcells.py's `JudgedRun`): `alike` reads each distinct result once."""

    @abstractmethod
    def alike(self) -> Iterator[tuple[CellResult, int]]:
        """Each distinct result once (with the `Cell` of one of its cells) and how many
        cells share it, in no particular order."""


def alike(cells: Sequence[CellResult]) -> Iterator[tuple[CellResult, int]]:
    """`(cell, how many cells are alike it)` for `cells`, each result read once where the
    cells are `AlikeCells`, else each cell with 1: for a pass over a run's cells that reads
    no cell's `cell` and needs no order (a count, a sum, an `any`), which at 65,536 cells
    of a large run would otherwise make every cell again (docs/performance.md)."""
    if isinstance(cells, AlikeCells):
        return cells.alike()
    return ((cell, 1) for cell in cells)


@frozen
class Standalone:
    """How to reproduce one cell without reprospec (the report's "Standalone repro").

    `kind` "command": `run` is the command line (with its variables and the `cd` into
    the workdir) and `files` the workdir files the command names. `kind` "workload":
    `script` is a generated self-contained repro.py and `run` how to start it.
    `unavailable` says why there is none (then only `cell` and `kind` are set).
    """

    cell: str
    kind: Literal["command", "workload"]
    run: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str = "."  # relative to the spec's folder
    files: tuple[str, ...] = ()  # relative to the workdir
    script: str = ""
    notes: tuple[str, ...] = ()
    unavailable: str = ""

    def to_dict(self) -> JsonObject:
        return {
            "cell": self.cell,
            "kind": self.kind,
            "run": self.run,
            "env": dict(self.env),
            "workdir": self.workdir,
            "files": list(self.files),
            "script": self.script,
            "notes": list(self.notes),
            "unavailable": self.unavailable,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Standalone:
        kind: Literal["command", "workload"] = (
            "workload" if d.get("kind") == "workload" else "command"
        )
        env, files, notes = d.get("env"), d.get("files"), d.get("notes")
        return cls(
            cell=str(d.get("cell", "")),
            kind=kind,
            run=str(d.get("run", "")),
            env={str(k): str(v) for k, v in env.items()} if isinstance(env, Mapping) else {},
            workdir=str(d.get("workdir") or "."),
            files=tuple(str(f) for f in files) if isinstance(files, list) else (),
            script=str(d.get("script") or ""),
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
            unavailable=str(d.get("unavailable") or ""),
        )


@frozen
class RunResult:
    """Everything about one run: written as results.json, into the store, into reports."""

    run_id: str
    spec_name: str
    spec_path: str
    spec_text: str
    runner: str
    started: str
    finished: str
    environment: Mapping[str, JsonValue]
    # A tuple, or a sequence that makes each cell when it is read (a large run's, when the
    # engine was asked for less than the whole result: outcome/judgedcells.py's JudgedRun).
    cells: Sequence[CellResult]
    command_line: str = ""
    title: str = ""
    description: str = ""
    warnings: tuple[str, ...] = ()
    interrupted: bool = False
    shard: str = ""  # "K/N" when this run holds one shard of the attempts
    standalone: Standalone | None = None  # how to reproduce the failing cell without reprospec
    # The options the run was asked besides the spec (`RunOptions.to_dict()`), for compare.
    options: Mapping[str, JsonValue] = field(default_factory=dict)
    # Where the run's paths point, for reports to name them short: absolute path -> label
    # (`<venv>`, `<python>`, `<home>`, `<harness>`; "" is the project, named relative).
    paths: Mapping[str, str] = field(default_factory=dict)
    # A run finished by `run --resume`: what its earlier part left and what this one ran.
    resumed: Resumed | None = None
    # The results store (`--out`) the run is in, as the command that ran or read it named it:
    # what a report's `reprospec run --resume ID --out OUT` names. None where not known (a
    # results.json under no `runs/`). Not in results.json (a store moved keeps its runs),
    # and not compared: where a run lies is not what it is.
    store: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Read-only, deep, as every value at a seam (core/frozenjson.py): a caller's edit of
        # a result's options or environment changed what its report and compare read.
        for name in ("environment", "options", "paths"):
            object.__setattr__(self, name, freeze_mapping(getattr(self, name)))

    @property
    def summary(self) -> Mapping[str, int]:
        """The count of cells by verdict (read-only: made again at each read)."""
        verdicts: dict[str, int] = {}
        for cell, count in alike(self.cells):
            verdicts[cell.verdict] = verdicts.get(cell.verdict, 0) + count
        counts = {
            "cells": len(self.cells),
            "reproduced": verdicts.get("reproduced", 0),
            "not_reproduced": verdicts.get("not-reproduced", 0),
            "undecided": verdicts.get("undecided", 0),
            "infra_error": verdicts.get("infra-error", 0),
        }
        if verdicts.get("observed"):  # only observe runs have the key
            counts["observed"] = verdicts["observed"]
        if verdicts.get("not-run"):  # only interrupted runs have the key
            counts["not_run"] = verdicts["not-run"]
        return FrozenDict(counts)

    @property
    def observes(self) -> bool:
        """An observe run: no cell had an expectation."""
        return bool(self.cells) and all(c.expected.observes for c, _ in alike(self.cells))
