"""`reprospec plan SPEC`: the cells and exactly what each would run; runs nothing."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Mapping

from reprospec.jsontypes import JsonObject, JsonValue
from reprospec.logtext import printable
from reprospec.options import RunOptions
from reprospec.plan import RunPlan, plan_run


def run(args: argparse.Namespace) -> int:
    from reprospec.spec import load_spec

    options = RunOptions(matrix_filters=tuple(args.matrix), overrides=tuple(args.overrides))
    spec = load_spec(args.spec, options.overrides)
    planned = plan_run(spec, options)
    first_attempts = planned.first_attempts()
    if args.format == "json":
        doc = {"spec": spec.name, "cells": described(planned)}
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.format == "github":
        include = [_github_entry(plan.cell.id, plan.cell.matrix) for plan in first_attempts]
        json.dump({"include": include}, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(plan_text(planned))
    return 0


def described(planned: RunPlan) -> list[JsonObject]:
    """`describe` of every cell's first attempt, with the run's secrets masked (redact.py)."""
    from reprospec.plan import describe
    from reprospec.redact import Redactor

    redactor = Redactor.for_spec(planned.spec.document)
    return [redactor.value(describe(plan)) for plan in planned.first_attempts()]


def _github_entry(cell_id: str, matrix: Mapping[str, JsonValue]) -> JsonObject:
    """One CI job: the cell's axis values plus the exact `reprospec run` filters for it."""
    from reprospec.matrix import format_value

    filters = " ".join(
        shlex.quote(f"-m{axis}={format_value(value)}") for axis, value in matrix.items()
    )
    entry: JsonObject = {"cell": cell_id, "args": filters}
    entry.update((k, format_value(v)) for k, v in matrix.items())
    return entry


def plan_text(planned: RunPlan) -> str:
    """What `reprospec plan` prints: every cell and exactly what it runs, secrets masked,
    control characters written out (a spec's values never drive the terminal)."""
    cells = described(planned)
    lines = [f"spec {planned.spec.name}: {len(cells)} cell(s) x {planned.repeat} attempt(s)"]
    for doc in cells:
        lines.append(f"\n[{doc['id']}]")
        for key, value in doc.items():
            if key in ("id",):
                continue
            if isinstance(value, dict | list):
                rendered = json.dumps(value, default=str)
            else:
                rendered = str(value)
            lines.append(f"  {key}: {rendered}")
    return printable("\n".join(lines)) + "\n"
