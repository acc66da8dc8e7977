"""Classify one attempt: what a runner observed (`Execution`) -> what happened (`Outcome`).

The rules, in order:

1. `timed_out` -> `hang`. A DataLoader worker still stuck on an item then (a
   `worker_busy` event with no `worker_free`) makes it `where: worker`, named in the detail.
2. returncode < 0 -> `crash` with that signal, `where: main` (an uncaught
   KeyboardInterrupt re-raises SIGINT, so it is a SIGINT crash too).
3. returncode 0 -> `pass`.
4. returncode 128+N -> `crash` with signal N, `where: main`, when N is one of
   `signals.SHELL_FATAL_SIGNALS` (a shell wrapper turns -11 into 139), or for
   any other N when the output proves it ("Fatal Python error: <strsignal N>"
   or a shell's "<pid> <strsignal N>" report).
5. a DataLoader worker died (a `worker_exit` event with a signal, "DataLoader
   worker (pid N) is killed by signal: X", torch's "ERROR: Unexpected X
   encountered in worker", or "exited unexpectedly" with no exit code) ->
   `crash`, `where: worker`, even though the main process exited 1.
6. anything else -> `error` with the exit code.

Exception type and message come from the last uncaught Python traceback on
stderr; phase and step from the last event that has either.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from reprospec.models import Execution, Outcome, OutcomeKind, Where
from reprospec.signals import (
    canonical_signal,
    describe_signal,
    exit_status_signal,
    signal_from_description,
    signal_name,
)

# Logs are capped by the runner, but a classifier must not trust that: the
# verdict needs the first lines (worker errors) and the last (the traceback).
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024
_MAX_EVENT_LINE = 64 * 1024
_MAX_MESSAGE_LINES = 30

_TB_HEADER = re.compile(
    r"^(?:\s*\+ )?(?:Exception Group )?Traceback \(most recent call last\):\s*$"
)
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::(?: (?P<message>.*))?)?$")
_GROUP_PREFIX = re.compile(r"^\s*\| ?")
# Lines that end an exception message: the next report, a logger, a warning.
_MESSAGE_END = re.compile(
    r"^(?:During handling of the above exception|The above exception was the direct cause"
    r"|Exception ignored|Exception in thread|Fatal Python error|ERROR: Unexpected"
    r"|\[[A-Z]\d{4} |\S+:\d+: \w*Warning:|\[\.\.\. \d+ bytes omitted)"
)
# CPython's last resort when it cannot print a traceback (e.g. "lost sys.stderr").
_OBJECT_DUMP_TYPE = re.compile(r"^object type name: (?P<type>\S+)\s*$", re.M)
_OBJECT_DUMP_REPR = re.compile(r"^object repr\s*: (?P<repr>.*)$", re.M)

_WORKER_KILLED = re.compile(
    r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: (?P<desc>[^.\n]+)"
)
_WORKER_HANDLER = re.compile(
    r"ERROR: Unexpected (?P<desc>segmentation fault|bus error|floating-point exception)"
    r" encountered in worker"
)
_WORKER_EXITED = re.compile(
    r"DataLoader worker \(pids?(?:\(s\))? (?P<pids>[\d, ]+)\) exited unexpectedly"
    r"(?: with exit code (?P<code>-?\d+))?"
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_PATH = re.compile(r"(?<![\w.])(?:~|\.{1,2})?/[^\s'\"()\[\]{}<>,;:]+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?!\w)")


@dataclass(frozen=True)
class PythonException:
    """The exception line of a printed traceback: type as printed, message (may span lines)."""

    type: str
    message: str | None


@dataclass(frozen=True)
class WorkerDeath:
    """Evidence that a DataLoader worker died: its signal, or its exit code."""

    signal: str | None
    exit_code: int | None
    pid: int | None
    evidence: str
    # From the harness's worker_exit event: which worker, fetching which dataset item.
    worker: int | None = None
    index: int | None = None
    item_phase: str | None = None
    item_step: int | None = None


@dataclass(frozen=True)
class _EventSummary:
    phase: str | None
    step: int | None
    worker_exit: dict[str, Any] | None
    infra_error: str | None
    # `worker_busy` events with no `worker_free` after them: items a worker was stuck on.
    busy: tuple[dict[str, Any], ...] = ()


def classify(execution: Execution) -> Outcome | None:
    """What happened in one attempt; None when it never ran (see `infra_reason`)."""
    if execution.infra_error or (execution.returncode is None and not execution.timed_out):
        return None
    stderr = read_log(execution.stderr_path)
    events = _summarize_events(execution.events_path)
    exception = parse_exception(stderr)
    worker = worker_death(stderr, events.worker_exit)
    returncode = execution.returncode

    kind: OutcomeKind
    signal: str | None = None
    exit_code: int | None = None
    where: Where | None = None
    if execution.timed_out:
        kind = "hang"
        detail = f"no exit within the timeout; killed after {execution.duration_s:.1f}s"
        if worker is not None:
            detail += f"; {_describe_worker(worker)}"
        elif events.busy:
            where = "worker"
            detail += f"; {_describe_busy(events.busy, execution.finished)}"
    elif returncode is not None and returncode < 0:
        kind, signal, where = "crash", signal_name(-returncode), "main"
        detail = f"killed by {signal} ({describe_signal(signal)})"
        if worker is not None:
            detail += f"; {_describe_worker(worker)}"
    elif returncode == 0:
        kind, exit_code, detail = "pass", 0, None
        exception = None
    else:
        assert returncode is not None
        shell_signal = _shell_signal(returncode, stderr, read_log(execution.stdout_path))
        if shell_signal is not None:
            kind, signal, where = "crash", shell_signal, "main"
            detail = f"exit status {returncode} = 128 + {shell_signal}, as a shell reports it"
        elif worker is not None and worker.exit_code is None:
            kind, signal, where = "crash", worker.signal, "worker"
            detail = f"{_describe_worker(worker)}; the main process exited {returncode}"
        else:
            kind, exit_code = "error", returncode
            detail = f"exit code {returncode}"
            if worker is not None:
                where = "worker"
                detail += f"; {_describe_worker(worker)}"
            if exception is None:
                # `raise SystemExit("msg")` and `sys.exit("msg")` print only the message.
                last = _last_line(stderr)
                exception = PythonException("", last) if last else None

    exception_type = (exception.type or None) if exception else None
    message = exception.message if exception else None
    if where is None and kind != "pass":
        where = "main"  # CLI.md: a failure happened in the main process or in a worker
    return Outcome(
        kind=kind,
        signal=signal,
        exit_code=exit_code,
        where=where,
        exception=exception_type,
        message=message,
        phase=events.phase,
        step=events.step,
        duration_s=execution.duration_s,
        signature=failure_signature(kind, signal, where, exception_type, exit_code, events.phase),
        detail=detail,
    )


def infra_reason(execution: Execution) -> str | None:
    """Why the attempt could not run at all (runner or harness says so); None if it ran."""
    # Contract with the engine: when this is None and the attempt was not
    # interrupted, `classify` returns an Outcome.
    if execution.infra_error:
        return execution.infra_error
    reason = _summarize_events(execution.events_path).infra_error
    if reason:
        return reason
    if execution.returncode is None and not execution.timed_out and not execution.interrupted:
        return "the runner recorded no exit status"
    return None


def failure_signature(
    kind: str,
    signal: str | None,
    where: str | None,
    exception: str | None,
    exit_code: int | None,
    phase: str | None,
) -> str:
    """`crash:SIGSEGV:worker:validation`, `error:RuntimeError:train`, `hang:validation`, `pass`."""
    if kind == "pass":
        return "pass"
    parts: list[str | None] = [kind]
    if kind == "crash":
        parts += [signal or "unknown-signal", where]
    elif kind == "error":
        parts += [exception or f"exit-{exit_code}", "worker" if where == "worker" else None]
    parts.append(phase)
    return ":".join(p for p in parts if p)


def fine_signature(outcome: Outcome) -> str:
    """The signature plus the normalized first line of the message: tells failures apart."""
    if not outcome.message:
        return outcome.signature
    return f"{outcome.signature}:{normalize_message(outcome.message.splitlines()[0])}"


def normalize_message(text: str) -> str:
    """A message with what varies between runs and machines replaced (pids, paths, addresses)."""
    text = _ANSI.sub("", text)
    text = _UUID.sub("<uuid>", text)
    text = _HEX.sub("<hex>", text)
    text = _PATH.sub("<path>", text)
    text = _NUMBER.sub("<N>", text)
    return " ".join(text.split())[:300]


def read_log(path: Path | None, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> str:
    """A log file's head and tail as text: bytes decoded leniently, NUL bytes dropped."""
    if path is None:
        return ""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; open errors mean "no log"
    except OSError:
        return ""
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size <= head + tail:
            data = handle.read()
        else:
            first = handle.read(head)
            handle.seek(size - tail)
            last = handle.read()
            # Cut at line ends so a half line cannot pose as an exception line.
            first = first[: first.rfind(b"\n") + 1] or first
            last = last[last.find(b"\n") + 1 :]
            omitted = size - len(first) - len(last)
            data = first + f"[... {omitted} bytes omitted ...]\n".encode() + last
    return data.replace(b"\0", b"").decode("utf-8", errors="replace")


def output_tail(execution: Execution, max_lines: int = 200) -> str:
    """The last lines of stdout then stderr: where `expect.message` looks past the exception."""
    parts = []
    for path in (execution.stdout_path, execution.stderr_path):
        lines = read_log(path, head=0, tail=64 * 1024).splitlines()
        parts.append("\n".join(lines[-max_lines:]))
    return "\n".join(p for p in parts if p)


def iter_events(path: Path | None) -> Iterator[dict[str, Any]]:
    """The JSON objects of an events file; malformed or truncated lines are skipped."""
    if path is None:
        return
    try:
        handle = open(path, "rb")  # noqa: SIM115 - a generator closes it in the with below
    except OSError:
        return
    with handle:
        for raw in handle:
            if len(raw) > _MAX_EVENT_LINE:
                continue
            try:
                event = json.loads(raw.replace(b"\0", b"").decode("utf-8", errors="replace"))
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event


def parse_exception(text: str) -> PythonException | None:
    """The exception of the last uncaught traceback in `text` (chained: the last one)."""
    lines = text.splitlines()
    found: dict[str, PythonException] = {}
    for index, line in enumerate(lines):
        if not _TB_HEADER.match(line):
            continue
        exception = _exception_after(lines, index)
        if exception is not None:
            found[_traceback_context(lines, index)] = exception
    if "uncaught" in found:
        return found["uncaught"]
    # An exception in a thread does not end the process, but when nothing else was
    # printed it is the best clue; "Exception ignored" reports never are.
    if "thread" in found:
        return found["thread"]
    dumped = _OBJECT_DUMP_TYPE.search(text)
    if dumped:
        shown = _OBJECT_DUMP_REPR.search(text)
        return PythonException(dumped["type"], shown["repr"].strip() if shown else None)
    return None


def worker_death(stderr: str, worker_exit: dict[str, Any] | None = None) -> WorkerDeath | None:
    """How a DataLoader worker died, from a harness event (preferred) or torch's messages."""
    if worker_exit is not None:
        signal = canonical_signal(worker_exit["signal"]) if worker_exit.get("signal") else None
        pid = worker_exit.get("pid")
        code = worker_exit.get("exit_code")
        return WorkerDeath(
            signal,
            code if isinstance(code, int) and signal is None else None,
            pid if isinstance(pid, int) else None,
            "worker_exit event",
            worker=_int_or_none(worker_exit.get("worker")),
            index=_int_or_none(worker_exit.get("index")),
            item_phase=phase if isinstance(phase := worker_exit.get("phase"), str) else None,
            item_step=_int_or_none(worker_exit.get("step")),
        )
    kills = list(_WORKER_KILLED.finditer(stderr))
    if kills:
        killed = kills[-1]
        signal = signal_from_description(killed["desc"])
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


def _exception_after(lines: list[str], header: int) -> PythonException | None:
    group = "Exception Group" in lines[header]
    index = header + 1
    while index < len(lines):
        line = _GROUP_PREFIX.sub("", lines[index]) if group else lines[index]
        if line[:1].isspace():
            index += 1
            continue
        match = _EXC_LINE.match(line.rstrip())
        if match is None:
            return None  # interleaved output: not a traceback we can trust
        message_lines = [match["message"]] if match["message"] is not None else []
        for extra in lines[index + 1 : index + _MAX_MESSAGE_LINES]:
            if group:
                # Inside a group every message line is prefixed; "+-+----" starts a member.
                if not _GROUP_PREFIX.match(extra):
                    break
                extra = _GROUP_PREFIX.sub("", extra)
            if not extra.strip() or _TB_HEADER.match(extra) or _MESSAGE_END.match(extra):
                break
            if not message_lines:
                break  # `KeyboardInterrupt` alone: what follows is other output
            message_lines.append(extra)
        message = "\n".join(message_lines).strip() or None
        return PythonException(match["type"], message)
    return None


def _traceback_context(lines: list[str], header: int) -> str:
    previous = lines[header - 1] if header > 0 else ""
    first_frame = lines[header + 1] if header + 1 < len(lines) else ""
    # Reports printed while the interpreter shuts down come after the real one:
    # "Exception ignored in ...", atexit errors, and weakref finalizers (which
    # print through sys.excepthook with no header at all).
    if (
        previous.startswith(("Exception ignored", "Error in atexit"))
        or "in _exitfunc" in first_frame
    ):
        return "ignored"
    if previous.startswith("Exception in thread"):
        return "thread"
    return "uncaught"


def _summarize_events(path: Path | None) -> _EventSummary:
    phase: str | None = None
    step: int | None = None
    worker_exit: dict[str, Any] | None = None
    infra_error: str | None = None
    busy: dict[tuple[object, object], dict[str, Any]] = {}
    for event in iter_events(path):
        name = event.get("event")
        if name == "worker_exit" and event.get("signal"):
            worker_exit = event
        elif name == "worker_busy":
            busy[event.get("pid"), event.get("index")] = event
        elif name == "worker_free":
            busy.pop((event.get("pid"), event.get("index")), None)
        elif name == "infra_error":
            infra_error = str(event.get("reason") or "infrastructure error")
        new_phase = event.get("phase")
        new_step = event.get("step")
        if isinstance(new_phase, str) and new_phase != phase:
            phase, step = new_phase, None  # a new phase starts with no step yet
        if isinstance(new_step, int) and not isinstance(new_step, bool):
            step = new_step
    return _EventSummary(phase, step, worker_exit, infra_error, tuple(busy.values()))


def _shell_signal(returncode: int, stderr: str, stdout: str) -> str | None:
    conventional = exit_status_signal(returncode)
    if conventional is not None:
        return conventional
    candidate = exit_status_signal(returncode, any_signal=True)
    if candidate is None:
        return None
    description = re.escape(describe_signal(candidate))
    proof = re.compile(rf"^Fatal Python error: {description}\b|\b\d+ {description}\b", re.M)
    return candidate if proof.search(stderr) or proof.search(stdout) else None


def _describe_worker(worker: WorkerDeath) -> str:
    """`DataLoader worker 1 (pid 42) died of SIGSEGV (...) fetching item 37 (validation step 7)`."""
    who = "a DataLoader worker" if worker.worker is None else f"DataLoader worker {worker.worker}"
    if worker.pid:
        who += f" (pid {worker.pid})" if worker.worker is not None else f" pid {worker.pid}"
    if worker.signal:
        text = f"{who} died of {worker.signal} ({describe_signal(worker.signal)})"
    elif worker.exit_code is not None:
        text = f"{who} exited with code {worker.exit_code}"
    else:
        text = f"{who} exited unexpectedly"
    if worker.index is not None:
        text += f" fetching item {worker.index}"
        if worker.item_phase and worker.item_step is not None:
            text += f" ({worker.item_phase} step {worker.item_step})"
    return text


def _describe_busy(busy: tuple[dict[str, Any], ...], finished: str) -> str:
    """`DataLoader worker 0 (pid 42) stuck fetching item 37 (train step 6) for 8.1 s`."""
    first = min(busy, key=lambda e: _number(e.get("since")) or _number(e.get("t")) or 0.0)
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
        text += f" (and {len(busy) - 1} more stuck item(s))"
    return text


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _last_line(text: str) -> str | None:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return None
