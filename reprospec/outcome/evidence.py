"""What an attempt left behind, read once: the input of classify, judge and the report.

A runner's `Execution` names the attempt's files (stdout.log, stderr.log,
events.jsonl, stack.txt). `Evidence.read` opens each of them once, keeps what
later stages use (the logs' head and tail as text, the events boiled down to
what they say, the stack dump) and nothing downstream opens them again:

    Execution -> Evidence.read -> outcome.classify -> judge.judge_attempt
                                -> AttemptResult.stack / .excerpt -> report

Logs are capped by the runner, but a reader must not trust that: the verdict
needs the first lines (a dying worker's message) and the last (the traceback),
so a long log keeps its head and tail with a marker between them. Every file
here is the child's to write, so each is read within a bound (capped.py): the
events file too (its head and tail; a line past _MAX_EVENT_LINE is skipped
unread), and the stack dump.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.core import capped, gpudebug
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue, is_int
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import clean_log, quoted
from reprospec.core.results import ChildWarning, Execution
from reprospec.core.signals import canonical_signal
from reprospec.process.childprotocol import PROGRESS_EVENTS, RAISED, STDERR, STDOUT
from reprospec.process.stacks import without_our_frames

if TYPE_CHECKING:
    from reprospec.native import NativeStacks  # at a crash or a hang (native.read)
    from reprospec.outcome.gpufindings import GpuFindings  # where a diagnostic left one
    from reprospec.outcome.ranks import RankReport

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024
# Where `expect.message` looks past the exception message: the end of each log.
MESSAGE_TAIL_BYTES = 64 * 1024
# A stack dump of many processes and threads stays whole up to here.
STACK_BYTES = 1024 * 1024
_MAX_EVENT_LINE = 64 * 1024
# An events file is read as its first and last bytes: where the attempt began and
# where it got to. Millions of progress lines in between say nothing more.
EVENTS_HEAD_BYTES = 4 * 1024 * 1024
EVENTS_TAIL_BYTES = 16 * 1024 * 1024
# Items a worker may be stuck on, and the like, are kept up to here (the newest).
MAX_BUSY = 256
# The pids the harness says it killed itself (`teardown` events) kept up to here: a
# distributed job's ranks and their DataLoader workers, a handful per rank.
MAX_KILLED = 4096
# The `child_exit` events kept: the first deaths are the ones that matter (a pool that
# replaces each dead worker can write one a second until its timeout).
MAX_CHILD_EXITS = 64
# The variables a forked attempt set that its preload server had read at import, kept up
# to here (the fork server writes each once); each an environment variable's name.
MAX_PRELOAD_ENVIRON = 16
_VARIABLE = Lazy(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

Event = Mapping[str, JsonValue]

# The phase of a program that finished its work and is leaving: a hang there is a hang
# at exit (`hang @ exit`), expected as `expect: {outcome: hang, phase: exit}`.
EXIT_PHASE = "exit"

# Whose word each kind of event is. The events file is writable by every process of
# the attempt, so what it may say depends on who the main process is:
# - any child may report its progress (where it got to): a line of one of these
#   kinds, or a line with no `event` at all, gives the phase, step, stage or the
#   module being imported;
# - the harness's own reports (a DataLoader worker's death, an infrastructure error,
#   distributed ranks, faults about to fire) are believed only from a workload
#   attempt, whose main process is the harness (`Execution.harness`). From a
#   command they are ignored: a program cannot call its own crash an infra error,
#   or blame a worker it never had.
# Every other kind is ignored. An infra error also needs the harness's exit status
# (outcome.py), so a line written by code the harness runs cannot stand alone.
# `done` says the program finished its work (it may still hang on its way out): a
# command may say so too, and a hang after it is a hang at exit (classify.py).
# (PROGRESS_EVENTS is the child protocol's: a stall watch counts the same kinds.)
HARNESS_EVENTS = frozenset(
    {
        "start",
        "loader",
        "faults",
        "fault",
        "dataset_probe",
        "worker_exit",
        "worker_busy",
        "worker_free",
        "infra_error",
        "distributed",
        "ranks",
        "ranks_stuck",
        "rank_exit",
        "rank_error",
        "teardown",
    }
)


# What the fork server's code writes in a forked attempt (forkserver.py): believed only
# from a forked attempt, and only ever worded as a warning of it.
FORKED_EVENTS = frozenset({"preload_missed", "preload_environ"})

# What the engine's sitecustomize writes in every Python process of any attempt
# (stackdump/sitecustomize.py, `_watch_children`): a child its multiprocessing reaped dead
# of a signal, and a signal that kills it sent to another process (`os.kill`).
ENGINE_EVENTS = frozenset({"child_exit", "signalled"})


def allowed_events(
    events: Iterable[Event], *, harness: bool, forked: bool = False
) -> Iterator[Event]:
    """The events this attempt's main process may write (see PROGRESS_EVENTS); others dropped."""
    kinds = PROGRESS_EVENTS | ENGINE_EVENTS
    if harness:
        kinds = kinds | HARNESS_EVENTS
    if forked:
        kinds = kinds | FORKED_EVENTS
    return (event for event in events if event.get("event") is None or event["event"] in kinds)


@frozen
class Events:
    """What events.jsonl says, from one pass over it: where the attempt got to, what went wrong.

    `phase`/`step`: the last event with either (a new phase starts with no step).
    `stage`: the stage (`forward`, `backward`, `optimizer`, ...) the last step
    had reached; a new step or phase starts with none. `module`: the module of
    the last `import` event while the attempt is still in that event's phase.
    `worker_exit`: the last `worker_exit` event with a signal, else the last with an
    exit code (a worker that exited, even with 0, while the loader still needed it).
    `infra_error`: the reason of the last `infra_error` event. `busy`: `worker_busy` events with no
    `worker_free` after them (items a DataLoader worker was stuck on). `faults`: the
    spec's injected faults that fired (`fault` events: number, kind, where, pid), in order.
    `done`: the last progress was a `done` event (or a phase named `exit`): the program
    said it had finished its work. `last_t`: the time (epoch seconds, the `t` the event
    carries) of the last event, how recent the attempt's last sign of progress was; a marker
    event at the phase and step of the marker event before it is a bar's redraw, no sign
    (a bar stuck at 7/10 that redraws its clock read as "still progressing?").
    `untimed`: an event came without a `t` (a command's own events, as spec-format.md
    shows them, need none); `Evidence.read` then takes the file's last write as `last_t`.
    `killed`: the pids the harness SIGKILLed itself (`teardown` events: a distributed
    supervisor ending the other ranks and their workers once one rank failed, a failed
    rank its own workers); their deaths are the harness's doing, never a crash.
    `child_exits`: the `child_exit` events, in order (a child a Python process of the
    attempt reaped dead of a signal: its pid, signal, process name, and whether it was a
    DataLoader worker), at most MAX_CHILD_EXITS.
    `signalled`: (pid, signal) of each `signalled` event, at most MAX_KILLED: a Python
    process of the attempt sent that pid (a negative one: that process group) a signal
    that kills it (a test's teardown SIGKILLs the server it started), so that death is the
    program's doing, never a crash.
    """

    phase: str | None = None
    step: int | None = None
    worker_exit: Event | None = None
    infra_error: str | None = None
    busy: tuple[Event, ...] = ()
    stage: str | None = None
    module: str | None = None
    # A forked attempt's `preload_missed` event: what it imported that its server had not.
    preload_missed: Event | None = None
    # A forked attempt's `preload_environ` events: the variables it set that the preloaded
    # modules had read at their import (a fresh attempt's import would read its values).
    preload_environ: tuple[str, ...] = ()
    faults: tuple[Event, ...] = ()
    done: bool = False
    last_t: float | None = None
    untimed: bool = False
    killed: frozenset[int] = frozenset()
    # The pid of a dataset probe that never said it ended (`dataset_probe` without `ended`).
    probing: int | None = None
    child_exits: tuple[Event, ...] = ()
    signalled: frozenset[tuple[int, str]] = frozenset()

    @classmethod
    def of(cls, events: Iterable[Event]) -> Events:
        """The summary of a sequence of events, in the order they were written."""
        phase: str | None = None
        step: int | None = None
        stage: str | None = None
        module: tuple[str, str | None] | None = None  # (module, the phase it was imported in)
        worker_exit: Event | None = None
        infra_error: str | None = None
        busy: dict[tuple[object, object], Event] = {}
        preload_missed: Event | None = None
        preload_environ: dict[str, None] = {}
        faults: list[Event] = []
        done = False
        last_t: float | None = None
        untimed = False
        exited: Event | None = None  # the last worker_exit with an exit code, not a signal
        killed: set[int] = set()
        signalled: set[tuple[int, str]] = set()
        child_exits: list[Event] = []
        probes: dict[int, None] = {}  # the probes started and not ended, in order
        marker_at: tuple[object, object] | None = None  # the last marker event's (phase, step)
        for event in events:
            name = event.get("event")
            t = event.get("t")
            redrawn = False
            if name == "marker" and event.get("step") is not None:
                position = (event.get("phase"), event.get("step"))
                redrawn, marker_at = position == marker_at, position
            if redrawn:
                pass
            elif isinstance(t, (int, float)) and not isinstance(t, bool):
                last_t = float(t) if last_t is None else max(last_t, float(t))
            else:
                untimed = True
            if name == "preload_missed":
                preload_missed = event
            elif name == "preload_environ":
                variable = event.get("name")
                # Written inside the attempt: only a variable's name is believed.
                if (
                    isinstance(variable, str)
                    and _VARIABLE.fullmatch(variable)
                    and len(preload_environ) < MAX_PRELOAD_ENVIRON
                ):
                    preload_environ[variable] = None
            elif name == "fault":
                faults.append(event)
            elif name == "worker_exit" and event.get("signal"):
                worker_exit = event
            elif name == "worker_exit" and isinstance(event.get("exit_code"), int):
                exited = event
            elif name == "child_exit" and len(child_exits) < MAX_CHILD_EXITS:
                child_exits.append(event)
            elif name == "teardown" and isinstance(pids := event.get("pids"), list):
                killed.update(p for p in pids[: MAX_KILLED - len(killed)] if is_int(p))
            elif (
                name == "signalled"
                and is_int(pid := event.get("pid"))
                and isinstance(sent := event.get("signal"), str)
                and (signal := canonical_signal(sent)) is not None
                and len(signalled) < MAX_KILLED
            ):
                signalled.add((pid, signal))
            elif name == "worker_busy":
                busy[event.get("pid"), event.get("index")] = event
                if len(busy) > MAX_BUSY:
                    del busy[next(iter(busy))]
            elif name == "worker_free":
                busy.pop((event.get("pid"), event.get("index")), None)
            elif name == "infra_error":
                infra_error = str(event.get("reason") or "infrastructure error")
            elif name == "dataset_probe" and is_int(pid := event.get("pid")):
                # By pid: each rank of a distributed workload may run a probe of its own.
                if event.get("ended"):
                    probes.pop(pid, None)
                else:
                    probes[pid] = None
            new_phase = event.get("phase")
            new_step = event.get("step")
            if name == "done":
                done = True
            elif isinstance(new_phase, str) or isinstance(new_step, int):
                done = new_phase == EXIT_PHASE  # progress after `done`: not finished after all
            if isinstance(new_phase, str) and new_phase != phase:
                phase, step, stage = new_phase, None, None  # a new phase starts with no step yet
            if isinstance(new_step, int) and not isinstance(new_step, bool):
                if new_step != step:
                    stage = None
                step = new_step
            new_stage = event.get("stage")
            if isinstance(new_stage, str):
                stage = new_stage
            new_module = event.get("module")
            if name == "import" and isinstance(new_module, str):
                module = (new_module, phase)
        return cls(
            phase,
            step,
            worker_exit if worker_exit is not None else exited,
            infra_error,
            tuple(busy.values()),
            stage=stage,
            module=module[0] if module is not None and module[1] == phase else None,
            preload_missed=preload_missed,
            preload_environ=tuple(preload_environ),
            faults=tuple(faults),
            done=done,
            last_t=last_t,
            untimed=untimed,
            killed=frozenset(killed),
            signalled=frozenset(signalled),
            probing=next(reversed(probes), None),
            child_exits=tuple(child_exits),
        )

    def injected(self) -> str | None:
        """`workload.faults[0]` (or several, comma-separated): the spec's faults that fired.

        Every fault but `skip_allreduce` ends the process it fires in (a signal, an
        exception, an exit, a deadlock), so a failure after one is the fault's doing.
        """
        numbers = dict.fromkeys(
            n for e in self.faults if isinstance(n := e.get("number"), int) and n >= 0
        )
        return ", ".join(f"workload.faults[{n}]" for n in numbers) or None


@frozen
class Evidence:
    """An attempt's logs, events and stack dump, as read once when the attempt ended."""

    stdout: str = ""
    stderr: str = ""
    events: Events = field(default_factory=Events)
    stack: str | None = None
    # gdb's stacks of crashed or hung processes (native-stacks.json), when taken.
    native: NativeStacks | None = None
    # The ranks of a distributed workload, from the same pass over the events.
    ranks: RankReport | None = None
    # What environment.debug's GPU diagnostics found (compute-sanitizer, a CUDA core
    # dump, the NCCL flight recorder), when the attempt left any of it.
    gpu: GpuFindings | None = None
    # How the program's main thread ended, from its own record (process/stacks.py
    # keep_program_raised): the traceback of the uncaught exception it died of, as its
    # interpreter printed it, or "" where it died of none. None where no record was kept
    # (no Python, a hook of the program's own, a container's attempt): classify then reads
    # the exception from stderr.
    raised: str | None = None

    @classmethod
    def read(cls, execution: Execution) -> Evidence:
        """Read the files an execution names, each once (missing files read as empty)."""
        stack = None
        if execution.stack_path is not None:
            stack = read_log(execution.stack_path, head=STACK_BYTES, tail=TAIL_BYTES) or None
        # One listing of the attempt's folder: what a silent attempt lacks (its logs, made at
        # their first byte; native stacks) is not opened to be found missing, and the GPU
        # findings look for their dumps in it. Every process of the attempt is gone. The
        # runner's own listing where it took one (process/run.py, after it wrote there).
        folder = execution.log_dir
        names = execution.names if execution.names is not None else _names(folder)
        # Read once, bounded; each summary takes its own pass over the bytes in memory.
        events = _events_window(execution.events_path)
        stderr = _read_listed(execution.stderr_path, folder, names)
        summary = Events.of(
            allowed_events(
                _parse_events(events),
                harness=execution.harness,
                forked=execution.launch == "forked",
            )
        )
        if summary.untimed and execution.events_path is not None:
            summary = _last_written(summary, execution.events_path)
        stdout = _read_listed(execution.stdout_path, folder, names)
        return cls(
            stdout=stdout,
            stderr=stderr,
            events=summary,
            stack=stack,
            native=None
            if names is not None and native.JSON_NAME not in names
            else native.read(folder),
            ranks=_ranks(allowed_events(_parse_events(events), harness=execution.harness)),
            gpu=_gpu_findings(folder, stderr, names),
            raised=_raised(folder, names),
        )

    def output_tail(self) -> str:
        """The end of stderr and of stdout: where `expect.message` looks past the exception."""
        return "\n".join(text[-MESSAGE_TAIL_BYTES:] for text in (self.stderr, self.stdout) if text)

    def warnings(self) -> tuple[ChildWarning, ...]:
        """The warnings the attempt's processes printed (stderr, then stdout), each once."""
        found: dict[tuple[str, str], ChildWarning] = {}
        for text in (self.stderr, self.stdout):
            for warning in python_warnings(text):
                found.setdefault(warning.key, warning)
        return tuple(found.values())

    def excerpt(self, without: str = "", *, hang: bool = False) -> str:
        """The lines of the log a bug report quotes: stderr's, else stdout's ('' when silent).

        `without`: a block the report shows on its own (a dead worker's stack), left out.
        `hang`: both tails where both have content (what a hung program printed last says
        where it is; stderr's numpy warning alone hid stdout's `train step 4`).
        A crash's faulthandler stack is quoted without reprospec's own frames (the fork
        server's under a preloaded attempt's program), as stack.txt holds it.
        """
        logs = {STDERR: self.stderr, STDOUT: self.stdout}
        if without:
            logs = {name: text.replace(without, "") for name, text in logs.items()}
        logs[STDERR] = without_our_frames(logs[STDERR])
        return quoted(logs, both=hang)


# Python's `warnings` print `file:line: Category: message`, then the source line indented.
_WARNING = Lazy(
    r"^(?P<where>\S[^\n]*?:\d+): (?P<category>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*Warning):"
    r" (?P<message>\S[^\n]*)$",
    re.M,
)
_WARNING_CHARS = 500


def python_warnings(text: str) -> tuple[ChildWarning, ...]:
    """The warnings printed in `text`, each (category, message) once, in first-seen order.

    A warning printed in a loop, or by every DataLoader worker, is one warning: its
    first `file:line` is kept.
    """
    if not text:  # a silent attempt: no pattern to compile (core/lazyre.py)
        return ()
    seen: dict[tuple[str, str], ChildWarning] = {}
    for match in _WARNING.finditer(clean_log(text)):
        message = match["message"].strip()
        if len(message) > _WARNING_CHARS:
            message = message[: _WARNING_CHARS - 3] + "..."
        warning = ChildWarning(match["category"], message, match["where"])
        seen.setdefault(warning.key, warning)
    return tuple(seen.values())


def ends_with_warning(text: str) -> bool:
    """Whether `text` ends with a Python warning: its `file:line: Category: message` line,
    alone or with the source line Python prints under it, indented. Such an end is no
    message the program exited with: `warnings.warn(...)` then `sys.exit(1)` read as an
    error whose message was the warning's source line, and capture wrote it as
    `expect.message`."""
    lines = [line for line in clean_log(text).splitlines() if line.strip()][-2:]
    if not lines:
        return False
    if _WARNING.fullmatch(lines[-1]):
        return True
    return len(lines) == 2 and lines[-1][:1].isspace() and bool(_WARNING.fullmatch(lines[0]))


def _gpu_findings(
    folder: Path | None, stderr: str, names: frozenset[str] | None
) -> GpuFindings | None:
    """What the GPU diagnostics left, their readers imported only where the folder's names
    or stderr show something (almost no attempt; a folder not listed is looked at)."""
    if names is not None and not gpudebug.left_findings(names, stderr):
        return None
    from reprospec.outcome import gpufindings

    return gpufindings.read(folder, stderr, names=names)


def _raised(folder: Path | None, names: frozenset[str] | None) -> str | None:
    """The program's record of how its main thread ended, past its first line (its parent's
    pid, for the engine to tell whose it is): a traceback, or "" for none; None where no
    record was kept."""
    if folder is None or (names is not None and RAISED not in names):
        return None
    path = folder / RAISED
    if names is None and not path.is_file():
        return None
    return read_log(path).partition("\n")[2]


def _names(folder: Path | None) -> frozenset[str] | None:
    """The names in an attempt's folder; None when it cannot be listed (then each file is
    opened as before)."""
    if folder is None:
        return None
    try:
        return frozenset(os.listdir(folder))  # noqa: PTH208 (names, not a Path each)
    except OSError:
        return None


def _read_listed(path: Path, folder: Path | None, names: frozenset[str] | None) -> str:
    """`read_log(path)`, or "" where the listing `names` of `folder` shows that `path`, a
    file in it, is missing."""
    if names is not None and folder is not None:
        name = path.name
        if name not in names and os.fspath(path) == os.path.join(folder, name):  # noqa: PTH118
            return ""
    return read_log(path)


def read_log(path: Path | None, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> str:
    """A log file's head and tail as text: bytes decoded leniently, NUL bytes dropped."""
    if path is None:
        return ""
    try:
        data = capped.head_tail(path, head, tail)
    except OSError:
        return ""
    return data.replace(b"\0", b"").decode("utf-8", errors="replace")


def _last_written(events: Events, path: Path) -> Events:
    """`events` with the events file's last write as the time of its last event.

    A command's own events need no `t` (the protocol's form has none), so without this a
    hang whose events came up to the timeout never got "still progressing?". The file is
    only ever appended to while the attempt runs, and the engine's own events carry their
    time, so its last write is when the last event came, or later.
    """
    try:
        written = path.stat().st_mtime
    except OSError:
        return events
    return replace(events, last_t=max(written, events.last_t or written))


def _events_window(path: Path | None) -> bytes:
    if path is None:
        return b""
    try:
        return capped.head_tail(path, EVENTS_HEAD_BYTES, EVENTS_TAIL_BYTES)
    except OSError:
        return b""


def _ranks(events: Iterable[Event]) -> RankReport | None:
    """`ranks.from_events`, imported for an attempt that said it is distributed: without a
    `distributed` event (its world size) there is no report, and a run of single processes
    never imports the ranks' reader (issue 30, item 4)."""
    listed = list(events)
    if not any(event.get("event") == "distributed" for event in listed):
        return None
    from reprospec.outcome import ranks

    return ranks.from_events(listed)


def _parse_events(data: bytes) -> Iterator[JsonObject]:
    for raw in capped.lines(io.BytesIO(data), _MAX_EVENT_LINE):
        try:
            event = json.loads(raw.replace(b"\0", b"").decode("utf-8", errors="replace"))
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def iter_events(path: Path | None) -> Iterator[JsonObject]:
    """The JSON objects of an events file (its head and tail); malformed lines are skipped."""
    yield from _parse_events(_events_window(path))


__all__ = [
    "EXIT_PHASE",
    "HARNESS_EVENTS",
    "PROGRESS_EVENTS",
    "Event",
    "Events",
    "Evidence",
    "allowed_events",
    "iter_events",
    "python_warnings",
    "read_log",
]
