"""Step 1 of `minimize`: the failing cell's smallest configuration, found by `isolate`.

Before the program shrinks, the settings do: the matrix values of the failing cell
that the failure does not need go back to a passing cell's values. That is what
`isolate` answers (the smallest set of differences from a passing cell that still
fails the same way), so this module runs `isolate_spec` itself, not a second search:
its state, resume, flaky-aware rule and report (OUT/isolate/ID/isolate.md) are
isolate's, and its attempts count in the minimization's budget.

The passing cell compared against is the one that differs from the failing cell in
the most settings (the first in matrix order among those): the nearest one would
share every setting that does not matter, and isolate can only reset what differs.
The answer is a `Reduced`: the configuration as a cell, the differences kept (the
failure needs them) and reset (it does not), and the `--set` overrides that run it
as a one-cell spec with the failing cell's expect, as isolate runs its candidates.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from reprospec import native
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Expectation
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.runoptions import RunOptions
from reprospec.core.words import plural
from reprospec.errors import FatalError, UsageError
from reprospec.isolation.differences import (
    MATRIX,
    MISSING,
    Difference,
    Setting,
    configuration,
    differences,
    farthest,
    mix,
    overrides,
    render,
)
from reprospec.isolation.state import CannotGoOn, StoredProbe, stored_probes
from reprospec.minimize.hangplace import attempt_place, moved, places_said, ran_source
from reprospec.outcome.hangsource import Source
from reprospec.spec.matrix import cell_id
from reprospec.store.resultsjson import find_run, load_run

Progress = Callable[[str], None]
ISOLATE_BUDGET = 100  # isolate's own default: the settings' share of a large budget
ISOLATE_SHARE = 5  # and at most a fifth of a small one


@frozen
class Reduced:
    """The failing cell's smallest configuration, and what isolate said about it."""

    cell: Cell  # the configuration as a cell: the failing cell when nothing was reset
    original: Cell  # the failing cell as the spec names it
    passing: Cell | None  # the passing cell compared against (None: none was)
    kept: tuple[Difference, ...] = ()  # the failure needs these (the failing cell's values)
    reset: tuple[Difference, ...] = ()  # it does not: set back to the passing cell's values
    status: str = "skipped"  # isolate's status, or "skipped" (nothing to search)
    message: str = ""
    attempts: int = 0
    isolate_id: str = ""
    folder: Path | None = None  # OUT/isolate/ID: isolate's state and report
    overrides: tuple[str, ...] = ()  # run the configuration as one cell with the failing expect
    interrupted: bool = False
    # Of `attempts`, the probes and attempts isolate answered from its state (an earlier
    # minimize of the same spec ran them): said with the program step's.
    reused: int = 0
    replayed: int = 0
    # What isolate found the failure needs (its culprits), whether or not the rest could be
    # reset: `b=1 AND d=1`, which the program's passes must keep (`unguarded`).
    needed: tuple[Difference, ...] = ()

    def unguarded(self, passing: Sequence[Cell]) -> str:
        """A caveat ('' for none) where isolate found the failure needs values together
        and no passing cell sets some of them without the rest: the program's candidates
        are checked against those cells only, so a candidate that lost one condition (`b`
        no longer read: it crashes with `d=1` alone) passed them all."""
        axes = [d for d in self.needed if d.is_axis]
        if len(axes) < 2 or len(axes) != len(self.needed):
            return ""

        def holds(cell: Cell, d: Difference) -> bool:
            return d.name in cell.matrix and cell.matrix[d.name] == d.value

        def guarded(d: Difference) -> bool:
            """A passing cell sets every other needed value and not `d`'s."""
            others = [o for o in axes if o is not d]
            return any(all(holds(c, o) for o in others) and not holds(c, d) for c in passing)

        unheld = [d for d in axes if not guarded(d)]
        if not unheld:
            return ""  # each one-smaller set is a passing cell: candidates keep the AND
        together = " AND ".join(d.describe() for d in axes)
        each = ", nor ".join(f"all of them but {d.name}" for d in unheld)
        # Out of budget, the AND is isolate's best guess, as the settings line says of it.
        found = "isolate's best guess is that" if self.status == "budget" else "isolate found"
        return (
            f"{found} the failure needs {together}, and no passing cell sets {each}, "
            "so the program's candidates are not held to the AND: the result may fail where "
            "the original does not (with a condition left out); add, for each, a cell with "
            "the others set and that one not, with `expect.cases` saying it passes, and "
            "minimize again"
        )

    def sentence(self) -> str:
        """One line for the summary and minimize.md."""
        if not self.reset:
            return f"{self.cell.id} kept as it is ({self.message or self.status})"
        shown = ", ".join(f"{d.name}={_shown(d.value)} -> {_shown(d.base)}" for d in self.reset)
        needed = " AND ".join(d.describe() for d in self.kept) or "none of the differences"
        against = (
            f"isolate against {self.passing.id if self.passing else '-'}, "
            f"{plural(self.attempts, 'attempt')}"
        )
        if self.status == "budget":
            # Out of its budget, isolate has a best guess, not an answer: the configuration
            # was seen failing the same way (so the program is minimized in a failing cell),
            # but "does not matter" and "needs" were said of a 4% failure's guess at 98.6%
            # as if isolate had answered them.
            return (
                f"{shown} (seen failing without {'it' if len(self.reset) == 1 else 'them'}; "
                f"isolate's best guess, its budget spent before it was sure: the failure "
                f"needs {needed}, {against})"
            )
        return f"{shown} (does not matter; the failure needs {needed}, {against})"

    def to_dict(self) -> JsonObject:
        return {
            "status": self.status,
            "message": self.message,
            "cell_before": self.original.id,
            "cell_after": self.cell.id,
            "passing": self.passing.id if self.passing else None,
            "kept": [d.to_dict() for d in self.kept],
            "reset": [d.to_dict() for d in self.reset],
            "attempts": self.attempts,
            "isolate_id": self.isolate_id,
        }


def reduce_settings(
    spec_path: Path,
    document: Mapping[str, JsonValue],
    failing: Cell,
    passing: Sequence[Cell],
    expectation: Expectation,
    options: RunOptions,
    *,
    budget: int,
    min_rate: float | None,
    progress: Progress,
    cancel: threading.Event,
    workdir: Path,
) -> Reduced:
    """Isolate the failing cell against its farthest passing cell; the rest goes back.
    `workdir`: the spec's, where isolate's runs ran (a hang's lines are read there), as
    they ran in it, links kept (hangplace.ran_source)."""
    from reprospec.isolation.driver import IsolateOptions, isolate_spec

    other = farthest(failing, passing)
    if other is None:
        return Reduced(failing, failing, None, message="the spec has no passing cell")
    passing_config = configuration(document, other.matrix, {})
    failing_config = configuration(document, failing.matrix, {})
    diffs = differences(passing_config, failing_config)
    if len(diffs) < 2:
        # One difference from a passing cell is the condition itself: nothing to reset.
        return Reduced(
            failing,
            failing,
            other,
            kept=diffs,
            message=f"it differs from the passing cell {other.id} in one setting only",
        )
    share = max(1, min(ISOLATE_BUDGET, budget // ISOLATE_SHARE))
    progress(
        f"settings: isolating the {plural(len(diffs), 'difference')} between {failing.id} and the "
        f"passing cell {other.id} (isolate, at most {plural(share, 'attempt')})"
    )
    try:
        found = isolate_spec(
            spec_path,
            IsolateOptions(
                failing=failing.id,
                passing=other.id,
                budget=share,
                min_rate=min_rate,
                run=options,
            ),
            progress=progress,
            cancel=cancel,
        )
    except KeyboardInterrupt:
        cancel.set()
        return Reduced(failing, failing, other, message="interrupted", interrupted=True)
    except CannotGoOn as refused:
        # Step 1's isolate goes on past its earlier run on an --out that cannot be written:
        # its figures are its share of the budget, not the --budget the user gave. From an
        # interrupted run no minimize --budget only replays (minimize.json's check, which
        # goes on whatever the budget): no --budget to suggest.
        went = (
            "minimize's step 1 (isolating the settings, at most "
            f"{plural(share, 'attempt')}) goes on from its interrupted run"
            if refused.interrupted
            else f"a --budget of {budget} continues minimize's step 1 (isolating the settings, "
            f"at most {plural(share, 'attempt')}) past its earlier run"
        )
        again = (
            ""
            if refused.interrupted
            else " (or the earlier run's --budget to see its answer again)"
        )
        raise UsageError(
            f"--out {options.out}: cannot be written ({refused.why}), and {went}, whose new "
            f"attempts' runs go there: give an --out that can be{again}"
        ) from None
    result = found.result
    base = Reduced(
        failing,
        failing,
        other,
        kept=diffs,
        status=result.status,
        message=result.message,
        attempts=result.attempts,
        isolate_id=found.id,
        folder=found.folder,
        interrupted=found.interrupted,
        reused=found.reused,
        replayed=found.replayed,
    )
    # Isolated, or out of budget with a smaller set seen failing: that set fails the same way
    # (it was seen doing so), so its configuration is a failing cell. Anything else (refused,
    # the passing side fails too) leaves the settings as they are, for the passes to judge.
    if found.interrupted or result.status not in ("isolated", "budget") or not result.culprits:
        return base
    chosen = sorted(result.culprits)
    base = replace(base, needed=tuple(diffs[i] for i in chosen))
    if len(chosen) == len(diffs):
        return base
    config = mix(passing_config, diffs, chosen)
    values: dict[str, JsonValue] = {}
    # The failing cell's axis order, then any axis only the passing cell has.
    axes = [*failing.matrix, *(a for a in other.matrix if a not in failing.matrix)]
    for axis in axes:
        value = config.get(MATRIX + axis, MISSING)
        if value is not MISSING:
            values[axis] = value
    cell = Cell(id=cell_id(values), index=failing.index, matrix=values)
    same = _same_failure(
        found.folder,
        tuple(range(len(diffs))),
        tuple(chosen),
        options.out,
        ran_source(workdir, options.runner),
    )
    if same is not None:
        # Failing as the expect says is not failing the same way: a worker's segfault that
        # the smaller configuration turns into the main process's (workers=0) is another
        # bug to minimize, and step 2 would learn its signature from the reduced cell.
        return replace(base, message=f"{cell.id} fails too, but {same}")
    expect = {k: v for k, v in expectation.to_dict().items() if k != "rate"}
    return replace(
        base,
        cell=cell,
        kept=tuple(diffs[i] for i in chosen),
        reset=tuple(d for i, d in enumerate(diffs) if i not in chosen),
        overrides=(*overrides(config, document), "expect=" + json.dumps(expect)),
    )


def _same_failure(
    folder: Path, full: tuple[int, ...], chosen: tuple[int, ...], out: Path, source: Source
) -> str | None:
    """None where the configuration isolate chose failed the way the failing cell did (the
    same signature: native.agrees; a hang, in the same place: hangplace.py), or either
    side's failure cannot be read; else why not."""
    probes = stored_probes(folder)
    before = _first_signature(probes, full, out, source)
    after = _first_signature(probes, chosen, out, source)
    if before is None or after is None:
        return None
    # Unread native stacks on either side are not a difference (native.agrees).
    if not (
        native.agrees(after[0], before[0], native_unknown=after[1], across_builds=False)
        or native.agrees(before[0], after[0], native_unknown=before[1], across_builds=False)
    ):
        return f"as {after[0]}, not as the failing cell's {before[0]}"
    # A hang's signature is `hang` wherever it sits: a smaller configuration whose hang sits
    # elsewhere (one thread at a barrier, where the cell's two deadlocked on their locks)
    # is another hang. Step 2's rule (hangplace.moved): its places over every matched
    # attempt against the cell's, not one attempt each, whose busy threads' functions
    # vary with the moment its stacks were taken. An unread place is no difference.
    elsewhere = moved(after[2], before[2])
    if elsewhere:
        where = places_said(dict.fromkeys(p for p in before[2] if p))
        return f"as a {after[0]} {places_said(elsewhere)}, not {where} as the failing cell's"
    return None


def _first_signature(
    probes: Sequence[StoredProbe], candidate: tuple[int, ...], out: Path, source: Source
) -> tuple[str, bool, tuple[str, ...]] | None:
    """The signature of the first attempt that matched the expect in the probes of
    `candidate`, whether its native stacks went unread, and where each of its probes'
    matched attempts hung (hangplace.py; "" unread or no hang); None where no stored probe
    has one."""
    first: tuple[str, bool] | None = None
    places: list[str] = []
    for probe in probes:
        if probe.candidate != candidate or "match" not in probe.kinds or not probe.run_id:
            continue
        try:
            path = find_run(probe.run_id, out)
            result = load_run(path)
        except (OSError, ValueError, FatalError):
            continue
        for cell in result.cells:
            for attempt in sorted(cell.attempts, key=lambda a: a.attempt):
                if attempt.matched and attempt.ran is not None:
                    if first is None:
                        first = (attempt.ran.signature, native.read_none(attempt.native))
                    places.append(attempt_place(path.parent, attempt, source))
    return None if first is None else (*first, tuple(places))


def _shown(value: Setting) -> str:
    return "unset" if value is MISSING else render(value)
