"""`reprospec isolate` as a library: the search of `search.py` driven by real runs.

    from reprospec.isolation.driver import IsolateOptions, isolate_spec
    found = isolate_spec("specs/isolate-pair.yaml", IsolateOptions(budget=100))
    found.sentence()   # "crashes when num_workers=2 AND pin_memory=true; either alone ..."

Each candidate of the search is a normal run through the Python API
(`reprospec.run`, purpose "isolate"): the spec with the candidate's values set
(`--set` overrides; its matrix reduced to the one cell) and the failing cell's
expectation as `expect`, so "failing" means failing the way the failing cell
does, not any failure. Every attempt is stored like a run's; the isolate folder
(state.py) remembers which run answered which candidate, so an interrupted
isolation run again replays them and runs only what is new.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core import safepoint
from reprospec.core.caller import argument, said
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Spec
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.rates import rate_floor
from reprospec.core.redact import Redactor
from reprospec.core.results import AttemptResult, RunResult
from reprospec.core.runoptions import PathArg, RunOptions, Words, WordSet, check_options
from reprospec.core.words import plural
from reprospec.errors import SpecError, UsageError
from reprospec.isolation.candidates import (
    AttemptKind,
    IsolationResult,
    Probe,
    Settings,
    otherwise,
)
from reprospec.isolation.differences import (
    MATRIX,
    MISSING,
    Config,
    Difference,
    Setting,
    configuration,
    differences,
    farthest,
    key,
    lookup,
    mix,
    overrides,
)
from reprospec.isolation.report import IsolateResult, Side, set_in_words, write
from reprospec.isolation.search import Isolation
from reprospec.isolation.state import (
    StateFile,
    StoredProbe,
    check_out_to_go_on,
    continuing,
    held_state,
    search_id,
)
from reprospec.pipeline.searchscope import search_scope
from reprospec.plan.failingcell import Amplified, choose_failing_cell, fails, needs_expect

if TYPE_CHECKING:
    from reprospec.pipeline import stages
    from reprospec.plan.run import CellExpectations

Progress = Callable[[str], None]


@frozen
class IsolateOptions:
    """What `reprospec isolate` is asked besides the spec."""

    # -m AXIS=VALUE filters: the failing cell is the first of those they keep that is
    # expected to fail (amplify's and minimize's -m); not with `failing`.
    cell: tuple[str, ...] = ()
    failing: str | None = None  # a cell: its id, or AXIS=VALUE,... that selects one
    passing: str | None = None
    failing_sets: tuple[str, ...] = ()  # PATH=VALUE (or ~PATH) on the failing side only
    passing_sets: tuple[str, ...] = ()
    budget: int = 100
    error: float | None = None  # None: Settings' default
    min_rate: float | None = None  # None: the failing cell's expect.rate bound, else 0.3
    # Runner, -j, timeout, --out, --python, and the --set overrides of both sides.
    run: RunOptions = field(default_factory=lambda: RunOptions(purpose="isolate"))
    command_line: str = ""  # how a person reruns this isolation (for the report)
    # `--amplify PATH` (an amplify folder or its amplify.json): the cell it measured is the
    # failing cell (plan/failingcell.py); its perturbation comes in `run.overrides`.
    amplified: Path | None = None

    if TYPE_CHECKING:  # any iterable of str for a tuple (core/runoptions.py's Words)

        def __init__(
            self,
            cell: WordSet = ...,
            failing: str | None = ...,
            passing: str | None = ...,
            failing_sets: Words = ...,
            passing_sets: Words = ...,
            budget: int = ...,
            error: float | None = ...,
            min_rate: float | None = ...,
            run: RunOptions = ...,
            command_line: str = ...,
            amplified: PathArg | None = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        check_options(
            self,
            sequences=("failing_sets", "passing_sets"),
            sets=("cell",),
            counts=("budget",),
            fractions=("error", "min_rate"),
            texts=("failing", "passing"),
            paths=("amplified",),
            runs=("run",),
        )


@search_scope()
def isolate_spec(
    spec_path: str | Path,
    options: IsolateOptions,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> IsolateResult:
    """Find the smallest set of differences that turns the passing side into the failing one."""
    return _isolate(spec_path, options, progress, cancel or threading.Event())


def _isolate(
    spec_path: str | Path,
    options: IsolateOptions,
    progress: Progress | None,
    cancel: threading.Event,
) -> IsolateResult:
    from reprospec import api

    run_options = options.run.with_changes(purpose="isolate")
    spec = api.load_spec(spec_path, run_options.overrides)
    # The failing cell's expectation may hold a value read from the engine's environment:
    # what isolate prints and writes is masked as every run is (redact.py).
    redactor = Redactor.for_spec(spec.document)

    def say(message: str) -> None:
        if progress is not None:
            progress(redactor.text(message))

    plan = api.plan_run(spec, run_options.with_changes(matrix_filters=()))
    failing_set, passing_set = (
        said("--failing-set", "failing_sets"),
        said("--passing-set", "passing_sets"),
    )
    failing_sets = _parse_sets(options.failing_sets, failing_set)
    passing_sets = _parse_sets(options.passing_sets, passing_set)
    _check_axes(options.failing_sets, failing_set, plan.cells)
    _check_axes(options.passing_sets, passing_set, plan.cells)
    # A container gets the spec's variables, not the engine's; the other runners' attempts
    # inherit the engine's environment (spec-format.md, environment.env).
    inherited = {} if run_options.runner == "docker" else os.environ
    _check_unsets(failing_sets, passing_sets, spec.document, failing_set, inherited)
    _check_unsets(passing_sets, failing_sets, spec.document, passing_set, inherited)
    for sets, option in ((failing_sets, failing_set), (passing_sets, passing_set)):
        # Validated as each side's runs load it, before any runs: a mistyped value
        # (`--passing-set run.timeout=abc`) was refused when that side's first probe
        # loaded it, after the matrix run and the failing side's attempts, and named
        # `--set`, which the user had not typed.
        words = overrides(sets, spec.document, cell=False)
        try:
            api.load_spec(spec.path, (*run_options.overrides, *words))
        except SpecError as exc:
            typed = said("--set", "overrides")
            problems = exc.problems
            for word in words:
                problems = [
                    p.replace(f"(from {typed} {word})", f"(from {option} {word})") for p in problems
                ]
            raise SpecError(problems) from None
    if any(e.observes for e in plan.expectations.distinct):
        raise needs_expect("isolate")
    # `drawn`: the attempt numbers the matrix run (when the sides came from one) used.
    drawn: dict[str, int] = {}
    failing_cell, passing_cell = _choose_cells(
        spec, plan.cells, plan.expectations, options, say, cancel, drawn
    )
    expectation = plan.expectation(failing_cell)
    document = spec.document
    failing = Side(
        failing_cell,
        failing_sets,
        configuration(document, failing_cell.matrix, failing_sets, paths=passing_sets),
    )
    passing = Side(
        passing_cell,
        passing_sets,
        configuration(document, passing_cell.matrix, passing_sets, paths=failing_sets),
    )
    diffs = differences(passing.config, failing.config)
    if not diffs:
        raise UsageError(
            f"nothing to isolate: {failing.describe()} and {passing.describe()} do not differ"
        )
    # A round holds -j attempts, on distinct candidates where that tells more.
    settings = Settings(
        budget=options.budget,
        error=options.error if options.error is not None else Settings.error,
        min_rate=(
            options.min_rate
            if options.min_rate is not None
            else rate_floor(expectation.rate) or Settings.min_rate
        ),
        step=max(Settings.step, plan.parallel),
    )
    expect = {k: v for k, v in expectation.to_dict().items() if k != "rate"}
    # The folder is keyed on what a probe's outcome depends on, and the question (the two
    # sides, what failing means), never on the settings the search only decides with
    # (state.search_id): a rerun with a larger budget replays the probes a smaller one ran.
    ident = search_id(
        spec,
        plan.attempts.variants().attempts,
        run_options,
        [key(failing.config), key(passing.config), json.dumps(expect, sort_keys=True)],
    )
    folder = run_options.out / "isolate" / ident
    check_out_to_go_on(
        run_options.out, folder, "isolate.json", options.budget, f"isolation {ident}"
    )
    header: JsonObject = {
        "spec": spec.name,
        "failing": key(failing.config),
        "passing": key(passing.config),
    }
    with held_state(folder, header, f"isolation {ident}", say) as state:
        every_set = [*failing_sets, *passing_sets]
        for cell_id, last in drawn.items():
            # The matrix run drew these numbers of each cell's configuration as it has no
            # set: a probe of that configuration (a side's, or a candidate that is another
            # cell) numbers its attempts after them.
            cell = next(c for c in plan.cells if c.id == cell_id)
            state.drew(key(configuration(document, cell.matrix, {}, paths=every_set)), last)
        if state.stored:
            say(continuing(f"isolation {ident}", state.stored, options.budget))

        runner = _CandidateRunner(
            spec_path=spec.path,
            base_overrides=run_options.overrides,
            document=document,
            expect=expect,
            passing=passing.config,
            diffs=diffs,
            options=run_options,
            parallel=plan.parallel,
            state=state,
            cancel=cancel,
        )
        iso = Isolation(len(diffs), settings, lambda c: set_in_words(diffs, c))
        interrupted = False
        rounds = 0
        while iso.result is None and not interrupted:
            probes = iso.next_probes()
            if not probes:
                break
            rounds += 1
            say(
                f"round {rounds}: {plural(len(probes), 'candidate')}, "
                f"{iso.used}/{settings.budget} attempts used"
            )
            for probe, stored in zip(probes, runner.run_round(probes), strict=True):
                if iso.result is None:
                    iso.record(probe, stored.kinds, stored.infra_reason)
                interrupted = interrupted or stored.interrupted
        found = IsolateResult(
            id=ident,
            folder=folder,
            spec_name=spec.name,
            spec_path=str(spec.path),
            expectation=expectation,
            failing=failing,
            passing=passing,
            differences=diffs,
            result=iso.result or _interrupted(iso),
            runs=tuple(state.runs()),
            reused=runner.reused,
            replayed=runner.replayed,
            interrupted=interrupted,
            budget=options.budget,
            command_line=options.command_line,
            budget_said=argument("--budget", "budget"),
            perturbed=next(
                (a.environment.perturb.describe() for a in plan.attempts if a.cell == failing_cell),
                (),
            ),
        )
        return write(redactor.value(found))


class _CandidateRunner:
    """Runs the probes of one round, concurrently, each as a normal run (or from the state)."""

    def __init__(
        self,
        *,
        spec_path: Path,
        base_overrides: Sequence[str],
        document: Mapping[str, JsonValue],
        expect: Mapping[str, JsonValue],
        passing: Config,
        diffs: Sequence[Difference],
        options: RunOptions,
        parallel: int,
        state: StateFile,
        cancel: threading.Event,
    ) -> None:
        self.spec_path = spec_path
        self.base_overrides = tuple(base_overrides)
        self.document = document
        self.expect = json.dumps(dict(expect))
        self.passing = passing
        self.diffs = diffs
        self.options = options
        self.parallel = max(1, parallel)
        self.state = state
        self.cancel = cancel
        self.reused = 0  # probes answered from the state
        self.replayed = 0  # their attempts: counted in the budget as if run again

    def run_round(self, probes: Sequence[Probe]) -> list[StoredProbe]:
        """What each probe's attempts did, in the probes' order."""
        answers: list[StoredProbe | None] = []
        todo: list[tuple[int, Probe, Config]] = []
        for index, probe in enumerate(probes):
            config = mix(self.passing, self.diffs, sorted(probe.candidate))
            stored = self.state.take(key(config), probe.attempts)
            if stored is not None:
                # What an interrupted run did still counts; the interruption is over.
                stored = replace(stored, interrupted=False)
                self.reused += bool(stored.kinds)  # one cut short before an attempt: none
                self.replayed += len(stored.kinds)
            else:
                todo.append((index, probe, config))
            answers.append(stored)
        if todo:
            # -j is shared: each concurrent candidate gets its part of it.
            at_once = min(len(todo), self.parallel)
            jobs = max(1, self.parallel // at_once)
            with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="isolate") as pool:
                futures = [
                    (index, pool.submit(self._run, probe, config, jobs))
                    for index, probe, config in todo
                ]
                try:
                    for index, future in futures:
                        answers[index] = safepoint.result(future)
                except KeyboardInterrupt:
                    # Ctrl-C reaches this thread only: stop the runs, keep what they did.
                    self.cancel.set()
                    for index, future in futures:
                        answers[index] = future.result()
        return [a for a in answers if a is not None]

    def _run(self, probe: Probe, config: Config, jobs: int) -> StoredProbe:
        from reprospec import api

        sets = (*self.base_overrides, *overrides(config, self.document), "expect=" + self.expect)
        spec = api.load_spec(self.spec_path, sets)
        # Numbered after the attempts this configuration's earlier probes used: each probe
        # draws new values of a `${{ attempt }}` seed or a fault's `probability` coin.
        first = self.state.first_attempt(key(config), max(1, probe.attempts))
        options = self.options.with_changes(
            repeat=max(1, probe.attempts),
            stop_on="first-reproduction" if probe.stop_after == 1 else "never",
            jobs=jobs,
            matrix_filters=(),
            purpose="isolate",
            first_attempt=first,
            # `history --searches` names the probe by what it set, as the answer does.
            probe=set_in_words(self.diffs, probe.candidate),
        )
        if self.cancel.is_set():
            return self._stored(probe, config, None, first)
        result = api.run(spec, options, cancel=self.cancel)
        stored = self._stored(probe, config, result, first)
        self.state.add(stored)
        return stored

    def _stored(
        self, probe: Probe, config: Config, result: RunResult | None, first: int
    ) -> StoredProbe:
        kinds: list[AttemptKind] = []
        numbers: list[int] = []
        reason = ""
        if result is not None:
            for attempt in sorted(result.cells[0].attempts, key=lambda a: a.attempt):
                kinds.append(_kind(attempt))
                numbers.append(attempt.attempt)
                reason = attempt.infra_error or reason
        # StoredProbe keeps them only where they are not first, first + 1, ... (a stop set
        # one aside).
        return StoredProbe(
            key=key(config),
            candidate=tuple(sorted(probe.candidate)),
            role=probe.role,
            kinds=tuple(kinds),
            run_id=result.run_id if result is not None else "",
            infra_reason=reason,
            interrupted=result is None or result.interrupted,
            first_attempt=first,
            numbers=tuple(numbers),
        )


def _kind(attempt: AttemptResult) -> AttemptKind:
    outcome = attempt.ran
    if outcome is None:
        return "infra"  # never ran what the spec asks: counts neither way
    if attempt.matched:
        return "match"
    return "pass" if outcome.kind == "pass" else otherwise(outcome.kind)


def _parse_sets(items: Sequence[str], option: str) -> dict[str, Setting]:
    """`PATH=VALUE` (VALUE read as YAML) or `~PATH` (unset) -> {path: value}."""
    from reprospec.spec.overrides import option_value

    out: dict[str, Setting] = {}
    for item in items:
        if item.startswith("~"):
            out[item[1:].strip()] = MISSING
            continue
        path, sep, raw = item.partition("=")
        path = path.strip()
        if not sep or not path or any(not part for part in path.split(".")):
            raise UsageError(f"{option} {item}: expected PATH=VALUE, like run.timeout=5m")
        out[path] = option_value(option, item, path, raw)
    return out


# The spec's variables for an attempt: `~environment.env.NAME` unsets one on a side.
ENV_PREFIX = "environment.env."


def _check_unsets(
    sets: Config,
    other: Config,
    document: Mapping[str, JsonValue],
    option: str,
    inherited: Mapping[str, str],
) -> None:
    """Refuse `~PATH` for a field neither the spec nor the other side has, as `run --set
    ~PATH` does: it unset nothing, no difference came of it, and isolate ran as without
    it, saying nothing of the option it dropped. And `~environment.env.NAME` where NAME
    is in `inherited`, the environment the attempts inherit: that side still had it
    (`FAST_KERNEL=1 reprospec isolate s.yaml --passing-set ~environment.env.FAST_KERNEL`,
    the shell a capture ran in, said "the passing configuration fails the same way")."""
    for path, value in sets.items():
        if value is not MISSING or path.startswith(MATRIX):
            continue
        name = path.removeprefix(ENV_PREFIX)
        if path.startswith(ENV_PREFIX) and "." not in name and name in inherited:
            raise UsageError(
                f"{option} ~{path}: {name} is set in the environment isolate runs in, which "
                "every attempt inherits, so that side still has it; unset it where isolate "
                f"runs (env -u {name} reprospec isolate ...), or give that side a value "
                f"({option} {path}=VALUE; '' for an empty one)"
            )
        if path not in other and lookup(document, path) is MISSING:
            raise UsageError(
                f"{option} ~{path}: '{path}' is not in the spec, so unsetting it changes nothing"
            )


def _check_axes(items: Sequence[str], option: str, cells: Sequence[Cell]) -> None:
    """Refuse `matrix.AXIS` for an axis the spec does not have, as `-m` does.

    Set, it became a difference of its own that nothing reads: a flaky failure then
    blamed it, where `-m nope=1` is refused.
    """
    from reprospec.spec.matrix import known_axes, unknown_axis

    asked = []
    for item in items:
        path = item.lstrip("~").partition("=")[0].strip()
        if path.startswith(MATRIX):
            asked.append((item, path[len(MATRIX) :]))
    if not asked:
        return
    known = known_axes(cells)
    for item, axis in asked:
        if axis not in known:
            raise unknown_axis(f"{option} {item}", axis, known, MATRIX)
        # Only a key that `include` brings to some cells can be absent from one (null
        # there); an axis every cell holds, unset, ran as a cell no spec can have, and
        # `~matrix.x` was refused halfway through the search as an error of the spec's
        # command, under a `--set matrix=...` the user had not typed.
        if item.startswith("~") and all(axis in cell.matrix for cell in cells):
            raise UsageError(
                f"{option} {item}: every cell has a value of axis '{axis}', so no side can "
                f"be without it; give that side one ({option} {MATRIX}{axis}=VALUE)"
            )


def _passing_expected_to_fail(
    options: IsolateOptions,
    failing: Cell | None,
    passing: Cell | None,
    expectations: CellExpectations,
    expected_to_pass: list[Cell],
) -> None:
    """Refuse a --passing cell the spec expects to fail as the failing cell does, where the
    spec expects some cell to pass: it says which cells pass, and this is none of them. Run,
    it spent its attempts on the passing side to end `base-reproduces`. A spec that expects
    every cell to fail (no case of a pass) says nothing of which passes: the named one is
    the user's word, and runs. With --passing-set the passing side is another config."""
    if not options.passing or passing is None or failing is None or options.passing_sets:
        return
    if passing == failing or not expected_to_pass:
        return
    expected = expectations.of(passing)
    if not fails(expected) or expected != expectations.of(failing):
        return
    shown = ", ".join(c.id for c in expected_to_pass[:4]) + (
        ", ..." if len(expected_to_pass) > 4 else ""
    )
    raise UsageError(
        f"the passing cell {passing.id} is expected to fail as the failing cell "
        f"{failing.id} is (its expect is the same): isolate needs a passing side; nothing "
        f"ran: name a cell the spec expects to pass ({shown}) with "
        f"{said('--passing', 'passing')}, or give the fields that make the passing side "
        f"with {said('--passing-set', 'passing_sets')}"
    )


def _choose_cells(
    spec: Spec,
    cells: Sequence[Cell],
    expectations: CellExpectations,
    options: IsolateOptions,
    say: Progress,
    cancel: threading.Event,
    drawn: dict[str, int],
) -> tuple[Cell, Cell]:
    """The failing and passing cells: as asked, else from `expect`, else by running the matrix
    (then `drawn` holds the last attempt number it ran of each cell, by id).

    A named failing cell that its expect says passes is refused first, before a passing
    cell is looked for: where it was the only cell expected to pass, the matrix ran to find
    another and the error said "no cell passed", a mistake the user had not made. A cell
    chosen here (from `expect`, or by running the matrix) is always one expected to fail.
    """
    if options.cell and options.failing:
        # Two answers to one question: which one was meant cannot be guessed.
        raise UsageError(
            f"{said('-m', 'cell')} and {said('--failing', 'failing')} both choose the failing "
            f"cell: give one ({said('-m', 'cell')} keeps cells, and the first of them expected "
            "to fail is the failing cell)"
        )
    # The rule amplify and bisect share (plan/failingcell.py): -m keeps cells, and the first
    # of them expected to fail is the failing cell (under --amplify, the cell amplify
    # measured). Asked only where some cell is: where none is, the sides come from the
    # sets, or the refusals below say what is missing.
    amplified = Amplified.read(options.amplified) if options.amplified else None
    choice = (
        choose_failing_cell(
            cells,
            expectations,
            options.cell,
            verb="isolate",
            several="first",
            spec=str(spec.path),
            amplified=amplified,
        )
        if options.failing is None
        and (options.cell or amplified or any(fails(expectations.of(c)) for c in cells))
        else None
    )
    eligible = choice.candidates if choice is not None else cells
    failing = (
        _select(cells, options.failing, said("--failing", "failing")) if options.failing else None
    )
    if failing is not None and amplified is not None and failing.id != amplified.cell:
        # The perturbation raised the rate of amplify's cell: of another it is not known to.
        raise UsageError(
            f"{amplified.option}: the amplification measured cell {amplified.cell}, not "
            f"{said('--failing', 'failing')} {failing.id}: its perturbation is known to raise "
            f"the rate there only; drop {said('--failing', 'failing')} (isolate then works on "
            f"cell {amplified.cell}), or amplify the cell meant"
        )
    if failing is not None and expectations.of(failing).outcome == "pass":
        raise UsageError(
            f"the failing cell {failing.id} is expected to pass: isolate needs a cell "
            f"whose expect says how it fails"
        )
    passing = (
        _select(cells, options.passing, said("--passing", "passing")) if options.passing else None
    )
    expected_to_pass = [c for c in cells if expectations.of(c).outcome == "pass"]
    if failing is None and (passing is not None or expected_to_pass) and choice is not None:
        failing = choice.cell
        if choice.total > 1:
            say(choice.said())
    # With no cell expected to pass, `expect` says every cell fails: which one does is seen
    # in the run of the matrix, not read (the first cell, taken as read, passed 0/20).
    if passing is None and failing is not None:
        passing = farthest(failing, [c for c in expected_to_pass if c != failing])
    # Fields set on one side make the sides differ within one cell: the passing side is
    # the failing cell with --passing-set's fields (or the other way round). On a one-cell
    # spec the sets were ignored, and the error asked for the --passing-set just given.
    if passing is None and failing is not None and options.passing_sets:
        passing = failing
    if failing is None and passing is not None and options.failing_sets:
        failing = passing
    if failing is None and passing is None and len(cells) == 1 and options.passing_sets:
        failing = passing = cells[0]
    if (
        passing is None
        and len(cells) == 1
        and not options.failing_sets
        and expectations.of(cells[0]).outcome != "pass"
    ):
        # The matrix ran once to find a passing cell the spec cannot have; a rare failure
        # that passed that one attempt was then sent to `amplify`, a pass in its spec.
        raise UsageError(
            f"{spec.path} has one cell ({cells[0].id}), so none of its cells can be the "
            "passing side; nothing ran: give the fields that make the passing side with "
            f"{said('--passing-set', 'passing_sets')} (the cell with them set: matrix.AXIS=VALUE, "
            "environment.env.NAME=VALUE, ~environment.env.NAME; repeatable), or widen an "
            "axis of its matrix and expect the new cell to pass (expect.cases)"
        )
    _passing_expected_to_fail(options, failing, passing, expectations, expected_to_pass)
    if failing is None or passing is None:
        failing, passing = _observe(
            spec, cells, eligible, options, failing, passing, say, cancel, drawn
        )
    if expectations.of(failing).outcome == "pass":
        # A side the sets made (a one-cell spec expected to pass, with --passing-set): the
        # search would take its passes for the failure ("fails when MODE=a", backwards).
        raise UsageError(
            f"the failing side (cell {failing.id}) is expected to pass: isolate needs a "
            f"cell whose expect says how it fails"
        )
    if failing == passing and not (options.failing_sets or options.passing_sets):
        raise UsageError(
            f"the failing and passing cells are the same cell ({failing.id}): name another "
            f"with {said('--passing', 'passing')}, or set the fields that differ with "
            f"{said('--passing-set', 'passing_sets')}"
        )
    return failing, passing


def _observe(
    spec: Spec,
    cells: Sequence[Cell],
    eligible: Sequence[Cell],
    options: IsolateOptions,
    failing: Cell | None,
    passing: Cell | None,
    say: Progress,
    cancel: threading.Event,
    drawn: dict[str, int],
) -> tuple[Cell, Cell]:
    """Run every cell once (each cell's attempt number noted in `drawn`): the first of
    `eligible` (the cells `-m` keeps) that fails as expected, and of the cells that passed
    the one that differs from it most (`differences.farthest`)."""
    from reprospec import api

    once = plural(len(cells), "cell")
    matrix_run = options.run.with_changes(
        repeat=1, matrix_filters=(), purpose="isolate", probe=MATRIX_ONCE
    )
    stopped = _stopped_matrix_run(spec, matrix_run)
    if stopped is None:
        say(f"running the matrix once ({once}) to find a failing and a passing cell")
        # `cancel` too: once the run is stored the CLI's stop is that event alone
        # (RunOptions.deferral), and a run without it went on to its end.
        result = api.run(spec, matrix_run, cancel=cancel)
    else:
        from reprospec.pipeline import stages

        say(
            f"continuing the matrix run {stopped.run_id} ({once}) an earlier isolate began: "
            f"{plural(len(stopped.done), 'attempt')} kept"
        )
        try:
            result = stages.run(spec, matrix_run, cancel=cancel, resume=stopped)
        finally:
            if matrix_run.deferral is not None:
                matrix_run.deferral.end()  # as api.run ends it
    if result.interrupted:
        raise KeyboardInterrupt
    passed: list[Cell] = []
    chosen = {c.id for c in eligible}
    for cell in result.cells:
        if cell.attempts:
            drawn[cell.cell.id] = max(a.attempt for a in cell.attempts)
        ran = [a.ran for a in cell.attempts if a.ran is not None]
        if not ran:
            continue
        matched = all(a.matched for a in cell.attempts if a.ran is not None)
        if (
            failing is None
            and cell.expected.outcome != "pass"
            and matched
            and cell.cell.id in chosen
        ):
            failing = cell.cell
        elif all(o.kind == "pass" for o in ran):
            passed.append(cell.cell)
    if passing is None and failing is not None:
        passing = farthest(failing, [c for c in passed if c != failing])
    if passing is None and options.passing_sets:
        passing = failing  # the failing cell with --passing-set's fields
    if failing is None:
        if len(cells) == 1:
            # Naming the only cell helps nothing: it is the one that did not fail.
            raise UsageError(
                f"the cell did not fail as expected in one attempt (run {result.run_id}): for "
                "a rare failure, `reprospec amplify` first (then isolate --amplify); a "
                "one-cell spec's sides differ by the fields "
                f"{said('--passing-set', 'passing_sets')} sets"
            )
        if options.cell:
            shown = " ".join(f"{said('-m', 'cell')} {f}" for f in options.cell)
            raise UsageError(
                f"no cell kept by {shown} failed as expected in one run of the matrix (run "
                f"{result.run_id}): keep another with {said('-m', 'cell')}"
            )
        raise UsageError(
            f"no cell failed as expected in one run of the matrix (run {result.run_id}): "
            f"name one with {said('--failing', 'failing')}"
        )
    if passing is None:
        raise UsageError(
            f"no cell passed in one run of the matrix (run {result.run_id}): name one with "
            f"{said('--passing', 'passing')}, or set fields with "
            f"{said('--passing-set', 'passing_sets')}"
        )
    return failing, passing


# What `history --searches` says the matrix run tried: its probe's name (RunOptions.probe),
# and how an isolate stopped in it finds it again.
MATRIX_ONCE = "the matrix once"


def _stopped_matrix_run(spec: Spec, options: RunOptions) -> stages.Resume | None:
    """The matrix run an isolate of this spec with these options began and was stopped in
    (Ctrl-C), the newest of its matrix runs, to continue: "run the same command again to
    resume" ran every cell again, where each probe after it resumed. None where there is
    none, a later one finished, or it cannot be resumed as it is (the spec changed since:
    resumption.load refuses it), and a fresh run is made."""
    from reprospec.pipeline import resume as resumption
    from reprospec.pipeline import stages
    from reprospec.store.db import Store

    out = options.out
    if spec.path is None or not (out / "results.db").is_file():
        return None
    given = Path(str(spec.origin or spec.path))
    paths = tuple(dict.fromkeys([str(given), str(given.absolute()), str(given.resolve())]))
    with Store(out) as store:
        rows = store.runs(spec.name, 50, spec_paths=paths)
    earlier = next(
        (r for r in rows if r["purpose"] == "isolate" and r["probe"] == MATRIX_ONCE), None
    )
    if earlier is None or earlier["status"] != "interrupted":
        return None
    run_id = str(earlier["run_id"])
    try:
        _spec, stored, done = resumption.load(run_id, out, spec_path=given)
    except UsageError:
        return None
    if stored.with_changes(jobs=options.jobs) != options:
        return None  # other options (a --set, a runner): another question's run
    return stages.Resume(run_id, done)


def _select(cells: Sequence[Cell], text: str, option: str) -> Cell:
    """A cell by its id, or by AXIS=VALUE,... filters that leave exactly one."""
    from reprospec.spec.matrix import select

    for cell in cells:
        if cell.id == text:
            return cell
    filters = [part for part in text.split(",") if part.strip()]
    kept = select(cells, filters, said=f"{option} {text}")
    if len(kept) != 1:
        shown = ", ".join(c.id for c in kept[:4]) + (", ..." if len(kept) > 4 else "")
        raise UsageError(f"{option} {text}: {len(kept)} cells match ({shown}); name one")
    return kept[0]


def _interrupted(iso: Isolation) -> IsolationResult:
    iso.interrupt()
    assert iso.result is not None
    return iso.result
