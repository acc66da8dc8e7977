"""`reprospec isolate SPEC`: which differences between a failing and a passing cell make it fail."""

from __future__ import annotations

import argparse
import json
import sys

from reprospec.commands import options as opt
from reprospec.core.logtext import printable
from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED, EXIT_OK


def run(args: argparse.Namespace) -> int:
    import threading

    from reprospec.commands.interrupt import install_stop_handlers
    from reprospec.isolation.driver import IsolateOptions, isolate_spec
    from reprospec.isolation.report import text, to_dict

    options = IsolateOptions(
        failing=args.failing,
        passing=args.passing,
        failing_sets=tuple(args.failing_sets),
        passing_sets=tuple(args.passing_sets),
        budget=args.budget,
        error=opt.fraction(args.error, "--error"),
        min_rate=opt.fraction(args.min_rate, "--min-rate"),
        run=opt.run_options(args, purpose="isolate"),
        command_line=opt.invocation(),
    )
    quiet = args.format == "json"
    # SIGTERM stops isolate like Ctrl-C; the stored candidate runs let it resume. The
    # handler sets `cancel` first: the candidate runs stop, and an attempt the signal
    # killed is known to have been stopped, not to have crashed.
    cancel = threading.Event()
    install_stop_handlers(cancel)
    found = isolate_spec(
        args.spec,
        options,
        progress=None if quiet else (lambda message: print(printable(message), file=sys.stderr)),
        cancel=cancel,
    )
    if args.format == "json":
        print(json.dumps(to_dict(found), indent=2))
    else:
        print(printable(text(found)))
        print(f"report: {found.folder / 'isolate.md'}")
    if found.interrupted:
        print("reprospec: interrupted; run the same command again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    status = found.result.status
    if status == "isolated":
        return EXIT_OK
    if status == "infra-error":
        return EXIT_INFRA
    return EXIT_NOT_REPRODUCED


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `isolate` verb's arguments."""
    p = sub.add_parser(
        "isolate",
        help="find the smallest set of differences that makes a passing cell fail",
        description=(
            "Find the smallest set of differences (matrix values, --set fields) that turns "
            "the passing cell into the failing one. Failing means failing as the failing "
            "cell's expect says. Flaky failures are measured first; each attempt is a "
            "stored run, and running the same command again resumes."
        ),
    )
    opt.spec(p)
    p.add_argument(
        "--failing",
        default=None,
        metavar="CELL",
        help="the failing cell: its id or AXIS=VALUE,... (default: the first expected to fail)",
    )
    p.add_argument(
        "--passing",
        default=None,
        metavar="CELL",
        help="the passing cell: its id or AXIS=VALUE,... (default: the first expected to pass)",
    )
    opt.overrides(p, help="override a spec field on both sides, value parsed as YAML")
    opt.amplify(p)
    p.add_argument(
        "--failing-set",
        action="append",
        default=[],
        dest="failing_sets",
        metavar="PATH=VALUE",
        help="set a field on the failing side only (~PATH unsets it): one more difference",
    )
    p.add_argument(
        "--passing-set",
        action="append",
        default=[],
        dest="passing_sets",
        metavar="PATH=VALUE",
        help="set a field on the passing side only (~PATH unsets it)",
    )
    opt.budget(p, default=100, help="attempts in all, infra errors included (default: 100)")
    opt.fraction_option(
        p,
        "--error",
        help="stated error probability of the answer: it is given once its posterior "
        "probability reaches 1 - P (default: 0.005)",
    )
    opt.fraction_option(
        p,
        "--min-rate",
        help="the culprits fail as expected in at least this fraction of attempts; clean "
        "attempts are weighed at this rate unless more is measured (default: the failing "
        "cell's expect.rate bound, else 0.3)",
    )
    opt.jobs(
        p, help="attempts at once, shared by a round's candidates (default: run.parallel, else 1)"
    )
    opt.runner(p)
    opt.timeout(p)
    opt.out(p, help="the results store, run folders and isolate folders (default: .reprospec)")
    opt.python(p)
    opt.gpus(p)
    opt.find_links(p)
    opt.keep_cores(p)
    opt.output_format(
        p,
        ("text", "json"),
        default="text",
        help="text (default): the answer and its evidence; json: the same as JSON",
    )
