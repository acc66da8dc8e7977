"""`reprospec history [SPEC]`: past runs and their verdicts, newest first."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from reprospec.console import make_console
    from reprospec.store import Store

    spec_name = None
    if args.spec:
        from reprospec.spec import load_spec

        # A spec file, or just the spec's name as it appears in the table.
        spec_name = load_spec(args.spec).name if Path(args.spec).exists() else args.spec
    if not (Path(args.out) / "results.db").is_file():
        print(f"no runs recorded in {args.out} yet", file=sys.stderr)
        return 0
    runs = Store(Path(args.out)).runs(spec_name=spec_name)
    table = Table(title=f"runs in {args.out}", title_justify="left")
    for column in (
        "run",
        "spec",
        "runner",
        "started",
        "status",
        "cells",
        "reproduced",
        "not reproduced",
        "undecided",
        "infra-error",
    ):
        table.add_column(column)
    for row in runs:
        table.add_row(
            row["run_id"],
            row["spec_name"],
            row["runner"],
            row["started"],
            row["status"],
            str(row.get("cells", "")),
            str(row.get("reproduced", "")),
            str(row.get("not_reproduced", "")),
            str(row.get("undecided", "")),
            str(row.get("infra_error", "")),
        )
    console = make_console()
    if not runs:
        console.print("no runs recorded yet" + (f" for {spec_name}" if spec_name else ""))
        return 0
    console.print(table)
    return 0
