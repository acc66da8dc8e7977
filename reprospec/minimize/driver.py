"""`reprospec minimize` as a library: the search of `search.py` driven by real runs.

    from reprospec.minimize.driver import MinimizeOptions, minimize_spec
    found = minimize_spec("specs/segfault-command.yaml", MinimizeOptions(budget=1000))
    found.result.program.lines   # the smallest program seen failing the same way

Each candidate is written into its own folder (the workdir again: the
minimized files written, every other file a symlink to the original) and run
as a normal run through the Python API (`reprospec.run`, purpose "minimize"):
the spec with `environment.workdir`, `command` and `environment.env` set to the
candidate's. The failing cell is judged by its own `expect`, and an attempt
counts as the bug only when its signature is also the original's (kind,
signal or exception, main/worker/child, phase, and the top native frame when
native stacks are on): the nearest segfault is not this one. The passing
cells run with the candidate too (up to four of them, spread over the matrix).
Where the failing cell runs under environment.perturb and the original fails in none
of its attempts without it, a candidate about to be accepted runs once without it too,
and is rejected where it fails so; where the original fails so rarely, it runs up to 8
times, rejected where it fails clearly more often (search.py's point 6). Each attempt's
stderr gives the exception types it printed (any thread's): a candidate whose failure
printed one the original never did is rejected, as is one failing clearly more often
than a flaky original (point 7).
A workload spec's candidates are its numbers (workload.py): each runs as the spec
with `--set` of its values, in the spec's own workdir.

The minimize folder (OUT/minimize/ID/state.json, isolate's StateFile) keeps
which run answered which probe: the search is deterministic, so the same
command after Ctrl-C, or with a larger --budget (ID is not keyed on it:
isolation.state.search_id), replays the stored answers and runs only what is new.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from reprospec import native
from reprospec.core import safepoint
from reprospec.core.atomicfile import unwritable
from reprospec.core.caller import argument
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Spec
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.rates import rate_floor, rate_of
from reprospec.core.redact import Redactor
from reprospec.core.results import AttemptResult, Rate, RunResult
from reprospec.core.runoptions import PathArg, RunOptions, WordSet, check_options
from reprospec.core.trylock import SEARCH_LOCK, try_locked
from reprospec.core.words import interval_bounds, plural
from reprospec.errors import SpecError, UsageError
from reprospec.isolation.candidates import Tally
from reprospec.isolation.differences import MISSING, same_setting
from reprospec.isolation.state import check_out_to_go_on, continuing, held_state, search_id
from reprospec.minimize.hangplace import (
    LOOKS,
    UNREAD,
    attempt_place,
    moved,
    places_said,
    ran_source,
)
from reprospec.minimize.named import unread_listed
from reprospec.minimize.preloadhint import preload_hint, preload_note
from reprospec.minimize.probes import RAISED_FROM, ProbeRunner, only_cell, reread, stored_source
from reprospec.minimize.program import EXPRESSION, Program, split_words
from reprospec.minimize.report import (
    Minimized,
    dir_checked,
    no_passing_words,
    not_the_reduced_cell,
    write,
    write_reports,
)
from reprospec.minimize.search import (
    KeptPerturbed,
    Minimization,
    MinimizeResult,
    Settings,
)
from reprospec.minimize.settings import Reduced, reduce_settings
from reprospec.minimize.source import reduce
from reprospec.minimize.unperturbed import (
    Baseline,
    Side,
    attempts_for,
    check_unperturbed,
    stored_unperturbed,
)
from reprospec.minimize.workload import (
    Field,
    reduce_workload,
    workload_fields,
)
from reprospec.pipeline.searchscope import search_scope
from reprospec.plan.failingcell import Amplified, choose_failing_cell, needs_expect
from reprospec.plan.run import CellExpectations, RunPlan
from reprospec.runners import read_only_refused
from reprospec.spec.yamlsource import Problem, locate

Progress = Callable[[str], None]
MAX_PASSING = 4  # passing cells run with each candidate (spread over the matrix)


@frozen
class MinimizeOptions:
    """What `reprospec minimize` is asked besides the spec."""

    cell: tuple[str, ...] = ()  # -m AXIS=VALUE filters that select the failing cell
    output: Path | None = None  # -o DIR: where the minimized program goes
    budget: int = 1000
    error: float | None = None
    min_rate: float | None = None  # None: the failing cell's expect.rate bound, else 0.3
    run: RunOptions = field(default_factory=lambda: RunOptions(purpose="minimize"))
    command_line: str = ""
    # Off only to compare with the oracle other reducers use (benchmarks/minimize.py):
    # "fails as expected", without the same signature or the passing cells.
    same_signature: bool = True
    passing_cells: bool = True
    # Step 1 (isolate the settings); off only where a caller wants the program step alone.
    settings: bool = True
    # `--amplify PATH` (its folder or amplify.json), whose base rate (the original without
    # the perturbation) the result is compared with unperturbed (unperturbed.py); None:
    # the original is measured without it where the failing cell is perturbed.
    amplified: Path | None = None

    if TYPE_CHECKING:  # a str for a Path, an iterable of str for a tuple (core/runoptions.py)

        def __init__(
            self,
            cell: WordSet = ...,
            output: PathArg | None = ...,
            budget: int = ...,
            error: float | None = ...,
            min_rate: float | None = ...,
            run: RunOptions = ...,
            command_line: str = ...,
            same_signature: bool = ...,
            passing_cells: bool = ...,
            settings: bool = ...,
            amplified: PathArg | None = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        check_options(
            self,
            sets=("cell",),
            counts=("budget",),
            fractions=("error", "min_rate"),
            paths=("output", "amplified"),
            runs=("run",),
        )


# Under run.preload, every run of the minimization forks from the same servers (one `import
# torch` for the whole search, not one per candidate), and the candidates run in one
# folder, since a server is keyed by its workdir (process/forkserver.py).
@search_scope()
def minimize_spec(
    spec_path: str | Path,
    options: MinimizeOptions,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> Minimized:
    """Shrink the spec's program to the smallest one whose failing cell still fails the same way."""
    from reprospec import api

    started = time.monotonic()
    cancel = cancel or threading.Event()
    run_options = options.run.with_changes(purpose="minimize", matrix_filters=())
    spec = api.load_spec(spec_path, run_options.overrides)
    redactor = Redactor.for_spec(spec.document)
    plan = api.plan_run(spec, run_options)
    if any(e.observes for e in plan.expectations.distinct):
        raise needs_expect("minimize")
    command = spec.document.get("command")
    fields: tuple[Field, ...] = ()
    if not isinstance(command, (str, list)):
        # A workload: its numbers shrink (workload.py); with none above its floor there is
        # nothing to minimize, located at `workload` (exit 2, no traceback), as a spec check is.
        fields = workload_fields(spec.document)
        if not fields and not _env(spec.document):
            line, col = locate(spec.locations, ("workload",))
            problem = Problem(
                line,
                col,
                ("workload",),
                "minimize lowers a workload's numbers (phases[].steps, data.dataset.size, "
                "data.loader.batch_size and num_workers, the built-in model's width and "
                "depth, distributed.world_size) and drops its environment.env variables, "
                "and this one has no variables and no number above its smallest legal "
                "value; values written as `${{ matrix.* }}` are the matrix's, and the "
                "settings step reduces them only when a passing cell differs",
            )
            raise SpecError([problem.format(str(spec.path))])
        command = []
    return _minimize(
        spec, plan, run_options, options, command, fields, progress, cancel, started, redactor
    )


def _minimize(
    spec: Spec,
    plan: RunPlan,
    run_options: RunOptions,
    options: MinimizeOptions,
    command: str | list[JsonValue],
    fields: tuple[Field, ...],
    progress: Progress | None,
    cancel: threading.Event,
    started: float,
    redactor: Redactor,
) -> Minimized:
    def say(message: str) -> None:
        if progress is not None:
            progress(redactor.text(message))

    amplified = Amplified.read(options.amplified) if options.amplified else None
    failing, all_passing = _cells(
        plan.cells, plan.expectations, options.cell, str(spec.path), amplified
    )
    expectation = plan.expectation(failing)
    attempt = next(a for a in plan.attempts if a.cell.id == failing.id)
    # The spec's workdir as its attempts run in it (absolute, links kept), which their
    # dumps are read by (hangplace.ran_source: step 1's runs, a workload's probes), and
    # its real path, which its files are read and copied by.
    ran_in = attempt.workdir
    workdir = ran_in.resolve()
    original = _program(command, workdir, spec.document)
    workload = not isinstance(spec.document.get("command"), (str, list))
    if workload:
        original = replace(
            original, head=(), fields=tuple((f.path, f.value) for f in fields), workload=True
        )
    _check_output(options.output, workdir, original, spec, failing, run_options.out)
    if not workload:
        # Each candidate's run mounts the workdir read-only at its own path (probes.py):
        # where that cannot be, every candidate's attempt would fail, after step 1 ran.
        candidates = run_options.out.resolve() / "minimize"
        clash = read_only_refused(run_options.runner, ran_in, candidates)
        if clash is not None:
            raise UsageError(
                f"minimize under docker: the workdir {ran_in} cannot be mounted read-only at "
                f"its own path in the container ({clash}): move the project under another "
                "folder"
            )
    if not all_passing and not workload:
        # Before anything runs, not only with the answer: a user's search that was stopped
        # (its own time limit, a Ctrl-C) wrote a result that had slid to another bug, and
        # never said why. Now they can stop at once and add a passing cell. Conditional: a
        # search that ends refused (the original did not fail so) holds no result to it.
        held = (
            "would be held only to failing as the cell's expect says, with the original's signature"
        )
        stop = "(said before the search: Ctrl-C stops it now)"
        say(f"reprospec: warning: {no_passing_words(held)} {stop}")
    # Said before step 1, whose attempts pay the same import.
    hint = preload_hint(attempt, original, run_options, options.command_line, str(spec.path))
    if hint is not None:
        say(hint)
    # Step 1, the settings, by isolate: its attempts come out of the budget. A stop raised
    # anywhere in it (past isolate's own search: reading its probes back) or in the setup
    # of step 2 after it escaped as a bare KeyboardInterrupt, and no answer was printed
    # (exit 130, about 1 Ctrl-C in 7 in step 1). From step 1's return to the program's
    # search, a stop is `cancel` alone (the deferral, as in a probe's run), read below.
    deferral = run_options.deferral
    try:
        reduced = (
            reduce_settings(
                Path(spec.path),
                spec.document,
                failing,
                all_passing,
                expectation,
                run_options,
                budget=options.budget,
                min_rate=options.min_rate,
                progress=say,
                cancel=cancel,
                workdir=ran_in,
            )
            if options.settings and options.passing_cells
            else Reduced(failing, failing, None, message="not asked")
        )
        if deferral is not None:
            deferral.begin()
    except KeyboardInterrupt:
        cancel.set()
        reduced = Reduced(failing, failing, None, message="interrupted", interrupted=True)
        if deferral is not None:
            deferral.begin()
    why_not = (
        not_the_reduced_cell(spec, original, reduced, expectation, workdir) if reduced.reset else ""
    )
    if why_not:
        # The minimized spec would expect something else of the reduced cell, or has no
        # such cell: minimizing there, then naming the failing cell, would report a cell
        # nothing was checked in.
        say(f"settings: {why_not}: the program is minimized in {failing.id}")
        reduced = replace(
            reduced,
            cell=failing,
            kept=(*reduced.kept, *reduced.reset),
            reset=(),
            overrides=(),
            message=why_not,
        )
    if reduced.reset:
        say("settings: " + reduced.sentence())
    passing = _sample(_agreeing(all_passing, reduced)) if options.passing_cells else ()
    if caveat := reduced.unguarded(passing):
        say(f"settings: warning: {caveat}")
    # search.py's point 6: where the failing cell runs perturbed, amplify's base where it
    # measured this cell, else the original's own attempts without it before the passes.
    perturbed = attempt.environment.perturb.describe()
    base = _baseline(options, failing, reduced, bool(attempt.preload)) if perturbed else None
    settings = Settings(
        budget=max(1, options.budget - reduced.attempts),
        spent_before=min(reduced.attempts, options.budget - 1),
        error=options.error if options.error is not None else Settings.error,
        min_rate=(
            options.min_rate
            if options.min_rate is not None
            else rate_floor(expectation.rate) or Settings.min_rate
        ),
        passing=len(passing),
        step=max(1, plan.parallel),
        # The final check grows with the budget: 20 attempts and 5 per passing cell at 1000.
        final_attempts=max(5, min(Settings.final_attempts, options.budget // 50)),
        final_passing=max(1, min(Settings.final_passing, options.budget // 200)),
        unperturbed_base=attempts_for(None) if perturbed and base is None else 0,
        recorded_base=base.rate if base is not None else None,
    )

    # Keyed on what a probe's outcome depends on and the question (the failing cell and
    # the one step 1 reduced it to, the program, the passing cells run with each
    # candidate, what counts as the same failure), not on --budget, --error, --min-rate or
    # -j (isolation.state.search_id): a larger budget continues the minimization.
    def ident_of(cell: Cell, checked: Sequence[Cell]) -> str:
        return search_id(
            spec,
            plan.attempts,
            run_options,
            [
                failing.id,
                cell.id,
                original.key,
                json.dumps([c.id for c in checked]),
                json.dumps(options.same_signature),
            ],
        )

    ident = ident_of(reduced.cell, passing)
    # Absolute: the candidates' folders below it become `--set environment.workdir=`, which
    # a spec resolves from its own folder, not from where the user typed the command.
    minimizations = run_options.out.resolve() / "minimize"
    folder = minimizations / ident
    if reduced.cell.id != failing.id:
        # A run stopped in step 1 wrote its answer (the original, nothing cut) under the
        # unreduced cell's id, which this run, reduced, does not use: it would stay beside
        # this one's as a second, stale answer.
        _forget_stopped_in_settings(minimizations / ident_of(failing, _sample(all_passing)))
    if reduced.interrupted:
        say(
            f"settings: interrupted after {plural(reduced.attempts, 'attempt')} of step 1 "
            "(isolate), before the program's search: nothing is minimized yet"
        )
    check_out_to_go_on(
        run_options.out,
        folder,
        "minimize.json",
        options.budget,
        f"minimization {ident}",
        replays=False,
    )
    _check_out_before_replay(
        folder, options.output, run_options.out, repr(settings), bool(perturbed)
    )
    header: JsonObject = {"spec": spec.name, "cell": failing.id}
    with held_state(folder, header, f"minimization {ident}", say) as state:
        lines = stored_source(
            folder,
            ran_in,
            live=_live(attempt.preload, original),
            workload=workload,
            runner=run_options.runner,
        )
        if state.reread(lambda probe: reread(probe, run_options.out.resolve() / "runs", lines)):
            say(
                f"the state of minimization {ident} is an earlier version's: the exceptions its "
                f"probes printed, and where their hangs sat, are read again from their runs' "
                f"logs ({RAISED_FROM}) and stack dumps, as this one reads them (a run no longer "
                "there: the original's taken as unknown)"
            )
        if state.stored:
            say(continuing(f"minimization {ident}", state.stored, options.budget))
        variables = [plural(len(original.env), "environment variable")] if original.env else []
        what = (
            f"the workload's {', '.join([f'{f.path}={f.value}' for f in fields] + variables)}"
            if workload
            else _start_size(original)
        )
        if not reduced.interrupted:
            say(
                f"minimizing {what} for cell {reduced.cell.id}; "
                f"passing cells checked: {', '.join(c.id for c in passing) or 'none'}"
                + (
                    f" (the spec's {len(all_passing)} left out: passing_cells=False)"
                    if all_passing and not options.passing_cells
                    else ""
                )
            )
        runner = ProbeRunner(
            spec_path=Path(spec.path),
            overrides=run_options.overrides,
            options=run_options,
            failing=reduced.cell,
            failing_overrides=reduced.overrides,
            passing=passing,
            workdir=ran_in,
            folder=folder,
            as_list=isinstance(command, list),
            state=state,
            cancel=cancel,
            parallel=settings.step,
            same_signature=options.same_signature,
            live=_live(attempt.preload, original),
            env=bool(original.env),
            workload=workload,
            timeout_s=attempt.timeout_s,
            hang=expectation.outcome == "hang",
            say=say,
            budget=settings.budget,
            pace_note=preload_note(attempt, original, run_options, told=hint is not None),
            pace_key=original.key,
        )
        floors = {f.path: f.floor for f in fields}
        steps = {f.path: f.step for f in fields}
        search = Minimization(
            original,
            settings,
            (lambda program: reduce_workload(program, floors, steps)) if workload else reduce,
        )
        # A stop that came while the setup above ran: the search runs nothing, and says so.
        interrupted = reduced.interrupted or cancel.is_set()
        last = 0.0
        # Probes run in a worker thread: Ctrl-C reaches the main thread only, which stops the
        # run (`cancel`) and keeps what it did; the probe cut short is not stored.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="minimize") as pool:
            while search.result is None:
                if interrupted:
                    search.interrupt()
                    break
                try:
                    if deferral is not None:
                        # A stop is raised again, here, where the search catches it (and each
                        # probe's run defers it again while it writes).
                        deferral.end()
                    for probe in search.next_probes():
                        future = pool.submit(runner.run, search.program(probe.key), probe)
                        try:
                            stored = safepoint.result(future)
                        except KeyboardInterrupt:
                            cancel.set()
                            stored = replace(future.result(), interrupted=True)
                        if stored.interrupted or cancel.is_set():
                            interrupted = True
                            break
                        search.record(
                            probe, stored.kinds, stored.infra_reason, stored.raised, stored.places
                        )
                except KeyboardInterrupt:
                    cancel.set()
                    interrupted = True
                if progress is not None and time.monotonic() - last > 5:
                    last = time.monotonic()
                    say(
                        f"{search.used + settings.spent_before}/{options.budget} attempts, "
                        f"{plural(len(search.judged), 'candidate')}, "
                        f"smallest {_size(search.best, search.original)}"
                    )
        result = search.result
        assert result is not None
        if perturbed and result.kept_perturbed is None:
            # amplify's base above 0 of n: the rule did not apply, and minimize.md says why.
            result = replace(result, kept_perturbed=KeptPerturbed(False, Tally(), 0, 0, 0))
        if result.status == "refused" and not result.original_rate.matched and runner.otherwise:
            result = replace(
                result, message=f"{result.message}; the first to fail otherwise: {runner.otherwise}"
            )
        output = options.output or (folder / "result")
        found = Minimized(
            id=ident,
            folder=folder,
            output=output,
            spec_name=spec.name,
            spec_path=str(spec.path),
            cell=reduced.cell,
            passing=passing,
            expectation=expectation,
            signature=runner.signature,
            result=result,
            seconds=time.monotonic() - started,
            reused=runner.reused + reduced.reused,
            replayed=runner.replayed + reduced.replayed,
            budget=options.budget,
            interrupted=interrupted,
            repro="",
            command_line=options.command_line,
            passing_left_out=0 if options.passing_cells else len(all_passing),
            budget_said=argument("--budget", "budget"),
            perturbed=attempt.environment.perturb.describe(),
            settings=reduced,
            search_preload=run_options.preload,
            spec_preload=_spec_preload(spec),
        )
        found = replace(
            found, message_before=runner.message, baseline=_measured(base, result, reduced.cell)
        )
        if result.status == "refused" and held_a_result(output):
            found = replace(found, output=folder / "result", kept_output=str(output))
        if dir_checked(found):
            _check_out_for_dir(found, run_options.out)
        found = write(found, spec, workdir)
        try:
            if dir_checked(found):
                found = confirm_dir(
                    found, run_options, runner.parallel, cancel, spec, workdir, repr(settings)
                )
            if found.perturbed and dir_checked(found) and not found.unconfirmed:
                found = _unperturbed(found, run_options, reduced, spec, runner.parallel, cancel)
        finally:
            _drop_bytecode(found.output)
        return redactor.value(found)


def _drop_bytecode(output: Path) -> None:
    """Remove the `__pycache__` folders DIR's checks left there: each rerun of DIR imports
    the minimized program's modules, and Python wrote their bytecode beside them, so the
    folder handed to a maintainer held `__pycache__/helper.cpython-311.pyc` beside the
    minimal program. DIR never holds one of its own (program.py leaves them out of the
    program), so every one there is a check's; one with anything but bytecode in it is
    left, as not Python's. Bytecode includes the `NAME.pyc.<id>` temporary Python writes
    before renaming it into place, left behind by a check killed mid-import."""
    for cache in sorted(output.rglob("__pycache__"), key=lambda p: len(p.parts), reverse=True):
        if cache.is_symlink() or not cache.is_dir():
            continue
        try:
            if all(_is_bytecode(f.name) and f.is_file() for f in cache.iterdir()):
                shutil.rmtree(cache)
        except OSError:
            continue  # not ours to remove (read-only DIR): the answer is written all the same


def _is_bytecode(name: str) -> bool:
    """Whether `name` is a .pyc file, or the temporary one (`NAME.pyc.<digits>`, importlib's
    `_write_atomic`) Python writes first."""
    stem, dot, tail = name.rpartition(".")
    return tail == "pyc" or (dot == "." and tail.isdigit() and stem.endswith(".pyc"))


def _forget_stopped_in_settings(folder: Path) -> None:
    """Remove a minimization's folder that holds only the answer of a run stopped in step 1:
    no probe of the program's search (no state.json), its minimize.json `interrupted`.
    Anything else there (a probe stored, another status) is a search's work, and stays.
    A folder another minimize holds now (its search's `.lock`) stays too: removed under it,
    its lock went with it and a third run could take a fresh one there."""
    if not _stopped_in_settings(folder):
        return
    with try_locked(folder / SEARCH_LOCK) as free:
        if free is not False and _stopped_in_settings(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _stopped_in_settings(folder: Path) -> bool:
    return not (folder / "state.json").exists() and _answer_status(folder) == "interrupted"


def held_a_result(output: Path) -> bool:
    """Whether -o DIR holds an earlier search's answer (its minimize.json, not a refusal):
    a refused search wrote the original program over it."""
    return _answer_status(output) not in (None, "refused")


def _answer_status(folder: Path) -> JsonValue:
    """The `status` of the minimize.json in `folder`; None where there is none to read."""
    written = _answer(folder)
    return None if written is None else written.get("status")


def _answer(folder: Path) -> dict[str, JsonValue] | None:
    """The minimize.json in `folder`, an object; None where there is none to read."""
    try:
        written = json.loads((folder / "minimize.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return written if isinstance(written, dict) else None


def _baseline(
    options: MinimizeOptions, failing: Cell, reduced: Reduced, forked: bool
) -> Baseline | None:
    """amplify's base (the original without the perturbation) where `--amplify`'s folder
    measured the cell minimized and step 1 kept it, started as the search's attempts start
    (`forked`: under a preload); None: it is measured here."""
    base = Baseline.from_amplify(options.amplified, forked=forked) if options.amplified else None
    if base is not None and (base.cell != failing.id or reduced.cell.id != failing.id):
        return None  # amplify measured another cell than the one minimized
    return base


def _measured(base: Baseline | None, result: MinimizeResult, cell: Cell) -> Baseline | None:
    """The base the search's rule rested on: amplify's, else the one the search measured
    before its passes (in the cell it minimized in); None where neither was."""
    kept = result.kept_perturbed
    if base is not None or kept is None or not kept.base.ran:
        return base
    return Baseline(cell.id, rate_of(kept.base.matched, kept.base.ran), "", measured=True)


def _unperturbed(
    found: Minimized,
    run_options: RunOptions,
    reduced: Reduced,
    spec: Spec,
    parallel: int,
    cancel: threading.Event,
) -> Minimized:
    """A result minimized under environment.perturb, checked without it against the
    original (unperturbed.py): a user's use-after-free became a program with no `free` that
    failed in every attempt unperturbed, and the answer said nothing of it. The search
    rejects such candidates where the original's base is 0 of n (search.py's point 6);
    this is the safety net for one that fails so only sometimes, and for a base above 0."""
    from reprospec import api
    from reprospec.minimize.report import SPEC_NAME, cell_filters

    base = found.baseline  # where the search measured it, not measured again
    # The original in the cell it was minimized in, as the search ran it (its
    # perturbation among the overrides, taken out by the check).
    original = base or Side(
        Path(spec.path),
        (*run_options.overrides, *reduced.overrides),
        () if reduced.overrides else only_cell(reduced.cell),
    )
    path = found.output / SPEC_NAME
    minimized = Side(path, (), cell_filters(api.load_spec(path, files=False), found))
    check = check_unperturbed(
        found.folder / UNPERTURBED_JSON,
        _unperturbed_key(found),
        found.perturbed,
        original,
        minimized,
        run_options,
        parallel,
        cancel,
    )
    if check is None:
        # Stopped in the check: said as an interruption (the same command checks again).
        return replace(found, interrupted=True)
    return write_reports(replace(found, unperturbed=check))


def _unperturbed_key(found: Minimized) -> dict[str, str]:
    """What the check without the perturbation depends on (unperturbed.json's key)."""
    base = found.baseline
    return {
        "program": found.result.program.key,
        "output": str(found.output.resolve()),
        "base": base.phrase if base else "",
    }


def _unperturbed_stored(found: Minimized) -> bool:
    """Whether the check without the perturbation is stored for this answer: _unperturbed
    replays it, running nothing."""
    return stored_unperturbed(found.folder / UNPERTURBED_JSON, _unperturbed_key(found)) is not None


UNPERTURBED_JSON = "unperturbed.json"  # the check without the perturbation, in the folder


# The chance of calling DIR short of a file when it only flaked clean: at most this,
# where _MAX_TRIES attempts allow it.
_MISS_CHANCE = 0.01
_MAX_TRIES = 60


def confirm_dir(
    found: Minimized,
    options: RunOptions,
    parallel: int,
    cancel: threading.Event,
    spec: Spec,
    workdir: Path,
    asked: str = "",
) -> Minimized:
    """Rerun DIR's minimized.yaml (its failing cell) until it fails the same way, as the
    user will run it. The search's candidates ran where every file of the workdir was
    linked; DIR holds only the files the result names, so one read under a name the
    program builds (`"da" + "ta.txt"`) was missing there while minimize said "fails 5/5".
    Where DIR's rerun does not fail so, the workdir's files it read (or its output names)
    that DIR lacks are copied in, listed in minimized.yaml's `files`, and DIR is checked
    again, up to FILE_ROUNDS times while each rerun finds more. As many attempts as make a
    clean streak of a failure at the rate's low end unlikely. Where it fails so, the
    files the passes emptied that it neither imported nor read leave DIR (_drop_unread).
    `asked`, the search's settings, is stored beside the check (_check_out_before_replay)."""
    from reprospec.capture.datafiles import WorkdirFiles
    from reprospec.capture.footprint import RECORD_IMPORTS_VAR
    from reprospec.capture.verify import FILE_ROUNDS
    from reprospec.core import environ

    # A finished minimization run again answers every probe from its state and writes the
    # same DIR: its check is the stored one, and the command runs nothing.
    record = found.folder / "dir-check.json"
    checked, stored = _stored_check(found)
    if isinstance(stored, dict) and all(stored.get(k) == v for k, v in checked.items()):
        added = tuple(str(name) for name in stored.get("added") or ())
        dropped = tuple(str(name) for name in stored.get("dropped") or ())
        unlisted = tuple(str(name) for name in stored.get("unlisted") or ())
        if added or dropped or unlisted:
            found = write(
                replace(found, added=added, dropped=dropped, unlisted=unlisted), spec, workdir
            )
        found = replace(
            found,
            unconfirmed=str(stored.get("unconfirmed") or ""),
            message_after=str(stored.get("message") or ""),
        )
        return write_reports(found)
    files = WorkdirFiles(
        workdir.resolve(),
        workdir.resolve(),
        options.out,
        leave_out=(options.out, found.folder, found.output),
        before=time.time(),
    )
    output = found.output.resolve()
    # Whether a rerun showed DIR short of a file (one it read that DIR lacked): the miss
    # is then blamed on files, else on chance first.
    missing_seen = False
    with environ.changed({RECORD_IMPORTS_VAR: "1"}):  # the child records what it opens
        run, agrees, hung = _rerun_dir(found, options, parallel, cancel)
        # As capture's verify: a program stops at its first missing file, so the next
        # one shows in the next rerun.
        for _ in range(FILE_ROUNDS):
            if agrees or run.interrupted:
                break
            lacking = tuple(f for f in files.reads(run, output) if not (output / f).exists())
            if not lacking:
                break
            missing_seen = True
            found = write(replace(found, added=(*found.added, *lacking)), spec, workdir)
            run, agrees, hung = _rerun_dir(found, options, parallel, cancel)
        if agrees and not run.interrupted:
            found, stopped = _drop_unread(
                found, files.reads(run, output), options, parallel, cancel, spec, workdir
            )
            if stopped:
                return replace(found, interrupted=True)
    if run.interrupted:
        # Stopped in the check: said as an interruption (the same command checks again).
        return replace(found, interrupted=True)
    unconfirmed = "" if agrees else _unconfirmed(found, run, missing_seen, hung)
    # DIR's first attempt that failed as the search saw it: its message beside the
    # original's in minimize.md.
    message = next(
        (
            a.ran.message or ""
            for cell in run.cells
            for a in cell.attempts
            if a.ran is not None and native.attempt_agrees(a, found.signature)
        ),
        "",
    )
    with contextlib.suppress(OSError):
        # Not kept (a full disk, the folder made read-only in the check): the answer stands,
        # write_reports says what is not saved, and the next run checks DIR again.
        record.write_text(
            json.dumps(
                {
                    **checked,
                    "unconfirmed": unconfirmed,
                    "message": message,
                    "added": list(found.added),
                    "dropped": list(found.dropped),
                    "unlisted": list(found.unlisted),
                    "asked": asked,
                }
            )
            + "\n",
            encoding="utf-8",
        )
    return write_reports(replace(found, unconfirmed=unconfirmed, message_after=message))


def _stored_check(found: Minimized) -> tuple[dict[str, str], object]:
    """What DIR's check is stored under (this program, this DIR), and what dir-check.json
    holds (None where it cannot be read)."""
    checked = {"program": found.result.program.key, "output": str(found.output.resolve())}
    try:
        stored = json.loads((found.folder / "dir-check.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = None
    return checked, stored


def _check_out_for_dir(found: Minimized, out: Path) -> None:
    """Refuse, before DIR is written and its check runs an attempt, an --out that cannot
    be written where the check is not stored: its run goes there. A finished minimization
    run again on an --out made read-only since replays its probes, and its DIR check only
    where dir-check.json holds this -o's; another -o (or a check interrupted before) ran
    attempts and stopped on the results store, exit 2 with no answer. The -o whose check
    is stored is named: with it, nothing runs. So is the check without the perturbation
    (`_unperturbed`) that follows a confirmed DIR: one stopped before its unperturbed.json
    was written ran again there and stopped on the store the same way."""
    checked, stored = _stored_check(found)
    if not isinstance(stored, dict):
        stored = {}
    if all(stored.get(k) == v for k, v in checked.items()):
        if not found.perturbed or stored.get("unconfirmed") or _unperturbed_stored(found):
            return  # replayed in confirm_dir (and _unperturbed): nothing runs
        why = unwritable(out)
        if why:
            _refuse_unperturbed_check(out, why, found.output)
        return
    why = unwritable(out)
    if why:
        other = stored.get("output") if stored.get("program") == checked["program"] else None
        _refuse_dir_check(out, why, found.output, other)


def _check_out_before_replay(
    folder: Path, output: Path | None, out: Path, asked: str, perturbed: bool
) -> None:
    """`_check_out_for_dir` before anything replays, where it can tell: the check of a
    finished minimization's DIR is stored (dir-check.json) of another -o than this one,
    or of this one, confirmed, where the failing cell is `perturbed` and the check without
    the perturbation that follows is not stored (unperturbed.json: none of this DIR's
    program and -o), and --out cannot be written (review: the second case replayed the
    whole search first, then was refused by `_check_out_for_dir`). Which check applies
    is known only once the answer is, after the replay; but a replay of the same probes
    under the same settings (`asked`: --budget, --min-rate, --error, -j) reaches the same
    answer, so this -o would be refused there, after the whole replay (seconds of a large
    search's state). Under other settings the replay may reach another answer (a smaller
    --budget's refusal, which runs no check and was refused here with `give -o DIR
    again`): it is left to the replay."""
    if output is None:
        return  # the default DIR lies in --out: _check_output refused it already
    try:
        stored = json.loads((folder / "dir-check.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(stored, dict) or stored.get("asked") != asked:
        return
    other = stored.get("output")
    if not isinstance(other, str) or not other:
        return
    if other != str(output.resolve()):
        why = unwritable(out)
        if why:
            _refuse_dir_check(out, why, output, other)
        return
    if not perturbed or stored.get("unconfirmed") or _unperturbed_of(folder, stored):
        return  # replayed: nothing runs
    why = unwritable(out)
    if why:
        _refuse_unperturbed_check(out, why, output)


def _unperturbed_of(folder: Path, check: Mapping[str, object]) -> bool:
    """Whether unperturbed.json holds a check of the program and -o of DIR's stored
    `check` (its key's base is known only after the replay: the search's, or amplify's),
    read as `check_unperturbed` reads it: a check that does not read as one is none, run
    again after the replay (review: any dict was taken, and its run refused only then)."""
    key = {f: check.get(f) for f in ("program", "output")}
    if not all(isinstance(v, str) for v in key.values()):
        return False
    fields = {f: str(v) for f, v in key.items()}
    return stored_unperturbed(folder / UNPERTURBED_JSON, fields, fields) is not None


def _refuse_unperturbed_check(out: Path, why: str, output: Path) -> NoReturn:
    """The refusal of the check without the perturbation on an --out that cannot be
    written: it follows DIR's confirmed check, and its runs go there."""
    raise UsageError(
        f"--out {out}: cannot be written ({why}), and the check of -o {output} without the "
        "perturbation runs its minimized.yaml, whose attempts are stored there: give an "
        "--out that can be"
    )


def _refuse_dir_check(out: Path, why: str, output: Path, other: object) -> NoReturn:
    """The refusal of DIR's check on an --out that cannot be written, naming the -o whose
    check is stored (`other`), where one is."""
    again = (
        f"give -o {other} again (its check is stored), or an --out that can be"
        if isinstance(other, str) and other
        else "give an --out that can be"
    )
    raise UsageError(
        f"--out {out}: cannot be written ({why}), and the check of -o {output} runs "
        f"its minimized.yaml, whose attempts are stored there: {again}"
    )


def _drop_unread(
    found: Minimized,
    reads: Sequence[str],
    options: RunOptions,
    parallel: int,
    cancel: threading.Event,
    spec: Spec,
    workdir: Path,
) -> tuple[Minimized, bool]:
    """DIR without the program's files the passes emptied that its rerun (`reads`: what
    it imported, ran or read) did not use, and whether a check was interrupted: a module
    the minimized program no longer imports (a user's stats.py and utils.py, emptied, were
    still written and listed in `files`). Then without the spec's other `files` the rerun
    did not read and nothing names (named.unread_listed: a user's conf/settings.json, which
    the minimized app.py no longer opened), checked on their own: a file read by a path
    the record does not show leaves the emptied ones out all the same.

    A file that must exist though empty is used: a package's `__init__.py` is imported,
    a file the program opens is read. DIR is checked again without them, its failing cell
    and the passing cells (a passing cell may import what the failing one does not); where
    a check misses, DIR gets them back as it was checked, with every file there."""
    unread = tuple(
        path
        for path, text in found.result.program.files
        if not text.strip() and path not in reads and path not in found.added
    )
    if unread:
        found, stopped = _checked_without(
            found, replace(found, dropped=unread), options, parallel, cancel, spec, workdir
        )
        if stopped:
            return found, True
    unlisted = tuple(
        name
        for name in unread_listed(found.result.program, spec, reads, found.output)
        if name not in found.added
    )
    if not unlisted:
        return found, False
    return _checked_without(
        found, replace(found, unlisted=unlisted), options, parallel, cancel, spec, workdir
    )


def _checked_without(
    found: Minimized,
    without: Minimized,
    options: RunOptions,
    parallel: int,
    cancel: threading.Event,
    spec: Spec,
    workdir: Path,
) -> tuple[Minimized, bool]:
    """DIR written as `without` (files left out) where its failing cell still fails the
    same way and its passing cells pass, else as `found`; and whether a check was
    interrupted."""
    without = write(without, spec, workdir)
    run, agrees, _ = _rerun_dir(without, options, parallel, cancel)
    stopped = run.interrupted
    if agrees and not stopped:
        passed, stopped = _passing_pass(without, options, cancel)
        if passed and not stopped:
            return without, False
    return write(found, spec, workdir), stopped


def _passing_pass(
    found: Minimized, options: RunOptions, cancel: threading.Event
) -> tuple[bool, bool]:
    """Whether DIR's minimized.yaml passes once in each cell the search checked as passing
    (as the minimized spec names it), and whether a run was interrupted."""
    from reprospec import api
    from reprospec.minimize.report import SPEC_NAME, cell_filters, filters_of

    spec = api.load_spec(found.output / SPEC_NAME, files=False)  # as _rerun_dir's
    failing = cell_filters(spec, found)
    for filters in dict.fromkeys(filters_of(spec, c) for c in found.passing):
        if filters == failing:
            continue  # an axis told them apart that the minimized spec no longer has
        run = api.run(
            spec,
            # Fresh, as `_rerun_dir`'s (under the minimized spec's own run.preload only).
            options.with_changes(
                repeat=1, jobs=1, matrix_filters=filters, purpose="minimize", preload=None
            ),
            cancel=cancel,
        )
        if run.interrupted:
            return False, True
        ran = [a.ran for cell in run.cells for a in cell.attempts]
        if not ran or any(r is None or r.kind != "pass" for r in ran):
            return False, False
    return True, False


def _spec_preload(spec: Spec) -> tuple[str, ...]:
    """The spec's own run.preload (loading checked it is a list of module names)."""
    run = spec.document.get("run")
    preload = run.get("preload") if isinstance(run, dict) else None
    return tuple(str(m) for m in preload) if isinstance(preload, list) else ()


@frozen
class Hung:
    """Where DIR's reruns hung as the signature but not where the original did (`places`,
    () where they did or none hung), the run ids of the reruns those places were read in
    (`runs`), and of those that hung with no stacks read (`unread`): named apart, its place
    never read, where the line said it hung in the place with the others."""

    places: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()


def _rerun_dir(
    found: Minimized, options: RunOptions, parallel: int, cancel: threading.Event
) -> tuple[RunResult, bool, Hung]:
    """DIR's minimized.yaml, its failing cell, run until it fails as the search saw it (or
    for `_tries` attempts); whether one attempt did; where its reruns hung that the
    original did not (Hung, over every rerun: the last may be clean or hang elsewhere
    again).

    Run as the reader's rerun runs it: under the minimized spec's own run.preload, never
    `--preload`'s (preload=None). The search's attempts may have forked from a preload
    server, and a candidate that failed only forked would be taken for the bug
    (preloadhint.py): this is the one check that would catch it, and repro.sh runs fresh.

    A hang fails as the search saw it where it also sits as the original's did, by the
    search's rule (search.py's point 7, hangplace.moved): DIR's check compared the
    signature `hang` alone. One sighting elsewhere is looked at again (a busy thread is
    caught wherever it runs), up to hangplace.LOOKS hanging attempts, read or not (counted
    by read places alone, reruns whose stacks were unread went on without end); the run
    returned is the last."""
    from reprospec import api
    from reprospec.minimize.report import SPEC_NAME, cell_filters

    # minimize's own output, its `files` not looked for: write() puts each in DIR, and one
    # DIR lacked refused it here, the search thrown away; a missing one shows in the rerun.
    spec = api.load_spec(found.output / SPEC_NAME, files=False)
    places: list[str] = []
    looks = 0
    placed: list[str] = []
    unread: list[str] = []
    while True:
        run = api.run(
            spec,
            options.with_changes(
                repeat=_tries(found),
                preload=None,
                stop_on="first-reproduction",
                jobs=parallel,
                matrix_filters=cell_filters(spec, found),
                purpose="minimize",
            ),
            cancel=cancel,
        )
        ran = [a for cell in run.cells for a in cell.attempts]
        agreeing = [a for a in ran if native.attempt_agrees(a, found.signature)]
        looks += len(agreeing)
        read = _dir_places(run, options.out, agreeing, found.output)
        places += read
        if read:
            placed.append(run.run_id)
        elif agreeing:
            unread.append(run.run_id)
        elsewhere = moved(places, _original_places(found))
        if not (agreeing and elsewhere) or looks >= LOOKS or run.interrupted:
            hung = Hung(elsewhere, tuple(placed), tuple(unread))
            return run, bool(agreeing) and not elsewhere, hung


def _original_places(found: Minimized) -> tuple[str, ...]:
    """Where the original's hangs sat, as the search read them; () where none was read."""
    same = found.result.same_failure
    return same.original_places if same is not None else ()


def _dir_places(
    run: RunResult, out: Path, attempts: Sequence[AttemptResult], workdir: Path
) -> list[str]:
    """Where each of `attempts` (of `run`) hung that was read (hangplace.attempt_place), its
    lines read from DIR (`workdir`), as the container named it under docker."""
    run_dir = out.resolve() / "runs" / run.run_id
    source = ran_source(workdir, run.runner)
    return [p for p in (attempt_place(run_dir, a, source) for a in attempts) if p != UNREAD]


def _tries(found: Minimized) -> int:
    """A failure at the rate's low end stays clean this many times with a chance under
    _MISS_CHANCE, up to 60 attempts: at a low end under 7.4% the chance of a clean streak
    is more, and the line says it. A deterministic failure too runs 3 to 6, not one: its
    low end is a 95% lower bound (57% of the original's 5 in 5, which a failure at 60%
    also does), and one clean attempt would blame DIR for what may be chance. The check
    stops at its first failure, so a large count costs little where DIR fails."""
    return dir_tries(found.result.rate, found.result.original_rate)


def dir_tries(result: Rate, original: Rate) -> int:
    """`_tries` of a result and an original measured so (docs/cli.md states its figures)."""
    low = low_end(result, original)
    return min(_MAX_TRIES, math.ceil(math.log(_MISS_CHANCE) / math.log(1 - low)))


def _low(found: Minimized) -> float:
    return low_end(found.result.rate, found.result.original_rate)


def low_end(result: Rate, original: Rate) -> float:
    """The failure's rate at its low end, as the check counts on it: the lower of the
    result's and the original's 95% lower bounds. The result's rests on a few final
    attempts (5/6 reads 43%), where the program it shrank from measured lower (the
    original's, read without the match its rate stopped at: search.unbiased_rate); sized
    from 43% alone, 9 clean attempts at the original's 20% came by chance 13 times in 100
    and DIR was called short of a file it never read."""
    lows = [result.low] if result.attempts else []
    if original.attempts:
        lows.append(original.low)
    return min(max(min(lows, default=0.01), 0.01), 0.99)


def _percent_down(rate: float) -> str:
    """`4%`: a lower bound as every interval prints it, rounded down (words.interval_bounds)."""
    return interval_bounds(rate, 1.0, digits=0, percent=True)[0]


# What a program prints, or the exception it dies of, where it found a file missing: the
# evidence that DIR lacks one, beside the files its rerun opened.
_MISSING_WORDS = ("No such file or directory", "can't open file", "FileNotFoundError")


def _missing_file(run: RunResult) -> bool:
    """Whether an attempt of DIR's rerun died of, or printed, a missing file."""
    for cell in run.cells:
        for a in cell.attempts:
            r = a.ran
            if r is None:
                continue
            said = " ".join(x or "" for x in (r.exception, r.message, r.detail))
            if any(w in said for w in _MISSING_WORDS):
                return True
    return False


def _unconfirmed(
    found: Minimized,
    run: RunResult,
    missing_seen: bool = False,
    hung: Hung | None = None,
) -> str:
    """Why DIR is not the answer: what its rerun did instead, and how likely such a miss
    is by chance. Files are blamed only on evidence (a file its rerun opened that DIR
    lacked, a file-not-found error): a flaky race that stayed clean 9 times was told to
    "copy in what the program reads under a name it builds", a program that reads no file.
    A hang that sat elsewhere than the original's (`hung`, in any rerun) is said so, no
    chance of a miss."""
    from reprospec.minimize.report import SPEC_NAME

    ran = [a for cell in run.cells for a in cell.attempts]
    if hung is not None and hung.places:
        # An earlier rerun's sighting, where the last stayed clean: said, not lost to it.
        # Only the reruns whose places were read are said to have hung there; one that
        # hung with its stacks unread is named apart.
        ids = hung.runs
        s = "s" if len(ids) > 1 else ""
        notes = [f"run{s} {', '.join(ids)}"]
        if hung.unread:
            notes.append(f"run {', '.join(hung.unread)} hung, its stacks unread")
        if run.run_id not in (*ids, *hung.unread):
            notes.append(f"the next, run {run.run_id}, did not fail as {found.signature}")
        where = f"in its rerun{s} ({'; '.join(notes)})"
        return (
            f"{SPEC_NAME} in {found.output} hung {places_said(hung.places)} {where}, not "
            f"where the original did ({places_said(_original_places(found), '')}): another "
            "hang than the search kept"
        )
    low = _low(found)
    chance = (1 - low) ** len(ran)  # of a clean streak as long as this one, by chance
    seen = sorted({a.ran.signature for a in ran if a.ran is not None})
    head = (
        f"{SPEC_NAME} in {found.output} did not fail as {found.signature} in "
        f"{plural(len(ran), 'attempt')} ({', '.join(seen) or 'none ran'}; run {run.run_id})"
    )
    by_chance = (
        f"a failure at {_percent_down(low)}, the low end of its measured rate, stays clean "
        f"{plural(len(ran), 'time')} with a chance of {_chance_text(chance)}"
    )
    if missing_seen or _missing_file(run):
        return (
            f"{head}: the search's candidates had every file of the workdir, and DIR only "
            "those the result names"
            + (f" and {', '.join(found.added)}" if found.added else "")
            + f"; copy in what the program reads under a name it builds ({by_chance})"
        )
    again = f"reprospec run {found.output / SPEC_NAME} --repeat {2 * max(len(ran), 10)}"
    if chance > _MISS_CHANCE:
        return (
            f"{head}: {by_chance}; its rerun found no file missing, so it may have flaked: "
            f"run it again (`{again}`)"
        )
    # A streak that long is no likely flake, yet nothing showed a missing file: say both
    # readings, neither as the verdict (a check for a file without opening it leaves no
    # record; a rate lower in DIR than the search measured looks the same).
    return (
        f"{head}: {by_chance}, and its rerun found no file missing: it fails more rarely in "
        "DIR than the search measured, or the program checks for a file without opening it "
        f"(copy that in); run it again (`{again}`)"
    )


def _chance_text(chance: float) -> str:
    """`13%`, or `under 1%` where rounding would print 0%."""
    return f"{chance:.0%}" if chance >= 0.005 else "under 1%"


def _check_output(
    output: Path | None, workdir: Path, original: Program, spec: Spec, failing: Cell, out: Path
) -> None:
    """Refuse, before any attempt, an `-o DIR` the result cannot be written to: a file, or
    the workdir itself, where the minimized files were written over the originals (the
    user's program lost, `-o .` run from the workdir) once the whole budget was spent; or
    one holding the answer of another spec's (or cell's) minimization, whose files stayed
    beside the new answer's (its prog_a.py and helper_a.py beside spec-b's minimized.yaml);
    or one that cannot be written (an --out made read-only since, where the default DIR
    is), where a finished minimization replayed its probes, then stopped on DIR's first
    file with `Read-only file system` and no answer."""
    if output is None:
        # The default DIR, OUT/minimize/ID/result: its ID is known only after step 1.
        why = unwritable(out / "minimize")
        if why:
            raise UsageError(
                f"--out {out}: {out / 'minimize'} cannot be written ({why}), and the minimized "
                "program goes there by default (OUT/minimize/ID/result): give -o a folder "
                "that can be"
            )
        return
    if output.exists() and not output.is_dir():
        raise UsageError(f"-o {output}: not a folder")
    why = unwritable(output)
    if why:
        raise UsageError(
            f"-o {output}: cannot be written ({why}), and the minimized program goes there: "
            "give a folder that can be"
        )
    # A minimize's DIR (an interrupted one's too: its spec and repro come before its
    # reports) is its own to write over; a folder with other work is not, but for the
    # files no one makes (`.DS_Store`, `.gitkeep`).
    held = sorted(p.name for p in output.iterdir()) if output.is_dir() else []
    held = [name for name in held if name not in (".DS_Store", ".gitkeep")]
    ours = "minimize.json" in held or {"minimized.yaml", "repro.sh"} <= set(held)
    if held and not ours and output.resolve() != workdir:
        # DIR's files are written over: a folder of another project lost its own.
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise UsageError(
            f"-o {output}: the folder holds files minimize did not write ({shown}), which "
            "the result would be written over: give an empty or new folder"
        )
    other = _other_answer(output, spec, failing, original) if "minimize.json" in held else ""
    if other:
        raise UsageError(
            f"-o {output}: the folder holds the answer of another minimization ({other}), not "
            f"of {spec.name!r} ({spec.path}) in cell {failing.id}: this one's files would be "
            "written among its files, and no reader could tell which are whose; give another "
            "folder, or remove that one first"
        )
    if output.resolve() == workdir and original.files:
        names = ", ".join(path for path, _ in original.files[:3])
        more = f" and {len(original.files) - 3} more" if len(original.files) > 3 else ""
        raise UsageError(
            f"-o {output}: that is the spec's workdir ({workdir}), and the minimized "
            f"{names}{more} would be written over the originals: give another folder"
        )


def _other_answer(output: Path, spec: Spec, failing: Cell, original: Program) -> str:
    """What minimization DIR's minimize.json answers, where not this one's (another spec,
    by its file where the answer names it, else by name; another failing cell; or the same
    spec's program since changed, whose answer's files the new one's may not write over,
    its helper.py left beside a program that no longer imports it, or its settings: the
    program's key holds its environment variables, which `--set environment.env.X=...`
    changes): "spec 'NAME' (PATH), cell ID". "" where it is this one's, or unreadable (then
    DIR's files are a minimize's by their names alone, as before)."""
    written = _answer(output)
    if written is None:
        return ""
    name, path, cell, program = (
        str(written.get(key) or "") for key in ("spec", "spec_path", "cell", "program")
    )
    same_spec = Path(path).resolve() == Path(spec.path).resolve() if path else name == spec.name
    same = same_spec and cell == failing.id
    if same and program in ("", original.key):
        return ""
    changed = ", before its program or its settings changed" if same else ""
    return f"spec {name!r}" + (f" ({path})" if path else "") + f", cell {cell}{changed}"


def _env(document: Mapping[str, JsonValue]) -> bool:
    """Whether the spec sets environment variables (a workload's only other reducible part)."""
    environment = document.get("environment")
    return isinstance(environment, dict) and bool(environment.get("env"))


def _start_size(original: Program) -> str:
    """The program's size as the search starts, in its files' own layout (what an editor
    shows), and, where it differs, as minimize writes them (`Program.lines`, `ast.unparse`'s
    layout, which the search compares candidates in), said of neither as the answer's: the
    answer counts a file minimize changes as it writes it, and one the search leaves whole as
    it is (`report.sizes`), which is known only at the end. `minimizing 2 lines ..., the
    answer's count` was said of `import os; os.abort()`, left whole, before `1 -> 1 lines`."""
    files = ", ".join(p for p, _ in original.files)
    if not files:
        return "0 lines (no Python files)"
    written, own = original.lines, original.given_lines[0]
    said = f"{plural(own, 'line')} of Python ({files}"
    return f"{said})" if written == own else f"{said}; {written} as minimize writes them)"


def _size(program: Program, original: Program) -> str:
    if program.workload:
        # Each by its last word, but where two share it: the progress read "steps=4,
        # steps=10" of two phases.
        names = [path.rsplit(".", 1)[-1] for path, _ in program.fields]
        sizes = [
            f"{name if names.count(name) == 1 else path.removeprefix('workload.')}={value}"
            for name, (path, value) in zip(names, program.fields, strict=True)
        ]
        return ", ".join([*sizes, *([plural(len(program.env), "variable")] if program.env else [])])
    return f"{program.shown_lines(original)} lines"  # as the answer's `153 -> 143` counts


def _cells(
    cells: Sequence[Cell],
    expectations: CellExpectations,
    filters: Sequence[str],
    spec: str,
    amplified: Amplified | None = None,
) -> tuple[Cell, tuple[Cell, ...]]:
    """The failing cell (the first expected to fail that `-m` keeps: isolate's rule,
    plan/failingcell.py; under --amplify, the cell amplify measured) and the passing ones."""
    chosen = choose_failing_cell(
        cells,
        expectations,
        filters,
        verb="minimize",
        several="first",
        spec=spec,
        amplified=amplified,
    )
    if not chosen.candidates:  # the spec's only cell, expected to pass
        raise UsageError(
            f"no cell of {spec} is expected to fail: minimize needs a cell whose expect says "
            f"how it fails"
        )
    return chosen.cell, tuple(c for c in cells if expectations.of(c).outcome == "pass")


def _agreeing(passing: Sequence[Cell], reduced: Reduced) -> Sequence[Cell]:
    """The passing cells that share the reset settings' values: the minimized spec's own.

    Its matrix holds only those values of a reset axis, so its passing cells are these;
    all of them when none does (then the reset values appear in no passing cell).
    """
    axes = {d.name: d.base for d in reduced.reset if d.is_axis}
    kept = [
        c
        for c in passing
        if all(same_setting(c.matrix.get(axis, MISSING), value) for axis, value in axes.items())
    ]
    return kept or passing


def _sample(passing: Sequence[Cell]) -> tuple[Cell, ...]:
    """Up to MAX_PASSING of the passing cells, spread over the matrix."""
    if len(passing) <= MAX_PASSING:
        return tuple(passing)
    step = len(passing) / MAX_PASSING
    return tuple(passing[int(i * step)] for i in range(MAX_PASSING))


def _program(
    command: str | list[JsonValue], workdir: Path, document: Mapping[str, JsonValue]
) -> Program:
    """The original program: the command's words, the environment variables, the Python files."""
    from reprospec.plan.workfiles import local_imports, module_files

    words = split_words(command) if isinstance(command, str) else tuple(str(w) for w in command)
    head_end = 1
    root = workdir.resolve()
    start: list[Path] = []
    for i, word in enumerate(words):
        if word.endswith(".py") and "${{" not in word:
            head_end, script = i + 1, workdir / word
            if script.is_file() and _inside(script, workdir):
                start.append(script.resolve())
            break
        if word == "-m" and i + 1 < len(words):
            # `-m pkg.tool` runs pkg/__init__.py and pkg/tool.py (or a package's __main__.py).
            head_end = i + 2
            start.extend(module_files(words[i + 1], root))
            break
    start.extend(path.resolve() for path in _behind(words, workdir, document))
    files: dict[str, str] = {}
    # The modules they import as Python finds them (plan.workfiles, which a bundle's files
    # come from too): a package's __init__.py, a relative import (`from .core import f`),
    # a module beside a script in a subfolder. Looking for `name.py` at the workdir's root
    # alone left `from mylib import f`'s whole package unminimized ("6 -> 6 lines").
    for path in local_imports(dict.fromkeys(start), root):
        _read_source(path, root, files)
    environment = document.get("environment")
    env_section = environment.get("env") if isinstance(environment, dict) else None
    env = (
        tuple((str(k), str(v)) for k, v in env_section.items())
        if isinstance(env_section, dict)
        else ()
    )
    return Program(
        head=words[:head_end], args=words[head_end:], env=env, files=tuple(files.items())
    )


# A name in a script's text: what the shell leaves of a word once its quotes and operators go.
_SCRIPT_WORD = re.compile(r"[^\s'\"|&;<>()`$]+")


def _behind(words: Sequence[str], workdir: Path, document: Mapping[str, JsonValue]) -> list[Path]:
    """The workdir's Python files the command runs by other means than its own words: the
    ones a shell script it runs names (`sh run.sh` with `cat data.txt | python app.py`),
    and the spec's `files`. app.py was left whole ("0 -> 0 lines, no Python files")."""
    from reprospec.plan.workfiles import file_in, script_files

    root = workdir.resolve()
    named = [w for w in words if "${{" not in w]
    # The words of a script given whole (`sh -c "python gen.py ${{ matrix.n }} | python
    # consume.py"`): its Python files were no word of the command's ("0 -> 0 lines").
    named += [
        inner
        for w in words
        if any(c.isspace() for c in w)
        for inner in _SCRIPT_WORD.findall(EXPRESSION.sub(" ", w))
    ]
    listed = document.get("files")
    if isinstance(listed, list):
        named += [str(name) for name in listed]
    found = [p for word in named if (p := file_in(word, root)) is not None]
    behind = [p for p in [*found, *script_files(found, root)] if p.suffix == ".py"]
    return [workdir / p.relative_to(root) for p in behind]


def _read_source(path: Path, workdir: Path, files: dict[str, str]) -> None:
    """`path`'s text into `files` under its workdir path, where it is Python to minimize."""
    import codecs
    import io
    import tokenize

    relative = path.relative_to(workdir).as_posix()
    try:
        data = path.read_bytes()
        # As Python reads source (PEP 263): a `coding:` line may name another encoding.
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (OSError, SyntaxError, LookupError, UnicodeDecodeError):
        return  # not Python source Python could read: nothing to minimize
    if codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig"):
        # Candidates are written as UTF-8: the file's `coding: latin-1` line says utf-8
        # instead, the same program (its strings, its traceback's lines). Left whole, a
        # latin-1 file was minimized "0 -> 0 lines" and the result said nothing of why.
        lines = text.split("\n")
        for i, line in enumerate(lines[:2]):
            lines[i] = _CODING.sub(r"\g<1>utf-8", line, count=1)
        text = "\n".join(lines)
    files[relative] = text


# PEP 263's declaration, as the tokenizer finds it on a file's first or second line.
_CODING = Lazy(r"^([ \t\f]*#.*?coding[:=][ \t]*)[-\w.]+")


def _live(preload: Sequence[str], program: Program) -> bool:
    """Whether the candidates run in one folder, rewritten for each: under run.preload, so
    that one server (keyed by the workdir) serves them all. Not when a preloaded module is
    one of the files being minimized: its server would hold the original's version."""
    if not preload:
        return False
    files = {path for path, _ in program.files}
    for module in preload:
        stem = module.replace(".", "/")
        if f"{stem}.py" in files or f"{stem}/__init__.py" in files:
            return False
    return True


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
    except ValueError:
        return False
    return True
