"""`reprospec minimize SPEC`: the smallest program that still fails the same way."""

from __future__ import annotations

import argparse

from reprospec.commands import options as opt


def run(args: argparse.Namespace) -> int:
    from reprospec.commands.interrupt import drive_search
    from reprospec.core.safepoint import Deferral
    from reprospec.minimize.driver import MinimizeOptions, minimize_spec

    deferral = Deferral()  # its probes' runs' and its stop handler's (drive_search)
    options = MinimizeOptions(
        cell=tuple(args.matrix),
        output=args.output,
        budget=args.budget,
        error=opt.fraction(args.error, "--error"),
        min_rate=opt.fraction(args.min_rate, "--min-rate"),
        # -m names the failing cell here; the candidates' runs choose their own cells.
        run=opt.run_options(args, purpose="minimize").with_changes(
            matrix_filters=(), deferral=deferral
        ),
        command_line=opt.invocation(),
        # Its base rate: the result is compared with the original without the perturbation.
        amplified=args.amplify,
    )
    return drive_search(
        lambda progress, cancel: minimize_spec(
            args.spec, options, progress=progress, cancel=cancel
        ),
        deferral=deferral,
        as_json=args.format == "json",
        unsaved=lambda found: found.unsaved,
    )


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `minimize` verb's arguments."""
    p = sub.add_parser(
        "minimize",
        help="shrink the program of a failing cell to the smallest that fails the same way",
        description=(
            "Shrink a command spec's program (its arguments, environment variables and the "
            "Python files it runs from the workdir, at AST level), or a workload spec's "
            "variables and numbers (steps, sizes, width, workers), to the smallest one whose "
            "failing cell still fails as its expect says, with the same signature, while the "
            "spec's passing cells still pass. Flaky failures are measured; each attempt is a "
            "stored run, and running the same command again resumes."
        ),
    )
    opt.spec(p, help="a command or workload spec, or a report.md that embeds one")
    opt.matrix(
        p,
        help="the failing cell: the first expected to fail among those these keep "
        "(default: the spec's first failing cell)",
    )
    opt.output(
        p,
        metavar="DIR",
        help="where the minimized files, their spec, repro.sh and minimize.md go "
        "(default: OUT/minimize/ID/result)",
    )
    opt.overrides(p, help="override a spec field, value parsed as YAML")
    opt.amplify(p)
    opt.budget(
        p,
        default=1000,
        help="attempts in all, passing cells and infra errors included (default: 1000); the "
        "same command with a larger one continues the search, its attempts so far replayed",
    )
    opt.fraction_option(
        p,
        "--error",
        help="a candidate that still fails is dropped with at most this chance (it only "
        "costs size, never correctness; default: 0.1)",
    )
    opt.fraction_option(
        p,
        "--min-rate",
        help="a candidate that still fails does so in at least this fraction of attempts "
        "(default: the failing cell's expect.rate bound, else 0.3)",
    )
    opt.jobs(p, help="attempts at once (default: the spec's run.parallel, else 1)")
    opt.search_attempts(
        p, out_help="the results store, run folders and minimize folders (default: .reprospec)"
    )
    opt.preload_option(
        p,
        help="fork every candidate's attempts from one server that imported these modules "
        "once, for the whole search (overrides run.preload; 'none' turns it off; opt-in: a "
        "forked attempt differs from a fresh one, see spec-format.md); attempts a fork "
        "could change run fresh",
    )
    opt.output_format(
        p,
        ("text", "json"),
        default="text",
        help="text (default): the answer; json: lines_before, lines_after, attempts, "
        "signature, rate and more",
    )
