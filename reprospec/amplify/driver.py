"""`reprospec amplify` as a library: the search of `search.py` driven by real runs.

    from reprospec.amplify.driver import AmplifyOptions, amplify_spec
    found = amplify_spec("race.yaml", AmplifyOptions(budget=300))
    found.sentence()   # "base 0/24 (95% CI 0.00–0.14); with switch_interval=1e-06: 14/40 (...)"

Each probe is a normal run through the Python API (`reprospec.run`, purpose
"amplify") of the spec's one chosen cell with `environment.perturb.FIELD` set
(`--set` overrides), judged by the cell's own `expect`: a failure counts only
when it matches the spec's signature, and a different one is kept apart as what
the perturbation provoked instead. Every attempt is stored like a run's; the
amplify folder (state.py) remembers which run answered which probe, so running
the same command again, or with a larger --budget, replays them and runs only what
is new.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.amplify.report import AmplifyReport
from reprospec.amplify.search import Amplification, Arm, Probe, Settings
from reprospec.amplify.state import StateFile, StoredProbe, run_ids
from reprospec.core.caller import argument, from_api, said
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.redact import Redactor
from reprospec.core.results import AttemptResult, RunResult
from reprospec.core.runoptions import RunOptions, WordSet, check_options, rerun_words
from reprospec.core.sections import Perturb, SectionError
from reprospec.core.trylock import search_held
from reprospec.core.words import FRESH_PREFIX, plural
from reprospec.errors import FatalError, UsageError, suggest
from reprospec.isolation.candidates import AttemptKind
from reprospec.isolation.state import (
    check_out_to_go_on,
    continuing,
    not_replayed,
    search_id,
)
from reprospec.perturb.fork import unforkable
from reprospec.pipeline.searchscope import search_scope
from reprospec.plan.attempt import reads_attempt
from reprospec.plan.failingcell import cell_filters, choose_failing_cell

Progress = Callable[[str], None]

FIELDS = (
    "switch_interval",
    "cpus",
    "cpu_load",
    "io_load",
    "memory_limit",
    "malloc",
    "hash_seed",
    "gc",
    "nice",
    "torch.num_threads",
    "torch.interop_threads",
    "torch.caching_allocator",
    "torch.alloc_conf",
)


def default_tries() -> tuple[tuple[str, JsonValue], ...]:
    """The perturbations tried when none is named: one per class of bug that needs no
    number from the user (a memory limit does: it depends on the program)."""
    return (
        ("switch_interval", 1e-6),  # thread races: a switch between any two bytecodes
        ("cpus", 1),  # races that need a preemption on one CPU, timing on a slow machine
        ("cpu_load", max(2, os.cpu_count() or 1)),  # timeouts, starvation, lost wakeups
        ("malloc", "perturb"),  # use-after-free and uninitialized reads in C code
        ("gc", "aggressive"),  # finalizers, weakref callbacks, refcount bugs
    )


@frozen
class AmplifyOptions:
    """What `reprospec amplify` is asked besides the spec."""

    # -m AXIS=VALUE: the cell, the only one expected to fail of those they keep (without
    # them, of the spec's cells): plan/failingcell.py.
    matrix_filters: tuple[str, ...] = ()
    tries: tuple[str, ...] = ()  # FIELD=VALUE; empty: default_tries()
    budget: int = 300
    first: int = Settings.first
    run: RunOptions = field(default_factory=lambda: RunOptions(purpose="amplify"))
    command_line: str = ""

    if TYPE_CHECKING:  # any iterable of str for a tuple (core/runoptions.py's Words)

        def __init__(
            self,
            matrix_filters: WordSet = ...,
            tries: WordSet = ...,
            budget: int = ...,
            first: int = ...,
            run: RunOptions = ...,
            command_line: str = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        check_options(
            self,
            sets=("matrix_filters", "tries"),
            counts=("budget", "first"),
            runs=("run",),
        )
        # Each try checked when made, as the fields above are: `tries=("nosuch=1",)` was
        # refused only once amplify_spec ran. In the API's words (`tries`) but
        # where the CLI made it from `--try`.
        from_api(parse_tries)(self.tries)


def fresh_tries(spec: Perturb, tries: Sequence[tuple[str, JsonValue]]) -> dict[str, str]:
    """Under run.preload, the tries whose arm runs fresh while the base forks, by label, with
    why (perturb/fork.py `unforkable`); none where the spec's own environment.perturb makes
    every attempt, the base's too, run fresh."""
    if unforkable(spec) is not None:
        return {}
    fresh: dict[str, str] = {}
    for name, value in tries:
        section: JsonObject = (
            {"torch": {name.removeprefix("torch."): value}}
            if name.startswith("torch.")
            else {name: value}
        )
        reason = unforkable(Perturb.from_section(section))
        if reason is not None:
            fresh[Arm(((name, value),), "single").label] = reason
    return fresh


def preload_said(spec: Perturb, tries: Sequence[tuple[str, JsonValue]]) -> str:
    """Under run.preload, how the arms run: each forks from the preloaded server, as the base
    does, unless one of its perturbations applies only as a process starts (then fresh, and
    judged against a base run fresh too; every attempt fresh, the base's too, where the
    spec's own environment.perturb holds one: perturb/apply.py)."""
    own = unforkable(spec)
    if own is not None:
        return (
            "run.preload: every attempt runs fresh, the base's too (the spec's own "
            f"environment.perturb: {own})"
        )
    fresh = [
        f"an arm with {label} runs fresh ({reason})"
        for label, reason in fresh_tries(spec, tries).items()
    ]
    said = "run.preload: the base and the perturbed arms fork from the preloaded server"
    if fresh:
        fresh.append(
            "such an arm is judged against base (fresh), the base started fresh too, not "
            "against the forked base"
        )
    return "; ".join([said, *fresh])


def preload_unforked(note: str, fresh: bool) -> str:
    """Under run.preload, what is said where the base's attempts ran fresh all the same (its
    first one's `launch_note`, `note`): no arm forks either, and an arm that runs fresh by its
    perturbation (`fresh`: there is one) is judged against the base, no second base made."""
    why = note.removeprefix(FRESH_PREFIX)
    said = "run.preload: the base's attempts ran fresh, not forked" + (f" ({why})" if why else "")
    said += ", as every arm's will"
    if fresh:
        said += ": each is judged against the base, started alike"
    return said


def parse_tries(items: Sequence[str]) -> tuple[tuple[str, JsonValue], ...]:
    """`FIELD=VALUE` (VALUE read as YAML, checked as environment.perturb checks it)."""
    from reprospec.spec.overrides import option_value

    option = said("--try", "tries")  # what the user gave, in their words
    out: list[tuple[str, JsonValue]] = []
    given: dict[str, str] = {}  # each arm's label: the item that made it
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().removeprefix("environment.perturb.").removeprefix("perturb.")
        if not sep or not name:
            raise UsageError(f"{option} {item}: expected FIELD=VALUE, like switch_interval=1e-6")
        if name not in FIELDS:
            close = suggest(name, FIELDS)
            hint = f"; perhaps you meant {close[0]!r}?" if close else ""
            raise UsageError(
                f"{option} {item}: unknown perturbation {name!r}{hint} (known: {', '.join(FIELDS)})"
            )
        value = option_value(option, item, name, raw)
        section: JsonObject = (
            {"torch": {name.removeprefix("torch."): value}}
            if name.startswith("torch.")
            else {name: value}
        )
        # The spec validator's words first (what the field takes, a did-you-mean): the
        # parser's own said "expected a whole number >= 1" of `malloc=perturbb`, a word.
        from reprospec.spec.schema import value_problems

        problems = value_problems(("environment", "perturb", *name.split(".")), value)
        if problems:
            raise UsageError(f"{option} {item}: {problems[0][1]}")
        try:
            Perturb.from_section(section)
        except SectionError as exc:
            raise UsageError(f"{option} {item}: {exc}") from None
        # One arm per perturbation: the same one twice (`gc=aggressive` again, or
        # `switch_interval=0.000001` beside `1e-6`) made two arms of one label, and the
        # search refused them with an internal error and a traceback.
        label = Arm(((name, value),), "single").label
        if label in given:
            raise UsageError(
                f"{option} {item}: the same perturbation as {option} {given[label]} "
                f"({label}): give each once"
            )
        given[label] = item
        out.append((name, value))
    return tuple(out)


@search_scope()
def amplify_spec(
    spec_path: str | Path,
    options: AmplifyOptions,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> AmplifyReport:
    """Measure the cell's base rate, then find the perturbation that raises it most (under
    preload, an arm forks from the kept server unless a perturbation of it applies only as a
    process starts: `preload_said`)."""
    return _amplify(spec_path, options, progress, cancel or threading.Event())


def _amplify(
    spec_path: str | Path,
    options: AmplifyOptions,
    progress: Progress | None,
    cancel: threading.Event,
) -> AmplifyReport:
    from reprospec import api

    # The --try words before the cell: a typo said only once the -m it asked for was
    # typed cost the user a second refusal.
    tries = parse_tries(options.tries) if options.tries else default_tries()
    run_options = options.run.with_changes(purpose="amplify", matrix_filters=())
    spec = api.load_spec(spec_path, run_options.overrides)
    redactor = Redactor.for_spec(spec.document)

    def say(message: str) -> None:
        if progress is not None:
            progress(redactor.text(message))

    whole = api.plan_run(spec, run_options)
    # -m, or the spec's expect where it says one cell fails (plan/failingcell.py).
    chosen = choose_failing_cell(
        whole.cells,
        whole.expectations,
        options.matrix_filters,
        verb="amplify",
        several="refuse",
        spec=str(spec_path),
    )
    cell = chosen.cell
    if chosen.total > 1:
        say(chosen.said())
    # Every probe runs that one cell: the filters that keep exactly it.
    run_options = run_options.with_changes(matrix_filters=cell_filters(cell, whole.cells))
    plan = api.plan_run(spec, run_options)
    if len(plan.cells) != 1:
        raise UsageError(f"amplify runs one cell: {len(plan.cells)} cells are alike ({cell.id})")
    expectation = plan.expectation(cell)
    if expectation.observes or expectation.outcome == "pass":
        # A spec with no expect read "default is expected to be observed": the mode's name,
        # where the user needs to hear that the spec says nothing of the failure.
        said = (
            "is expected to pass"
            if expectation.outcome == "pass"
            else "has no expect (any outcome): `run --observe` shows what it does"
        )
        raise UsageError(
            f"amplify needs the cell's expect to say how it fails (the spec's own signature, "
            f"not any failure); cell {cell.id} {said}"
        )
    # How the cell's attempt depends on its number, as `materialize` words it. An arm's
    # probes are numbered after each other (`drawn` below), so its rate is of new draws;
    # but every arm draws the same numbers, 1, 2, ...: its rate beside the base's is of the
    # same seeds under another setting, said so that a difference is read as the setting's.
    reads = reads_attempt(plan.attempts[0], plan.extra_attempt(cell, 2)) if plan.attempts else ""
    if reads:
        say(
            f"note: cell {cell.id} reads its attempt number ({reads}): each arm's attempts "
            "are numbered 1, 2, ... across its probes, so every arm draws the same values "
            "as the base (attempt 3 of each does what attempt 3 of the base did, but for the "
            "arm's setting)"
        )
    current = plan.attempts[0].environment.perturb.settings() if plan.attempts else ()
    if options.tries and all(try_ in current for try_ in tries):
        # Each already set (amplify of amplified.yaml with its own winner): no arm is left,
        # and the search spent its budget on the base to say "not amplified" of nothing tried.
        labels = ", ".join(Arm((try_,), "single").label for try_ in tries)
        raise UsageError(
            f"--try {labels}: cell {cell.id} already runs under it (environment.perturb), so "
            "there is nothing to try: give another --try, or amplify the spec without it"
        )
    fresh: dict[str, str] | None = None  # None: no run.preload
    # Whether the base's attempts fork is known once the first of them ran (a command no fork
    # runs, the docker runner, a server that could not import its modules run it fresh): the
    # line is said then, not before, where it said "fork" of a server that never started.
    forks_unknown = False
    if plan.attempts and plan.attempts[0].preload:
        # Which arms fork and which pay a whole interpreter start (and torch's import) per
        # attempt, said before a search of hundreds of attempts (14 minutes,
        # nothing said).
        perturb = plan.attempts[0].environment.perturb
        fresh = fresh_tries(perturb, tries)
        forks_unknown = unforkable(perturb) is None
        if not forks_unknown:
            say(preload_said(perturb, tries))  # every attempt fresh, the base's too
    # An arm that runs fresh is judged against `base (fresh)`, the spec run fresh too
    # (search.py: two bases): its gain over the forked base could be the start's.
    singles = [
        replace(arm, fresh=arm.label in (fresh or {}))
        for arm in (Arm((try_,), "single") for try_ in tries if try_ not in current)
    ]
    settings = Settings(budget=options.budget, first=options.first, step=max(4, plan.parallel))
    # Keyed on what a probe's outcome depends on and the question (the cell, the arms),
    # not on --budget or -j (isolation.state.search_id): a larger budget continues.
    ident = search_id(
        spec,
        plan.attempts.variants().attempts,
        run_options,
        [cell.id, json.dumps([a.label for a in singles])],
    )
    folder = run_options.out / "amplify" / ident
    check_out_to_go_on(
        run_options.out, folder, "amplify.json", options.budget, f"amplification {ident}"
    )
    # One search of this folder at a time: two (the same command in another terminal) each
    # ran every probe, and the last to write state.json dropped the other's.
    with search_held(folder, f"amplification {ident}"):
        state = StateFile(
            folder, {"spec": spec.name, "cell": cell.id, "tries": [a.label for a in singles]}
        )
        if state.could_not_run:
            say(not_replayed(f"amplification {ident}", state.could_not_run))
        if state.stored:
            say(continuing(f"amplification {ident}", state.stored, options.budget))
        search = Amplification(singles, settings)
        reused = 0  # stored probes (or parts of them) answered from the state
        replayed = 0  # their attempts: counted in the budget as if run again
        # The probes (stored or run now) whose attempts the answer counts: its runs. A smaller
        # --budget than the stored search's answered from 5 probes and listed all 21 runs, so
        # the attempts counted in them were 60 where the answer said 20.
        answered: list[StoredProbe] = []
        # The highest attempt number each arm's probes used, replayed or run: its next probe
        # is numbered after it, so that it draws new values of a cell that reads its
        # attempt number, where every probe numbered from 1 drew the first few again. A
        # probe Ctrl-C cut short is not stored, but its numbers stay drawn (state's "cut").
        drawn: dict[str, int] = state.cut_drawn
        interrupted = False
        rounds = 0
        while search.result is None and not interrupted:
            probes = search.next_probes()
            if not probes:
                break
            rounds += 1
            say(
                f"round {rounds}: "
                + ", ".join(f"{search.arms[p.arm].label} x{p.attempts}" for p in probes)
                + f" ({search.used}/{settings.budget} attempts used)"
            )
            base_pieces: list[StoredProbe] = []
            for probe in probes:
                arm = search.arms[probe.arm]
                pieces = state.take(arm.label, probe.attempts)
                done = sum(len(p.kinds) for p in pieces)
                reused += len(pieces)
                replayed += done
                for piece in pieces:
                    last = piece.first_attempt + len(piece.kinds) - 1
                    drawn[arm.label] = max(drawn.get(arm.label, 0), last)
                if done < probe.attempts:
                    # The stored attempts ran out (or there were none): run the rest.
                    rest = Probe(probe.arm, probe.attempts - done)
                    first = drawn.get(arm.label, 0) + 1
                    drawn[arm.label] = first + rest.attempts - 1
                    ran = _run_probe(spec.path, run_options, arm, rest, cancel, first)
                    if ran.interrupted:
                        if ran.run_id:
                            # Not stored (the resumed search asks it again, whole), but its
                            # attempt folders are not numbered again.
                            state.cut(arm.label, drawn[arm.label])
                        interrupted = True
                        break
                    state.add(ran)
                    pieces.append(ran)
                if probe.arm == 0:
                    base_pieces = pieces
                answered.extend(pieces)
                search.record(
                    probe,
                    tuple(k for p in pieces for k in p.kinds),
                    tuple(o for p in pieces for o in p.others),
                    next((p.infra_reason for p in reversed(pieces) if p.infra_reason), ""),
                )
            launch = _base_launch(base_pieces, run_options.out) if forks_unknown else None
            if launch is not None:
                # Between rounds: dropping `base (fresh)` renumbers the arms after it.
                forks_unknown = False
                forked, note = launch
                if forked:
                    say(preload_said(plan.attempts[0].environment.perturb, tries))
                else:
                    search.base_runs_fresh()
                    say(preload_unforked(note, bool(fresh)))
        if search.result is None:
            search.interrupt()
        assert search.result is not None
        found = AmplifyReport(
            id=ident,
            folder=folder,
            spec_name=spec.name,
            spec_path=str(Path(spec.path).absolute()),  # --amplify compares it from elsewhere
            cell=cell,
            expectation=expectation,
            result=search.result,
            runs=tuple(run_ids(answered)),
            reused=reused,
            replayed=replayed,
            interrupted=interrupted,
            budget=options.budget,
            command_line=options.command_line,
            chosen=chosen.reason if chosen.total > 1 else "",
            rerun_options=rerun_words(options.run),
            # A secret's `--set` as the run's command line writes it, `${{ env.NAME }}`: it
            # still runs (`***`, what redactor.value made of it, was refused as YAML).
            overrides=tuple(map(redactor.override, options.run.overrides)),
            cells=chosen.total,
            unforked=_unforked(answered, run_options.out, fresh) if fresh is not None else "",
            budget_said=argument("--budget", "budget"),
        )
        from reprospec.amplify.report import write

        return write(redactor.value(found), spec.document, spec.base_dir, spec.source_text)


def amplified_overrides(path: Path, spec_path: Path | None = None) -> tuple[str, ...]:
    """`--amplify PATH` (an amplify folder or its amplify.json): the winner's `--set`s, for
    the spec at `spec_path` only if the amplification was of that spec (its file, or a
    spec of the same name): another spec's (taken from a neighbouring folder) was applied,
    and the report said "without it the failure is rarer" of a failure it never measured."""
    file = path / "amplify.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        # The reader's words, not the decoder's ("Expecting value: line 1 column 1"), and
        # the folder where the file given sits in one: amplified.yaml, the spec amplify
        # wrote, was the likely mistake.
        why = "not JSON" if isinstance(exc, ValueError) else (exc.strerror or str(exc))
        beside = file.parent / "amplify.json"
        hint = (
            f"; its folder is one: --amplify {file.parent}"
            if file.is_file() and file != beside and beside.is_file()
            else ""
        )
        raise UsageError(
            f"--amplify {path}: not an amplify result, an amplify folder or its amplify.json "
            f"({why}){hint}"
        ) from None
    if isinstance(data, dict) and spec_path is not None:
        _check_amplified_spec(path, data, spec_path)
    settings = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(settings, dict) or not settings:
        raise UsageError(
            f"--amplify {path}: that amplification found no perturbation that raises the "
            f"rate ({data.get('sentence', 'no answer') if isinstance(data, dict) else ''})"
        )
    return overrides_for(Arm(tuple(settings.items()), "single"))


def _check_amplified_spec(path: Path, data: Mapping[str, JsonValue], spec_path: Path) -> None:
    """Refuse an amplification of another spec (exit 2)."""
    from reprospec.spec.load import load_spec

    measured = str(data.get("spec_path") or "")
    with contextlib.suppress(OSError):
        # A relative path (an amplify.json written before it was made absolute) is
        # relative to where that amplify ran, unknown here: the names decide.
        if Path(measured).is_absolute() and Path(measured).resolve() == spec_path.resolve():
            return
    spec = load_spec(spec_path)
    if data.get("spec") != spec.name:
        # amplify measures one cell: the advice for a matrix names the option that picks it.
        pick = " -m AXIS=VALUE, its failing cell" if spec.document.get("matrix") else ""
        raise UsageError(
            f"--amplify {path}: an amplification of spec {data.get('spec')!r} "
            f"({measured or 'its file unknown'}), not of {spec.name!r} ({spec_path}): amplify "
            f"this spec first (reprospec amplify {spec_path}{pick})"
        )


def overrides_for(arm: Arm) -> tuple[str, ...]:
    """The `--set` overrides that put `arm`'s perturbations into the spec."""
    return tuple(f"environment.perturb.{name}={json.dumps(value)}" for name, value in arm.settings)


def _unforked(probes: Sequence[StoredProbe], out: Path, fresh: Mapping[str, str]) -> str:
    """Of the attempts meant to fork (the base's and the forked arms', not `base (fresh)`'s
    nor a fresh arm's), how many ran fresh and why (the first one's `launch_note`): a
    server that could not import a module, or refused to fork, runs every attempt fresh,
    and amplify.md said "the base's attempts forked". "" where all forked."""
    meant_to_fork = [
        probe.run_id
        for probe in probes
        if probe.arm != Arm((), "base", fresh=True).label
        and not any(label in fresh for label in probe.arm.split(" + "))
    ]
    meant = ran_fresh = 0
    why = ""
    for attempt in _stored_attempts(meant_to_fork, out):
        meant += 1
        if attempt.launch == "fresh":
            ran_fresh += 1
            why = why or (attempt.launch_note or "")
    if not ran_fresh:
        return ""
    return f"{ran_fresh} of {plural(meant, 'attempt')} meant to fork ran fresh" + (
        f" ({why})" if why else ""
    )


def _base_launch(pieces: Sequence[StoredProbe], out: Path) -> tuple[bool, str] | None:
    """Whether the base's attempts in `pieces` forked (any of them), and where none did the
    first one's `launch_note`; None where none of them ran."""
    notes: list[str] = []
    for attempt in _stored_attempts((piece.run_id for piece in pieces), out):
        if attempt.ran is None:
            continue  # could not run: started neither way
        if attempt.launch == "forked":
            return True, ""
        if attempt.launch == "fresh":
            notes.append(attempt.launch_note or "")
    if not notes:
        return None
    return False, next((n for n in notes if n), "")


def _stored_attempts(run_ids: Iterable[str], out: Path) -> Iterator[AttemptResult]:
    """The attempts of the probes' stored runs `run_ids`, run by run (read as they are
    asked for); a run removed since is skipped, its attempts not counted."""
    from reprospec import api

    for run_id in run_ids:
        try:
            result = api.load_result(run_id, out)
        except (FatalError, OSError):
            continue
        for cell in result.cells:
            yield from cell.attempts


def _run_probe(
    spec_path: Path,
    options: RunOptions,
    arm: Arm,
    probe: Probe,
    cancel: threading.Event,
    first_attempt: int,
) -> StoredProbe:
    from reprospec import api

    spec = api.load_spec(spec_path, (*options.overrides, *overrides_for(arm)))
    if arm.fresh and not arm.settings:
        # `base (fresh)`: the spec as written, started as the fresh arms start (--preload none).
        options = options.with_changes(preload=())
    if cancel.is_set():
        return StoredProbe(arm.label, (), (), "", interrupted=True, first_attempt=first_attempt)
    result = api.run(
        spec,
        options.with_changes(
            repeat=probe.attempts,
            stop_on="never",
            jobs=min(options.jobs or 1, probe.attempts),
            purpose="amplify",
            first_attempt=first_attempt,
        ),
        cancel=cancel,
    )
    return _stored(arm, result, first_attempt)


def _stored(arm: Arm, result: RunResult, first_attempt: int) -> StoredProbe:
    from reprospec.core.words import attempt_phrase

    kinds: list[AttemptKind] = []
    others: list[str] = []
    reason = ""
    attempts = sorted(result.cells[0].attempts, key=lambda a: a.attempt) if result.cells else []
    for attempt in attempts:
        kind = _kind(attempt)
        kinds.append(kind)
        if kind == "other":
            others.append(attempt_phrase(attempt, pid=False))
        reason = attempt.infra_error or reason
    return StoredProbe(
        arm=arm.label,
        kinds=tuple(kinds),
        others=tuple(others),
        run_id=result.run_id,
        infra_reason=reason,
        interrupted=result.interrupted,
        first_attempt=first_attempt,
    )


def _kind(attempt: AttemptResult) -> AttemptKind:
    outcome = attempt.ran
    if outcome is None:
        return "infra"
    if attempt.matched:
        return "match"
    return "pass" if outcome.kind == "pass" else "other"
