"""`reprospec bisect SPEC --package NAME --good V1 --bad V2`: the release that broke it."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TypeVar

from reprospec.core.logtext import printable
from reprospec.errors import EXIT_INTERRUPTED

# The CLI's own parser class (cli._Parser): any ArgumentParser.
_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_parser(sub: argparse._SubParsersAction[_P]) -> None:
    """The `bisect` verb's arguments (kept here so cli.py stays one line per verb)."""
    p = sub.add_parser(
        "bisect",
        help="find the first release of a package that reproduces the spec",
        description="Run the spec's cell against the released versions of one package between "
        "a good and a bad version, and name the first bad one. Versions come from the index "
        "your pip/uv configuration points at; each is installed in its own environment.",
    )
    p.add_argument("spec", metavar="SPEC", help="a spec file, or a report.md that embeds one")
    p.add_argument("--package", metavar="NAME", default=None,
                   help="the package whose versions are bisected")
    p.add_argument("--good", metavar="VERSION", default=None,
                   help="a version that does not reproduce (with --by-date: unused)")
    p.add_argument("--bad", metavar="VERSION", default=None,
                   help="a version that reproduces")
    p.add_argument("--by-date", metavar="START..END", default=None,
                   help="bisect days instead of releases (YYYY-MM-DD..YYYY-MM-DD, START good): "
                   "each day installs what was uploaded by its end (uv --exclude-newer)")
    p.add_argument("-m", "--matrix", action="append", default=[], metavar="AXIS=VALUE",
                   help="choose the one cell whose expectation is the oracle (repeatable)")
    p.add_argument("--set", action="append", default=[], dest="overrides",
                   metavar="PATH=VALUE", help="override a spec field, value parsed as YAML")
    p.add_argument("--runner", choices=("venv", "docker"), default="venv",
                   help="venv (default): one uv environment per version; docker: one image")
    p.add_argument("--budget", type=_positive_int, default=None, metavar="N",
                   help="most attempts in all (default 150)")
    p.add_argument("-j", "--jobs", type=_positive_int, default=None, metavar="N",
                   help="attempts of one version at once")
    p.add_argument("--error", type=float, default=None, metavar="P",
                   help="stated error probability of the answer (default 0.01)")
    p.add_argument("--min-rate", type=float, default=None, metavar="P",
                   help="a bad version reproduces in at least this fraction of attempts "
                   "(default: the spec's expect.rate bound, else 0.2)")
    p.add_argument("--pre", action="store_true", help="include pre-releases between the ends")
    p.add_argument("--timeout", default=None, metavar="DURATION",
                   help="per-attempt timeout (overrides run.timeout)")
    p.add_argument("--python", default=None, metavar="PATH",
                   help="the base interpreter of the environments (default: the spec's "
                   "environment.python, else this one)")
    p.add_argument("--find-links", type=Path, default=None, metavar="DIR",
                   help="a wheelhouse to install from, besides the configured index")
    p.add_argument("--fresh", action="store_true",
                   help="start over instead of resuming a saved bisect of the same question")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or the JSON result on stdout")
    p.add_argument("--out", type=Path, default=Path(".reprospec"), metavar="DIR",
                   help="the results store; the bisect folder goes in DIR/bisect/")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from reprospec.bisect import search
    from reprospec.bisect.driver import BisectInterrupted, BisectRequest, bisect_spec
    from reprospec.core.units import parse_duration
    from reprospec.errors import UsageError

    if args.by_date:
        start, sep, end = args.by_date.partition("..")
        if not sep or not start or not end:
            raise UsageError("--by-date expects START..END, like 2024-03-01..2024-03-20")
        good, bad = start, end
    else:
        if not (args.package and args.good and args.bad):
            raise UsageError("bisect needs --package NAME --good VERSION --bad VERSION "
                             "(or --by-date START..END)")
        good, bad = args.good, args.bad
    for name, value in (("--error", args.error), ("--min-rate", args.min_rate)):
        if value is not None and not 0 < value < 1:
            raise UsageError(f"{name} must be between 0 and 1, got {value}")
    try:
        timeout_s = parse_duration(args.timeout) if args.timeout is not None else None
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    request = BisectRequest(
        spec=Path(args.spec),
        package=args.package,
        good=good,
        bad=bad,
        matrix_filters=tuple(args.matrix),
        overrides=tuple(args.overrides),
        runner=args.runner,
        jobs=args.jobs,
        budget=args.budget or search.DEFAULT_BUDGET,
        error=args.error or search.DEFAULT_ERROR,
        min_rate=args.min_rate,
        pre=args.pre,
        by_date=bool(args.by_date),
        python=args.python,
        find_links=args.find_links,
        timeout_s=timeout_s,
        out=args.out,
        fresh=args.fresh,
        command_line="reprospec " + shlex.join(
            w for w in sys.argv[1:] if w not in ("--fresh",)) if sys.argv[1:] else "",
    )

    def say(line: str) -> None:
        print(printable(f"reprospec: {line}"), file=sys.stderr, flush=True)

    try:
        report = bisect_spec(request, progress=say)
    except BisectInterrupted as exc:
        print(f"reprospec: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.format == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.headline)
        for evidence in report.result.tested:
            outcomes = ", ".join(f"{s} x{n}" for s, n in evidence.signature_counts().items())
            detail = evidence.infra_error if evidence.state == "skipped" else outcomes
            print(f"  {evidence.version:<14} {evidence.state:<8} "
                  f"{evidence.matched}/{evidence.attempts:<4} {printable(detail or '')}")
        if report.result.status == "found" and report.result.reason:
            print(printable(f"note: {report.result.reason}"))
        for warning in report.result.warnings:
            print(printable(f"warning: {warning}"))
        if report.changed:
            print("changed between the last good and the first bad day:")
            for name, before, after in report.changed:
                print(f"  {name}: {before or '-'} -> {after or '-'}")
        print(f"{report.result.attempts} attempts; report: {report.folder / 'bisect.md'}")
    status = report.result.status
    if status == "found":
        return 0
    # Refused or undecided: the question could not be answered as asked.
    return 1
