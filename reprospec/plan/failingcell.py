"""Which cell a search verb works on: one rule for `isolate`, `amplify` and `bisect`.

A search asks about one failure, so it works on one cell: the cell whose `expect`
says how it fails, and only attempts failing that way count. The spec usually says
which cell that is (`expect.cases` or `include` entries make the others pass), so
`-m` is needed only where it does not:

1. `-m AXIS=VALUE` filters keep cells, as for `run` (none given: every cell);
2. of those, the ones whose expect is a failure are the candidates (none: refused,
   exit 2, but for a one-cell spec, whose cell the verb refuses in its own words);
3. one candidate is the cell, and the verb says which it took and why;
4. several: `isolate` (and `minimize`, which reads its own -m the same way) takes the
   first, and says so; `amplify` and `bisect`, whose answer is about one cell's rate
   or one cell's first bad version, refuse, naming each candidate with the `-m` that
   picks it (the fewest filters that leave it the only candidate).

Under `--amplify PATH` the cell is the one `reprospec amplify` measured (its amplify.json's
`cell`): the perturbation, and "without it the failure is rarer", are that cell's. Where
the spec as given has no such cell, `-m` leaves it out, or its expect is not a failure,
the verb refuses (exit 2): `isolate --amplify` of a spec whose amplify ran `-m mode=b`
took the first cell expected to fail, mode=a, and said it was amplified.

Each verb had its own copy of this (amplify and bisect refused every matrix of more
than one cell, even where the spec said one of them fails), so the rule is here once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from reprospec.core.caller import argument, filters_option, filters_said, said
from reprospec.core.frozen import frozen
from reprospec.core.inputs import Cell, Expectation
from reprospec.errors import UsageError

if TYPE_CHECKING:
    from reprospec.plan.run import CellExpectations

# What a verb does with several candidates: take the first, or refuse and name them.
Several = Literal["first", "refuse"]

# Candidates named in a refusal, each with its -m; the rest are counted.
SHOWN = 6
# The most filters tried for one candidate's -m before all of its values are given.
MOST_FILTERS = 3


@frozen
class FailingCell:
    """The cell a search works on, and why it was taken (said in the verb's output)."""

    cell: Cell
    # Every cell `-m` keeps that is expected to fail, in matrix order: `cell` among them,
    # unless it is the spec's only cell and is not (the verb refuses it in its own words).
    # Where every cell is expected to fail, isolate runs them to see which one does.
    candidates: tuple[Cell, ...]
    reason: str  # "the only cell expected to fail", "the one cell -m a=1 keeps", ...
    total: int  # the cells of the plan, for a verb that says nothing of a one-cell spec

    def said(self) -> str:
        """`cell a=1,b=1: the only one of 4 cells expected to fail`, for a progress line."""
        return f"cell {self.cell.id}: {self.reason}"


@frozen
class Amplified:
    """The cell an amplification measured (amplify.json's `cell`, its id), and the
    `--amplify PATH` it was read from, as the user gave it (named in a refusal)."""

    cell: str
    source: str

    @classmethod
    def read(cls, path: Path) -> Amplified | None:
        """The cell of the amplify folder (or amplify.json) at `path`; None where it names
        none (a file the CLI's `--amplify` check refuses first, with its reason)."""
        file = path / "amplify.json" if path.is_dir() else path
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        cell = data.get("cell") if isinstance(data, dict) else None
        return cls(cell, str(path)) if isinstance(cell, str) and cell else None

    @property
    def option(self) -> str:
        """`--amplify PATH`, or the API's `IsolateOptions(amplified='PATH')`."""
        return said(
            f"--amplify {self.source}", argument("--amplify", "amplified", repr(self.source))
        )


def choose_failing_cell(
    cells: Sequence[Cell],
    expectations: CellExpectations,
    filters: Sequence[str],
    *,
    verb: str,
    several: Several,
    spec: str = "",
    amplified: Amplified | None = None,
) -> FailingCell:
    """The cell `verb` works on, by the rule above; refused (exit 2) where there is none.

    `spec` names the spec in a refusal (its path as the user gave it); `amplified`, the
    cell an amplification the search runs under measured, is the cell where given.
    """
    from reprospec.spec.matrix import select

    kept = select(cells, filters)  # a filter that keeps nothing is refused there, named
    # The filters and the option as the user gave them: `-m`, or the Python API's argument
    # (`AmplifyOptions(matrix_filters=(...))`, core/caller.py), whose caller typed no `-m`.
    shown = filters_said(filters)
    if amplified is not None:
        return _amplified_cell(cells, kept, expectations, amplified, verb, shown, spec)
    failing = tuple(c for c in kept if fails(expectations.of(c)))
    if len(failing) == 1:
        if len(cells) == 1:
            why = "the spec's only cell"
        elif len(kept) == 1:
            why = f"the one cell {shown} keeps"
        elif filters:
            why = f"the only one of the {len(kept)} cells {shown} keeps expected to fail"
        else:
            why = f"the only one of {len(cells)} cells expected to fail"
        return FailingCell(failing[0], failing, why, len(cells))
    if not failing:
        if len(cells) == 1:
            # The spec's one cell is the one meant: the verb says in its own words what
            # it needs of that cell's expect (a pass, or no expect at all).
            return FailingCell(cells[0], (), "the spec's only cell", 1)
        if all(expectations.of(c).observes for c in kept):
            # A spec without expect (as `--observe` runs one) fails in no cell: "no cell is
            # expected to fail" sent its writer looking for a wrong expect, not a missing one.
            raise needs_expect(verb)
        where = f"no cell kept by {shown}" if filters else f"no cell of {spec or 'the spec'}"
        raise UsageError(
            f"{where} is expected to fail: {verb} needs a cell whose expect says how it fails"
        )
    among = f" of those {shown} keeps" if filters else ""
    if several == "first":
        return FailingCell(
            failing[0],
            failing,
            f"the first of {len(failing)} cells{among} expected to fail (another: "
            f"{_pick(failing[1], failing, filters)})",
            len(cells),
        )
    picks = "; ".join(f"{_pick(c, failing, filters)} (cell {c.id})" for c in failing[:SHOWN])
    more = f"; and {len(failing) - SHOWN} more" if len(failing) > SHOWN else ""
    named = spec or "the spec"
    which = (
        f"{shown} keeps {len(failing)} cells of {named} expected to fail"
        if filters
        else f"{len(failing)} cells of {named} are expected to fail"
    )
    raise UsageError(
        f"{verb} runs one cell, and {which}: choose one with {filters_option()}: {picks}{more}"
    )


def _amplified_cell(
    cells: Sequence[Cell],
    kept: Sequence[Cell],
    expectations: CellExpectations,
    amplified: Amplified,
    verb: str,
    shown: str,
    spec: str,
) -> FailingCell:
    """The cell `amplified` measured, where the spec as given has it, the filters keep it,
    and its expect says how it fails; else refused, naming why and what to run instead."""
    named = spec or "the spec"
    measured = f"{amplified.option}: the amplification measured cell {amplified.cell}"
    cell = next((c for c in cells if c.id == amplified.cell), None)
    if cell is None:
        ids = ", ".join(c.id for c in cells[:SHOWN]) + (", ..." if len(cells) > SHOWN else "")
        raise UsageError(
            f"{measured}, which {named} as given has not (its cells: {ids}): its perturbation "
            "is known to raise the rate there only; amplify the cell meant"
            + said(f" (reprospec amplify {named} -m AXIS=VALUE)", " (amplify_spec)")
        )
    if cell not in kept:
        raise UsageError(
            f"{measured}, which {shown} leaves out: its perturbation is known to raise the "
            f"rate there only; drop {filters_option()} ({verb} then works on cell "
            f"{cell.id}), or amplify the cell meant"
            + said(f" (reprospec amplify {named} {shown})", " (amplify_spec)")
        )
    expectation = expectations.of(cell)
    if not fails(expectation):
        what = (
            f"which {named} as given expects to pass"
            if expectation.outcome == "pass"
            else f"of which {named} as given expects nothing (no expect)"
        )
        raise UsageError(f"{measured}, {what}: {verb} needs a cell whose expect says how it fails")
    return FailingCell(cell, (cell,), f"the cell {amplified.option} measured", len(cells))


def needs_expect(verb: str) -> UsageError:
    """The refusal of a spec without expect (as `run --observe` runs one), for `verb`:
    raised by isolate and minimize, whose drivers look first, and by the choice above."""
    return UsageError(
        f"{verb} needs the spec's expect: it says how the failing cell fails (the same "
        "signature, not any failure); `run --observe` shows what each cell does"
    )


def fails(expectation: Expectation) -> bool:
    """Whether a cell's expect says how it fails: neither a pass nor observe mode (no expect)."""
    return expectation.outcome not in ("pass", "any")


def _pick(cell: Cell, failing: Sequence[Cell], filters: Sequence[str]) -> str:
    """The `-m` words that leave `cell` the only one of `failing` (the candidates the
    user's `filters` kept): the fewest of its values that no other candidate shares,
    with the user's filters on the other axes. Each is checked through `select`, the
    code `-m` itself runs; all of its values where no smaller set tells it apart."""
    from reprospec.spec.matrix import render_value, select

    axes = list(dict.fromkeys(axis for c in failing for axis in c.matrix))
    for size in range(1, min(MOST_FILTERS, len(axes)) + 1):
        for chosen in combinations(axes, size):
            mine = [f"{axis}={render_value(cell.matrix.get(axis))}" for axis in chosen]
            try:
                alone = list(select(failing, mine)) == [cell]
            except UsageError:
                alone = False
            if alone:
                kept = [f for f in filters if f.partition("=")[0].strip() not in chosen]
                return _words([*kept, *mine])
    return _words([f"{axis}={render_value(value)}" for axis, value in cell.matrix.items()])


def _words(filters: Sequence[str]) -> str:
    return filters_said(filters)


def cell_filters(cell: Cell, cells: Sequence[Cell]) -> tuple[str, ...]:
    """`-m` filters that keep `cell` alone among `cells`, for the runs a search makes of it:
    each axis of any cell at the cell's value, as JSON (`a="1"` is the string, not 1), an
    axis the cell lacks (one only some `include` entries add) as null."""
    import json

    axes = dict.fromkeys(axis for c in cells for axis in c.matrix)
    return tuple(f"{axis}={json.dumps(cell.matrix.get(axis))}" for axis in axes)
