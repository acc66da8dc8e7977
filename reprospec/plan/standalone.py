"""The "standalone repro" of a run: one cell reproduced without reprospec or the spec.

The cell is the first that failed (else the first that ran), as its first failed
attempt ran it (an attempt's own values, `--seed ${{ attempt }}`). A command cell is
its command line, with its variables and a `cd` into its workdir, and the files
of the workdir the command names (workfiles.py); a workload cell is a generated
repro.py (reproscript.py). Runner settings a plain command line does not apply
(`shm_size`, `memory`, an image, packages) are named in its notes, so nobody
mistakes a run without them for the same experiment.

A repro is offered only for what it reproduces. A cell of `run.instances: N` is
the loop that starts N copies together, each with its instance's variables, all
sharing one fresh TMPDIR and XDG_CACHE_HOME as the attempt's instances did (one
command line started N times is N rank-0s). A failure the spec injected
(`workload.faults`) has no standalone repro: repro.py leaves the faults out, so
the section says so instead of offering a script that passes.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from reprospec.core import shellline
from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.redact import MASK, Redactor, sets_secret
from reprospec.core.results import CellResult, Standalone
from reprospec.core.sections import DEFAULT_IMAGE, Command, fault_armed, same_python
from reprospec.core.units import format_duration, format_size
from reprospec.core.words import attempts_phrase
from reprospec.plan.run import RunPlan
from reprospec.plan.workfiles import named_files

REPRO_PY = "repro.py"


def choose_cell(cells: Sequence[CellResult]) -> CellResult | None:
    """The cell a standalone repro is for: the first where the expected failure reproduced,
    else the first that failed, else the first that ran.

    As the report's Failure section chooses (report/failure.py `failing_cells`): a run whose
    first failing cell raised an unexpected ValueError offered that cell's command line under
    a headline and a Failure section that lead with the expected SIGSEGV.
    """
    # One pass, holding no list of the cells: a large run's are made as they are read.
    first_failed = first_ran = None
    for cell in cells:
        if any(a.ran is not None for a in cell.attempts):
            if any(a.failed for a in cell.attempts):
                if cell.failure_reproduced:
                    return cell
                first_failed = first_failed or cell
            first_ran = first_ran or cell
    return first_failed or first_ran


def repro_attempt(cell: CellResult) -> int | None:
    """The number of the attempt a cell's standalone repro runs: its first that failed as
    expected, else its first that failed (None: none failed)."""
    return next(
        (a.attempt for a in cell.attempts if a.failed and a.matched),
        next((a.attempt for a in cell.attempts if a.failed), None),
    )


def standalone_for(
    plan: RunPlan,
    cells: Sequence[CellResult],
    *,
    ran_python: str | None = None,
    values: Mapping[str, str | None] | None = None,
    pins: Callable[[AttemptPlan], tuple[str, ...]] | None = None,
    redactor: Redactor | None = None,
) -> Standalone | None:
    """The standalone repro of the run's chosen cell (None when no cell ran).

    `ran_python`: the version of the interpreter the run's attempts had (its environment
    capture), which the notes set beside the spec's `environment.python`. `values`: the
    public values the run read of the engine's variables its spec reads, None of one it
    read unset (store/specvariables.read_as), which the notes on what to export give.
    `pins`: an attempt's packages at the versions the runner installed, where it installed
    them (runners/base.pins_of). `redactor`: the run's secrets, which the command line
    reads from the reader's environment (`standalone_of`)."""
    cell = choose_cell(cells)
    if cell is None:
        return None
    # By the cell's matrix index, not its id: a run's cells are masked (a secret in a
    # matrix value), the plan's are not. The attempt is the cell's first that failed:
    # an attempt's own values (`--seed ${{ attempt }}`) are what made it fail, and
    # attempt 1's command line, which passed, was offered as the repro of attempt 3's crash.
    failed = repro_attempt(cell)
    attempt = None
    for candidate in plan.attempts:
        if candidate.cell.index == cell.cell.index:
            attempt = attempt or candidate
            if failed is None or candidate.attempt == failed:
                attempt = candidate
                break
    if attempt is None:
        return None
    injected = next((o.injected for a in cell.attempts if (o := a.ran) and o.injected), None)
    if injected is not None:
        kind: Literal["command", "workload"] = (
            "command" if isinstance(attempt.job, Command) else "workload"
        )
        return Standalone(
            cell=cell.cell.id,
            kind=kind,
            unavailable=(
                f"its failure is injected by the spec ({injected}), and there is no "
                "standalone repro of an injected failure: without reprospec the fault "
                "does not fire"
            ),
        )
    return standalone_of(
        attempt,
        plan.spec.base_dir,
        expected=attempts_phrase(cell.attempts),
        spec_name=plan.spec.name,
        reads=env_reads(plan.spec.document),
        runner=plan.options.runner,
        ran_python=ran_python,
        values=values,
        pins=pins(attempt) if pins is not None else (),
        redactor=redactor,
    )


def env_reads(document: Mapping[str, JsonValue]) -> dict[str, str]:
    """The attempt's variables the spec sets to one of the engine's whole: `MODE: ${{
    env.NU9A_MODE }}` is {"MODE": "NU9A_MODE"}. A repro line writes them `MODE="$NU9A_MODE"`:
    their values are masked in every report (redact.py), and `MODE=***` set the variable
    to three asterisks."""
    section = document.get("environment")
    given = section.get("env") if isinstance(section, Mapping) else None
    if not isinstance(given, Mapping):
        return {}
    from reprospec.core.expr import ExprError, Name, find_expressions, parse

    reads: dict[str, str] = {}
    for name, raw in given.items():
        if not isinstance(raw, str):
            continue
        try:
            found = find_expressions(raw)
            whole = len(found) == 1 and (found[0].start, found[0].end) == (0, len(raw))
            node = parse(found[0].text) if whole else None
        except ExprError:  # validated before it got here; a bad one reads nothing
            continue
        if isinstance(node, Name) and len(node.parts) == 2 and node.parts[0] == "env":
            reads[str(name)] = node.parts[1]
    return reads


def standalone_of(
    plan: AttemptPlan,
    spec_dir: Path,
    *,
    expected: str = "",
    spec_name: str = "",
    reads: Mapping[str, str] | None = None,
    runner: str = "local",
    ran_python: str | None = None,
    values: Mapping[str, str | None] | None = None,
    pins: Sequence[str] = (),
    redactor: Redactor | None = None,
) -> Standalone:
    """How to run `plan` without reprospec: its command line, or a generated repro.py.
    `reads`: the variables the spec reads from the engine's environment (`env_reads`), and
    `values` the public ones' values as the run read them (None: unset); `runner`,
    `ran_python`: what ran it, which decides what its notes say it applied; `pins`: the
    cell's packages at the versions the runner installed (`six==1.16.0`); `redactor`: the
    run's secrets, each written in the command as the variable it came from, `"$HF_TOKEN"`
    (Redactor.shell_text), where the run's masking made it a bare `***`, a glob."""
    workdir = _relative(plan.workdir, spec_dir)
    reads = {k: v for k, v in (reads or {}).items() if k in plan.env}
    exports = _exports(reads, values or {})
    if isinstance(plan.job, Command):
        files = named_files(plan)
        words, inside = _assignments(plan.env, reads, redactor)
        command, named = _shell_line(plan, words, redactor)
        line = " ".join([*words, command])
        exports = _exports(
            reads, values or {}, (*inside, *named), _written(plan.env, reads, redactor)
        )
        line = instances_loop(plan, line) if plan.copies > 1 else _with_shm(plan, line)
        if workdir != ".":
            # A loop of instances is several lines: the `cd` stands on its own.
            glue = "\n" if "\n" in line else " && "
            line = f"cd {shlex.quote(workdir)}{glue}{line}"
        return Standalone(
            cell=plan.cell.id,
            kind="command",
            run=line,
            env=_masked(plan.env),
            workdir=workdir,
            files=files,
            notes=(*exports, *_unapplied(plan, runner, ran_python, pins)),
        )
    armed = _armed_faults(plan)
    if armed and plan.expectation.outcome != "pass":
        return Standalone(
            cell=plan.cell.id,
            kind="workload",
            unavailable=(
                f"its expected failure is injected by the spec ({armed}), and there is no "
                "standalone repro of an injected failure: without reprospec the fault "
                "does not fire"
            ),
        )
    from reprospec.plan.reproscript import Unsupported, generate

    try:
        script = generate(plan, expected=expected, spec_name=spec_name, reads=reads)
    except Unsupported as exc:
        return Standalone(cell=plan.cell.id, kind="workload", unavailable=str(exc))
    prefix = " ".join(_assignments(script.start_env, reads)[0])
    start = f"{prefix + ' ' if prefix else ''}python {REPRO_PY}"
    return Standalone(
        cell=plan.cell.id,
        kind="workload",
        run=instances_loop(plan, start) if plan.copies > 1 else _with_shm(plan, start),
        env=_masked(plan.env),
        workdir=workdir,
        files=script.needs,
        script=script.text,
        notes=(*exports, *script.notes, *_unapplied(plan, runner, ran_python, pins)),
    )


# Words that open a compound command, or a builtin that changes the shell itself: a line
# that starts with one is no simple command `NAME=value` words can go before.
_SHELL_WORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
     "in", "function", "select", "{", "}", "!", "[[", "]]", ":", ".", "source", "cd", "exit",
     "exec", "return", "logout", "export", "unset", "set", "shift", "eval", "readonly", "local",
     "alias", "trap", "wait", "umask", "ulimit", "break", "continue", "read", "builtin",
     "command", "getopts"}
)  # fmt: skip
# A builtin that ends or replaces the shell that runs it: pasted, it closed the reader's.
_LEAVES_SHELL = frozenset({"exit", "exec", "return", "logout"})


def _shell_line(
    plan: AttemptPlan, words: Sequence[str], redactor: Redactor | None = None
) -> tuple[str, tuple[str, ...]]:
    """The command's text as the repro line runs it: as it is where it is one simple command
    that the variables before it (`words`, the loop's per instance) reach whole, else as the
    runner ran it, `sh -c 'LINE'`.

    The runner runs a string command as `/bin/sh -c LINE` in the cell's environment. Before
    a list or a pipeline, `CRASH=1 cd sub && python3 envcrash.py` set CRASH for the `cd`
    alone, and `MODE=bad test "$MODE" = bad && exit 3` expanded $MODE in the reader's shell,
    before the assignment: neither reproduced, and an `exit` closed the reader's shell. With no
    variables a list runs as it ran, but for one that leaves the shell.

    With the names of the reader's variables it reads a secret from (`redactor`).
    """
    assert isinstance(plan.job, Command)
    text = plan.job.text
    named: tuple[str, ...] = ()
    if redactor is not None:
        text, named = redactor.shell_text(text)
    if plan.job.shell is not None:
        names = set(plan.env) | (set(INSTANCE_VARIABLES) if plan.copies > 1 else set())
        variables = bool(words) or plan.copies > 1
        if (variables and not _simple_command(text, names)) or _leaves_shell(text):
            return f"sh -c {shlex.quote(text)}", named
    return text, named


def _simple_command(line: str, names: set[str]) -> bool:
    """Whether `NAME=value` words before the `/bin/sh -c` line `line` apply to all it runs,
    as they did under `sh -c` with `names` in its environment: one simple command (its
    redirections allowed), no list, pipeline, background job, subshell, comment or compound
    command, no builtin that changes the shell, and no expansion the words would come after
    (`shellline.skeleton`)."""
    skeleton = shellline.skeleton(line, names)
    if skeleton is None:
        return False
    skeleton = shellline.DUPLICATE.sub(" ", skeleton)  # `2>&1` is a redirection, no background job
    if any(char in skeleton for char in ";&|()\n#"):
        return False
    first = next((w for w in skeleton.split() if not shellline.ASSIGNMENT.match(w)), "")
    return first not in _SHELL_WORDS


def _leaves_shell(line: str) -> bool:
    """Whether the `/bin/sh -c` line `line` runs a builtin that ends or replaces the shell
    (`exit 3`, `exec python x.py`), which closes the shell of a reader who pastes it."""
    # Any such word outside quotes, wherever it stands: after `then`, `do`, `!` or `else`
    # it is a command too, and a line wrapped in `sh -c` needlessly still runs as
    # it ran. A line the skeleton cannot read is read by its words.
    skeleton = shellline.skeleton(line)
    words = _WORD_ENDS.split(skeleton if skeleton is not None else line)
    return any(word in _LEAVES_SHELL for word in words)


# What ends a word of a shell line's skeleton: a blank, an operator, a group's brace.
_WORD_ENDS = Lazy(r"[\s;&|(){}!`]+")


def _armed_faults(plan: AttemptPlan) -> str:
    """`workload.faults[0]`: the spec's faults that can fire in this cell ('' for none)."""
    faults = plan.workload.get("faults") if plan.workload is not None else None
    armed = [
        f"workload.faults[{n}]"
        for n, fault in enumerate(faults if isinstance(faults, list) else ())
        if not (isinstance(fault, dict) and not fault_armed(fault.get("when", True)))
    ]
    return ", ".join(armed)


def _with_shm(plan: AttemptPlan, line: str) -> str:
    """`line` with the cell's `/dev/shm` size, as the local runner gives it (a private tmpfs).

    A user and mount namespace of its own (`unshare`), so no root is needed where the
    kernel allows unprivileged user namespaces; /dev/shm outside is untouched.
    """
    size = plan.environment.shm_size
    if not size or plan.environment.image or plan.environment.dockerfile:
        return line
    inner = f"mount -t tmpfs -o size={size} tmpfs /dev/shm && {line}"
    return f"unshare --mount --map-root-user --propagation private sh -c {shlex.quote(inner)}"


# The port every instance's MASTER_PORT names (the engine picks a free one per attempt).
INSTANCES_PORT = 29500
# The variables each copy of `instances_loop` is given, in its order.
INSTANCE_VARIABLES = (
    "REPROSPEC_INSTANCE", "REPROSPEC_INSTANCES", "RANK", "LOCAL_RANK", "WORLD_SIZE",
    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
)  # fmt: skip


def instances_loop(plan: AttemptPlan, line: str) -> str:
    """`line` started as the N instances of `run.instances`, together, as sh runs it.

    Each copy gets its instance's variables (process/childprotocol.Instance: the
    engine's and torchrun's), all of them one fresh TMPDIR and XDG_CACHE_HOME (the
    attempt's, which its instances share; the machine's with `shared_tmp`), and the
    loop exits with the status of the last instance that failed (139: a SIGSEGV).
    """
    n = plan.copies
    values = ("$i", str(n), "$i", "$i", str(n), str(n), "127.0.0.1", str(INSTANCES_PORT))
    variables = " ".join(f"{k}={v}" for k, v in zip(INSTANCE_VARIABLES, values, strict=True))
    shared = (
        ""
        if plan.environment.shared_tmp
        else 'export TMPDIR="$(mktemp -d)" XDG_CACHE_HOME="$(mktemp -d)"\n'
    )
    return (
        f"{shared}pids=\n"
        f"for i in $(seq 0 {n - 1}); do\n"
        f"  {variables} {line} &\n"
        '  pids="$pids $!"\n'
        "done\n"
        "status=0\n"
        'for pid in $pids; do wait "$pid" || status=$?; done\n'
        "(exit $status)"
    )


def _assignments(
    env: Mapping[str, str], reads: Mapping[str, str], redactor: Redactor | None = None
) -> tuple[list[str], tuple[str, ...]]:
    """`NAME=value` words for a command line (reproscript.shell_assignment), `NAME="$FROM"`
    for a variable the spec reads from the engine's (`reads`), and the variables of the
    reader's they read a secret from. The script generator is imported for a workload's
    repro.py or a command with variables: a run of a plain command never builds its
    classes (issue 30, item 4).

    A value holding a secret of a variable the `redactor` knows, `URL: https://me:${{
    env.PW }}@db`, reads it from that variable, `URL='https://me:'"$PW"'@db'`, where the
    repro wrote `URL="$URL"`, a variable no note named."""
    if not env:
        return [], ()
    from reprospec.plan.reproscript import shell_assignment

    words: list[str] = []
    named: list[str] = []
    for k, v in env.items():
        if k in reads:
            words.append(f'{k}="${reads[k]}"')
            continue
        read = redactor.reading_assignment(k, v) if redactor and sets_secret(k, v) else None
        if read is not None:
            words.append(read[0])
            named += read[1]
            continue
        words.append(shell_assignment(k, v))
    return words, tuple(named)


def _written(
    env: Mapping[str, str], reads: Mapping[str, str], redactor: Redactor | None
) -> tuple[str, ...]:
    """The variables whose secret value the spec writes in (`DB_PASSWORD: hunter2-pw`),
    which the command line takes whole from the reader's shell (`DB_PASSWORD="$DB_PASSWORD"`,
    reproscript.shell_assignment, as `_assignments` writes them): no note named them, and
    the repro ran with them empty."""
    return tuple(
        k
        for k, v in env.items()
        if k not in reads
        and sets_secret(k, v)
        and (redactor is None or redactor.reading_assignment(k, v) is None)
    )


def _exports(
    reads: Mapping[str, str],
    values: Mapping[str, str | None],
    also: Sequence[str] = (),
    written: Sequence[str] = (),
) -> tuple[str, ...]:
    """The notes on what the reader must export, as the spec read it: a public variable
    with the value the run read (the bare name `CODE` let a reader export CODE=0 and run
    another program than the run's CODE=3), a secret by name; apart, as the
    bundle's README, what the run read unset, to leave unset (not "export it"). `also`: the
    variables the command line reads a secret from; `written`: those whose secret the spec
    writes in, which the reader's shell must hold too (not "the spec reads" them)."""
    written = [n for n in dict.fromkeys(written) if n not in also]
    names = sorted({*reads.values(), *also} - set(written))
    left = [n for n in names if n in values and values[n] is None]
    said = [f"{n}={shlex.quote(v)}" if (v := values.get(n)) is not None else n for n in names]
    said = [word for n, word in zip(names, said, strict=True) if n not in left]
    ends = (": export {} first", ", unset in the run: leave {} unset")
    notes = tuple(
        f"the spec reads {', '.join(group)} from your environment"
        + end.format("it" if len(group) == 1 else "them")
        for group, end in ((said, ends[0]), (left, ends[1]))
        if group
    )
    if written:
        notes += (
            f"export {', '.join(written)} first (the spec has "
            f"{'its value' if len(written) == 1 else 'their values'} written in, a secret "
            "that no report or bundle holds)",
        )
    return notes


def _masked(env: Mapping[str, str]) -> dict[str, str]:
    # reproscript.shell_assignment's rule, which is the report's (redact.sets_secret).
    return {k: MASK if sets_secret(k, v) else v for k, v in env.items()}


def _relative(path: Path, base: Path) -> str:
    """`path` relative to the spec's folder (up to two levels up), else absolute."""
    try:
        relative = os.path.relpath(path.resolve(), base.resolve())
    except ValueError:
        return str(path.resolve())
    # `../app` reads as the spec wrote it; a path far outside is clearer absolute.
    ups = Path(relative).parts.count("..")
    return str(path.resolve()) if ups > 2 else relative


def _unapplied(
    plan: AttemptPlan,
    runner: str = "local",
    ran_python: str | None = None,
    pins: Sequence[str] = (),
) -> list[str]:
    """The runner settings of the cell that a plain command line does not apply.

    Only what `runner` gave the cell is said to be given: the local runner installs no
    packages and chooses no interpreter (it checks them), and only docker uses an image.
    The notes said "the run gave the cell Python 3.10" of a local run on 3.11.7, and of
    a Dockerfile that was never built."""
    environment = plan.environment
    notes = []
    if plan.copies > 1:
        notes.append(
            f"the run started {plan.copies} copies of this at the same moment "
            "(run.instances), past a start barrier: the loop starts them one after the "
            "other, a few milliseconds apart"
        )
    settings = []
    docker = runner == "docker"
    if docker:
        # Every docker cell ran in an image: the default one too, which a reader without
        # it does not have (the one-line repro under the headline named none, and read as
        # if it ran on the reader's own Python).
        image = environment.image or environment.dockerfile
        settings.append(
            f"the image {image}"
            if image
            else f"the image {DEFAULT_IMAGE} (the default: `reprospec docker setup` builds it)"
        )
    if environment.shm_size and (plan.copies > 1 or docker):
        settings.append(f"/dev/shm of {format_size(environment.shm_size)}")
    elif environment.shm_size:
        notes.append(
            f"`unshare` gives it a private /dev/shm of {format_size(environment.shm_size)}, "
            "as the run did (a user namespace: no root needed where the kernel allows one)"
        )
    if environment.memory:
        settings.append(f"a memory limit of {format_size(environment.memory)}")
    # venv installs the packages, docker too unless a Dockerfile says what the image has.
    installs = runner == "venv" or (docker and not environment.dockerfile)
    wanted = environment.python
    same = bool(ran_python and wanted and same_python(ran_python, wanted))
    if environment.packages and installs:
        # What a range resolved to (`six<1.17`: six 1.16.0): today's resolver may pick a
        # newer release, and the repro should run what the failing run ran.
        line = " ".join(shlex.quote(p) for p in pins)
        resolved = f" (installed as {line}: `pip install {line}`)" if line else ""
        settings.append(f"packages {', '.join(environment.packages)}{resolved}")
    if wanted and runner == "venv" and (same or not ran_python):
        settings.append(f"Python {wanted}")
    if settings:
        notes.append(f"the run gave the cell {', '.join(settings)}; a plain command line does not")
    if environment.packages and not installs:
        notes.append(
            f"the run checked that its interpreter had packages {', '.join(environment.packages)}"
            f" (the {runner} runner installs none); a plain command line runs with whatever "
            "yours has"
        )
    if wanted and ran_python and not same:
        notes.append(f"the spec names Python {wanted}; this run had {ran_python}")
    elif wanted and runner != "venv":
        notes.append(
            f"the spec names Python {wanted}; the {runner} runner does not choose the "
            f"interpreter{f' (this run had {ran_python})' if ran_python else ''}"
        )
    perturbed = environment.perturb.describe()
    if perturbed:
        # An amplified failure: plain, the command fails as rarely as before amplify (a
        # maintainer saw it pass 6 of 6 times where the run failed 4 of 4).
        notes.append(
            f"the run applied environment.perturb ({', '.join(perturbed)}), which makes the "
            "failure frequent; a plain command line does not, so it fails as rarely as before "
            "(`reprospec run` of the spec applies it)"
        )
    hang = hang_note(plan)
    return [*notes, hang] if hang else notes


def hang_note(plan: AttemptPlan) -> str:
    """For a cell expected to hang, when the run stopped waiting and that the command alone
    never does, when to stop waiting (no slower machine's doing); else ""."""
    if plan.expectation.outcome != "hang":
        return ""
    limit = f"{format_duration(plan.timeout_s)} (run.timeout)"
    if plan.stall_s is not None:
        limit = f"no progress for {format_duration(plan.stall_s)} (run.stall)"
    return (
        f"the run called it a hang after {limit} and stopped it; this does not stop by "
        "itself: interrupt it (Ctrl-C) once it has stopped moving"
    )
