"""`reprospec materialize SPEC -o DIR`: a bundle that reruns the spec with plain `docker run`."""

from __future__ import annotations

import argparse
import sys

from reprospec.commands import options as opt
from reprospec.core.words import plural


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `materialize` verb's arguments."""
    p = sub.add_parser("materialize", help="write a self-contained docker bundle for a spec")
    opt.spec(p)
    opt.output(p, metavar="DIR", required=True, help="the folder to write the bundle into")
    opt.selection(p)
    opt.find_links(p, help="a wheelhouse the bundle's image builds install packages from, offline")
    opt.python(
        p,
        help="the interpreter the cells ran with (default: this one): the images pin its torch "
        "build (2.13.0+cpu) where it is the runner's release",
    )


def run(args: argparse.Namespace) -> int:
    """Plan every selected cell (attempt 1) and write the bundle; prints where it went."""
    from reprospec.core.runoptions import RunOptions
    from reprospec.export.materialize import write_bundle
    from reprospec.export.runnerpackages import installed_torch
    from reprospec.plan.run import plan_run
    from reprospec.runners.local import checked_python
    from reprospec.spec.load import load_spec

    options = RunOptions(
        matrix_filters=tuple(getattr(args, "matrix", ()) or ()),
        overrides=tuple(getattr(args, "overrides", ()) or ()),
    )
    spec = load_spec(args.spec, options.overrides)
    planned = plan_run(spec, options)
    plans = [plan for plan in planned.attempts if plan.attempt == 1]
    # Each cell's second attempt, whatever the spec's repeat: a cell whose first differs
    # from it reads the attempt number, which the bundle fixes at 1.
    later = [planned.extra_attempt(plan.cell, 2) for plan in plans]
    bundle = write_bundle(
        spec,
        plans,
        args.output,
        find_links=getattr(args, "find_links", None),
        # The local runner's cells ran on --python, else on reprospec's own interpreter.
        torch_version=installed_torch(checked_python(getattr(args, "python", None))),
        later=later,
    )
    for warning in bundle.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(
        f"wrote {bundle.root}: {plural(len(bundle.cells), 'cell')}, "
        f"{plural(len(bundle.images), 'image')}; "
        f"run {bundle.root / 'run.sh'}"
    )
    return 0
