"""`reprospec materialize SPEC -o DIR`: a bundle that reruns the spec with plain `docker run`."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    """Plan every selected cell (attempt 1) and write the bundle; prints where it went."""
    from reprospec.core.runoptions import RunOptions
    from reprospec.export.materialize import write_bundle
    from reprospec.plan.run import plan_run
    from reprospec.spec.load import load_spec

    options = RunOptions(
        matrix_filters=tuple(getattr(args, "matrix", ()) or ()),
        overrides=tuple(getattr(args, "overrides", ()) or ()),
    )
    spec = load_spec(args.spec, options.overrides)
    planned = plan_run(spec, options)
    plans = [plan for plan in planned.attempts if plan.attempt == 1]
    bundle = write_bundle(spec, plans, args.output, find_links=getattr(args, "find_links", None))
    for warning in bundle.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(
        f"wrote {bundle.root}: {len(bundle.cells)} cell(s), {len(bundle.images)} image(s); "
        f"run {bundle.root / 'run.sh'}"
    )
    return 0
