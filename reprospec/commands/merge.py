"""`reprospec merge RUN...`: shard runs of one spec into one run folder and one report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from reprospec.commands.run import _print_outcome, _write_outputs
    from reprospec.compare import merge
    from reprospec.engine import exit_code_for
    from reprospec.results import load_run, new_run_id

    out = Path(args.out)
    shards = [load_run(ref, out) for ref in args.runs]
    merged = merge(shards, run_id=new_run_id(shards[0].spec_name))
    run_dir = out / "runs" / merged.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_outputs(run_dir, merged)
    print(f"merged {len(shards)} run(s) into {run_dir}", file=sys.stderr)
    _print_outcome(merged, args.format, out)
    return exit_code_for(merged)
