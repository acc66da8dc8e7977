"""`reprospec amplify SPEC`: which perturbation makes the cell's rare failure frequent."""

from __future__ import annotations

import argparse

from reprospec.commands import options as opt


def run(args: argparse.Namespace) -> int:
    from reprospec.amplify.driver import AmplifyOptions, amplify_spec
    from reprospec.commands.interrupt import drive_search
    from reprospec.core.safepoint import Deferral

    deferral = Deferral()  # its probes' runs' and its stop handler's (drive_search)
    run_options = opt.run_options(args, purpose="amplify")
    options = AmplifyOptions(
        matrix_filters=run_options.matrix_filters,
        tries=tuple(args.tries),
        budget=args.budget,
        run=run_options.with_changes(matrix_filters=(), deferral=deferral),
        command_line=opt.invocation(),
    )
    return drive_search(
        lambda progress, cancel: amplify_spec(args.spec, options, progress=progress, cancel=cancel),
        deferral=deferral,
        as_json=args.format == "json",
        unsaved=lambda found: found.unsaved,
    )


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `amplify` verb's arguments."""
    p = sub.add_parser(
        "amplify",
        help="find the perturbation that makes a rare failure frequent",
        description=(
            "Measure the cell's base rate, then try perturbations (environment.perturb: a "
            "short thread switch interval, one CPU, competing load, malloc perturbation, "
            "aggressive gc, ...) alone and the best combined, spending attempts where the "
            "upper bound of the failure rate is highest, until the best is established. A "
            "failure counts only when it matches the spec's expect. Writes amplify.md and "
            "the amplified spec; running the same command again resumes."
        ),
    )
    opt.spec(p)
    opt.matrix(
        p,
        help="choose the cell: the only one expected to fail among those these keep "
        "(default: the only one of the spec's cells expected to fail)",
    )
    p.add_argument(
        "--try",
        action="append",
        default=[],
        dest="tries",
        metavar="FIELD=VALUE",
        help="a perturbation to try, like switch_interval=1e-6 or memory_limit=256M "
        "(repeatable; default: switch_interval, cpus, cpu_load, malloc, gc)",
    )
    opt.budget(
        p,
        default=300,
        help="attempts in all, infra errors included (default: 300); the same command with "
        "a larger one continues the search, its attempts so far replayed",
    )
    opt.overrides(p, help="override a spec field, value parsed as YAML")
    opt.jobs(p, help="attempts at once (default: run.parallel, else 1)")
    opt.search_attempts(
        p, out_help="the results store, run folders and amplify folders (default: .reprospec)"
    )
    opt.preload_option(
        p,
        help="fork the base's attempts from one server that imported these modules once, "
        "for the whole search (overrides run.preload; 'none' turns it off; opt-in: a forked "
        "attempt differs from a fresh one, see spec-format.md); the perturbed arms fork "
        "too, but for a perturbation only a process's start applies (hash_seed, malloc)",
    )
    opt.answer_format(p)
