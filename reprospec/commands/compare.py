"""`reprospec compare RUN_A RUN_B`: what changed between two runs, and in which cells.

The spec (a diff), the program's files (added, removed, changed), the options (`-j`,
`--set`, ...), the environment, and per cell the verdict, the outcome signatures and the
expectation: a verdict that changed because the spec now expects something else reads
"same outcome, different expectation", not as a change of the code under test.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reprospec.commands import options as opt
from reprospec.core.logtext import printable


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `compare` verb's arguments."""
    p = sub.add_parser(
        "compare", help="what changed between two runs: spec, options, environment, each cell"
    )
    p.add_argument(
        "run_a",
        metavar="RUN_A",
        help="the first run: a run folder, results.json, run id, `latest` or `latest~N`",
    )
    p.add_argument("run_b", metavar="RUN_B", help="the second run, compared with the first")
    opt.out(p, help="where run ids are looked up (default: .reprospec)")
    opt.output_format(
        p, ("text", "json"), default="text", help="what changed, as text (default) or JSON"
    )


def run(args: argparse.Namespace) -> int:
    from reprospec.report.compare import compare_runs

    found = compare_runs(args.run_a, args.run_b, Path(args.out))
    if args.format == "json":
        print(found.render("json"))
        return found.exit_code()
    from reprospec.report.console import make_console

    console = make_console()
    for line in found.render("text").split("\n"):
        # Cell ids, spec text and messages are the spec's and the children's: text only.
        console.print(printable(line), markup=False, highlight=False)
    return found.exit_code()
