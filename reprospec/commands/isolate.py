"""`reprospec isolate SPEC`: which differences between a failing and a passing cell make it fail."""

from __future__ import annotations

import argparse

from reprospec.commands import options as opt


def run(args: argparse.Namespace) -> int:
    from reprospec.commands.interrupt import drive_search
    from reprospec.core.safepoint import Deferral
    from reprospec.isolation.driver import IsolateOptions, isolate_spec

    deferral = Deferral()  # its probes' runs' and its stop handler's (drive_search)
    run_options = opt.run_options(args, purpose="isolate")
    options = IsolateOptions(
        # -m chooses the failing cell, as amplify's and minimize's: each candidate's run is
        # the spec reduced to its own one cell, which the filters would not select.
        cell=run_options.matrix_filters,
        failing=args.failing,
        passing=args.passing,
        failing_sets=tuple(args.failing_sets),
        passing_sets=tuple(args.passing_sets),
        budget=args.budget,
        error=opt.fraction(args.error, "--error"),
        min_rate=opt.fraction(args.min_rate, "--min-rate"),
        run=run_options.with_changes(matrix_filters=(), deferral=deferral),
        command_line=opt.invocation(),
        # The cell it measured is the failing cell; its perturbation is in run's overrides.
        amplified=args.amplify,
    )
    return drive_search(
        lambda progress, cancel: isolate_spec(args.spec, options, progress=progress, cancel=cancel),
        deferral=deferral,
        as_json=args.format == "json",
        unsaved=lambda found: found.unsaved,
    )


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `isolate` verb's arguments."""
    p = sub.add_parser(
        "isolate",
        help="find the smallest set of differences that makes a passing cell fail",
        description=(
            "Find the smallest set of differences (matrix values, --set fields) that turns "
            "the passing cell into the failing one. Failing means failing as the failing "
            "cell's expect says. Flaky failures are measured first; each probe (a set's "
            "attempts) is a stored run, and running the same command again resumes."
        ),
    )
    opt.spec(p)
    opt.matrix(
        p,
        help="choose the failing cell: the first expected to fail among those these keep; "
        "only attempts that fail as its expect says count (default: the first expected to fail)",
    )
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
        help="the passing cell: its id or AXIS=VALUE,... (default: of the cells expected to "
        "pass, the one that differs from the failing cell in the most axes)",
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
    opt.budget(
        p,
        default=100,
        help="attempts in all, infra errors included (default: 100); the same command with "
        "a larger one continues the search, its attempts so far replayed",
    )
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
    opt.search_attempts(
        p, out_help="the results store, run folders and isolate folders (default: .reprospec)"
    )
    opt.preload_option(
        p,
        help="fork every candidate's attempts from one server that imported these modules "
        "once, for the whole search (overrides run.preload; 'none' turns it off; opt-in: a "
        "forked attempt differs from a fresh one, see spec-format.md); part of the "
        "isolation's identity, as --set is; attempts a fork could change run fresh",
    )
    opt.answer_format(p)
