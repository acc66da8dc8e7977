"""`reprospec bisect SPEC --package NAME --good V1 --bad V2`: the release that broke it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprospec.commands import options as opt
from reprospec.core.logtext import printable
from reprospec.errors import EXIT_INTERRUPTED


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `bisect` verb's arguments."""
    p = sub.add_parser(
        "bisect",
        help="find the first release of a package that reproduces the spec",
        description="Run the spec's cell against the released versions of one package between "
        "a good and a bad version, and name the first bad one. Versions come from the index "
        "your pip/uv configuration points at; each is installed in its own environment.",
    )
    opt.spec(p)
    p.add_argument(
        "--package", metavar="NAME", default=None, help="the package whose versions are bisected"
    )
    p.add_argument(
        "--good",
        metavar="VERSION",
        default=None,
        help="a version that does not reproduce (not with --by-date)",
    )
    p.add_argument(
        "--bad",
        metavar="VERSION",
        default=None,
        help="a version that reproduces (not with --by-date)",
    )
    p.add_argument(
        "--by-date",
        metavar="START..END",
        default=None,
        help="bisect days instead of releases (YYYY-MM-DD..YYYY-MM-DD, START good): "
        "each day installs what was uploaded by its end (uv --exclude-newer)",
    )
    opt.matrix(
        p,
        help="choose the one cell whose expectation is the oracle: the only one expected to "
        "fail among those these keep (default: the only one of the spec's cells expected "
        "to fail)",
    )
    opt.amplify(p)
    opt.overrides(p, help="override a spec field, value parsed as YAML")
    opt.runner(
        p,
        choices=("venv", "docker"),
        default="venv",
        help="venv (default): one uv environment per version; docker: one image",
    )
    opt.budget(
        p,
        default=None,
        help="most attempts in all (default 150); the same command with a larger one "
        "continues the bisect, its attempts so far kept",
    )
    opt.jobs(p, help="attempts of one version at once (default: the spec's run.parallel, else 1)")
    # The defaults as search.py's DEFAULT_ERROR and DEFAULT_MIN_RATE (a test holds them
    # equal): written out, as this module is read for every `reprospec --help`.
    opt.fraction_option(p, "--error", help="stated error probability of the answer (default 0.005)")
    opt.fraction_option(
        p,
        "--min-rate",
        help="a bad version reproduces in at least this fraction of attempts "
        "(default: the spec's expect.rate bound, else 0.3)",
    )
    p.add_argument("--pre", action="store_true", help="include pre-releases between the ends")
    opt.timeout(p, help="per-attempt timeout (overrides run.timeout)")
    opt.python(
        p,
        help="the base interpreter of the environments (default: the spec's "
        "environment.python, else this one)",
    )
    opt.find_links(
        p,
        help="a wheelhouse versions are listed from besides the configured index; venv "
        "runner: uv installs from both; docker runner: the images install from it alone, offline",
    )
    opt.preload_option(
        p,
        help="fork each version's attempts from a server of that version's environment "
        "that imported these modules once (run.preload for the bisect, as --set "
        "run.preload=[...] would; 'none' turns it off): a new server per version, since "
        "a server is keyed by its interpreter; the docker runner runs attempts fresh",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start over instead of resuming a saved bisect of the same question",
    )
    opt.output_format(
        p, ("text", "json"), default="text", help="text (default) or the JSON result on stdout"
    )
    opt.out(
        p, help="the results store (default: .reprospec); the bisect folder goes in DIR/bisect/"
    )


def run(args: argparse.Namespace) -> int:
    import threading

    from reprospec.bisect import search
    from reprospec.bisect.driver import BisectInterrupted, bisect_spec
    from reprospec.bisect.state import BisectRequest
    from reprospec.commands.interrupt import (
        answered_though_stopped,
        install_stop_handlers,
        warn_unsaved,
    )
    from reprospec.core.safepoint import Deferral
    from reprospec.errors import UsageError

    if args.by_date:
        # START and END are the good and bad days: a --good or --bad beside them was dropped
        # without a word, read as if it chose the versions.
        given = [flag for flag, value in (("--good", args.good), ("--bad", args.bad)) if value]
        if given:
            raise UsageError(
                f"--by-date START..END: {' and '.join(given)} not used (START is the good day, "
                "END the bad one); give one or the other"
            )
        start, sep, end = args.by_date.partition("..")
        if not sep or not start or not end:
            raise UsageError("--by-date expects START..END, like 2024-03-01..2024-03-20")
        good, bad = start, end
    else:
        if not (args.package and args.good and args.bad):
            raise UsageError(
                "bisect needs --package NAME --good VERSION --bad VERSION (or --by-date START..END)"
            )
        good, bad = args.good, args.bad
    error = opt.fraction(args.error, "--error")
    min_rate = opt.fraction(args.min_rate, "--min-rate")
    # Each candidate is an ordinary run: the same options as `run`'s, read the same way.
    each = opt.run_options(args, purpose="bisect")
    if args.by_date and each.runner != "venv":
        raise UsageError("--by-date needs --runner venv (uv's --exclude-newer)")
    request = BisectRequest(
        spec=Path(args.spec),
        package=args.package,
        good=good,
        bad=bad,
        matrix_filters=each.matrix_filters,
        # --preload as the spec's run.preload: part of the question (its overrides), and
        # each version's environment forks from a server of its own interpreter.
        overrides=(*each.overrides, *opt.preload_set(each.preload)),
        runner=each.runner,
        jobs=each.jobs,
        budget=args.budget or search.DEFAULT_BUDGET,
        error=error or search.DEFAULT_ERROR,
        min_rate=min_rate,
        pre=args.pre,
        by_date=bool(args.by_date),
        python=each.python,
        find_links=each.find_links,
        timeout_s=each.timeout_s,
        out=each.out,
        fresh=args.fresh,
        command_line=opt.invocation(skip=("--fresh",)),
        # The cell it measured is the cell bisected; its perturbation is in the overrides.
        amplified=args.amplify,
    )

    def say(line: str) -> None:
        print(printable(f"reprospec: {line}"), file=sys.stderr, flush=True)

    # Ctrl-C and SIGTERM set `cancel` before they raise: a KeyboardInterrupt that lands in a
    # finalizer is swallowed there ("Exception ignored in ..."), and without the event the
    # bisect ran on to its end, exit 0, after the user pressed Ctrl-C (seen in a full run).
    cancel = threading.Event()
    # A stop while a candidate's run is written is `cancel` alone, as in a search's probe's
    # (drive_search): the run is written whole, not left `killed`.
    deferral = Deferral()
    install_stop_handlers(cancel, deferral)
    try:
        report = bisect_spec(request, progress=say, cancel=cancel, deferral=deferral)
    except BisectInterrupted as exc:
        from reprospec.bisect.state import interrupted_json, interrupted_text

        # The partial answer, as isolate's, minimize's and amplify's: what was tried so far.
        if args.format == "json":
            print(interrupted_json(exc.bisect_id, exc.tested, exc.folder))
        else:
            print(printable(interrupted_text(exc.tested, exc.folder)))
        print(f"reprospec: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(report.render("json") if args.format == "json" else printable(report.render("text")))
    # As isolate's, minimize's and amplify's (drive_search): the exit code stays the answer's.
    warn_unsaved(report.unsaved)
    if cancel.is_set():
        return answered_though_stopped()
    return report.exit_code()
