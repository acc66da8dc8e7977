"""`reprospec plan SPEC`: the cells and exactly what each would run; runs nothing."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.logtext import printable
from reprospec.core.words import plural
from reprospec.errors import UsageError

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan, Spec
    from reprospec.core.jsontypes import JsonObject, JsonValue


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `plan` verb's arguments."""
    p = sub.add_parser("plan", help="show the cells and exactly what each would run")
    opt.spec(p)
    opt.output_format(
        p,
        ("text", "json", "github"),
        default="text",
        help="text (default), json (every cell's plan) or github (a CI job matrix: a job per "
        "cell, or 256 shards over GitHub's cap of 256 jobs)",
    )
    opt.selection(p)


def run(args: argparse.Namespace) -> int:
    from reprospec.plan.attempt import each_first_attempt, first_attempts, run_policy
    from reprospec.spec.load import load_spec
    from reprospec.spec.matrix import expand, select

    spec = load_spec(args.spec, tuple(args.overrides))
    cells = select(expand(spec), list(args.matrix))
    repeat = run_policy(spec).first_attempts
    if args.format == "text":
        # Written cell by cell as each is planned: a closed pipe (`plan | head`) stops it at
        # the first write that fails (BrokenPipeError, cli.main), where the whole text was
        # made first (33 s for 65,536 cells, most of it after head had exited).
        for block in plan_blocks(spec, repeat, len(cells), each_first_attempt(spec, cells)):
            sys.stdout.write(block)
        return 0
    if args.format == "json":
        # Written cell by cell too: the whole document, made first, held every cell's plan
        # at once (65,536 cells) and reached a closed pipe only at its end.
        for text in json_blocks(spec, each_first_attempt(spec, cells)):
            sys.stdout.write(text)
        return 0
    # Only attempt 1 of each cell is shown: the others are not planned (plan.first_attempts).
    attempts = first_attempts(spec, cells)
    if args.format == "github":
        adaptive = run_policy(spec).adaptive and any(a.expectation.rate for a in attempts)
        if adaptive and len(attempts) > GITHUB_MATRIX_CAP:
            # Its shards would each be refused by `run --shard` (plan/run.py).
            raise UsageError(
                f"{len(attempts)} cells exceed GitHub's matrix cap of {GITHUB_MATRIX_CAP} "
                "jobs, and a spec with `repeat: auto` and an `expect.rate` cannot be sharded; "
                "give `run.repeat` a number in the spec, or select fewer cells (-m)"
            )
        json.dump({"include": github_matrix(attempts, args.matrix)}, sys.stdout, default=str)
        sys.stdout.write("\n")
    return 0


def described(spec: Spec, attempts: Iterable[AttemptPlan]) -> Iterator[JsonObject]:
    """`describe` of each attempt, with the run's secrets masked (redact.py)."""
    from reprospec.core.redact import Redactor
    from reprospec.plan.attempt import describe

    redactor = Redactor.for_spec(spec.document)
    for plan in attempts:
        yield redactor.value(describe(plan))


def json_blocks(spec: Spec, attempts: Iterable[AttemptPlan]) -> Iterator[str]:
    """`{"spec": NAME, "cells": [...]}` as `json.dumps(indent=2)` writes it, in pieces: the
    head, each cell (indented to its place in the list), the tail."""
    yield "{\n" + f'  "spec": {json.dumps(spec.name)},\n' + '  "cells": ['
    first = True
    for cell in described(spec, attempts):
        text = json.dumps(cell, indent=2, default=str).replace("\n", "\n    ")
        yield ("\n    " if first else ",\n    ") + text
        first = False
    yield "]\n}\n" if first else "\n  ]\n}\n"


# GitHub Actions runs at most 256 jobs of one matrix and refuses a workflow with more.
GITHUB_MATRIX_CAP = 256


# The keys of a job matrix entry that are reprospec's own, whatever the spec's axes are named.
GITHUB_ENTRY_KEYS = ("cell", "args")


def github_matrix(attempts: Sequence[AttemptPlan], filters: Sequence[str]) -> list[JsonObject]:
    """The CI job matrix: a job per cell, each with the `-m` filters that run just it; or,
    over GitHub's cap, one job per `--shard K/N` (N = the cap), which `reprospec merge`
    joins, said on stderr (a matrix GitHub refuses would only fail at the workflow)."""
    if len(attempts) <= GITHUB_MATRIX_CAP:
        clashing = [
            key for key in GITHUB_ENTRY_KEYS if any(key in plan.cell.matrix for plan in attempts)
        ]
        if clashing:
            # An axis value written over `args` made every job run `reprospec run SPEC
            # VALUE`: the entry's own keys stay, the axis is read from `cell` or `args`.
            names = ", ".join(f"'{key}'" for key in clashing)
            print(
                f"reprospec: warning: axis {names}: named as a job's own key, so each job's "
                "entry holds reprospec's there (its cell id, the `-m` filters that run it), "
                "not the axis's value",
                file=sys.stderr,
            )
        # An axis only some `include` entries bring is null in the other cells, and said
        # so in their filters: the job of `{a: 1}` kept `{a: 1, c: 3}` too (`-ma=1`).
        axes = list(dict.fromkeys(axis for plan in attempts for axis in plan.cell.matrix))
        return [_github_entry(plan.cell.id, plan.cell.matrix, axes) for plan in attempts]
    count = GITHUB_MATRIX_CAP
    print(
        f"reprospec: {len(attempts)} cells exceed GitHub's matrix cap of {count} jobs: the "
        f"matrix holds {count} shards instead (`--shard K/{count}` in each job's args, a few "
        "cells each); join their runs with `reprospec merge`",
        file=sys.stderr,
    )
    selection = [f"-m{f}" for f in filters]
    return [
        {
            "cell": f"shard {k}/{count}",
            "shard": f"{k}/{count}",
            "args": shlex.join([*selection, f"--shard={k}/{count}"]),
        }
        for k in range(1, count + 1)
    ]


def _github_entry(cell_id: str, matrix: Mapping[str, JsonValue], axes: Sequence[str]) -> JsonObject:
    """One CI job: the cell's axis values plus the exact `reprospec run` filters for it,
    one per axis of `axes` (every cell's: null where this cell lacks it)."""
    from reprospec.spec.matrix import exact_filter, format_value

    filters = " ".join(
        shlex.quote(f"-m{exact_filter(axis, matrix.get(axis))}")
        for axis in [*matrix, *(a for a in axes if a not in matrix)]
    )
    entry: JsonObject = {"cell": cell_id, "args": filters}
    entry.update((k, format_value(v)) for k, v in matrix.items() if k not in GITHUB_ENTRY_KEYS)
    return entry


def plan_text(spec: Spec, repeat: int, attempts: Sequence[AttemptPlan]) -> str:
    """What `reprospec plan` prints: every cell's first attempt (`attempts`) and exactly what
    it runs, secrets masked, control characters written out (a spec's values never drive
    the terminal); `repeat` is the attempts per cell a run starts with."""
    return "".join(plan_blocks(spec, repeat, len(attempts), attempts))


def plan_blocks(
    spec: Spec, repeat: int, count: int, attempts: Iterable[AttemptPlan]
) -> Iterator[str]:
    """`plan_text` in pieces, the heading and then each of the `count` attempts' blocks as
    it is read from `attempts`: joined, they are `plan_text` to the byte."""
    yield printable(f"spec {spec.name}: {plural(count, 'cell')} x {plural(repeat, 'attempt')}")
    for doc in described(spec, attempts):
        lines = ["", f"\n[{doc['id']}]"]
        for key, value in doc.items():
            if key in ("id",):
                continue
            if isinstance(value, dict | list):
                rendered = json.dumps(value, default=str)
            else:
                rendered = str(value)
            lines.append(f"  {key}: {rendered}")
        yield printable("\n".join(lines))
    yield "\n"
