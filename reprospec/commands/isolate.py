"""`reprospec isolate SPEC`: which differences between a failing and a passing cell make it fail."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from reprospec.core.runoptions import RunOptions

from reprospec.core.logtext import printable
from reprospec.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED, EXIT_OK


def run(args: argparse.Namespace) -> int:
    import threading

    from reprospec.commands.run import install_stop_handlers
    from reprospec.isolation.driver import IsolateOptions, isolate_spec
    from reprospec.isolation.report import text, to_dict

    options = IsolateOptions(
        failing=args.failing,
        passing=args.passing,
        failing_sets=tuple(args.failing_sets),
        passing_sets=tuple(args.passing_sets),
        budget=args.budget,
        error=_fraction(args.error, "--error"),
        min_rate=_fraction(args.min_rate, "--min-rate"),
        run=_run_options(args),
        command_line="reprospec " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "",
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


# The CLI's own parser class (cli._Parser): any ArgumentParser.
_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_parser(sub: argparse._SubParsersAction[_P]) -> None:
    """The `isolate` verb's arguments (registered by cli.build_parser)."""
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
    p.add_argument("spec", metavar="SPEC", help="a spec file, or a report.md that embeds one")
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
    p.add_argument(
        "--set",
        action="append",
        default=[],
        dest="overrides",
        metavar="PATH=VALUE",
        help="override a spec field on both sides, value parsed as YAML",
    )
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
    p.add_argument(
        "--budget",
        type=_positive,
        default=100,
        metavar="N",
        help="attempts in all, infra errors included (default: 100)",
    )
    p.add_argument(
        "--error",
        type=float,
        default=None,
        metavar="P",
        help="stated error probability of the answer: it is given once its posterior "
        "probability reaches 1 - P (default: 0.005)",
    )
    p.add_argument(
        "--min-rate",
        type=float,
        default=None,
        metavar="P",
        help="the culprits fail as expected in at least this fraction of attempts; clean "
        "attempts are weighed at this rate unless more is measured (default: the failing "
        "cell's expect.rate bound, else 0.3)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="attempts at once, shared by a round's candidates (default: run.parallel, else 1)",
    )
    from reprospec.runners import RUNNERS

    p.add_argument(
        "--runner",
        choices=tuple(RUNNERS),
        default="local",
        help="run attempts as local processes (default) or in fresh docker containers",
    )
    p.add_argument(
        "--timeout",
        default=None,
        metavar="DURATION",
        help="per-attempt timeout like 90s or 5m (overrides run.timeout)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path(".reprospec"),
        metavar="DIR",
        help="the results store, run folders and isolate folders (default: .reprospec)",
    )
    p.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="local runner's interpreter (default: this one)",
    )
    p.add_argument(
        "--gpus",
        default=None,
        metavar="LIST",
        help="GPU ids to hand out (default: CUDA_VISIBLE_DEVICES or all visible)",
    )
    p.add_argument(
        "--find-links",
        type=Path,
        default=None,
        metavar="DIR",
        help="docker runner: a wheelhouse for images built offline",
    )
    p.add_argument(
        "--keep-cores",
        action="store_true",
        help="keep crashed processes' core files in their attempt folders (gdb read them)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default): the answer and its evidence; json: the same as JSON",
    )


def _run_options(args: argparse.Namespace) -> RunOptions:
    """What each candidate run is given: `run`'s options that isolate takes."""
    from reprospec.core.runoptions import RunOptions
    from reprospec.core.units import parse_duration
    from reprospec.errors import UsageError

    timeout_s = None
    if args.timeout is not None:
        try:
            timeout_s = parse_duration(args.timeout)
        except ValueError as exc:
            raise UsageError(f"--timeout: {exc}") from None
    return RunOptions(
        runner=args.runner,
        jobs=args.jobs,
        timeout_s=timeout_s,
        overrides=tuple(args.overrides),
        out=Path(args.out),
        python=args.python,
        gpus=args.gpus,
        find_links=args.find_links,
        keep_cores=args.keep_cores,
        purpose="isolate",
    )


def _fraction(value: float | None, option: str) -> float | None:
    from reprospec.errors import UsageError

    if value is not None and not 0 < value < 1:
        raise UsageError(f"{option} must be between 0 and 1, got {value:g}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value
