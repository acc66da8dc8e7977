"""`reprospec amplify SPEC`: which perturbation makes the cell's rare failure frequent."""

from __future__ import annotations

import argparse
import json
import sys

from reprospec.commands import options as opt
from reprospec.core.logtext import printable
from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED, EXIT_OK


def run(args: argparse.Namespace) -> int:
    import threading

    from reprospec.amplify.driver import AmplifyOptions, amplify_spec
    from reprospec.amplify.report import text, to_dict
    from reprospec.commands.interrupt import install_stop_handlers

    run_options = opt.run_options(args, purpose="amplify")
    options = AmplifyOptions(
        matrix_filters=run_options.matrix_filters,
        tries=tuple(args.tries),
        budget=args.budget,
        run=run_options.with_changes(matrix_filters=()),
        command_line=opt.invocation(),
    )
    quiet = args.format == "json"
    cancel = threading.Event()
    install_stop_handlers(cancel)
    found = amplify_spec(
        args.spec,
        options,
        progress=None if quiet else (lambda message: print(printable(message), file=sys.stderr)),
        cancel=cancel,
    )
    if args.format == "json":
        print(json.dumps(to_dict(found), indent=2))
    else:
        print(printable(text(found)))
        print(f"report: {found.folder / 'amplify.md'}")
    if found.interrupted:
        print("reprospec: interrupted; run the same command again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    status = found.result.status
    if status == "amplified":
        return EXIT_OK
    if status == "infra-error":
        return EXIT_INFRA
    return EXIT_NOT_REPRODUCED


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
    opt.matrix(p, help="choose the cell (the filters must leave exactly one)")
    p.add_argument(
        "--try",
        action="append",
        default=[],
        dest="tries",
        metavar="FIELD=VALUE",
        help="a perturbation to try, like switch_interval=1e-6 or memory_limit=256M "
        "(repeatable; default: switch_interval, cpus, cpu_load, malloc, gc)",
    )
    opt.budget(p, default=300, help="attempts in all, infra errors included (default: 300)")
    opt.overrides(p, help="override a spec field, value parsed as YAML")
    opt.jobs(p, help="attempts at once (default: run.parallel, else 1)")
    opt.runner(p)
    opt.timeout(p)
    opt.out(p, help="the results store, run folders and amplify folders (default: .reprospec)")
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
