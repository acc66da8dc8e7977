"""The spec `capture` writes: YAML a person reads and edits, with comments saying what to try.

A captured spec is a first draft: it must validate and rerun as it stands, and
show its reader the next edit. So it is written by hand here, section by
section, every value through `dump_yaml` (what it writes, the loader reads back
the same): a one-value matrix axis with a comment naming the alternative
(`workers: [2]  # or [2, 0]: ...`), the variables worth setting commented out,
and what the capture could not know marked `TODO` (and listed by `todo`).
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Protocol

import yaml

from reprospec.capture.toggles import Toggle
from reprospec.core.caller import said
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.redact import MASK, secret_parts
from reprospec.core.words import group_member_note
from reprospec.errors import UsageError
from reprospec.outcome.tracebacks import headline
from reprospec.plan.shellwords import is_assignment, script_operand
from reprospec.plan.wrappers import program_words
from reprospec.spec.checks.expect import expectable_exception
from reprospec.spec.todo import HEADING as TODO_HEADING
from reprospec.spec.yamlsource import dump_yaml

# A folded command line is wrapped to this width (the reader's editor, not a parser limit).
WIDTH = 96
# Header comments are wrapped to this width; an indented one, a command to copy (capture's
# `reprospec run SPEC --observe ...`), is never: wrapped at a long spec path, its words
# fell on three lines, which no one could paste, and minimize and amplify, which find the
# note by its lines, carried it unchanged, naming the original spec.
COMMENT_WIDTH = 88


@frozen
class Axis:
    """One matrix axis: its values, and a comment (the alternative worth a cell)."""

    name: str
    values: tuple[JsonValue, ...]
    comment: str = ""


@frozen
class EnvLine:
    """A variable of `environment.env`; `commented`: suggested, written as a comment."""

    name: str
    value: JsonValue
    comment: str = ""
    commented: bool = False


@frozen
class Control:
    """A control cell: the same command with `names` (variables of `environment.env`) set
    empty, expected to pass. Written only where capture saw the command pass without them:
    a spec of one failing cell left minimize no passing cell, and its message pattern,
    which any shape mismatch met, led it to another bug without the variable at all.
    One variable is an axis of its own (`mlpkg_fused: ['1', null]`), as a person writes
    it; several are one axis, `shell_env`, whose `include` rows set them or empty them
    together (whether a mix of them passes was not seen). A null value reaches the program
    as the empty string (spec-format.md), which overrides a reader's shell that sets it
    too."""

    names: tuple[str, ...]
    comment: str


# The axis of a control over several variables (Control); `SET` is the failing cell's.
CONTROL_AXIS = "shell_env"
CONTROL_SET, CONTROL_EMPTY = "set", "empty"

# `expect.step`'s key, and the words of its comment where some attempts of the failure
# reached no step (process_keys): one text for a live capture and the tests that read it.
STEP = "step"
FAILED_BEFORE_ANY_STEP = "with this failure ended before any step: no step is expected"


def unshared_note(key: str) -> str:
    """Why `expect` has no `key` that some attempts of its failure missed: `2 of 4 attempts`
    before it."""
    return f"with this failure had another {key}: no {key} is expected"


def control_axis(name: str) -> str:
    """The matrix axis of a variable in a control cell: `MLPKG_FUSED` -> `mlpkg_fused`."""
    return name.lower()


@frozen
class Draft:
    """Everything a captured spec says, before it is text."""

    name: str
    command: str
    title: str = ""
    description: str = ""
    labels: tuple[str, ...] = ("captured",)
    workdir: str | None = None
    files: tuple[str, ...] = ()
    python: str | None = None
    packages: tuple[str, ...] = ()
    # GPUs an attempt needs (`environment.gpus`), and why: a CUDA failure where there is
    # none is `infra-error` "needs 1 GPU", not a verdict on the packages.
    gpus: tuple[int, str] | None = None
    env: tuple[EnvLine, ...] = ()
    public_env: tuple[str, ...] = ()
    matrix: tuple[Axis, ...] = ()
    presets: tuple[str, ...] = ()
    timeout: str | None = None
    # Attempts per cell (`run.repeat`): written with a rate bound, which one attempt cannot
    # decide (1 of 1 is a 95% interval of 0.21-1, below `>=0.3`).
    repeat: int | None = None
    expect: Mapping[str, JsonValue] = field(default_factory=dict)
    expect_comments: Mapping[str, str] = field(default_factory=dict)
    header: tuple[str, ...] = ()
    # What is left for a person to fill in: each also marked `TODO` in the text.
    todo: tuple[str, ...] = ()
    control: Control | None = None


def render_spec(draft: Draft) -> str:
    """The spec text of `draft`."""
    out: list[str] = []
    for line in draft.header:
        indent = line[: len(line) - len(line.lstrip())]
        if indent and not any(char in line for char in "\n\r"):
            out.append(f"# {line}".rstrip())
            continue
        wrapped = textwrap.wrap(
            line,
            COMMENT_WIDTH,
            subsequent_indent=indent + "  ",
            break_on_hyphens=False,
            break_long_words=False,  # a path split in two could not be copied
        )
        out += [f"# {part}".rstrip() for part in wrapped or [""]]
    if draft.todo:
        out.append("#")
        out.append(TODO_HEADING)
        for item in draft.todo:
            wrapped = textwrap.wrap(
                f"  - {item}",
                COMMENT_WIDTH,
                subsequent_indent="    ",
                break_on_hyphens=False,
                break_long_words=False,  # spec/todo.py reads an item's paths back whole
            )
            out += [f"# {part}" for part in wrapped]
    out.append("reprospec: 1")
    out.append(_pair("name", draft.name))
    if draft.title:
        out.append(_pair("title", draft.title))
    if draft.description:
        out.append("description: |")
        out += [f"  {line}".rstrip() for line in draft.description.rstrip().split("\n")]
    if draft.labels:
        out.append("labels: " + _flow(list(draft.labels)))
    out.append("")
    out += _environment(draft)
    control = _control_matrix(draft)
    if draft.matrix or control:
        out.append("matrix:")
        for axis in draft.matrix:
            line = f"  {axis.name}: {_flow(list(axis.values))}"
            out.append(line + (f"  # {axis.comment}" if axis.comment else ""))
        out += control
        out.append("")
    out += _command(draft.command)
    if draft.files:
        out.append("# the workdir's files the program imported or read (bundle and the standalone")
        out.append("# repro carry them)")
        out.append("files:")
        out += [f"  - {_scalar(path)}" for path in draft.files]
    if draft.presets:
        out.append("markers: " + _flow([{"preset": name} for name in draft.presets]))
    out.append("")
    run = [f"  repeat: {draft.repeat}"] if draft.repeat else []
    if draft.timeout:
        run.append(f"  timeout: {_scalar(draft.timeout)}")
    if run:
        out += ["run:", *run, ""]
    if draft.expect:
        out.append("expect:")
        for key, value in draft.expect.items():
            comment = draft.expect_comments.get(key)
            if key == "exception" and isinstance(value, str) and not expectable_exception(value):
                # A type as printed that no spec can name (std::terminate's `Fault*`, a global
                # class thrown by pointer): the spec's check refused the spec capture wrote.
                # Said, not expected: the outcome and signal still hold the failure.
                outcome = draft.expect.get("outcome")
                out.append(
                    f"  # {_said_by(outcome)} named {value}, which expect.exception cannot spell"
                )
                continue
            line = f"  {key}: {_scalar(value)}"
            out.append(line + (f"  # {comment}" if comment else ""))
        if draft.control is not None:
            out.append("  cases:")
            out.append(
                f"    - {_flow({'when': _control_when(draft.control), 'outcome': 'pass'})}"
                "  # the control cell"
            )
    return "\n".join(out).rstrip() + "\n"


def _control_values(draft: Draft) -> dict[str, JsonValue]:
    """The control's variables and the values the failing cell sets them to."""
    if draft.control is None:
        return {}
    values = {line.name: line.value for line in draft.env if not line.commented}
    return {name: values.get(name) for name in draft.control.names}


def _control_when(control: Control) -> dict[str, JsonValue]:
    """The control cell's `when`, as `expect.cases` names it."""
    if len(control.names) == 1:
        return {control_axis(control.names[0]): None}
    return {CONTROL_AXIS: CONTROL_EMPTY}


def _control_matrix(draft: Draft) -> list[str]:
    """The control's matrix lines (Control): an axis of the variable's value and null, or
    for several, one axis whose `include` rows set them all or empty them all."""
    if draft.control is None:
        return []
    values = _control_values(draft)
    comment = f"  # {draft.control.comment}"
    if len(values) == 1:
        ((name, value),) = values.items()
        return [f"  {control_axis(name)}: {_flow([value, None])}{comment}"]
    set_row = {CONTROL_AXIS: CONTROL_SET, **{control_axis(n): v for n, v in values.items()}}
    empty_row = {CONTROL_AXIS: CONTROL_EMPTY, **{control_axis(n): None for n in values}}
    return [
        f"  {CONTROL_AXIS}: {_flow([CONTROL_SET, CONTROL_EMPTY])}{comment}",
        "  include:",
        f"    - {_flow(set_row)}",
        f"    - {_flow(empty_row)}",
    ]


def _said_by(outcome: JsonValue) -> str:
    """Who printed an exception's type: std::terminate for a crash (C++'s uncaught
    exception is the one a crash names), else the program."""
    return "std::terminate" if outcome == "crash" else "the program"


def _environment(draft: Draft) -> list[str]:
    lines: list[str] = []
    if draft.workdir is not None and draft.workdir != ".":
        lines.append(f"  workdir: {_scalar(draft.workdir)}")
    if draft.python:
        lines.append(f"  python: {_scalar(draft.python)}")
    if draft.packages:
        lines.append("  packages:")
        lines += [_package(p) for p in draft.packages]
    if draft.gpus is not None:
        lines.append(f"  gpus: {draft.gpus[0]}  # {draft.gpus[1]}")
    live = [env for env in draft.env if not env.commented]
    suggested = [env for env in draft.env if env.commented]
    controlled = draft.control.names if draft.control is not None else ()
    if live:
        lines.append("  env:")
        for env in live:
            value = env.value
            if env.name in controlled:
                value = "${{ matrix." + control_axis(env.name) + " }}"
            text = f"    {env.name}: {_scalar(value)}"
            lines.append(text + (f"  # {env.comment}" if env.comment else ""))
    if draft.public_env:
        lines.append("  public_env: " + _flow(list(draft.public_env)))
    comments = []
    if suggested:
        comments.append("  # worth a try, in env:" if live else "  # worth a try:")
        comments.append("  # env:" if not live else "")
        comments = [c for c in comments if c]
        for env in suggested:
            text = f"  #   {env.name}: {_scalar(env.value)}"
            comments.append(text + (f"  # {env.comment}" if env.comment else ""))
    if not lines:
        # Nothing to set: the suggestions stay comments, with no empty section around them.
        return (
            ["# environment:", *(f"#{c[1:]}" if c.startswith(" ") else c for c in comments), ""]
            if comments
            else []
        )
    return ["environment:", *lines, *comments, ""]


def _command(command: str) -> list[str]:
    """`command: ...` on one line when it fits, else a folded block that reads back the same."""
    one = _pair("command", command)
    if len(one) <= WIDTH and "\n" not in one:
        return [one]
    wrapped = _wrap_words(command, WIDTH - 2)
    folded = "command: >-\n" + "\n".join(f"  {line}" for line in wrapped)
    try:
        same = yaml.safe_load(folded) == {"command": command}
    except yaml.YAMLError:
        same = False
    return folded.split("\n") if same else dump_yaml({"command": command}).rstrip().split("\n")


def _wrap_words(command: str, width: int) -> list[str]:
    """Lines of at most `width` (a longer word alone), never breaking inside `${{ }}`."""
    words = re.findall(r"(?:[^\s$]|\$(?!\{\{))*(?:\$\{\{.*?\}\}(?:[^\s$]|\$(?!\{\{))*)*", command)
    lines: list[str] = []
    for word in (w for w in words if w):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _pair(key: str, value: JsonValue) -> str:
    return f"{key}: {_scalar(value)}"


def _package(pin: str) -> str:
    """A pin without its local label (`torch==2.13.0+cpu` is written `torch==2.13.0`), which
    says how this machine's copy was built: `==2.13.0+cpu` matched no other build, and a
    reader's CUDA torch 2.13.0 ran the spec as infra-error; `==2.13.0` matches every build
    of the release (PEP 440). The label stays in a comment."""
    name, equals, version = pin.partition("==")
    public, plus, _ = version.partition("+")
    if not (equals and plus and public) or public.startswith("="):  # `===`: as written
        return f"    - {_scalar(pin)}"
    return f"    - {_scalar(name + equals + public)}  # {version} where it failed"


def _scalar(value: JsonValue) -> str:
    """One value as YAML on one line (through dump_yaml: it reads back the same)."""
    if isinstance(value, (list, dict)):
        return _flow(value)
    text = dump_yaml([value])
    lines = text.rstrip("\n").split("\n")
    if len(lines) == 1:
        return lines[0][2:]
    # A long string folded by the emitter: write it as one double-quoted line instead.
    import json

    return json.dumps(value, ensure_ascii=False)


def _flow(values: Sequence[JsonValue] | Mapping[str, JsonValue]) -> str:
    """`[2, 0]`, `[{preset: lightning}]`: flow style, each scalar as dump_yaml writes it."""
    if isinstance(values, Mapping):
        return "{" + ", ".join(f"{k}: {_flow_item(v)}" for k, v in values.items()) + "}"
    return "[" + ", ".join(_flow_item(v) for v in values) + "]"


def _flow_item(value: JsonValue) -> str:
    if isinstance(value, (list, dict)):
        return _flow(value)
    text = _scalar(value)
    # Inside a flow collection `,`, `[`, `]`, `{`, `}` end a plain scalar: quote them.
    if isinstance(value, str) and (set(text) & set(",[]{}") or text != text.strip()):
        import json

        return json.dumps(value, ensure_ascii=False)
    return text


# -- the pieces of a draft both sources share (a command run, a pasted ticket) ----------

# A message pattern is cut to this many characters of the exception's first line.
MAX_MESSAGE_CHARS = 120


def rate_bound(matched: int, attempts: int) -> str | None:
    """A bound the observed rate keeps: for N of N, the Wilson 95% low end floored to a
    tenth (`>=0.5` for 5 of 5); for a failure that came only sometimes, `>0` (it comes
    at all: a tighter bound would judge a rerun of the same flakiness undecided); None
    for one attempt (nothing to bound)."""
    if attempts <= 1 or matched == 0:
        return None
    if matched < attempts:
        return ">0"
    from reprospec.core.rates import wilson

    low, _high = wilson(matched, attempts)
    tenth = int(low * 10) / 10
    return f">={tenth:g}" if tenth >= 0.1 else ">0"


@frozen
class ProcessKeys:
    """The keys of `expect` that depend on which process failed: the exception, the step,
    a comment on each key it leaves out or gives as a range (`key`, `text`), and the
    process a crash (or a hang stuck in a DataLoader worker) must happen in (`where`;
    None: any)."""

    exception: str | None = None
    step: int | str | None = None
    comments: tuple[tuple[str, str], ...] = ()
    where: str | None = None


def crashed_in(where: str | None, *, xdist: bool = False) -> str:
    """Where a crash was, as capture's titles and `expect` comments say it (a live capture
    and `--from-log` alike): `in a DataLoader worker`, `in a pytest-xdist worker` (a child
    xdist named the test it died running), `in a child process`, else `in the main
    process`."""
    if where == "child" and xdist:
        return "in a pytest-xdist worker"
    return {"worker": "in a DataLoader worker", "child": "in a child process"}.get(
        where or "", "in the main process"
    )


def sigkill_note(oom: str | None) -> str:
    """What a SIGKILL's `expect.signal` comment adds (a live capture and `--from-log`): the
    OOM killer's signal, and how a machine with more memory makes it run out too. `oom`:
    how the kill is known to be the OOM killer's (the run saw it, the log says it); None:
    only likely, as most SIGKILLs nobody sent by hand are."""
    who = f"by the kernel's OOM killer ({oom})" if oom else "most often the kernel's OOM killer's"
    return f"{who}: where memory is larger, environment.perturb.memory_limit makes it run out"


def process_keys(
    *,
    crash: bool,
    where: str | None,
    exception: str | None,
    step: int | None,
    steps: Sequence[int] = (),
    seen: int = 1,
    certain: bool = False,
    hang: bool = False,
    stepless: int = 0,
) -> ProcessKeys:
    """What a failure's `expect` says of its process, exception and step, by one rule for
    a command capture ran and a ticket's log (a ticket is one attempt, seen once).

    A crash's exception is expected only of the main process's own death: a worker's or
    a child's surfaces in the main process as whatever its reader raised then
    (`RuntimeError: DataLoader worker ... is killed by signal`, `ConnectionResetError`,
    ...), by timing, and a spec expecting it never reproduces. A worker's or a child's
    crash is expected there (`where`): the main process's own SIGSEGV is another bug. The
    step is the main loop's; a DataLoader worker's death is noticed some steps after it
    died (prefetching), so the step of a worker crash `seen` in one attempt is no step to
    expect, however many attempts ran: `--repeat 5` with one crash in five wrote `step: 8`,
    which a load that moves the main loop's notice reads as a miss. An error's exception
    (`crash` false) is its own.

    A crash in the main process is expected there too (`where: main`) where that is
    `certain`: a live run's outcome, which names a worker's or a child's death as such
    (spec-format.md's rules 5 and 6), so the main process's signal is its own; without it
    a worker's SIGSEGV matched the spec of the main process's, another bug. A `main` that
    is only the reader's default (a ticket's log that names no process: it may be cut
    before a worker's report) is not written: `where` then matches any process.

    A `hang` stuck in a DataLoader worker (its events or its stacks name the worker
    fetching an item) is expected there too (`where: worker`), as a worker's crash is:
    the main process's own hang (a deadlock in the training loop) is another bug; so is
    one stuck in a child the main process only waits for (`where: child`). Only
    `certain`: a live run's outcome; the main process's own hang gets no `where`.

    A step is expected only where every attempt of the failure reached one: `stepless` of
    them failed before any step (a flaky load that raised at `step 0` in one attempt and
    before it in the next). `step: 0` written from the first, as it was, made the spec's
    own run count the second a miss, and amplify another failure.
    """
    kept = exception if not crash or where == "main" else None
    named = ("worker", "child", "main") if certain else ("worker", "child")
    stuck = hang and certain and where in ("worker", "child")
    process = where if (crash and where in named) or stuck else None
    if stepless and (step is not None or steps):
        seen_at = len(steps) + stepless
        comments = ((STEP, f"{stepless} of {seen_at} attempts {FAILED_BEFORE_ANY_STEP}"),)
        return ProcessKeys(kept, None, comments, process)
    if step is None:
        return ProcessKeys(kept, where=process)
    if len(set(steps)) > 1 and where != "worker":
        comments = (("step", "as observed: it varies"),)
        return ProcessKeys(kept, f"{min(steps)}..{max(steps)}", comments, process)
    if where == "worker" and len(set(steps)) > 1:
        # Where the main loop noticed a worker's death varied: the range of a few attempts
        # is no bound on the next (5 crashes noticed at steps 9..11, the verify's 5 at 7, 8
        # and 12), and the written spec missed its own failure in every rerun.
        comments = (
            (
                "phase",
                f"the main loop was at steps {min(steps)}..{max(steps)}; workers run ahead, "
                "so no step is expected",
            ),
        )
        return ProcessKeys(kept, None, comments, process)
    if where == "worker" and seen <= 1:
        comments = (
            (
                "phase",
                f"the main loop was at step {step}; workers run ahead, so no step is expected",
            ),
        )
        return ProcessKeys(kept, None, comments, process)
    return ProcessKeys(kept, step, where=process)


class _Member(Protocol):
    """An exception group's member as either side holds it (a result's `GroupMember`, a
    log's `PythonException`)."""

    @property
    def type(self) -> str: ...
    @property
    def message(self) -> str | None: ...


def group_expectation(
    group: str,
    members: Sequence[_Member],
    common: Collection[str] | None = None,
    *,
    ended: bool = True,
) -> tuple[str, str | None, str] | None:
    """`expect`'s exception, message and comment for an exception group (every
    asyncio.TaskGroup failure), by one rule for a command capture ran and a ticket's log;
    None where it holds no member read. The group's own type and message (`unhandled
    errors in a TaskGroup (1 sub-exception)`) meet any TaskGroup's failure; a member, which
    the judge meets in any group holding one, is this bug. Which of a TaskGroup's tasks
    failed before it was cancelled is timing's (one gave `[KeyError,ValueError]`,
    `[ValueError]` and `[KeyError]`), so a live capture passes `common`, the member types
    every attempt of the failure held: the first of them by name, or, where none is in all,
    the group's type and no message. None: a log's one attempt, its first member to fail.
    `ended`: the group ended the process, else it was the last traceback printed."""
    if not members:
        return None
    if common is None:
        first = members[0]
        return first.type, (first.message or "").strip() or None, group_member_note(group, "first")
    if not common:
        return group, None, group_member_note(group, "none")
    chosen = min(common)
    message = next((m.message for m in members if m.type == chosen), None)
    return chosen, (message or "").strip() or None, group_member_note(group, "common", ended=ended)


def comment_key(key: str, expect: Mapping[str, object]) -> str:
    """The key of `expect` a comment of `process_keys` goes on: its own, or, for `phase`
    where no phase is expected (the `steps` preset's `step 7` names none), `where`, the
    key a worker's crash always has. The comment that says why no step is expected was
    dropped there, with the line it was to go on."""
    if key == "phase" and key not in expect and "where" in expect:
        return "where"
    if key != "phase" and key not in expect:
        # A key not expected (some attempts of the failure missed it): said on one that is.
        fallback = ("phase", "where", "message", "exception")
        return next((k for k in fallback if k in expect), "outcome")
    return key


def message_pattern(message: str, volatile: Sequence[str] = (), secrets: Sequence[str] = ()) -> str:
    """The exception message's first line as a regex that matches it again on a rerun.

    Escaped; numbers (pids, sizes) as `\\d+`, addresses as hex; what differs from one
    attempt to the next, or must not be written down, as a wildcard:

    - the secret mask `***` (core/redact.py): the message was masked before capture read
      it, but the judge matches the child's own message, which holds the secret;
    - a part of one of the `secrets` (`token hf_abc`, a secret's first characters): the
      mask hides only a secret whole, and a fragment written into the spec leaks it and
      fails the rerun of whoever holds another value;
    - a path's leading part through its last per-attempt folder: the attempt's own
      TMPDIR and XDG_CACHE_HOME (under the engine's `reprospec-tmp-<pid>-*` folder, or
      under a `volatile` folder: the run folder, whose name is the run's id), and
      mkdtemp-style names (`tmpk3j_x9a2`, `pymp-...`, mktemp's `tmp.XXXXXX`). The rest
      of the path (`/shard.bin`) stays, as written.

    Cut after MAX_MESSAGE_CHARS characters of the message's own text (a wildcard's text
    does not count); a cut inside a wildcard's part ends the pattern before it.
    """
    first = headline(message)
    parts: list[str] = []
    budget = MAX_MESSAGE_CHARS
    position = 0
    for start, end, wildcard in _wildcards(first, volatile, secrets):
        literal = first[position:start]
        parts.append(_literal(literal[:budget]))
        budget -= len(literal)
        if budget <= 0:
            break
        parts.append(wildcard)
        position = end
    else:
        parts.append(_literal(first[position:][:budget]))
    return "".join(parts)


# A name tempfile, multiprocessing or mktemp makes up, different in every attempt:
# tempfile's `tmp` + 8 of [a-z0-9_] (mkstemp's may have a suffix), multiprocessing's
# `pymp-` + 8, the engine's own `reprospec-tmp-<pid>-` + 8, mktemp's `tmp.` + 6 or more.
_MADE_UP_NAME = Lazy(
    r"(?:(?:tmp|pymp-|reprospec-tmp-\d+-)[a-z0-9_]{8}|tmp\.[A-Za-z0-9]{6,})(?:\.[A-Za-z0-9]+)?"
)
# An absolute path in a message: up to a space, a quote, a bracket, `:` (a line number
# follows) or `*` (a mask).
_ABSOLUTE_PATH = Lazy(r"(?<![\w.~$-])/[^\s'\"`<>()\[\]{},;:|*]*")
_ANY_PATH_PART = r"\S+"
_ANY_SECRET = r".+?"


def _wildcards(
    line: str, volatile: Sequence[str], secrets: Sequence[str] = ()
) -> list[tuple[int, int, str]]:
    """Where `line` needs a wildcard, in order, none overlapping: (start, end, the wildcard)."""
    found = [(m.start(), m.end(), _ANY_SECRET) for m in re.finditer(re.escape(MASK), line)]
    found += [(start, end, _ANY_SECRET) for start, end in secret_parts(line, secrets)]
    for match in _ABSOLUTE_PATH.finditer(line):
        prefix = _volatile_prefix(match[0], volatile)
        if prefix:
            found.append((match.start(), match.start() + prefix, _ANY_PATH_PART))
    spans: list[tuple[int, int, str]] = []
    for start, end, wildcard in sorted(found):
        if spans and start < spans[-1][1]:  # inside the one before (a path holding a secret)
            before = spans.pop()
            start, end = before[0], max(end, before[1])
            wildcard = _ANY_SECRET if _ANY_SECRET in (wildcard, before[2]) else wildcard
        spans.append((start, end, wildcard))
    return spans


def _volatile_prefix(path: str, volatile: Sequence[str]) -> int:
    """How many leading characters of `path` differ between attempts (0: none)."""
    names = path.split("/")
    last = -1
    for index, name in enumerate(names):
        if _MADE_UP_NAME.fullmatch(name):
            last = index
    for folder in volatile:
        depth = len(folder.rstrip("/").split("/"))
        if path.startswith(folder.rstrip("/") + "/") and len(names) > depth:
            last = max(last, depth)  # the folder's entry: a run's id
    return len("/".join(names[: last + 1])) if last >= 0 else 0


def _literal(text: str) -> str:
    """`text` escaped, its numbers as `\\d+` and its hex addresses as hex digits."""
    pattern = re.escape(text).replace("\\ ", " ")  # a space needs no escape: easier to read
    return re.sub(
        r"(?:0x[0-9a-fA-F]+|\d+)",
        lambda m: r"(?:0x)?[0-9a-f]+" if m[0].startswith("0x") else r"\d+",
        pattern,
    )


def axis_for(toggle: Toggle, uses_torch: bool = True, outcome: str | None = None) -> Axis:
    """The one-value axis of a toggle, its comment naming the alternative worth a cell;
    `uses_torch`: whether the program imports torch (a DataLoader is named only then);
    `outcome`: the incident's (crash, hang, ...), what the alternative is said to take
    away (None where it is not known)."""
    if toggle.kind == "values":
        # `layers: ['64 128 256']`: read as one number the axis invited `[64, 32]`, which
        # ran `--layers 32 128 256`.
        return Axis(
            toggle.axis,
            (toggle.value,),
            f"from `{toggle.text}`: one value of several words, each a value of the option",
        )
    if toggle.suggestion is None:
        return Axis(toggle.axis, (toggle.value,), f"from `{toggle.text}`")
    wider = f"[{show_value(toggle.value)}, {show_value(toggle.suggestion.value)}]"
    return Axis(
        toggle.axis,
        (toggle.value,),
        f"from `{toggle.text}`; try {wider}: {toggle.suggestion.said(uses_torch, outcome)}",
    )


def slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return (slug or "captured")[:60]


def check_output(output: Path, *, force: bool, reads: Iterable[str | Path] = ()) -> None:
    """Refuse an output that would write over what the user has (exit 2, nothing written):
    a folder; a file `reads` names (the command's own words, the log read): `capture
    --force -o crash.py -- python crash.py` wrote the spec over the script and then ran
    the YAML as Python; an existing file without --force, and with it one that is not a
    spec (.yaml, .yml)."""
    target = output.resolve()
    if target.is_dir():
        raise UsageError(f"{output} is a folder: name the spec file to write")
    for word in reads:
        named = str(word).partition("=")[2] if str(word).startswith("-") else str(word)
        if named and Path(named).resolve() == target:
            raise UsageError(
                f"-o {output}: capture reads it ({word}), and would write the spec over it; "
                "name another file"
            )
    if target.exists() and not force:
        # Named as the caller gave it: `force=True` to capture_command's.
        raise UsageError(f"{output} exists; pass {said('--force', 'force=True')} to overwrite it")
    if target.exists() and not _is_spec(target):
        raise UsageError(
            f"{output} exists and is not a reprospec spec (a YAML mapping with a `reprospec` "
            f"key): {said('--force', 'force=True')} overwrites only a spec; name another file"
        )


def _is_spec(path: Path) -> bool:
    """Whether the file at `path` is a reprospec spec (a .yaml or .yml file whose top-level
    mapping has the `reprospec` key): a program's own `config.yaml`, which the command
    opens without naming it, was written over with `--force` and then read as its config."""
    import yaml

    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        with path.open("rb") as file:
            head = file.read(MAX_SPEC_BYTES + 1)
        document = yaml.safe_load(head) if len(head) <= MAX_SPEC_BYTES else None
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return False
    return isinstance(document, dict) and "reprospec" in document


# A spec is a page of YAML; a larger file is someone's data, never written over.
MAX_SPEC_BYTES = 1 << 20


def script_stem(argv: tuple[str, ...]) -> str:
    """What names a captured command (`train` for `python train.py`): its Python script or
    module, else the shell script it runs (`./run.sh`, `sh run.sh`: `run`, not `run.sh` or
    `sh`), else its program."""
    script = script_of(argv)
    if script:
        return slug(Path(script).stem)
    # The program past its wrappers: `timeout 60 sh run.sh` is `run`, not `timeout`.
    words = program_words(argv) or [w for w in argv if not is_assignment(w)] or list(argv)
    program = Path(words[0]).name
    operand = script_operand(words)
    if operand is not None:
        program = Path(operand).name
    return slug(program.removesuffix(".sh").removesuffix(".bash") or program)


def script_of(argv: tuple[str, ...]) -> str | None:
    """The script or module the command runs (`train.py`, `-m pkg.tool` -> `pkg.tool`),
    read from its program's words (past `timeout 60`, `env -i`: plan/wrappers.py), or
    from all of them where those start is not sure."""
    words = program_words(argv) or list(argv)
    for index, word in enumerate(words):
        if word == "-m" and index + 1 < len(words):
            return words[index + 1]
        if word.endswith(".py"):
            return word
    return None


def show_value(value: JsonValue) -> str:
    """A value as capture's output names it: a string of several words quoted
    (`layers='64 128 256'`), which a list of `axis=value` pairs would read apart."""
    if not isinstance(value, str):
        return json.dumps(value)
    if not any(c.isspace() for c in value):
        return value
    return "'" + value.replace("'", "''") + "'"
