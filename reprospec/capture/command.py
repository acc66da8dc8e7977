"""`reprospec capture -- CMD`: run a failing command through the engine and write its spec.

The command runs as a one-cell spec on the local runner, with every forensic
the engine has (stacks, native frames, events), every marker preset, and the
child recording which modules it loads (the stackdump sitecustomize, asked by
REPROSPEC_RECORD_IMPORTS). What came back decides the spec: the outcome and
its signature become `expect` (a rate bound with `--repeat`), the presets the
output fits become `markers`, the local modules it loaded become `files`, the
distributions it loaded become pinned `packages`, and the command's own flags
and overrides become one-value matrix axes. The spec is then run once more
(`verify`) to say whether the same signature comes back.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec import native
from reprospec.capture.alsoseen import as_often, by_chance, matched_by, set_expect
from reprospec.capture.datafiles import (
    MAX_READ_FILE,
    MAX_READ_FOLDER_FILES,
    WorkdirFiles,
    written_since,
)
from reprospec.capture.footprint import (
    ANOTHER_INTERPRETER,
    RECORD_IMPORTS_VAR,
    LocalInstall,
    Pins,
    attempt_output,
    crash_frame,
    environment_lines,
    faulthandler_stack,
    foreign_packages,
    frame_name,
    hung_import,
    hydra_overrides,
    imported,
    installed_modules,
    local_note,
    native_frame,
    pins,
    program_imports,
    reaching,
    searched,
    traceback_stack,
    wiped_note,
    with_import_roots,
)
from reprospec.capture.hangwait import (
    CpuTrail,
    VerifyWait,
    alone_timeout,
    moving_at_bound,
    read_hang,
    still_moving,
    verify_wait,
)
from reprospec.capture.optionarity import ParserOptions, script_options
from reprospec.capture.shellpython import ShellPython, relative_python, shell_python
from reprospec.capture.timebound import Bound, unbound
from reprospec.capture.toggles import Proposal, kept_note, propose, unsure_note
from reprospec.capture.verify import Runner, Stopped, verify
from reprospec.capture.writer import (
    Draft,
    axis_for,
    check_output,
    comment_key,
    crashed_in,
    group_expectation,
    message_pattern,
    process_keys,
    rate_bound,
    render_spec,
    script_of,
    script_stem,
    show_value,
    sigkill_note,
    slug,
    unshared_note,
)
from reprospec.core import environ
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.logtext import printable, shell_line
from reprospec.core.pythonargs import is_python
from reprospec.core.rates import refuting_bound
from reprospec.core.redact import mask_parts, secret_values
from reprospec.core.results import AttemptResult, GroupMember, Outcome, RunResult, bare_type
from reprospec.core.units import format_duration
from reprospec.core.words import (
    A_SHELLS_137_OR_AN_EXIT_STATUS,
    A_SHELLS_SIGKILL_SENT_BY_A_PROCESS,
    AS_A_SHELL_REPORTS_IT,
    PASSED_BESIDE_A_CRASH,
    PID_NOUNS,
    SIGKILL_OR_AN_EXIT_STATUS,
    SIGKILL_SENT_BY_A_PROCESS,
    missed_keys,
    plural,
    ran_process,
    shorten_command,
)
from reprospec.errors import EXIT_INFRA, EXIT_NOT_REPRODUCED, EXIT_OK, InfraError, UsageError
from reprospec.outcome.pytestreport import (
    first_failure,
    ini_quiet,
    is_pytest,
    is_test_id,
    narrowed_to,
    pytest_verbose,
    xdist_running,
    xdist_worker_crash,
)
from reprospec.outcome.tracebacks import closes_a_group
from reprospec.plan.workfiles import declared_script
from reprospec.plan.wrappers import ENV_PROGRAM, program_file, program_start, program_words
from reprospec.report.paths import PathNames
from reprospec.spec.comments import AXES_NOTE, observe_line
from reprospec.spec.presets import PRESETS, detect

if TYPE_CHECKING:
    from reprospec.core.runoptions import Words
    from reprospec.core.safepoint import Deferral
    from reprospec.pipeline.scheduler import ProgressCallback

# How long a captured attempt may run by default: a hang is caught, and said so.
DEFAULT_TIMEOUT_S = 300.0


@frozen
class Request:
    """What `capture` was asked: the command, where the spec goes, how often to run it."""

    argv: tuple[str, ...]
    output: Path
    repeat: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S
    verify: bool = True
    out: Path = Path(".reprospec")
    force: bool = False
    # `--python PATH`: the interpreter a bare `python` in the command runs (the run's).
    python: str | None = None
    # The shell's own interpreter for the command's bare `python`, where it is not
    # reprospec's: taken as `python` where it is an environment's (shellpython.py).
    shell: ShellPython | None = None
    # The command as typed, where capture wrote some of its words otherwise (tidied_paths,
    # `bound`); () where argv is it.
    typed: tuple[str, ...] = ()
    # The paths tidied_paths wrote otherwise, (as typed, as written): the header says so.
    tidied: tuple[tuple[str, str], ...] = ()
    # Its `timeout DURATION` wrapper, taken out: DURATION is the run's timeout (timebound.py).
    bound: Bound | None = None

    @property
    def as_typed(self) -> tuple[str, ...]:
        return self.typed or self.argv


@frozen
class Observed:
    """What the first run showed: the outcome to expect and how often it came."""

    outcome: Outcome | None  # None: no attempt ran (every one an infra error)
    matched: int
    attempts: int
    infra_error: str | None = None
    # The step of every attempt with the outcome's signature (a range when they differ).
    steps: tuple[int, ...] = ()
    # How many attempts with the outcome's signature failed before any step: where some
    # did, no step is expected (process_keys), as none is shared by all.
    stepless: int = 0
    # The keys of `expect` (UNSHARED_KEYS) some attempts with the outcome's signature
    # missed, each with how many did of how many (_shared): not expected, as not every
    # attempt met them.
    unshared: tuple[tuple[str, int, int], ...] = ()
    # Folders whose paths differ from run to run (the run folder) or from this machine to
    # another (the interpreter's): the message pattern leaves them out (message_pattern).
    volatile: tuple[str, ...] = ()
    # The values under secret-looking names (the command's `VAR=value` words, this
    # environment's): a part of one in the message is a wildcard too.
    secrets: tuple[str, ...] = ()
    # A crash's frame in the program's own code, from the crashed process's Python stack
    # (`__getitem__ (data.py:12)`: a DataLoader worker's, a child's; footprint.crash_frame), or
    # an error's, where its exception was raised (its traceback's), or a hang's place; where
    # no Python frame names it (a C program), a crash's or a hang's native one
    # (`main@seg`: footprint.native_frame).
    frame: str | None = None
    # A crash's or a native hang's process where it is another program's than the command's
    # own (`./seg` under `sh -c './seg; exit $?'`, `./nap` under `make`, which `frame` is
    # of: footprint.NativePlace); "" else.
    process: str = ""
    # The other failure signatures seen (each an Observed of its own, most common first):
    # the spec expects one, and the others are said, with how to target each (alsoseen.py).
    others: tuple[Observed, ...] = ()
    # An exception group's: the member types every attempt of its failure held (each that
    # agrees with it, `group_agrees`: which of a TaskGroup's tasks failed first is timing's),
    # empty for a failure that is no group; None where no attempts were counted (an
    # Observed made from one outcome): group_expectation's rule for a log's one attempt.
    common_members: frozenset[str] | None = None

    @property
    def signature(self) -> str:
        return self.outcome.signature if self.outcome else ""


@frozen
class Captured:
    """The spec written and what `capture` says about it, line by line."""

    spec: Path
    observed: Observed
    lines: tuple[str, ...]
    verified: bool | None = None  # None: not verified (--no-verify, or nothing to verify)
    # False: no spec was written (`refusal`): the command passed over a process's crash,
    # which no spec of it can expect; `lines` say why and what to capture instead.
    written: bool = True

    def render(self, fmt: str = "md") -> str:
        """What `capture` prints ("text": its lines), or them under a heading ("md", the
        default, as every answer's: core/answers.py)."""
        text = "\n".join(self.lines)
        if fmt == "text":
            return text
        if fmt == "md":
            return f"## Captured {self.spec}\n\n```\n{text}\n```\n"
        raise UsageError(f"a capture renders as 'text' or 'md', not {fmt!r}")

    def exit_code(self) -> int:
        """`capture`'s: 0 written (and verified, where asked), 1 not reproduced (a pass over
        a crash: nothing written; or a verify that did not see it again), 3 nothing ran."""
        if self.observed.outcome is None:
            return EXIT_INFRA
        if not self.written or self.verified is False:
            return EXIT_NOT_REPRODUCED
        return EXIT_OK


def command_request(
    argv: Words,
    *,
    output: Path | None = None,
    repeat: int = 1,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    verify: bool = True,
    out: Path = Path(".reprospec"),
    force: bool = False,
    python: str | None = None,
    api: bool = False,
) -> Request:
    """What `capture -- CMD` is asked, checked: a command whose first word is not empty, a
    repeat >= 1, a timeout > 0; the spec named after the command's script where `output`
    is None (`train-capture.yaml`), and the interpreter its runs take (`chosen_interpreter`).
    `api`: asked by `reprospec.capture_command`, whose errors name its arguments (`repeat`,
    `argv`), not the verb's options (`--repeat`, `--`)."""
    from reprospec.capture.writer import script_stem
    from reprospec.core.runoptions import (
        RunOptions,
        optional_path,
        optional_text,
        string_sequence,
        whole_number,
    )

    words = string_sequence("argv" if api else "the command", argv)
    if not words:
        raise UsageError(
            "capture_command needs a command: argv=['python', 'train.py', ...]"
            if api
            else "capture needs a command after `--` (reprospec capture -- python train.py ...) "
            "or --from-log FILE"
        )
    if not words[0].strip():
        # `capture -- ""` (an unset variable's `$CMD`): the shell's exit 127 was captured
        # and verified as the failure, exit 0.
        raise UsageError("capture: the command's first word is empty: nothing to run")
    _not_a_folder(words)
    repeat = whole_number("repeat" if api else "--repeat", repeat)
    output = optional_path("output", output)
    python = optional_text("python", str(python) if isinstance(python, os.PathLike) else python)
    # The run's own checks: the timeout a number > 0, the paths as Paths.
    checked = RunOptions(timeout_s=timeout_s, out=out, python=python)
    command, chosen = chosen_interpreter(words, checked.python, Path.cwd())
    shell = shell_python(command, chosen)
    if shell is not None and shell.taken:
        chosen = shell.path
    return Request(
        argv=command,
        output=Path(output) if output is not None else Path(f"{script_stem(words)}-capture.yaml"),
        repeat=repeat,
        timeout_s=float(timeout_s),
        verify=bool(verify),
        out=checked.out,
        force=bool(force),
        python=chosen,
        shell=shell,
    )


def _not_a_folder(words: Sequence[str]) -> None:
    """Refuse a command whose program, named by a path, is a folder (`capture -- /tmp`):
    the shell's words for it, `Permission denied` (exit 126), were captured as an
    infra-error of a spec that ran nothing, and said nothing of a folder. A program word
    without a slash is looked up on PATH, where a folder of the same name is not met."""
    at = program_start(list(words))
    if at is None or at >= len(words):
        return
    program = words[at]
    if "/" in program and (Path.cwd() / program).is_dir():
        position = "first word" if at == 0 else f"program (word {at + 1})"
        raise UsageError(
            f"capture: the command's {position}, {program}, is a folder, not a program: "
            "name the program in it to run"
        )


def run_captured(
    path: Path,
    repeat: int,
    observe: bool,
    request: Request,
    wait: VerifyWait | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    deferral: Deferral | None = None,
    shown: Path | None = None,
) -> RunResult:
    """One run of the spec capture drafted (`observe`) or wrote (its verify), on the local
    runner; `wait`: a verify's of a captured hang, loaded as overrides (its run.stall). A
    run stopped by `cancel` (or Ctrl-C) raises KeyboardInterrupt: capture writes nothing
    from a run it did not finish. `deferral`: the run's (RunOptions.deferral). `shown`:
    the spec capture wrote where `path` is the verify's copy of it (removed once the run
    ends): the run records and shows that file, which `report latest` then names."""
    from reprospec.core.runoptions import RunOptions
    from reprospec.pipeline import stages
    from reprospec.spec.load import load_spec

    spec = load_spec(str(path), wait.overrides if wait else ())
    python = request.python
    options = RunOptions(
        repeat=repeat,
        observe=observe,
        out=request.out,
        purpose="capture",
        python=python,
        command_line=f"reprospec run {shown or path}"
        + (f" --python {shlex.quote(python)}" if python else ""),
        deferral=deferral,
    )
    result = stages.run(spec, options, progress=progress, cancel=cancel, shown=shown)
    if result.interrupted:
        raise KeyboardInterrupt
    return result


class VerifyInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM in the verify rerun, or in the rerun of a pytest test alone before
    it (`rerun`: which). The first run ended, so the spec written from it is the finished
    one, not the first draft: only its check was stopped, and `lines` say what was written
    (the CLI had told the user to throw it away and capture again)."""

    def __init__(self, lines: tuple[str, ...], rerun: str = "the verify rerun") -> None:
        super().__init__()
        self.lines = lines
        self.rerun = rerun


def capture(
    request: Request, run_spec: Runner, say: Callable[[str], None] | None = None
) -> Captured:
    """Run `request.argv` as a spec (through `run_spec`), write the spec that reproduces it.
    `say`: where the verify's progress lines go (the CLI's stderr)."""
    if not request.argv:
        raise UsageError("capture needs a command after `--` (or --from-log FILE)")
    _refuse_undecodable(request)
    check_output(request.output, force=request.force, reads=request.argv)
    request = _unbound(request)
    tidied = tidied_paths(request.argv, Path.cwd())
    if tidied != request.argv:
        changed = tuple((a, b) for a, b in zip(request.argv, tidied, strict=True) if a != b)
        request = replace(request, argv=tidied, typed=request.as_typed, tidied=changed)
    # How many values each option takes, where the script's own parser says.
    options = script_options(script_of(request.argv), Path.cwd().resolve())
    # pytest -v's `path::test` lines name the test a crash or a hang happened in (the
    # pytest preset's phase); -q printed a dot per test.
    argv = _verbose(request.argv)
    proposal = propose(argv, options)
    # The spec reads the command's secrets (`HF_TOKEN=... python`, `--api-key ...`) back
    # from the environment, never writes them: capture's runs set them, as the command
    # did (they ran without them, and called what that changed the failure). Its plain
    # settings (`MAX_TOKENS=2048 python ...`) the spec writes, and sets itself.
    with environ.changed(dict(proposal.secret_env)):
        return _capture(request, run_spec, proposal, say, options)


def _refuse_undecodable(request: Request) -> None:
    """A usage error, before anything runs or is written, for what a spec cannot carry: a
    word of the command, the folder it runs in or the spec's path that is not UTF-8. Each
    was written into the spec as `\\uDC80`, a spec no run could record: an internal
    UnicodeEncodeError once the command had run. (-o's the CLI refuses first, its real
    path as here; `reprospec.investigate.capture` comes here without it.)"""
    from reprospec.core.logtext import not_utf8

    cannot = "a spec is UTF-8 text and cannot hold it"
    instead = (
        "give the program those bytes another way (a file it reads, or a variable of your "
        "shell it reads, which the spec reads back)"
    )
    found = [("the command's word", word, f"{cannot}; {instead}") for word in request.argv]
    for what, path in (("the folder it runs in", Path.cwd()), ("-o's path", request.output)):
        found.append((what, str(path.resolve()), f"{cannot}; rename the folder"))
    for what, text, then in found:
        wrong = not_utf8(what, text, then=then)
        if wrong is not None:
            raise UsageError(f"capture: {wrong}")


def _unbound(request: Request) -> Request:
    """`request` with its command's `timeout DURATION` wrapper taken out and DURATION its
    run's timeout (the shorter of it and --timeout), where it has one (timebound.py): a hang
    captured as `timeout 3 python hang.py` was written as `error exit 124`, with no stacks,
    where the engine's own timeout at the same bound reads it as the hang it is."""
    argv, bound = unbound(list(request.argv))
    if bound is None or not argv:
        return request
    seconds = bound.seconds
    return replace(
        request,
        argv=tuple(argv),
        typed=request.as_typed,
        bound=bound,
        timeout_s=min(request.timeout_s, seconds) if seconds is not None else request.timeout_s,
    )


def tidied_paths(argv: Sequence[str], workdir: Path) -> tuple[str, ...]:
    """`argv` with each word that is a path through `..` to a file (`./pt/../x.py`) written
    the short way (`./x.py`), where both name the same file. A spec's runs copy the files
    the command read into a folder of their own, not the folders its path went through:
    there `./pt/../x.py` named nothing (can't open file, an infra-error of the copy, which
    verify blamed on the workdir). A word through a symlinked folder (`link/../x.py` is
    the link target's parent's file) stays as typed: its short form is another file."""
    words = []
    for index, word in enumerate(argv):
        short = os.path.normpath(word)
        if ".." not in word.split("/") or short == word or not (workdir / word).is_file():
            words.append(word)
            continue
        if (workdir / short).resolve() != (workdir / word).resolve():
            words.append(word)
            continue
        relative = not short.startswith(("/", "../"))
        if relative and (index == 0 or word.startswith("./")):
            # `./pt/../run.sh` as the program: a bare `run.sh` is looked up on PATH.
            short = f"./{short}"
        words.append(short)
    return tuple(words)


def _capture(
    request: Request,
    run_spec: Runner,
    proposal: Proposal,
    say: Callable[[str], None] | None = None,
    options: ParserOptions | None = None,
) -> Captured:
    spec_path = request.output.resolve()
    workdir = Path.cwd().resolve()
    stem = script_stem(request.argv)
    started = time.time()

    first = _draft(
        request, proposal, workdir, spec_path, name=f"capture-{stem}", presets=tuple(PRESETS)
    )
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(render_spec(first), encoding="utf-8")
    try:
        with environ.changed({RECORD_IMPORTS_VAR: "1"}):
            result = run_spec(spec_path, request.repeat, True, None)
    except InfraError:
        # The run could not start (`--python /nope`: interpreter not found): its draft, which
        # says it is rewritten when the run ends, stayed, and the next capture needed --force.
        spec_path.unlink(missing_ok=True)
        raise
    run_dir = request.out.resolve() / "runs" / result.run_id
    attempts = [a for cell in result.cells for a in cell.attempts]
    observed = observe(attempts)
    # A path under the run folder holds the run's id: it differs in the next run.
    from reprospec.runners.local import resolve_python

    runs = request.out.absolute() / "runs"
    # The interpreter's folder is this machine's too: `/home/me/.venv/bin/python3: No
    # module named mypkg` failed to match wherever python lives elsewhere.
    interpreter = resolve_python(request.python)
    bins = (str(Path(interpreter).parent), str(Path(interpreter).resolve().parent))
    observed = replace(
        observed,
        volatile=tuple(dict.fromkeys((str(runs), str(runs.resolve()), *bins))),
        secrets=secret_values(proposal.secret_env),
    )
    if observed.outcome is not None and observed.outcome.kind in ("crash", "error", "hang"):
        # Where it died, where its exception was raised (its traceback's frame), or where it
        # hung (its stacks, the main process's first: the title read `omp.py: hang`).
        stacks = (
            (a.stack or faulthandler_stack(attempt_output(run_dir, a)))
            if observed.outcome.kind == "crash"
            else a.stack
            if observed.outcome.kind == "hang"
            else traceback_stack(attempt_output(run_dir, a), observed.outcome.exception)
            for a in attempts
            if a.ran and a.ran.signature == observed.signature
        )
        # A hang's own place, as the run's line and report name it (Outcome.hung_in: the
        # thread a join waits for, a stuck child's frame), before its stacks' first frame:
        # a deadlock between threads was titled by the main thread's join.
        hung_in = next(
            (
                a.ran.hung_in
                for a in attempts
                if a.ran and a.ran.signature == observed.signature and a.ran.hung_in
            ),
            None,
        )
        frame: str | None
        below = ""  # the process a child ran, where the child's hang is placed there
        if hung_in is not None:
            frame = frame_name(hung_in.function, hung_in.path, hung_in.line, workdir)
        elif observed.outcome.kind == "hang" and observed.outcome.where in ("worker", "child"):
            # The stacks' first frame is the main process's, only waiting; a child with no
            # Python stack (`subprocess.run(["./nap"])`) has its native place (hung_native),
            # and where that place is a process the child ran (./nap under ./pp), that
            # process too (hung_process), as the run's line names both: the title read
            # `run.py: hang in a child process in ...@nap`, neither pp nor nap named.
            placed = next(
                (
                    a.ran
                    for a in attempts
                    if a.ran and a.ran.signature == observed.signature and a.ran.hung_native
                ),
                None,
            )
            frame = placed.hung_native if placed is not None else None
            below = (placed.hung_process or "") if placed is not None else ""
        else:
            frame = next((f for s in stacks if (f := crash_frame(s, workdir))), None)
            if frame is None and observed.outcome.kind in ("crash", "hang"):
                # No Python frame (a C program's): its native stacks name where it died, as
                # its signature does (`crash:SIGSEGV:main:main@seg`), or where it sat.
                place = native_frame(
                    run_dir,
                    (a for a in attempts if a.ran and a.ran.signature == observed.signature),
                    request.argv,
                )
                if place is not None:
                    frame = place.frame
                    observed = replace(observed, process=place.process)
        observed = replace(observed, frame=frame, process=below or observed.process)
    beside = [w for a in attempts for w in a.warnings if w.startswith(PASSED_BESIDE_A_CRASH)]
    if beside and observed.outcome is not None and observed.outcome.kind == "pass":
        # Its expect could only say `pass`, which the crash does not change: a spec written
        # of it, and a verify "reproduced" of a copy where nothing died, captured nothing.
        spec_path.unlink(missing_ok=True)
        return Captured(
            spec_path, observed, (f"it {beside[0]}", refusal(request.argv, workdir)), written=False
        )
    texts = [attempt_output(run_dir, a) for a in attempts]
    presets = detect("\n".join(texts))
    pytest = _runs_pytest(request.argv)
    if pytest and "pytest" not in presets:
        # One test's `path::test` line (the command narrowed to it, a lone test that
        # crashed) is no two lines to detect: the spec's runs read it all the same, as
        # --from-log's do.
        presets = (*presets, "pytest")
    # What every attempt of the failure shared, by the signature they were counted under.
    observed = _shared(observed, attempts)
    if observed.outcome is not None:
        observed = replace(
            observed,
            outcome=_with_progress(observed.outcome, run_dir, attempts, presets, pytest=pytest),
        )
    # Judged by the expect written for it (their signatures, before progress is read in).
    observed = _judged(observed, attempts)
    # The hang's progress, read once: whether it still moved, the bound of its test's rerun
    # alone and the verify's wait are each asked of it (each read every attempt's events).
    hang = read_hang(observed.signature, run_dir, attempts, presets)
    moving = still_moving(hang)
    if moving is not None and observed.outcome is not None:
        observed = replace(
            observed, outcome=replace(observed.outcome, step=None), steps=(), stepless=0
        )
    # The failures the spec does not expect are read as its own is: their `expect` is said.
    observed = replace(
        observed,
        others=tuple(
            replace(
                other,
                volatile=observed.volatile,
                secrets=observed.secrets,
                outcome=_with_progress(other.outcome, run_dir, attempts, presets, pytest=pytest),
            )
            for other in observed.others
            if other.outcome is not None
        ),
    )
    # How long a rerun of a captured pytest hang's test alone may take: the bound it hung to.
    alone = alone_timeout(hang, request.timeout_s)
    proposal, ran, narrowing, stopped = _narrowed(
        request, proposal, options, observed, workdir, spec_path, presets, run_spec, say, alone
    )
    modules = imported(run_dir, attempts)
    # With the installed modules whose code ran: pytest's entry-point plugins among them.
    installed = installed_modules(run_dir, attempts, workdir)
    # Which of them its own code imports: the rest are its libraries' and plugins'.
    own = program_imports(run_dir, attempts, workdir, request.argv)
    pinned = pins((*modules, *installed), interpreter, request.argv, own)
    elsewhere = None if request.python is not None else _elsewhere(run_dir, attempts)
    if elsewhere is not None:
        pinned = Pins("", error=ANOTHER_INTERPRETER.format(folder=elsewhere))
    packages = pinned.packages
    # An editable install of the workdir's project: its modules are the workdir's files,
    # carried, and what the spec imports (a reader has no such install).
    editable = tuple(i for i in pinned.local if i.carried_roots(workdir) is not None)
    footprint = WorkdirFiles(
        workdir,
        _script_dir(request.argv, workdir),
        request.out,
        leave_out=(request.out, spec_path),
        before=started,
        roots=tuple(Path(r).resolve() for i in editable for r in i.roots),
    )
    # The modules whose code ran: `modules` holds every name looked for, found or not.
    data = footprint.read(run_dir, attempts)
    files = listed_files(data.listed, ran, workdir)
    hydra = hydra_overrides(workdir, started)
    last_import = next(
        (
            found
            for a in attempts
            if a.ran is not None and a.ran.kind == "hang"
            if (found := hung_import(a.stack, workdir))
        ),
        None,
    )

    # Whether Python ran, or may have: what ran recorded modules, or the command runs it.
    ran_python = bool(
        modules or installed or searched(run_dir, attempts) or _names_python(request.argv, workdir)
    )
    final = _draft(
        request,
        proposal,
        workdir,
        spec_path,
        name=_name(stem, observed),
        presets=presets,
        files=files,
        packages=packages,
        # Unknown where another interpreter could not be read: left out, not ours. "" (left
        # out too) where no Python ran (a C program's crash): the engine's version was
        # pinned for it, a run warning on every machine with another Python.
        python=(
            pinned.python or (None if request.python is None and elsewhere is None else "")
            if ran_python
            else ""
        ),
        runs_python=ran_python,
        observed=observed,
        hydra=hydra,
        last_import=last_import,
        run_id=result.run_id,
        paths=result.paths,
        not_carried=(
            *(f"{name} (hidden: it may hold secrets)" for name in data.hidden),
            *(f"{name} (too large to carry)" for name in data.too_large),
            *(f"{name} (outside the workdir)" for name in data.outside),
            *(f"{name} (its name is not UTF-8)" for name in data.undecodable),
        ),
        local=pinned.local,
        notes=(narrowing,) if narrowing else (),
    )
    spec_path.write_text(render_spec(final), encoding="utf-8")
    lines = [f"wrote {_shown(spec_path)}: {_summary(observed)}"]
    if moving is not None:
        lines.append(moving.said(request.timeout_s))
    if observed.outcome is None:
        # The reason's way on (`pass --python PATH`) was refused next: the spec is there.
        lines.append(
            f"{_shown(spec_path)} expects nothing, as nothing ran: capture again with --force "
            "to write over it, once the command runs"
        )
    if narrowing:
        lines.append(narrowing)
    lines += _also_seen(observed, f"reprospec run {shlex.quote(_shown(spec_path))}")
    if observed.outcome is not None and observed.outcome.kind == "pass":
        # capture is for a failure: a pass written down as `expect: pass` and verified as
        # "reproduced" read as a captured failure.
        # "capture again with --repeat N" of a capture that was given --repeat 20.
        more = "--repeat N" if observed.attempts <= 1 else f"--repeat above {observed.attempts}"
        # The verify keeps only the shell's variables a pass is shown to need: a flaky
        # load's DL_SHARED_CACHE, which its files named, was left out, and the amplify
        # hint read as a way on with a spec that could never fail.
        kept = "sets only the variables of your shell a pass needs: it " if request.verify else ""
        lines.append(
            f"nothing failed: the command passed in {plural(observed.attempts, 'attempt')}, so the "
            f"spec expects a pass and {kept}may lack what the failure needs; for a failure that "
            f"comes rarely, capture again with {more}, which keeps what a failure needs; "
            f"amplifying this spec (edit its expect, then `reprospec amplify "
            f"{_shown(spec_path)}`) may never fail"
        )
    if proposal.toggles:
        lines.append(
            "axes from the command: "
            + ", ".join(f"{t.axis}={show_value(t.value)}" for t in proposal.toggles)
        )
    lines += [kept_note(kept) for kept in proposal.kept]
    if proposal.unsure:
        lines.append(unsure_note(Path(proposal.unsure).name))
    wiped = wiped_note(proposal)
    if wiped:
        lines.append(wiped)
    if presets:
        lines.append("progress markers: " + ", ".join(presets))
    if files:
        # One line: a name's newline (`new\nline.txt`) written out, as a table's cell is.
        named = ", ".join(printable(name, one_line=True) for name in files)
        lines.append(f"files it imported or read from the workdir: {named}")
    if data.too_large:
        lines.append(
            f"read from the workdir but over {MAX_READ_FILE >> 20} MiB or "
            f"{MAX_READ_FOLDER_FILES} files, not in `files` (a reader fetches them): "
            + ", ".join(data.too_large)
        )
    if data.hidden:
        lines.append(
            "read from the workdir but hidden, not in `files` (it may hold secrets): "
            + ", ".join(data.hidden)
        )
    if data.outside:
        lines.append(
            "read outside the workdir by its path, which no spec or bundle carries (a reader "
            "needs it at the same path): " + ", ".join(data.outside)
        )
    if data.undecodable:
        # Its bytes are lost to the record (U+FFFD): verify's copy lacks the file, and
        # "name it in the spec's files" could not be done.
        lines.append(
            "read from the workdir under a name that is not UTF-8, which no spec can name, not "
            "in `files` (rename it, and the command's use of it, to carry it): "
            + ", ".join(printable(name, one_line=True) for name in data.undecodable)
        )
    if pinned.program:
        lines.append(f"the program it ran: {pinned.program}")
    if pinned.imported():
        lines.append(f"packages it imported: {', '.join(pinned.imported())}")
    if pinned.pulled_in():
        lines.append(
            "packages its libraries imported, not its own code (pinned as they ran): "
            + ", ".join(pinned.pulled_in())
        )
    if pinned.plugins:
        lines.append(
            f"plugins its program loaded through entry points: {', '.join(pinned.plugins)}"
        )
    lines += [local_note(install, workdir) for install in pinned.local]
    lines += [
        f"the verify imports {i.name} from your editable install at {i.path}, outside the "
        "workdir: a reader needs it installed the same way"
        for i in pinned.local
        if i.editable and i not in editable and request.verify
    ]
    if request.shell is not None:
        lines.append(request.shell.line(workdir))
    elif request.python is not None:
        shown = shlex.quote(relative_python(request.python, workdir))
        lines.append(
            f"it ran with --python {shown}, whose packages the spec pins: rerun it with the "
            "same (or --runner venv)"
        )
    if pinned.error:
        lines.append(
            f"environment.packages left out: the packages it imported could not be read "
            f"({pinned.error})"
        )
    if stopped is not None:
        # Stopped in the rerun of the test alone: the spec is the whole command's, written
        # from the first run, which ended (a pytest hang's whole timeout, lost before).
        raise VerifyInterrupted(tuple(lines), rerun=stopped)
    verified: bool | None = None
    if request.verify and observed.outcome is not None:
        try:
            said, verified = verify(
                run_spec,
                spec_path,
                final,
                observed.signature,
                request.repeat,
                workdir=workdir,
                reads=footprint.reads,
                linked=data.left_out,
                outside=data.outside,
                undecodable=data.undecodable,
                hidden=editable,
                wait=verify_wait(hang, request.timeout_s),
                again=_again(request, spec_path),
                say=say,
                written=lambda: written_since(workdir, started, (request.out, spec_path)),
            )
        except KeyboardInterrupt as stop:
            # What the reruns had shown before the stop is said too (Stopped.lines).
            known = stop.lines if isinstance(stop, Stopped) else ()
            raise VerifyInterrupted((*lines, *known)) from None
        lines += said
    return Captured(spec_path, observed, tuple(lines), verified)


def _verbose(argv: Sequence[str]) -> list[str]:
    """A pytest command made to print each test's id (`pytestreport.pytest_verbose`, one
    more `-v` for each `-q` its ini file's addopts or PYTEST_ADDOPTS adds); any other as
    it is."""
    if not is_pytest(argv):
        return list(argv)
    return pytest_verbose(argv, ini_quiet(Path.cwd().resolve(), os.environ))


# What a test did, as the narrowing's lines say it, by the outcome's kind.
_DID = {"crash": "crashed", "error": "failed", "hang": "hung"}


def _narrowed(
    request: Request,
    proposal: Proposal,
    options: ParserOptions | None,
    observed: Observed,
    workdir: Path,
    spec_path: Path,
    presets: tuple[str, ...],
    run_spec: Runner,
    say: Callable[[str], None] | None,
    alone: float | None = None,
) -> tuple[Proposal, tuple[str, ...], str | None, str | None]:
    """A pytest command whose test crashed, failed or hung, narrowed to that test (its node
    id in place of the command's test paths, every option kept) where a rerun of it alone
    ends the same way at least as often; else the command as it was, and why, for a
    failure that needs the tests before it (state they left, an order) or came by chance.
    A hang's rerun has a timeout of its own, `alone` (hangwait.alone_timeout: as long as
    the first run left the test unended, at most the spec's timeout: the first test that
    hung, or one whose timeout came soon after the test before it ended, is narrowed too,
    its rerun waiting that long; a test that alone ends sooner, a slow one, is no hang).
    The line says which; None where there was nothing to narrow (no pytest, no test named,
    a command that runs the test alone already or whose test paths are not sure, or
    `--no-verify`, which reruns nothing). Also the words of the command the spec runs,
    before its axes (what `files` leaves out), and, where Ctrl-C or SIGTERM stopped the
    rerun, which rerun it was: the command is then the whole one, as it ran."""
    outcome = observed.outcome
    if (
        outcome is None
        or outcome.kind not in _DID
        or outcome.phase is None
        or not is_test_id(outcome.phase)
        or not is_pytest(request.argv)
        or not request.verify  # --no-verify: the spec runs only what ran
    ):
        return proposal, request.argv, None, None
    test = outcome.phase
    argv = narrowed_to(_verbose(request.argv), test, workdir)
    if argv is None:
        return proposal, request.argv, None, None
    narrowed = propose(argv, options)

    def write(timeout_s: float | None) -> None:
        draft = _draft(
            request if timeout_s is None else replace(request, timeout_s=timeout_s),
            narrowed,
            workdir,
            spec_path,
            name=f"capture-{script_stem(tuple(argv))}",
            presets=presets,
        )
        spec_path.write_text(render_spec(draft), encoding="utf-8")

    write(alone)
    if say is not None:
        without = {"crash": "crashes", "error": "fails", "hang": "hangs"}[outcome.kind]
        waits = ""
        if outcome.kind == "hang" and alone is not None:
            waits = (
                f" (a hang is called after {format_duration(alone)}: as long as it went "
                "unended with them)"
                if alone < request.timeout_s
                else f" (a hang is called at the {format_duration(alone)} timeout)"
            )
        say(
            f"reprospec: rerunning {test} alone, to see whether it {without} without the "
            f"others{waits}"
        )
    # A hang rerun within a bound shorter than the timeout: its CPU time is read meanwhile.
    trail = (
        CpuTrail()
        if outcome.kind == "hang" and alone is not None and alone < request.timeout_s
        else None
    )
    try:
        return _alone(
            request,
            proposal,
            narrowed,
            argv,
            observed,
            trail,
            alone,
            spec_path,
            run_spec,
            write,
            say,
        )
    except KeyboardInterrupt:
        return (
            proposal,
            request.argv,
            f"the spec runs the whole command: the rerun of {test} alone was stopped",
            f"the rerun of {test} alone",
        )


def _alone(
    request: Request,
    proposal: Proposal,
    narrowed: Proposal,
    argv: Sequence[str],
    observed: Observed,
    trail: CpuTrail | None,
    alone: float | None,
    spec_path: Path,
    run_spec: Runner,
    write: Callable[[float | None], None],
    say: Callable[[str], None] | None,
) -> tuple[Proposal, tuple[str, ...], str | None, str | None]:
    """_narrowed's reruns of its test alone (the spec at `spec_path`, which `write`
    writes), and what they tell."""
    outcome = observed.outcome
    assert outcome is not None
    assert outcome.phase is not None
    test = outcome.phase
    did = _DID[outcome.kind]
    began = time.monotonic()
    with trail or contextlib.nullcontext():
        result = run_spec(spec_path, request.repeat, True, None)
    took = time.monotonic() - began
    moved = ""
    if trail is not None and alone is not None:
        hung = [a for cell in result.cells for a in cell.attempts]
        rerun_dir = request.out.resolve() / "runs" / result.run_id
        if moving_at_bound(trail.readings, hung, alone, rerun_dir):
            # Not still at the bound: slow work, or a busy loop. Rerun at the spec's timeout,
            # the first run's own wait: what alone does not end by then hung the same way.
            moved = (
                f"; at the {format_duration(alone)} bound it was still using CPU, so it was "
                "rerun at the spec's timeout"
            )
            alone = request.timeout_s
            write(alone)
            if say is not None:
                say(
                    f"reprospec: {test} alone was still using CPU at the bound (slow work, "
                    "or a busy loop), not still as a hang: rerunning it at the spec's "
                    f"{format_duration(alone)} timeout"
                )
            began = time.monotonic()
            result = run_spec(spec_path, request.repeat, True, None)
            took = time.monotonic() - began
    ran = [a.ran for cell in result.cells for a in cell.attempts if a.ran is not None]
    same = sum(
        native.agrees(o.signature, observed.signature, native_unknown=True, across_builds=False)
        for o in ran
    )
    counted = f"{same}/{plural(len(ran), 'attempt')}, run {result.run_id}"
    if outcome.kind == "hang" and alone is not None:
        # What the narrowing cost: a rerun that is a hang if unended at its own timeout, or
        # the spec's. Not "called a hang at": said of a rerun that passed too.
        counted += (
            f", {took:.1f} s: a hang if unended at "
            + (
                f"{format_duration(alone)}, as long as it went unended with the others"
                if alone < request.timeout_s
                else f"the spec's {format_duration(request.timeout_s)} timeout"
            )
            + moved
        )
    if same and same * observed.attempts >= observed.matched * len(ran):
        return (
            narrowed,
            tuple(argv),
            (
                f"narrowed to the test that {did}: {test} alone {did} the same way "
                f"({counted}), so the spec runs it alone"
            ),
            None,
        )
    ended = Counter(o.signature for o in ran).most_common(1)
    how = f"; it ended {ended[0][0]}" if ended and not same else ""
    return (
        proposal,
        request.argv,
        (
            f"the spec runs the whole command: {test} alone "
            + (
                f"{did} the same way less often ({counted}; "
                f"{observed.matched}/{observed.attempts} with the others)"
                if same
                else f"did not {_DO[outcome.kind]} the same way ({counted}{how})"
            )
            + f": the {_NOUN[outcome.kind]} may need the tests run before it, "
            "or come only sometimes"
        ),
        None,
    )


_DO = {"crash": "crash", "error": "fail", "hang": "hang"}
_NOUN = {"crash": "crash", "error": "failure", "hang": "hang"}


def listed_files(read: Iterable[str], argv: Sequence[str], workdir: Path) -> tuple[str, ...]:
    """The spec's `files`: what the program imported or read of the workdir (`read`, files
    there before the capture began, so none it wrote), less the code the command names
    itself (`app.py`), carried and compared as it is named. Data the command names and the
    program read (`--config config.json`) is listed: a run digests the spec's `files` as
    the program's inputs, and `compare` tells none of a file the command merely names (it
    may write it), so two runs around an edit of config.json read "same program files"."""
    from reprospec.plan.workfiles import is_code

    named = {(workdir / word).resolve() for word in argv}
    paths = {name: (workdir / name).resolve() for name in read}
    listed = {n for n, p in paths.items() if p not in named or not is_code(p)}
    # A test file named by a pytest node id (`tests/test_x.py::test_y`: the command narrowed
    # to the test that crashed) is no word a bundle carries, and pytest may have read it
    # from its cache, not opened it: listed.
    listed.update(
        path
        for word in argv
        if "::" in word
        for path in [word.partition("::")[0]]
        if path.endswith(".py") and (workdir / path).is_file()
    )
    return tuple(sorted(listed))


def _runs_pytest(argv: Sequence[str]) -> bool:
    """Whether the command runs pytest, also as a shell's `-c` script (`sh -c 'pytest -v
    t.py'`, which is_pytest read only as `/bin/sh -c`, a string command's shell)."""
    from reprospec.plan.shellwords import shell_script

    script = shell_script(list(argv))
    return is_pytest(argv) or (script is not None and is_pytest(["/bin/sh", "-c", script]))


def refusal(argv: Sequence[str], workdir: Path) -> str:
    """Why nothing was written of a command that passed over a process's death, and what to
    capture instead: a shell's pipeline under `bash -o pipefail`, whose status is then the
    crash's (exit 128+N, a crash by spec-format.md's rule 4); a program that went on over
    its child's death must say it by its own status."""
    from reprospec.plan.shellwords import SHELLS, script_operand, shell_script

    said = (
        "nothing written: the command passed, so a spec of it could only expect a pass, "
        "which a run without the crash meets as well (an attempt's outcome is the "
        "command's own status)"
    )
    words = list(argv)
    at = program_start(words)  # past `VAR=value` and wrappers: `timeout 60 sh run.sh`
    at = len(words) if at is None else at
    shell = at < len(words) and Path(words[at]).name in SHELLS
    script = shell_script(words[at:]) if shell else None
    operand = script_operand(words[at:]) if shell else None
    text = script
    if operand is not None:
        try:
            text = (workdir / operand).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = None
    if text is not None and "|" in text:
        rest = ["-c", script] if script is not None else [operand or ""]
        instead = shlex.join([*words[:at], "bash", "-o", "pipefail", *rest])
        return (
            f"{said}; a pipeline's status is its last command's: capture `{instead}`, "
            "whose status is the crash's"
        )
    return (
        f"{said}; make the command fail when that process dies (check its exit status, or "
        "run the process that died as the command) and capture that"
    )


# The keys of `expect` read from the one attempt `observe` chose that the others of its
# signature may not share: the signature holds the kind, signal, process, exception and
# phase (each attempt's by construction), the step is counted apart (`stepless`).
UNSHARED_KEYS = ("message", "stage", "module")


def _shared(observed: Observed, attempts: Sequence[AttemptResult]) -> Observed:
    """`observed` with the keys of its `expect` that some attempts of its signature missed
    (as the run's judge matches them) set aside: `message` read from the first of them,
    `Expecting ',' delimiter ...`, was missed by the next attempt's `Expecting value ...`
    of the same half-written file, and the spec's own run counted that a miss."""
    if observed.outcome is None:
        return observed
    from reprospec.outcome.judge import judge_attempt
    from reprospec.store.resultsjson import expectation_from_dict

    wanted = expectation_from_dict(expectation(observed)[0])
    missed: Counter[str] = Counter()
    seen = 0
    for attempt in attempts:
        if attempt.ran is None or attempt.ran.signature != observed.signature:
            continue
        seen += 1
        verdict = judge_attempt(attempt.ran, wanted)
        missed.update(k for k in missed_keys(verdict.mismatches) if k in UNSHARED_KEYS)
    unshared = tuple((k, missed[k], seen) for k in UNSHARED_KEYS if missed[k])
    return replace(observed, unshared=unshared)


def _judged(observed: Observed, attempts: Sequence[AttemptResult]) -> Observed:
    """`observed` with the attempts of another signature that its `expect` matches counted
    as its own (alsoseen.matched_by): they are what a run of the spec counts, and neither
    another failure nor missing from the rate."""
    if observed.outcome is None or not observed.others:
        return observed
    expect = expectation(observed)[0]
    matched = observed.matched
    others: list[Observed] = []
    for other in observed.others:
        hits = matched_by(attempts, other.signature, expect)
        matched += hits
        if other.matched > hits:
            others.append(replace(other, matched=other.matched - hits))
    return replace(observed, matched=matched, others=tuple(others))


def observe(attempts: Iterable[AttemptResult]) -> Observed:
    """The outcome to expect: the most common failure signature (a failure over a pass)."""
    ran = [a.ran for a in attempts]
    outcomes = [o for o in ran if o is not None]
    if not outcomes:
        reasons = [a.infra_error for a in attempts if a.infra_error]
        return Observed(None, 0, len(ran), reasons[0] if reasons else "nothing ran")
    failures = [o for o in outcomes if o.kind != "pass"] or outcomes
    ranked = Counter(o.signature for o in failures).most_common()

    def observed(signature: str, count: int) -> Observed:
        chosen = next(o for o in failures if o.signature == signature)
        steps = tuple(o.step for o in failures if o.signature == signature and o.step is not None)
        stepless = sum(1 for o in failures if o.signature == signature and o.step is None)
        held = [
            frozenset(m.type for m in _group_members(o))
            for o in failures
            if _group_members(o)
            and native.agrees(o.signature, signature, native_unknown=True, across_builds=False)
        ]
        common = frozenset.intersection(*held) if _group_members(chosen) and held else frozenset()
        return Observed(
            chosen, count, len(outcomes), steps=steps, stepless=stepless, common_members=common
        )

    first = observed(*ranked[0])
    # A crash whose native frame went unread is the same crash, not another failure.
    others = [
        (signature, count)
        for signature, count in ranked[1:]
        if not native.agrees(signature, first.signature, native_unknown=True, across_builds=False)
    ]
    return replace(first, others=tuple(observed(*other) for other in others))


def _group_members(outcome: Outcome) -> tuple[GroupMember, ...]:
    """The members of the exception group `expect` is read from: the one that ended the
    process, else the last traceback's, where the process went on after it."""
    if outcome.members or outcome.exception or outcome.last_traceback is None:
        return outcome.members
    return outcome.last_traceback.members


def expectation(observed: Observed, hung: str | None = None) -> tuple[JsonObject, dict[str, str]]:
    """`expect` for the observed outcome, and a comment for some of its keys."""
    outcome = observed.outcome
    if outcome is None:
        return {}, {}
    expect: JsonObject = {"outcome": outcome.kind}
    comments: dict[str, str] = {}
    placed = False  # a hang's place said on `outcome`: the "also seen" note goes after it
    # Which process failed decides the crash's exception and the step (one rule with
    # --from-log's); an error's exception is read below, with its traceback.
    keys = process_keys(
        crash=outcome.kind == "crash",
        where=outcome.where,
        exception=outcome.exception,
        step=outcome.step,
        steps=observed.steps,
        stepless=observed.stepless,
        seen=observed.matched,
        # What ran, classified: a main process's crash is its own (where: main).
        certain=True,
        hang=outcome.kind == "hang",
    )
    if outcome.kind == "crash" and outcome.signal:
        expect["signal"] = outcome.signal
        comments["signal"] = crashed_in(outcome.where, xdist=_xdist(outcome))
        if outcome.where == "child" and outcome.cmdline:
            comments["signal"] += f" ({_short(outcome.cmdline)})"
        if outcome.where == "main" and (outcome.detail or "").endswith(AS_A_SHELL_REPORTS_IT):
            # `sh run.sh` exited 139: the status a shell gives when a process it ran dies of
            # the signal. Only the status says so (no process was seen dying): said as such.
            comments["signal"] = (
                f"{outcome.detail}: the status a shell gives when a process it ran dies of it"
            )
            if observed.process:
                comments["signal"] += f" ({_short(observed.process)})"
        elif observed.process and outcome.where not in ("worker", "child"):
            comments["signal"] = _ran_by(observed.process)
        if observed.frame:
            comments["signal"] += f", in {observed.frame}"
        if outcome.signal == "SIGKILL":
            oom = "as the run saw it" if outcome.oom_killed else None
            comments["signal"] += f"; {sigkill_note(oom)}"
        if keys.where is not None:
            expect["where"] = keys.where
    if outcome.kind == "hang" and keys.where is not None:
        # As a worker's crash is expected there: the main process's own hang is another bug.
        expect["where"] = keys.where
        comments["where"] = (
            "the hang is stuck in a DataLoader worker fetching an item"
            if keys.where == "worker"
            else "the hang is stuck in a child process the main one only waits for"
        )
    message = outcome.message
    # The group's members as `observe` chose them (`_group_members`), and those every
    # matching attempt held (None where none were counted: its first member, as a log's).
    members = _group_members(outcome)
    held = observed.common_members
    if outcome.kind == "error" and outcome.exception:
        expect["exception"] = outcome.exception
        group = group_expectation(outcome.exception, members, held)
        if group is not None:
            expect["exception"], message, comments["exception"] = group
    elif outcome.kind == "error" and outcome.last_traceback is not None:
        # Printed, then the process exited its own way (a handled exception it logged, a
        # child's under `make`): the judge matches the last traceback printed too, and an
        # exception group's members in it, by the same rule as the exception's.
        last = outcome.last_traceback
        expect["exception"] = last.type
        comments["exception"] = (
            f"the last traceback printed; the process went on and exited {outcome.exit_code}"
        )
        group = group_expectation(last.type, members, held, ended=False)
        if group is not None:
            # The process's own last line stays its message (`giving up after 3 retries`),
            # the member's only where that line is the group's: its own line, as the
            # outcome reads a group printed last (`ExceptionGroup: x (1 sub-exception)`),
            # or its closing rule, as an earlier run's results read it (review).
            expect["exception"], member_message, member = group
            own = message is not None and message.partition(":")[0] == last.type
            if not message or own or closes_a_group(message):
                message = member_message
            comments["exception"] += f"; {member}"
    elif outcome.kind == "crash" and keys.exception:
        expect["exception"] = keys.exception
    if outcome.kind == "error" and message:
        expect["message"] = message_pattern(message, observed.volatile, observed.secrets)
    if outcome.kind == "error" and not outcome.exception and outcome.exit_code is not None:
        expect["exit_code"] = outcome.exit_code
        detail = outcome.detail or ""
        sent = A_SHELLS_SIGKILL_SENT_BY_A_PROCESS in detail
        if sent or A_SHELLS_137_OR_AN_EXIT_STATUS in detail:
            # 137 a `timeout -s KILL` gave: an error only where the machine counted no OOM
            # kill while it ran (rule 4), which a rerun beside another's OOM kill cannot say.
            # A kill only where the run saw one; else as likely the program's own `exit 137`.
            why = SIGKILL_SENT_BY_A_PROCESS if sent else SIGKILL_OR_AN_EXIT_STATUS
            comments["exit_code"] = (
                f"{why} (no OOM kill during the attempt): not a crash; a crash SIGKILL where "
                "the machine counts an OOM kill as it runs, or no count is read (the docker "
                "runner, a bundle's run.sh)"
            )
    if outcome.phase is not None:
        expect["phase"] = outcome.phase
    if keys.step is not None:
        expect["step"] = keys.step
    if outcome.kind != "pass" and outcome.stage is not None:
        expect["stage"] = outcome.stage
    if outcome.kind != "pass" and outcome.module is not None:
        expect["module"] = outcome.module
    for key, missed, of in observed.unshared:
        # Not met by every attempt of the failure (_shared): expecting it made the spec's
        # own run count those a miss.
        expect.pop(key, None)
        comments.pop(key, None)
        text = f"{missed} of {of} attempts {unshared_note(key)}"
        keys = replace(keys, comments=(*keys.comments, (key, text)))
    for key, text in keys.comments:
        at = comment_key(key, expect)
        comments[at] = f"{comments[at]}; {text}" if at in comments else text
    if outcome.kind == "hang" and hung is not None:
        comments["outcome"] = f"while importing {hung} (its stack shows it)"
    elif outcome.kind == "hang" and (child := outcome.crashed_child) is not None:
        # The cause nobody sees in the hang's stacks: a worker's death a pool never noticed.
        comments["outcome"] = (
            "after a child process"
            + (f" ({_short(child.cmdline)})" if child.cmdline else "")
            + (f" died of {child.signal}" if child.signal else " terminated abruptly")
        )
    elif outcome.kind == "hang" and observed.frame:
        # Where it sat, as the title says and a crash's `signal` comment names its frame:
        # `expect` has no key for a place, and a C program's hang read `outcome: hang` alone.
        comments["outcome"] = f"hung in {observed.frame}"
        if observed.process:
            # A launcher's child, as the title says it and a crash's `signal` comment does;
            # below a child the main process waits for, that child first, as the title.
            below = _child_ran(outcome) if outcome.where in ("worker", "child") else ""
            comments["outcome"] = f"hung {below}{_ran_by(observed.process)}, in {observed.frame}"
        elif _child_placed(outcome):
            comments["outcome"] = f"hung {_child_ran(outcome)}in {observed.frame}"
        placed = True
    # The other failures seen are said on `outcome`, after the hang's place, but not beside
    # a hang's cause (the import, the dead child): that line says it alone, and the
    # description lists the others all the same.
    if observed.others and (placed or "outcome" not in comments):
        other = observed.others[0]
        more = (
            f" and {plural(len(observed.others) - 1, 'other')}" if len(observed.others) > 1 else ""
        )
        seen = (
            f"also seen: {other.signature} in {other.matched}/{other.attempts}{more}; "
            "the description says how to expect it"
        )
        comments["outcome"] = f"{comments['outcome']}; {seen}" if placed else seen
    bound = rate_bound(observed.matched, observed.attempts)
    if bound is not None:
        expect["rate"] = bound
        comments["rate"] = f"observed {observed.matched}/{observed.attempts}"
        if bound == ">0":
            # Judged on its interval, `>0` is met by one match and refuted by no count of
            # clean attempts: a fixed bug stays `undecided`. Said where it is written, with
            # a bound half the observed rate and the clean attempts that would refute it
            # (the 95% interval's high end of 0/n below it).
            floor, refute = refuting_bound(observed.matched, observed.attempts)
            comments["rate"] += (
                f"; met by one match, never refuted: to tell a fix, raise it (`>={floor:g}`) "
                f"and run with --repeat {refute}"
            )
    return expect, comments


def _ran_by(process: str) -> str:
    """`in a process it ran (seg)`: a crash whose core is another program's than the
    command's (a shell's child), as a child's is said (`in a child process (seg)`), though
    the engine counts it the main process's (its shell's exit status 139 said the signal):
    `sh: SIGSEGV in main@seg` read as if sh crashed; and a hang whose native place is such
    a process's (`make: hang in clock_nanosleep@libc<-main@nap` read as if make slept)."""
    return f"in {ran_process(process)}"


def _child_ran(outcome: Outcome) -> str:
    """`in a child process (pp), `: the child a Python program waits for, before the
    process it ran that a hang's native place is in (`_ran_by`), as the run's line says
    `(child pid N: ./pp) in a process it ran (nap), in ...`; a long command cut as that
    line cuts it (a title is one line)."""
    named = f" ({shorten_command(_short(outcome.cmdline), 60)})" if outcome.cmdline else ""
    return f"{crashed_in(outcome.where, xdist=_xdist(outcome))}{named}, "


def _child_placed(outcome: Outcome) -> bool:
    """Whether a hang is placed in the native stack of the child its Python program only
    waits for (`subprocess.run(["./nap"])`: `hung_native`, no Python frame of its own) and
    that child's command is known: the title and comment name it (`run.py: hang in a child
    process (nap), in ...@nap`), as the run's line does (`(child pid N: ./nap) in ...`) and
    as a place one level further down names both; it read `in a child process in ...`."""
    return (
        outcome.kind == "hang"
        and outcome.where == "child"
        and outcome.hung_in is None
        and bool(outcome.hung_native and outcome.cmdline)
    )


def _short(cmdline: str) -> str:
    """`/venv/bin/python3 work.py 2` -> `python3 work.py 2`: the program, not the path here."""
    program, _, rest = cmdline.partition(" ")
    return f"{program.rsplit('/', 1)[-1]} {rest}".strip()


def chosen_interpreter(
    argv: Sequence[str], python: str | None, workdir: Path
) -> tuple[tuple[str, ...], str | None]:
    """The command and the interpreter its runs take (`--python`): the one given; else the
    one the command names by path (`/opt/py/bin/python t.py` becomes `python t.py` run
    with it: the spec holds no path of this machine, and its packages are checked against
    the interpreter that has them), or whose path a script it runs has on its `#!` line (a
    `pytest` of another environment), or that uv's `#!/bin/sh` trampoline execs; else
    None, the engine's own. Its packages are the ones the spec pins: the engine's were
    pinned for a command another interpreter ran, and the packages only that one had
    were left out."""
    from reprospec.core.shellline import shebang_python

    words = list(argv)
    # The program past its variables and wrappers (`timeout 60 /opt/py/bin/python t.py`).
    at = program_start(words)
    if python is not None or at is None or at >= len(words):
        return tuple(words), python
    if any(ENV_PROGRAM.match(word) for word in words[:at]):
        # Past `env` the program's PATH is env's to set (`env -i`: none, the default path),
        # not the run's, which puts --python's folder first: the interpreter keeps its path.
        return tuple(words), None
    program = words[at]
    if "/" in program and is_python(program):
        words[at] = "python"
        return tuple(words), _not_ours(str(program_file(program, workdir).absolute()))
    found = _program_path(program, workdir)
    # Its `#!` line's Python, or the one uv's and distlib's `#!/bin/sh` trampoline execs
    # (an environment at a long path): the runner's reading of it (`shebang_python`).
    interpreter = shebang_python(Path(found)) if found else None
    if interpreter is not None and interpreter.startswith("/"):
        bin_folder = os.path.realpath(Path(interpreter).parent)
        if (
            found
            and "/" in program
            and os.path.realpath(Path(found).parent) == bin_folder
            and declared_script(Path(bin_folder) / Path(program).name)
        ):
            # An environment's console script by its path (`/home/me/.venv/bin/pytest`),
            # beside the interpreter its `#!` names: by its name, as that interpreter is,
            # which the run's environment provides. The spec held the path of this machine.
            # The folders are compared real (`../venv/bin/tool`, a linked `.venv`), not the
            # interpreter, which links out of its environment. A script there that no
            # installed distribution declares (written there by hand) keeps its path
            # (declared_script: the rule a ticket's reader asks too).
            words[at] = Path(program).name
        return tuple(words), _not_ours(interpreter)
    return tuple(words), None


def _program_path(program: str, workdir: Path) -> str | None:
    """The file a command's program word runs: PATH's for a bare name, else the path from
    the workdir, a `~` expanded as the shell did (`~/.venv/bin/train`: `program_file`)."""
    if "/" not in program:
        return shutil.which(program)
    return str(program_file(program, workdir))


def _names_python(argv: Sequence[str], workdir: Path) -> bool:
    """Whether the command's program (past its variables and wrappers) runs Python, or may
    (`runs_python`: Python, a `.py` script, one whose `#!` names Python, a shell, a
    launcher): a Python of it that ran without the engine's sitecustomize (`python -I`,
    `-S`), which records nothing, ran all the same."""
    from reprospec.core.shellline import runs_python

    words = list(argv)
    at = program_start(words)
    if at is None or at >= len(words):
        return True  # no program found past the wrappers: not sure, so Python's

    def file_of(word: str) -> Path | None:
        found = _program_path(word, workdir)
        return Path(found) if found else None

    return runs_python(words[at], file_of(words[at]), words[at + 1 :], file_of)


def _elsewhere(run_dir: Path, attempts: Sequence[AttemptResult]) -> Path | None:
    """The installed-packages folder the program's Python ran with, where it is not the
    engine's own, whose versions capture pins where neither --python nor the command
    names another (a shell script that activates a venv): see foreign_packages."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    own = (*site.getsitepackages(), paths["purelib"], paths["platlib"])
    return foreign_packages(searched(run_dir, attempts), (Path(p) for p in own))


def _not_ours(python: str) -> str | None:
    """`python`, or None where it is the engine's own (its environment's folder: a venv's
    `python` and `python3` are one): "it ran with --python" of reprospec's own
    interpreter put a path of this machine in the spec for nothing."""
    same_folder = Path(python).absolute().parent == Path(sys.executable).absolute().parent
    same_binary = Path(python).resolve() == Path(sys.executable).resolve()
    # Both: /usr/bin/python3.9 beside an engine of /usr/bin/python3.11 is another one.
    return None if same_folder and same_binary else python


def _draft(
    request: Request,
    proposal: Proposal,
    workdir: Path,
    spec_path: Path,
    *,
    name: str,
    presets: tuple[str, ...],
    files: tuple[str, ...] = (),
    packages: tuple[str, ...] = (),
    python: str | None = None,  # the interpreter's version; None: the engine's own
    # Whether Python ran or may (False: a C program's): the interpreter's variables of the
    # shell are relevant only then (footprint.environment_lines).
    runs_python: bool = True,
    observed: Observed | None = None,
    hydra: tuple[str, ...] = (),
    last_import: str | None = None,
    run_id: str = "",
    paths: Mapping[str, str] | None = None,  # the run's (RunResult.paths): named short
    not_carried: tuple[str, ...] = (),
    local: tuple[LocalInstall, ...] = (),
    notes: tuple[str, ...] = (),
) -> Draft:
    relative = os.path.relpath(workdir, spec_path.parent)
    uses_torch = any(p.lower().startswith("torch==") for p in packages)
    expect, comments = expectation(observed, last_import) if observed else ({}, {})
    kind = observed.outcome.kind if observed and observed.outcome else None
    axes = tuple(axis_for(toggle, uses_torch, kind) for toggle in proposal.toggles)
    # The command as typed is quoted: its secrets are masked there (whole, or a part the
    # program printed into the message the title quotes).
    secrets = secret_values(proposal.secret_env)
    header = tuple(
        mask_parts(line, secrets)
        for line in _header(request, observed, hydra, proposal, last_import, run_id)
    )
    if not_carried:
        # Said in the spec, which a bundle carries, not only on capture's console: a reader
        # of the bundle got FileNotFoundError with nothing naming what to ask for.
        header += ("Read but not in files (ask whoever captured it): " + ", ".join(not_carried),)
    header += tuple(local_note(install, workdir) + "." for install in local)
    header += tuple(f"{note[0].upper()}{note[1:]}." for note in notes)
    return Draft(
        name=name,
        title=mask_parts(_title(request.argv, observed, expect, last_import), secrets),
        description=mask_parts(
            _description(request.argv, observed, last_import, PathNames(paths or {}).shorten),
            secrets,
        ),
        workdir=relative,
        command=proposal.command,
        files=files,
        python=f"{sys.version_info.major}.{sys.version_info.minor}" if python is None else python,
        packages=packages,
        env=reaching(
            with_import_roots(
                environment_lines(os.environ, proposal, uses_torch, python=runs_python),
                local,
                workdir,
            ),
            proposal,
        ),
        matrix=axes,
        presets=presets,
        timeout=f"{request.timeout_s:g}s",
        # As many attempts as the rate bound was read from: what the verify rerun runs, and
        # what a plain `reprospec run` of the spec needs to decide the bound the same way.
        repeat=request.repeat if "rate" in expect else None,
        expect=expect,
        expect_comments=comments,
        header=header,
    )


def _header(
    request: Request,
    observed: Observed | None,
    hydra: tuple[str, ...],
    proposal: Proposal,
    last_import: str | None,
    run_id: str,
) -> tuple[str, ...]:
    if observed is None:
        return (
            "A first draft that `reprospec capture` is running; it is rewritten when the",
            "run ends (a capture stopped before that leaves this draft: capture again with",
            "--force).",
        )

    # shell_line: a comment holds no line break, and a `-c` program of several lines read
    # `-c 'import os os.abort()'`, a command that never ran. The command on a line of its
    # own, indented (render_spec wraps no such line): wrapped in the sentence, a long one
    # broke mid-backquote over lines that could not be copied back.
    lines = [
        "Written by this command" + (f" (run {run_id}):" if run_id else ":"),
        f"  reprospec capture -- {shell_line(request.as_typed)}",
    ]
    if request.bound is not None:
        lines.append(request.bound.note(f"{request.timeout_s:g}s") + ".")
    lines += tidied_lines(request.tidied)
    if request.python is not None:
        # Relative where it lies in the workdir: a home path here went into every bundle.
        shown = shell_line([relative_python(request.python, Path.cwd())])
        shell = request.shell
        ran = (
            f"{shown}, the `{shell.name}` of your shell's PATH"
            if shell is not None and shell.taken
            else f"--python {shown}"
        )
        lines.append(
            f"It ran with {ran}, whose packages it pins: rerun it with --python {shown}, "
            "or with --runner venv."
        )
    if proposal.toggles:  # a command without settings of its own has no axis to widen
        lines += [*AXES_NOTE, observe_line(shell_line([_shown(request.output)]))]
    lines += [kept_note(kept) for kept in proposal.kept]
    if proposal.unsure:
        lines.append(unsure_note(Path(proposal.unsure).name))
    if hydra:
        extra = [o for o in hydra if o not in request.argv]
        lines.append(
            "Hydra's overrides.yaml: "
            + ", ".join(hydra)
            + (f" ({', '.join(extra)} not on the command line)" if extra else "")
        )
    if observed.outcome is None:
        lines.append(f"No attempt ran: {observed.infra_error}")
    del last_import
    return tuple(lines)


def _xdist(outcome: Outcome) -> bool:
    """Whether the crashed child is a pytest-xdist worker, as the classifier knows it (xdist
    said which test it died running)."""
    return xdist_worker_crash(outcome.where, outcome.detail)


def _title(
    argv: tuple[str, ...],
    observed: Observed | None,
    expect: JsonObject,
    last_import: str | None = None,
) -> str:
    """`train.py: SIGSEGV in a DataLoader worker in __getitem__ (data.py:12), main loop at
    train`: the failure, where it died (the crashed process's own frame), and the phase and
    step as `expect` states them, said to be the main loop's for another process's crash.
    The outcome's step is the main loop's, which noticed a worker's death some steps later
    (prefetching): `SIGSEGV in a DataLoader worker at train step 10` named a step the worker
    never died at, while `expect` said no step could be expected."""
    # The program past its variables and wrappers: `timeout 60 sh run.sh` is `sh`'s.
    stem = script_of(argv) or next(iter(program_words(argv) or argv), "command")
    outcome = observed.outcome if observed else None
    if outcome is None or observed is None:
        return f"{stem}: captured"
    if outcome.kind == "pass":
        return f"{stem} passes"
    what = {
        "crash": f"{outcome.signal or 'crash'}",
        "error": outcome.exception or f"exit {outcome.exit_code}",
        "hang": "hang",
    }.get(outcome.kind, outcome.kind)
    where = (
        f" {_child_ran(outcome)}{_ran_by(observed.process)},"
        if outcome.kind == "hang" and outcome.where in ("worker", "child") and observed.process
        else f" {_child_ran(outcome).removesuffix(', ')},"
        if _child_placed(outcome) and observed.frame
        else f" {crashed_in(outcome.where, xdist=_xdist(outcome))}"
        if outcome.where in ("worker", "child")
        else f" {_ran_by(observed.process)},"
        if outcome.kind in ("crash", "hang") and observed.process
        else ""
    )  # fmt: skip
    if outcome.kind == "hang" and (child := outcome.crashed_child) is not None:
        # The hang's likely cause, which its stacks (the parent's, waiting) do not show.
        where = " after a child process " + (
            f"died of {child.signal}" if child.signal else "terminated abruptly"
        )
    elif outcome.kind == "hang" and last_import:
        # Where it hung, as the description and `expect`'s comment say: the title read
        # `main.py: hang`, a report's headline that said nothing of the import. Not a
        # `where`: no other process's, so its phase is no "main loop" beside it.
        what += f" while importing {last_import}"
    # A hang while importing is said by the import; after a child's death, by the child
    # (the frame is the parent's, waiting). A worker's or a child's hang is named by its
    # own frame (Outcome.hung_in), as a crash there is.
    told = outcome.kind == "hang" and bool(last_import or outcome.crashed_child is not None)
    frame = f" in {observed.frame}" if observed.frame and not told else ""
    phase, step = expect.get("phase"), expect.get("step")
    if isinstance(phase, str) and is_test_id(phase):
        # pytest's test, by its node id: what a reader reruns alone, and where it failed.
        return f"{phase}: {what}{where}{frame}"
    at = (f" at {phase}" + (f" step {step}" if step is not None else "")) if phase else ""
    if at and where:
        at = f", main loop{at}"
    return f"{stem}: {what}{where}{frame}{at}"


# A process's id as the engine's words name one: `worker 1 (pid 42)`, `a DataLoader worker
# pid 4242`, `child pid 4242 (./test_ops)`.
_PID = re.compile(
    r" \(pid \d+\)|(?P<lead>\s?)\b(?:(?P<child>child) )?pid \d+(?P<s>'s)?(?P<space> ?)"
)


def tidied_lines(tidied: tuple[tuple[str, str], ...]) -> list[str]:
    """The header's lines on the words capture wrote without `..` (`tidied_paths`): each
    (typed, written) pair once, on an indented line of its own, which render_spec leaves
    unwrapped. Not the whole command again (the spec's `command:` has it); in the sentence,
    a path with a space in it wrapped inside its quotes over lines no one could copy."""
    if not tidied:
        return []
    return [
        "Its command names these files by paths without `..` (the same files, which a copy"
        " of the workdir holds without the folders they passed):",
        *(
            f"  {shell_line([typed])} -> {shell_line([short])}"
            for typed, short in dict.fromkeys(tidied)
        ),
    ]


def without_pids(detail: str) -> str:
    """`detail` without the ids of the capture's own processes: `a DataLoader worker pid
    23263 died of SIGSEGV` read in a spec written to be rerun, and every report of its
    runs showed that pid of one past process above its own failure's."""

    def said(match: re.Match[str]) -> str:
        if match.group(0).startswith(" ("):
            return ""  # `worker 1 (pid 42)`
        # What followed the pid stays joined as it was: `pid 4200's threads`, `(pid 42:`.
        after = (match["s"] or "") + match["space"]
        before = re.search(r"(\w+)$", match.string[: match.start()].rstrip())
        if not match["child"] and before and before.group(1).lower() in PID_NOUNS:
            return after  # `the DataLoader worker pid 42`: the noun stays
        # A pid that is the clause's subject (`; pid 42 (python x.py), the first process
        # of the pipeline`, `killed by pid 42, then`): without it the clause read `; (python
        # x.py), the first ...`.
        return f"{match['lead']}{'a child process' if match['child'] else 'a process'}{after}"

    return _PID.sub(said, detail)


def _description(
    argv: tuple[str, ...],
    observed: Observed | None,
    last_import: str | None,
    short: Callable[[str], str] = str,
) -> str:
    """What happened, in words; `short` names the run's paths as its report does (a hung
    worker's frame read `in /home/alice/proj/wh.py:9`: the capturer's folder, in a spec
    written to be sent, and in every report of its runs)."""
    outcome = observed.outcome if observed else None
    lines = [f"Captured from `{shlex.join(argv)}`."]
    if outcome is not None and observed is not None:
        n = observed.attempts
        lines.append(
            f"It ended `{outcome.signature}` in {observed.matched} of "
            f"{plural(observed.attempts, 'attempt')}"
            + (f": {without_pids(short(outcome.detail))}" if outcome.detail else ".")
        )
        if outcome.kind == "hang" and last_import:
            lines.append(f"It hung while importing `{last_import}` (its stack shows the import).")
        for other in observed.others:
            lines.append(
                f"It also ended `{other.signature}` in {other.matched} of "
                f"{plural(other.attempts, 'attempt')}, which `expect` does not match; to expect "
                f"it: `--set {set_expect(expectation(other)[0])}`."
            )
        if observed.others and as_often(observed.matched, observed.others[0].matched):
            second = observed.others[0]
            counts = (observed.matched, second.matched)
            said = by_chance(f"`{outcome.signature}`", f"`{second.signature}`", counts, n)
            lines.append(said[0].upper() + said[1:] + ".")
        if observed.others:
            failed, fail = _any_failure(observed)
            lines.append(
                f"`--set {set_expect(fail)}` expects any failure ({failed} of "
                f"{observed.attempts} failed)."
            )
    return "\n".join(lines)


def _any_failure(observed: Observed) -> tuple[int, JsonObject]:
    """How many attempts failed, and the `expect` that matches any failure at that rate."""
    failed = observed.matched + sum(other.matched for other in observed.others)
    expect: JsonObject = {"outcome": "fail"}
    bound = rate_bound(failed, observed.attempts)
    if bound is not None:
        expect["rate"] = bound
    return failed, expect


def _also_seen(observed: Observed, run: str) -> list[str]:
    """What capture says of the failures its spec does not expect (alsoseen.py): each with
    its count and the `--set` that runs the spec for it; that which of the two most common
    the spec expects is chance, when chance could have swapped them; and the `expect` of
    any failure."""
    if not observed.others:
        return []
    lines = [
        f"also seen: {other.signature} in {other.matched}/{plural(other.attempts, 'attempt')}, "
        f"which the spec's expect does not match; for it: {run} --set "
        + set_expect(expectation(other)[0])
        for other in observed.others
    ]
    second = observed.others[0]
    if as_often(observed.matched, second.matched):
        counts = (observed.matched, second.matched)
        said = by_chance(observed.signature, second.signature, counts, observed.attempts)
        lines.append(f"{said}; to chase the other, run the spec for it as above, or capture again")
    failed, fail = _any_failure(observed)
    lines.append(f"for any failure ({failed}/{observed.attempts}): {run} --set {set_expect(fail)}")
    return lines


def _again(request: Request, spec_path: Path) -> str:
    """The capture command again with more attempts (`--repeat`, at least 20), for a failure
    the verify suggests comes and goes: one attempt that failed and one that missed tell a
    flaky failure from one needing a cause no better than a coin."""
    repeat = max(20, 4 * request.repeat)
    timeout = f" --timeout {request.timeout_s:g}s" if request.timeout_s != DEFAULT_TIMEOUT_S else ""
    python = f" --python {shlex.quote(request.python)}" if request.python is not None else ""
    out = f" --out {shlex.quote(str(request.out))}" if request.out != Path(".reprospec") else ""
    return (
        f"reprospec capture --repeat {repeat}{timeout}{python}{out} --force "
        f"-o {shlex.quote(_shown(spec_path))} -- {shlex.join(request.as_typed)}"
    )


def _summary(observed: Observed) -> str:
    outcome = observed.outcome
    if outcome is None:
        return f"nothing ran ({observed.infra_error})"
    return f"{outcome.signature} in {observed.matched}/{plural(observed.attempts, 'attempt')}"


def _name(stem: str, observed: Observed) -> str:
    parts = [stem]
    if observed.outcome is not None:
        parts += [observed.outcome.kind]
        if observed.outcome.signal:
            parts.append(observed.outcome.signal.lower())
        elif observed.outcome.exception:
            parts.append(bare_type(observed.outcome.exception).lower())
    return slug("-".join(parts))


def _script_dir(argv: tuple[str, ...], workdir: Path) -> Path:
    script = script_of(argv)
    if script and script.endswith(".py"):
        return (workdir / script).resolve().parent
    return workdir


def _with_progress(
    outcome: Outcome,
    run_dir: Path,
    attempts: list[AttemptResult],
    presets: tuple[str, ...],
    *,
    pytest: bool = False,
) -> Outcome:
    """The outcome's phase and step as the detected presets alone would have reported them.

    The first run matches every preset; a stray line that fits one the output does not
    otherwise use must not decide the expected phase. The attempt's events are read
    again, keeping only the marker events of the detected presets. A pytest command's
    failing test is no marker's: the classifier read it from pytest's report, as it
    will again in every rerun, so it stays; so does a hang's under pytest-xdist (the
    test its workers had started and not ended, or none where several were running).
    """
    from reprospec.outcome.classify import failure_signature
    from reprospec.outcome.evidence import Events, iter_events

    wanted = [re.compile(m.pattern) for name in presets for m in PRESETS[name].markers]
    for attempt in attempts:
        if attempt.ran is None or attempt.ran.signature != outcome.signature:
            continue
        if pytest:
            text = attempt_output(run_dir, attempt)
            failed = first_failure(text) if outcome.phase is not None else None
            if failed is not None and failed.test == outcome.phase:
                return outcome
            if outcome.kind == "hang" and xdist_running(text) is not None:
                # The test pytest-xdist's workers had started and not ended (or none, where
                # several had): -v's last line is another worker's test, in any order.
                return outcome
        kept: list[JsonObject] = []
        for event in iter_events(run_dir / attempt.logs / "events.jsonl"):
            if event.get("event") == "marker":
                line = event.get("line")
                if not isinstance(line, str) or not any(p.search(line) for p in wanted):
                    continue
            kept.append(event)
        summary = Events.of(kept)
        if summary.phase == outcome.phase:
            return replace(outcome, step=summary.step)
        # The exception as the signature names it (a group's with its members: `ExceptionGroup[
        # ValueError]`), so that the base found below is the engine's own.
        named = outcome.named_exception
        parts = (outcome.kind, outcome.signal, outcome.where, named, outcome.exit_code)
        crashed = outcome.crashed_child
        before = failure_signature(*parts, outcome.phase, outcome.injected, crashed=crashed)
        # What the engine added after the base (the native frame: `:strlen@libc`) stays.
        extra = outcome.signature[len(before) :] if outcome.signature.startswith(before) else ""
        signature = (
            failure_signature(*parts, summary.phase, outcome.injected, crashed=crashed) + extra
        )
        return replace(outcome, phase=summary.phase, step=summary.step, signature=signature)
    return outcome


def _shown(path: Path) -> str:
    """`path` as the user would type it here: relative, unless that climbs out more than
    two folders (`-o /srv/x.yaml` read `../../../../srv/x.yaml`)."""
    try:
        shown = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if Path(shown).parts[:3] == ("..", "..", "..") else shown
