"""`reprospec capture --from-log FILE`: a ticket's pasted text becomes a spec skeleton.

What the ticket says goes into the spec (the failure as `expect`, the command
and its settings as matrix axes, the Python version and the packages it lists,
the progress presets its output fits); what it does not say is a `TODO`, in the
text and in the list printed after it. The machine the ticket describes is then
compared with this one, as `doctor` would: a GPU, CUDA or torch build that
differs is the first thing to know before running the skeleton here.
"""

from __future__ import annotations

import codecs
import re
import shlex
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from reprospec.capture.envblock import Machine
from reprospec.capture.footprint import imported_module
from reprospec.capture.ticket import (
    ThreadStack,
    Ticket,
    read_ticket,
    runs_something,
    split_at_operator,
)
from reprospec.capture.timebound import HANG_TIMEOUT, Bound, unbound
from reprospec.capture.toggles import Proposal, kept_note, propose, read_from
from reprospec.capture.writer import (
    Draft,
    EnvLine,
    axis_for,
    comment_key,
    crashed_in,
    group_expectation,
    message_pattern,
    process_keys,
    render_spec,
    script_stem,
    sigkill_note,
    slug,
)
from reprospec.core.expr import literal_text
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.logtext import shell_line
from reprospec.core.redact import (
    command_secrets,
    credential_spans,
    mask_parts,
    secret_values,
    sets_secret,
)
from reprospec.core.requirements import normalize
from reprospec.core.results import bare_type
from reprospec.core.units import format_duration, parse_duration
from reprospec.core.words import guessed_from_pytest, plural
from reprospec.outcome.pytestreport import is_pytest, pytest_verbose
from reprospec.outcome.tracebacks import headline
from reprospec.spec.todo import senders_paths_item

# What runs while the command is unknown: the shell says "not found" (exit 127), which
# the engine reports as an infrastructure error naming it, never as a reproduction.
COMMAND_PLACEHOLDER = "TODO-the-command-that-failed"
# Attempts of a spec whose ticket says it fails only sometimes (1 in 3 misses 20 in a row
# in 3 of 10,000 runs).
FLAKY_REPEAT = 20
# How many frames of each stack the description quotes.
SHOWN_FRAMES = 6
# Of a longer Python stack, the outermost shown too: where the program's own code is.
OUTER_FRAMES = 3
# How many threads of a dump with no current thread the description quotes, each whole.
SHOWN_THREADS = 8


# The byte order marks a log's encoding is told by, longest first: UTF-32's LE mark starts
# with UTF-16's. Windows PowerShell 5's `>` writes UTF-16 LE with its mark, which read as
# UTF-8 held a NUL after every letter and was refused as "not text".
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def log_text(data: bytes) -> str:
    """A log file's bytes as text: by its byte order mark where it has one (UTF-16 or
    UTF-32, either order, or UTF-8's), else UTF-8; a byte that is none is replaced."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    return data.decode(encoding, errors="replace")


# The share of a log's characters that may be NULs while it is still text. A program's
# stray NUL is its words: torch's `ERROR: Unexpected segmentation fault encountered in
# worker.` ends in one, which a log redirected to a file (`python train.py > out.log 2>&1`)
# keeps, and such a log, of the very crash the reader knows, was refused as "not text". A
# binary file (a core, an archive, a `.pyc`) holds NULs, and bytes no encoding decodes
# (read as U+FFFD), throughout.
_BINARY_SHARE = 0.01


def is_binary(text: str) -> bool:
    """Whether decoded `text` is no log at all: it holds NULs, and they and the bytes that
    decoded to nothing are more than 1% of it (a log in another encoding, with no NUL, is
    still read)."""
    nuls = text.count("\x00")
    return nuls > 0 and nuls + text.count("\ufffd") > len(text) * _BINARY_SHARE


def capture_log(text: str, source: str, output: Path) -> list[str]:
    """Write the skeleton of `text` to `output`; the lines to print (what is left, what differs).
    The current folder is the ticket's project checked out (what names a hung test's class)."""
    ticket = read_ticket(text, Path.cwd())
    draft = skeleton(ticket, source)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_spec(draft), encoding="utf-8")
    lines = [f"wrote {output}: {_found(ticket)}"]
    lines += [f"  {line}" for line in ticket.evidence]
    if draft.todo:
        lines.append(f"left to fill in ({len(draft.todo)}), marked TODO in {output}:")
        lines += [f"  - {item}" for item in draft.todo]
    ours = _this_machine(ticket.machine)
    lines += compare_machine(ticket.machine, ours)
    lines.append(next_step(output, todo=bool(draft.todo), differ=other_pins(ticket.machine, ours)))
    # What it read is quoted (`the command: HF_TOKEN=hf_... torchrun ...`): the secrets
    # the spec reads back from the environment are not printed either.
    secrets = _secrets(ticket)
    return [mask_parts(line, secrets) for line in lines]


def _secrets(ticket: Ticket) -> tuple[str, ...]:
    """The values the ticket's command sets under secret-looking names, and this
    environment's: what neither the spec nor what capture prints may show."""
    proposal = (
        _proposal(ticket.command, hang=False, settings=ticket.settings)[0]
        if ticket.command is not None
        else None
    )
    return _secrets_of(proposal, ticket)


def _secrets_of(proposal: Proposal | None, ticket: Ticket) -> tuple[str, ...]:
    """`_secrets`, of the command's proposal made already: the values it sets under
    secret-looking names, and the credentials the log shows by their shape."""
    settings = [*ticket.settings, *ticket.step_env]
    return tuple(
        dict.fromkeys(
            (
                *secret_values(proposal.secret_env if proposal is not None else ()),
                *ticket.credentials,
                *(part for name, value in settings for part in _setting_secrets(name, value)),
            )
        )
    )


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _setting_secrets(name: str, value: str) -> tuple[str, ...]:
    """The secrets a variable the ticket sets holds (in its prose or a CI step's `env:`):
    its value under a secret-looking name (`sets_secret`), else the credentials in it by
    their shape (a URL's password) and the secrets it writes as a command line would
    (`--password X`, a DSN's `password=X`: `command_secrets`), whatever its name; a URL
    whose credential its shape shows holds that alone, whatever its name. One
    rule for the TODO items and the masking of the spec: a step's `WANDB_API_KEY` was left
    out of its item but printed in full in the traceback the spec quotes (review)."""
    if value == "***":  # GitHub's mask: nothing left to hide
        return ()
    # A URL whose credential its shape shows (a `DATABASE_URL`'s password, a
    # `PIP_EXTRA_INDEX_URL`'s token): that alone, whatever its name. Masked whole, every 6
    # characters of its host and scheme (`https:`) were masked in the title, description
    # and messages (review).
    inside = tuple(dict.fromkeys(value[start:end] for start, end, _ in credential_spans(value)))
    # Not where the URL has a query or fragment: a `?token=` beside the password is no
    # credential by its shape, and was left in the spec (review 14); such a URL is masked
    # whole, as before.
    if inside and _URL.match(value) and not any(mark in value for mark in "?#"):
        return inside
    if sets_secret(name, value):
        return (value,)
    return tuple(dict.fromkeys([*inside, *(secret for _, secret in command_secrets(value))]))


def _setting_said(name: str, value: str) -> str:
    """A variable the ticket sets, as its TODO item says it: `NAME=value`, or a secret's
    name alone."""
    if _secret_setting(name, value):
        return f"{name} (a secret: its value is not written)"
    return f"{name}={value}"


def _secret_setting(name: str, value: str) -> bool:
    """Whether a variable the ticket sets is a secret's, its value not written: GitHub's
    mask (`***`) or one holding a secret by `_setting_secrets`' rule."""
    return value == "***" or bool(_setting_secrets(name, value))


def _ci_timeout(ticket: Ticket) -> str:
    """run.timeout of a hang GitHub Actions ended: a step's timeout-minutes as said (where
    the hang was seen); the job's limit, which counts its earlier steps too and is most
    often GitHub's default 6 hours, at most HANG_TIMEOUT, so no attempt runs for hours."""
    minutes = ticket.ci_minutes or 0
    if ticket.ci_limit == "job":
        return format_duration(min(minutes * 60.0, parse_duration(HANG_TIMEOUT)))
    return format_duration(minutes * 60.0)


def _ci_note(ticket: Ticket) -> str:
    """The header's line of where `_ci_timeout`'s bound came from."""
    if ticket.ci_limit == "job":
        return (
            f"GitHub Actions ended the job at the job's limit ({ticket.ci_minutes} minutes, "
            f"its earlier steps included): run.timeout is the smaller of that and {HANG_TIMEOUT}"
        )
    return (
        f"GitHub Actions ended it after {ticket.ci_minutes} minutes (its timeout-minutes): "
        "run.timeout is that bound, where the hang was seen"
    )


def skeleton(ticket: Ticket, source: str) -> Draft:
    """The spec a ticket gives, placeholders where it is silent."""
    todo: list[str] = []
    failure = ticket.failure
    proposal: Proposal | None = None
    pytest = False
    # A hang's `timeout DURATION` wrapper, taken out of its command: its bound, the run's.
    bounded: Bound | None = None
    if ticket.command is not None:
        hang = failure.outcome == "hang"
        proposal, pytest, bounded = _proposal(
            ticket.command, hang=hang, settings=ticket.settings, guessed=ticket.command_guessed
        )
    presets = ticket.presets
    if pytest and "pytest" not in presets:
        # pytest -v's `path::test PASSED` lines: the test running when it crashed or hung.
        presets = (*presets, "pytest")
    if proposal is None:
        todo.append(
            f"command: the command that failed (the log does not show it; `{COMMAND_PLACEHOLDER}`"
            " stands in and fails as `command not found`)"
        )
    if ticket.sender_paths:
        # A core's command line (or a prompt's) by the sender's absolute paths, which no
        # one else has and the capture's folder does not hold either.
        todo.append(senders_paths_item(ticket.sender_paths))
    todo.append("environment.workdir: where the command runs, relative to this spec")
    todo.append(
        # A native program (`./crash`) is itself a file the log cannot carry, and imports
        # no modules.
        "files: the program and its data (the log cannot carry them, nor the program's "
        "build): put them in the workdir, and list here those its command does not name"
        if ticket.native
        else "files: the program's data and the modules it imports (the log cannot carry "
        "them): put them in the workdir, and list here those its command does not name"
    )
    machine = ticket.machine
    # A native program with no Python in its log needs neither: a spec that names no
    # `python` runs its command as written (docs/spec-format.md, `environment`).
    if machine.python is None and not ticket.native:
        todo.append("environment.python: the Python version (the log does not say it)")
    if not machine.requirements and not ticket.native:
        todo.append("environment.packages: the versions (paste `pip freeze` or collect_env)")
    if (
        ticket.command_guessed
        and ticket.xdist_crash is not None
        and machine.package("pytest-xdist") is None
    ):
        # The guess runs the test under pytest-xdist (`-n 1`), which the log's machine
        # lists no version of: without it, pytest fails with `unrecognized arguments: -n`.
        todo.append(
            "environment.packages: pytest-xdist (the guessed command runs the test under it,"
            " in one worker; the log names no version of it)"
        )
    if machine.not_pinned:
        # A program that imports one fails in every rerun: ask for it, or carry it.
        todo.append(
            "environment.packages: what the log's machine had that no index serves (ask for"
            " it, then add its wheel or folder, or carry its code in files): "
            + "; ".join(machine.not_pinned)
        )
    # Read once: what the title, the description and the expected message must not show.
    secrets = _secrets_of(proposal, ticket)
    expect, comments = _expect(ticket, secrets, pytest=pytest)
    if failure.outcome is None:
        todo.append("expect.outcome: the log shows no failure this reader knows")
    if ticket.cut_traceback:
        todo.append(
            "expect.exception: the log's traceback is cut before its exception line (ask "
            "for the rest of it); `outcome: error` matches any exception until then"
        )
    repeat = None
    if ticket.flaky is not None:
        # One attempt of a failure that comes and goes passes by chance: not-reproduced.
        # Also where the reader knows no failure in the log (a hang the reporter stopped
        # with Ctrl-C): the outcome filled in by hand still comes only 1 in 5 runs, and a
        # skeleton that said the ticket was flaky ran one attempt of it.
        repeat = FLAKY_REPEAT
        expect["rate"] = ">0"
        comments["rate"] = (
            f"the ticket says it fails only sometimes ({ticket.flaky!r}): one attempt may "
            f"pass, so the spec runs {FLAKY_REPEAT} and a match is enough"
        )
    env = [
        EnvLine(name, f"${{{{ env.{name} }}}}", _secret_comment(name, proposal, ticket))
        if proposal is not None and name in proposal.secrets
        # Written as the ticket's text: a `${{` in it escaped, since environment.env's
        # values are expanded (`FOO='a${{ b }}'` failed validation: unknown name 'b').
        else EnvLine(name, literal_text(value), "set on the command line")
        for name, value in (proposal.env if proposal else ())
    ]
    if ticket.cuda_error and "CUDA_LAUNCH_BLOCKING" not in {line.name for line in env}:
        # Not where the ticket's command sets it (`CUDA_LAUNCH_BLOCKING=1 torchrun ...`):
        # the spec sets it already, and the suggestion right below said to set it again.
        env.append(
            EnvLine("CUDA_LAUNCH_BLOCKING", "1", "the error is a CUDA one: name the op", True)
        )
    # A CUDA error's spec asks for a GPU, whose slot the engine hands each attempt in
    # CUDA_VISIBLE_DEVICES over the spec's own: the sender's `CUDA_VISIBLE_DEVICES=1`
    # written in env said a device the run never chose (and where `gpus` is taken out, one
    # this machine may lack: no GPU at all).
    devices = next((line for line in env if line.name == "CUDA_VISIBLE_DEVICES"), None)
    if ticket.cuda_error and devices is not None:
        env.remove(devices)
    todo += _prose_settings(ticket, {line.name for line in env})
    if failure.phase is not None and not _phase_reported(ticket, pytest=pytest):
        # Only a frame's name (`training_step`) or pytest's report of a command that is no
        # pytest says it: no run of the spec reports a phase, and an expected one made
        # every attempt not-reproduced (`@ train` against an unreported phase).
        todo.append(
            f"expect.phase: the log places the failure at {failure.phase}, which nothing in"
            " this spec reports: add markers or events that report it, then set phase:"
            f" {failure.phase}; or drop this item"
        )
    return Draft(
        name=_name(ticket),
        # Quoted from the log: a secret the command set (or a part the program printed)
        # is masked here as in what capture prints.
        title=mask_parts(_title(ticket), secrets),
        description=mask_parts(_description(ticket, source), secrets),
        labels=("captured", "from-log"),
        command=proposal.command if proposal else COMMAND_PLACEHOLDER,
        python=machine.python,
        packages=machine.requirements,
        # A CUDA error needs a GPU to happen; a worker's segfault on a GPU machine may not.
        gpus=_gpus(ticket) if ticket.cuda_error else None,
        env=tuple(env),
        # A DataLoader is named only where the log shows torch: `--workers 4` of a server
        # said "for a DataLoader, 0 loads the data...".
        matrix=tuple(
            axis_for(t, uses_torch=ticket.shows_torch, outcome=failure.outcome)
            for t in (proposal.toggles if proposal else ())
        ),
        presets=presets,
        timeout=(
            None
            if failure.outcome != "hang"
            else bounded.timeout()
            if bounded is not None
            else _ci_timeout(ticket)
            if ticket.ci_minutes
            else HANG_TIMEOUT
        ),
        repeat=repeat,
        expect=expect,
        expect_comments=comments,
        header=(
            # As typed, pasteable: `-` for a piped log (`stdin` named no file), a path by
            # shell_line (quoted where it must be, a line break on one line), on an indented
            # line of its own, which render_spec does not wrap (a long path broke the
            # command in two).
            "A skeleton written by this command:",
            f"  reprospec capture --from-log {'-' if source == 'stdin' else shell_line([source])}",
            "What the log does not say is marked TODO; `reprospec validate` checks the rest.",
            *(kept_note(kept) for kept in (proposal.kept if proposal else ())),
            *(
                (
                    f"The command's CUDA_VISIBLE_DEVICES={devices.value} (the sender's GPU) is"
                    " left out: environment.gpus hands each attempt a GPU of its own.",
                )
                if ticket.cuda_error and devices is not None
                else ()
            ),
            *(
                (
                    f"The command is {guessed_from_pytest(ticket.test)}: check it against"
                    " how the tests were run.",
                )
                if ticket.command_guessed and ticket.test is not None
                else ()
            ),
            *((bounded.note(bounded.timeout()),) if bounded is not None else ()),
            *(
                (_ci_note(ticket),)
                if bounded is None and ticket.ci_minutes and failure.outcome == "hang"
                else ()
            ),
        ),
        todo=tuple(todo),
    )


def _secret_comment(name: str, proposal: Proposal, ticket: Ticket) -> str:
    """Why the spec reads the secret `name` from the reader's environment, as true of the
    ticket as it was: "the ticket's command set it" was said of `--token hf_...`'s TOKEN,
    which no word set (a Windows ticket's `$env:HF_TOKEN="hf_..."` had)."""
    if name in proposal.passed:
        return "the ticket's command passed this secret as an option's value: set it in yours"
    if name in dict(ticket.settings):
        return "the ticket set it, and its command passes it: set it in yours"
    return "the ticket's command set it: set it in yours"


def _gpus(ticket: Ticket) -> tuple[int, str]:
    """The GPUs a CUDA error needs: one, or one per rank of `torchrun --nproc_per_node N`
    (NCCL's ranks each take a GPU; four on one fail otherwise: `Duplicate GPU detected`)."""
    ranks = _nproc_per_node(ticket.command)
    if ranks is not None and ranks > 1:
        return ranks, f"the failure is a CUDA error of {ranks} ranks (--nproc_per_node): a GPU each"
    return 1, "the failure is a CUDA error: it needs a GPU"


def _nproc_per_node(command: str | None) -> int | None:
    """torchrun's `--nproc_per_node N` (`--nproc-per-node=N`) of `command`, a number."""
    try:
        words = shlex.split(split_at_operator(command)[0]) if command else []
    except ValueError:
        return None
    for index, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name not in ("--nproc_per_node", "--nproc-per-node"):
            continue
        if not equals:
            value = words[index + 1] if index + 1 < len(words) else ""
        return int(value) if value.isdigit() else None
    return None


def _phase_reported(ticket: Ticket, *, pytest: bool) -> bool:
    """Whether a run of the skeleton reports the ticket's phase: the markers it gets (the
    presets its output fits, pytest's for a pytest command) or xdist's crashed test, not
    only a frame of the stack (`training_step`: a phase no run reports)."""
    phase = ticket.failure.phase
    if phase is not None and phase == ticket.xdist_crash:
        return True
    return bool(ticket.presets) or (pytest and ticket.test is not None)


def _prose_settings(ticket: Ticket, set_already: set[str]) -> list[str]:
    """A TODO item for each variable the ticket's prose sets and the spec does not
    (`MALLOC_ARENA_MAX=2 exported in my shell`): the reporter's shell had it, the command
    line did not say it, so the spec cannot tell whether the failure needs it. A secret's
    value is not written."""
    prose = {name for name, _ in ticket.settings}
    # (name, value, who sets it): the prose's first, then the CI step's it does not name.
    by_prose = "the ticket's prose sets {}, its command line does not"
    by_step = "the CI step's env sets {} for the command (its `env:` under the step's `Run`)"
    found = [
        *((name, value, by_prose) for name, value in ticket.settings),
        *((name, value, by_step) for name, value in ticket.step_env if name not in prose),
    ]
    return [
        f"environment.env.{name}: {where.format(_setting_said(name, value))}: set it here if"
        " the failure needs it, or drop this item"
        for name, value, where in found
        if name not in set_already
    ]


def _expect(
    ticket: Ticket, secrets: tuple[str, ...], *, pytest: bool = False
) -> tuple[JsonObject, dict[str, str]]:
    failure = ticket.failure
    comments: dict[str, str] = {}
    if failure.outcome is None:
        comments["outcome"] = "TODO: what the failure is (pass, error, crash, hang or fail)"
        return {"outcome": "fail"}, comments
    expect: JsonObject = {"outcome": failure.outcome}
    if failure.outcome == "hang" and failure.signal and failure.where == "child":
        # The child's signal is no key of a hang's (a `signal:` would not match it). A Pool
        # only where the dump shows one's worker: any multiprocessing child reads `child`.
        pool = any(
            frame.replace("\\", "/").endswith("multiprocessing/pool.py:worker")
            for frame in ticket.python_frames
        )
        waiting = "a Pool left waiting for it" if pool else "a parent left waiting for it"
        comments["outcome"] = (
            f"after a child process died of {failure.signal} (the log's faulthandler dump; "
            f"the ticket says it then hangs), as a live run reads {waiting}"
            + (" (a Pool's map never notices a dead worker)" if pool else "")
        )
    if failure.outcome == "hang" and "outcome" not in comments:
        importing = _hung_import(ticket)
        if importing is not None:
            comments["outcome"] = f"while importing {importing} (the log's stack shows it)"
    # The live capture's rule (one function): a worker's or a child's crash is expected by
    # its signal and where, never by the main process's exception, nor by the main loop's
    # step for a worker (the ticket is one attempt). A crash the log names no process of is
    # the main process's by default, not for certain (a log cut before a worker's report):
    # no `where: main` is written.
    keys = process_keys(
        crash=failure.outcome == "crash",
        where=failure.where,
        exception=failure.exception,
        step=failure.step,
    )
    if failure.outcome == "crash" and failure.signal:
        expect["signal"] = failure.signal
        comments["signal"] = crashed_in(failure.where, xdist=ticket.xdist_crash is not None)
        if failure.signal == "SIGKILL":
            oom = f"the log says {ticket.oom_killed!r}" if ticket.oom_killed else None
            comments["signal"] += f"; {sigkill_note(oom)}"
        if ticket.windows_fault:
            # A guess, said as one: Windows has no signals, and Linux's own kind of that
            # fault is what a run here can show.
            comments["signal"] += (
                f"; the log's Windows {ticket.windows_fault}, read as {failure.signal}, "
                "its kind on Linux"
            )
    if failure.outcome == "crash" and keys.where is not None:
        # Also where the log names no signal: pytest-xdist's `node down` alone (no
        # faulthandler dump) is a worker's crash, which the title says, and the main
        # process's own crash at that test is another bug.
        expect["where"] = keys.where
        if not failure.signal:
            comments["where"] = crashed_in(failure.where, xdist=ticket.xdist_crash is not None)
    message = failure.message
    if failure.outcome in ("error", "crash") and keys.exception:
        expect["exception"] = keys.exception
        group = failure.chain[-1] if failure.chain else None
        expected = (
            group_expectation(group.type, group.members)
            if group is not None and group.type == keys.exception
            else None
        )
        if expected is not None:  # an exception group: its first member (one attempt)
            expect["exception"], message, comments["exception"] = expected
    if failure.outcome == "error" and message:
        expect["message"] = message_pattern(message, secrets=secrets)
    if failure.outcome == "error" and failure.exit_code is not None and not failure.exception:
        expect["exit_code"] = failure.exit_code
    if failure.phase is not None and _phase_reported(ticket, pytest=pytest):
        expect["phase"] = failure.phase
        if failure.phase == ticket.xdist_crash:
            comments["phase"] = "the test pytest-xdist says the worker crashed running"
        elif pytest and failure.phase == ticket.test and failure.outcome in ("crash", "hang"):
            comments["phase"] = "the test pytest -v's lines were running when it died"
        elif pytest and failure.phase == ticket.test:
            comments["phase"] = "the first failing test, as pytest's report names it"
        else:  # the markers the spec gets
            comments["phase"] = "reported by the markers above"  # render_spec: markers, then expect
    if keys.step is not None:
        expect["step"] = keys.step
    for key, text in keys.comments:
        at = comment_key(key, expect)
        comments[at] = f"{comments[at]}; {text}" if at in comments else text
    return expect, comments


def _pinned(requirement: str) -> tuple[str, str]:
    """`packaging==23.2` as its name and version."""
    name, _, version = requirement.partition("==")
    return name, version


def other_pins(theirs: Machine, ours: Mapping[str, JsonValue] | None) -> list[str]:
    """The skeleton's pins (`environment.packages`, as written: the release) this
    interpreter does not satisfy: `packaging==23.2` where 26.4 is installed, or none is.
    Each makes a cell of the local runner `infra-error`, judged by its own check
    (packages.mismatches: `numpy==1.26` is 1.26.0, a local label `+cpu` any build); a
    package the probe did not answer for is left out."""
    from reprospec.environment.packages import Installed, mismatches

    here = _section(ours or {}, "packages")
    # As the spec pins it: the release, its build's label in a comment.
    written = {
        f"{name}=={version.split('+', 1)[0]}": name
        for name, version in map(_pinned, theirs.requirements)
        if name in here
    }
    installed = Installed(
        sys.executable, {normalize(name): _text(here[name]) for name in written.values()}
    )
    return [pin for pin in written if mismatches([pin], installed)]


# How many pinned packages that differ the comparison names one by one.
SHOWN_PINS = 5


def _package_rows(theirs: Machine, ours: Mapping[str, JsonValue]) -> list[str]:
    """The comparison's rows of the packages the skeleton pins, torch aside (its own row):
    each that differs here (up to SHOWN_PINS), else one row saying they are all here."""
    here = _section(ours, "packages")
    known = [
        r
        for r in theirs.requirements
        if _pinned(r)[0] in here and normalize(_pinned(r)[0]) not in _TORCH_NAMES
    ]
    if not known:
        return []
    released = {f"{_pinned(r)[0]}=={_pinned(r)[1].split('+', 1)[0]}": r for r in known}
    differ = [released[r] for r in other_pins(theirs, ours) if r in released]
    if not differ:
        return [f"  {'same':7}  packages: the spec's {plural(len(known), 'pin')}, all here"]
    rows = []
    for requirement in differ[:SHOWN_PINS]:
        name, version = _pinned(requirement)
        our = _text(here[name]) or "not installed"
        rows.append(f"  {'DIFFERS':7}  {name}: log {version}; here {our}")
    if len(differ) > SHOWN_PINS:
        rows.append(
            f"  {'DIFFERS':7}  {len(differ) - SHOWN_PINS} more of the spec's "
            f"{len(known)} pins (environment.packages)"
        )
    return rows


_TORCH_NAMES = ("torch", "pytorch")


def next_step(output: Path, *, todo: bool, differ: Sequence[str]) -> str:
    """The step after a skeleton, as `capture -- CMD` names its own. Where this interpreter
    lacks the log's versions, the local runner's cell is `infra-error` for certain, so the
    command given builds them (`--runner venv`): a plain `reprospec run` was named first,
    and ended where it could not run."""
    command = f"reprospec run {shlex.quote(str(output))}"
    why = ""
    if differ:
        command += " --runner venv"
        named = ", ".join(differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
        why = (
            f" (this interpreter lacks the spec's {named}: the venv runner builds an "
            "environment that has them, where a plain `run` ends the cell infra-error)"
        )
    return (f"next: fill in the TODOs, then `{command}`" if todo else f"next: `{command}`") + why


def compare_machine(theirs: Machine, ours: Mapping[str, JsonValue] | None) -> list[str]:
    """What differs between the ticket's machine and this one (torch build, CUDA, GPUs,
    Python, OS), and the packages the skeleton pins (`_package_rows`)."""
    if not theirs.said_anything:
        return ["the log says nothing about its machine: nothing to compare"]
    if ours is None:
        return ["this machine could not be probed: nothing to compare"]
    torch = _section(ours, "torch")
    python = _section(ours, "python")
    nvidia = _section(ours, "nvidia")
    gpus = torch.get("gpus") or nvidia.get("gpus")
    our_gpus = (
        [str(g.get("name")) for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []
    )
    os_info = _section(ours, "os")
    rows = [
        ("torch", theirs.torch, _text(torch.get("version"))),
        ("CUDA (torch build)", theirs.torch_cuda, _text(torch.get("cuda")) or "none (CPU build)"),
        ("cuDNN", theirs.cudnn, _text(torch.get("cudnn"))),
        ("GPUs", _counted(theirs.gpus) or None, _counted(our_gpus) or "none"),
        ("driver", theirs.driver, _text(nvidia.get("driver"))),
        ("Python", theirs.python, _text(python.get("version"))),
        ("OS", theirs.os, _our_os(theirs.os, os_info)),
    ]
    lines = ["the log's machine and this one:"]
    for label, their, our in rows:
        if their is None:
            continue
        same = our is not None and (
            our == their or our.startswith(their + ".") or our.startswith(their + "+")
        )
        mark = "same" if same else "DIFFERS"
        lines.append(f"  {mark:7}  {label}: log {their}; here {our or 'unknown'}")
    if len(lines) == 1 and not theirs.gpus:
        # Packages alone (a bare `pip freeze`): the spec pins them, and the probe answers
        # for each (the rows under the sentence); the heading would stand over them alone.
        return [
            "the log names no torch, CUDA, GPU, driver, Python or OS of its machine: its "
            "packages are in the spec's environment.packages",
            *_package_rows(theirs, ours),
        ]
    lines += _package_rows(theirs, ours)
    their_os = (theirs.os or "").split(" ", 1)[0]
    if their_os in ("Windows", "macOS") and _text(os_info.get("system")) in (None, "Linux"):
        # multiprocessing's default start is spawn there, not here: a failure of spawn
        # (a lambda it cannot pickle, a script without `if __name__ == "__main__":`) does not
        # happen under fork.
        lines.append(
            f"  the log's machine ran {their_os}, where DataLoader workers and"
            " multiprocessing start by spawn, not by Linux's fork (forkserver from Python"
            " 3.14): a failure of spawn (pickling, no `if __name__ == '__main__':`) may need"
            " `multiprocessing_context='spawn'` (or mp.set_start_method('spawn')) here"
        )
    if theirs.gpus and not our_gpus:
        lines.append(
            "  the log's machine had GPUs and this one has none: a failure that needs them "
            "cannot reproduce here (run the spec on a machine with " + _counted(theirs.gpus) + ")"
        )
    return lines


_MACHINE_SUFFIX = re.compile(
    r" \((?:x86_64|aarch64|arm64|AMD64|ppc64le|ppc64|s390x|i[36]86|riscv64|armv7l)\)$"
)


def _our_os(their: str | None, os_info: JsonObject) -> str | None:
    """This machine's OS as the log says its own: collect_env's `OS:` line ends in the
    machine, `Debian GNU/Linux 12 (bookworm) (x86_64)`, which the distribution alone
    never equalled (`DIFFERS` of the same OS); with the machine here added, an arm64 box
    still differs from an x86_64 one."""
    distribution = _text(os_info.get("distribution"))
    machine = _text(os_info.get("machine"))
    # This machine's own name ends the log's too where the list lacks it (review); not
    # any `(word)`, which a bare `Debian GNU/Linux 12 (bookworm)` ends in.
    if (
        distribution
        and machine
        and their
        and (_MACHINE_SUFFIX.search(their) or their.endswith(f" ({machine})"))
    ):
        return f"{distribution} ({machine})"
    return distribution


def _this_machine(theirs: Machine) -> Mapping[str, JsonValue] | None:
    """This machine as the harness sees it (doctor's probe, with the versions here of the
    packages the skeleton pins), or None when it cannot tell."""
    if not theirs.said_anything:
        return None
    from reprospec.environment.probe import probe_environment

    names = [_pinned(requirement)[0] for requirement in theirs.requirements]
    try:
        return probe_environment(sys.executable, ("torch", *names), cuda=bool(theirs.gpus))
    except Exception:  # a probe that fails must not lose the skeleton already written
        return None


def _outer_and_inner(frames: Sequence[str]) -> list[str]:
    """A Python stack's innermost SHOWN_FRAMES frames and, where more were cut, its
    outermost OUTER_FRAMES: a hang's innermost are torch's and the standard library's
    (`queue.py:get`), and the program's own (`train.py:evaluate`) were lost."""
    if len(frames) <= SHOWN_FRAMES + OUTER_FRAMES:
        return list(frames)
    return [*frames[:OUTER_FRAMES], "...", *frames[-SHOWN_FRAMES:]]


def _thread_stacks(threads: Sequence[ThreadStack]) -> list[str]:
    """The description's lines of a dump's threads, one stack each (the main one first,
    named where its frames tell it), up to SHOWN_THREADS of them: joined into one stack,
    a thread's `join` read as the caller of another thread's `_worker`."""
    told = threads[0].main
    lines = [
        f"Python stacks of {len(threads)} threads (the dump names no current thread), "
        "innermost last"
        + ("" if told else "; which is the main thread no frame tells (none is `<module>`)")
        + ":"
    ]
    for stack in threads[:SHOWN_THREADS]:
        main = ", the main thread (its outermost frame runs the program)" if stack.main else ""
        lines.append(f"  thread {stack.thread or '?'}{main}:")
        lines += [f"    {frame}" for frame in _outer_and_inner(stack.frames)]
    if len(threads) > SHOWN_THREADS:
        lines.append(f"  ... and {len(threads) - SHOWN_THREADS} more threads")
    return lines


def _counted(gpus: Sequence[str]) -> str:
    """`2x NVIDIA GeForce RTX 4090, A100 80GB`: each model once, with its count."""
    counts = Counter(gpus)
    return ", ".join(f"{n}x {model}" if n > 1 else model for model, n in counts.items())


def _section(env: Mapping[str, JsonValue], key: str) -> JsonObject:
    value = env.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: JsonValue) -> str | None:
    return str(value) if value not in (None, "") else None


def _proposal(
    command: str, *, hang: bool, settings: Sequence[tuple[str, str]] = (), guessed: bool = False
) -> tuple[Proposal | None, bool, Bound | None]:
    """The command's axes, whether it is pytest, and (`hang`: a hang's) the `timeout`
    wrapper taken out of it (capture/timebound.py). A line with shell operators keeps
    them as written (`python app.py < data.txt`: quoted, `<` became an argument and the
    program read nothing): the axes come from the simple command before the first one,
    when it is the program; else (`cat data.txt | python app.py`) the line is the command
    as it is, without axes. Wrappers (`timeout 300`, `nice -n 5`, `env X=1`) are read by
    plan/wrappers.py, as a live capture reads them, and kept as written: the program ran
    under them. A secret the command passes (`--token hf_...`) that the ticket's prose
    `settings` set a variable to (`$env:HF_TOKEN="hf_..."`) is read from that variable.
    A `guessed` command (the ticket's, from pytest's report) has no axes: its `-n 1` is the
    guess's, and an axis of it was commented as if the log had said it (review)."""
    head, tail = split_at_operator(command)
    try:
        argv = shlex.split(head)
    except ValueError:
        return None, False, None
    if tail and not runs_something(argv):
        return Proposal(command=command, toggles=()), False, None
    bounded = None
    if hang:
        argv, bounded = unbound(argv, hang=True)
    pytest = is_pytest(argv)
    if guessed:
        # Its `timeout` taken out as a written command's is: both paths say so (review).
        return Proposal(shlex.join(pytest_verbose(argv) if pytest else argv), ()), pytest, bounded
    proposal = propose(pytest_verbose(argv) if pytest else argv)
    held = dict(proposal.env)
    for variable, value in settings:
        passed = next((n for n in sorted(proposal.passed) if held[n] == value), None)
        if passed is not None:
            proposal = read_from(proposal, passed, variable)
    if tail:
        proposal = replace(proposal, command=f"{proposal.command} {tail}")
    return proposal, pytest, bounded


def _found(ticket: Ticket) -> str:
    failure = ticket.failure
    if failure.outcome is None:
        return "no failure found"
    # A hang (and an error known by its exit status only) has no signal or exception to
    # name beside its outcome: the outcome once stood in for it ("hang hang at train").
    named = failure.signal or failure.exception
    what = f" {named}" if named else ""
    if failure.outcome == "hang" and failure.signal and failure.where == "child":
        # A Pool left waiting by the child that died (its faulthandler dump): the hang is
        # the main process's, the signal the child's, as a live run says it.
        return f"hang after a child died of {failure.signal}"
    if failure.outcome == "hang" and (importing := _hung_import(ticket)) is not None:
        return f"hang while importing {importing}"
    if ticket.cut_traceback:
        what = " (its traceback cut before the exception line)"
    where = f" in a {failure.where}" if failure.where in ("worker", "child") else ""
    if failure.where == "child" and ticket.xdist_crash is not None:
        where = " in a pytest-xdist worker"
    step = f"step {failure.step}" if failure.step is not None else ""
    position = " ".join(p for p in (failure.phase or "", step) if p)
    at = f" at {position}" if position else ""
    if failure.where == "worker" and position:
        # The step is the main loop's, which a worker runs ahead of: `expect` has none
        # (process_keys), and the title said `in a worker at train step 7`; progress
        # lines with a step and no phase (`step 1: ...`) said `in a worker step 1`.
        at = f", main loop at {position}"
    return f"{failure.outcome}{what}{where}{at}"


def _hung_import(ticket: Ticket) -> str | None:
    """The module a hang's stack was importing (`wandb/__init__.py` of a py-spy dump whose
    `import wandb` never returned): the file of the `<module>` frame innermost past
    importlib's, as a live capture's `hang while importing slowmod.py:3` names it (its
    line where the log's frames keep none); None where the stack shows no import. The
    title said only `hang`, and the import was read from the stack by hand."""
    frames = ticket.python_frames
    machinery = [i for i, frame in enumerate(frames) if frame.startswith("<frozen importlib.")]
    if not machinery or machinery[-1] + 1 >= len(frames):
        return None
    file, _, function = frames[machinery[-1] + 1].rpartition(":")
    if function != "<module>" or not file:
        return None
    # By the live capture's rule: an installed package's module by its path in its
    # packages' folder (a faulthandler dump's `/home/u/.venv/lib/python3.10/site-packages/
    # wandb/__init__.py`, as py-spy's `wandb/__init__.py`), the sender's own by its name.
    # The log's frames keep no line.
    return imported_module(file, None, None)


def _name(ticket: Ticket) -> str:
    words = shlex.split(ticket.command) if ticket.command else []
    stem = script_stem(tuple(words)) if words else "ticket"
    failure = ticket.failure
    parts = [stem, failure.outcome or "failure"]
    if failure.signal:
        parts.append(failure.signal.lower())
    elif failure.exception:
        parts.append(bare_type(failure.exception).lower())
    return slug("-".join(parts))


def _title(ticket: Ticket) -> str:
    return f"From a ticket: {_found(ticket)}"


def _description(ticket: Ticket, source: str) -> str:
    lines = [f"Read from {source} by `reprospec capture --from-log`."]
    failure = ticket.failure
    for link in failure.chain:
        message = headline(link.message or "")
        lines.append(
            f"- `{link.type}`: {message}" + (f" ({link.link} of the next)" if link.link else "")
        )
    if ticket.cuda_error:
        lines.append(f"A CUDA error: {ticket.cuda_error}. Rerun with CUDA_LAUNCH_BLOCKING=1.")
    if ticket.threads:
        lines += _thread_stacks(ticket.threads)
    elif ticket.python_frames:
        lines.append("Python stack, innermost last:")
        lines += [f"    {frame}" for frame in _outer_and_inner(ticket.python_frames)]
    if ticket.native_frames:
        lines.append("Native stack, innermost first:")
        lines += [f"    {frame}" for frame in ticket.native_frames[:SHOWN_FRAMES]]
    return "\n".join(lines)
