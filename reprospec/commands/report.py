"""`reprospec report RUN`: render a finished run again (md, junit or json)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from reprospec.report import render
    from reprospec.store.resultsjson import load_run

    run_result = load_run(args.run, Path(args.out))
    text = render(run_result, args.format)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
