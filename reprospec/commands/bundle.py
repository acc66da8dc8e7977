"""`reprospec bundle RUN -o x.tar.gz`: a finished run as one archive that `reprospec run` reruns."""

from __future__ import annotations

import argparse
import shlex
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.words import plural

if TYPE_CHECKING:
    from reprospec.core.results import RunResult
    from reprospec.export.bundle import Packed
    from reprospec.plan.run import RunPlan


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `bundle` verb's arguments."""
    p = sub.add_parser(
        "bundle", help="pack a run (spec, report, logs, workdir files) into a .tar.gz to rerun"
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="a run folder, its results.json, or a run id (or a unique prefix) under --out",
    )
    opt.output(
        p,
        metavar="FILE",
        required=True,
        help="the archive to write (.tar.gz or .tgz); `reprospec run FILE` reruns it",
    )
    opt.out(p, help="where run ids are looked up (default: .reprospec)")
    p.add_argument("--force", action="store_true", help="overwrite the archive when it exists")
    p.add_argument(
        "--as-now",
        action="store_true",
        help="pack the program's files that changed since the run (by the digests it "
        "recorded; one its program writes, such as a resumed state file) as they are now, "
        "each named in a warning, where bundle otherwise refuses them",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="then unpack the archive in a new temporary folder and rerun the run's failing "
        "cells from it; exit 1 when one does not come back as in the run (the archive is kept)",
    )


def run(args: argparse.Namespace) -> int:
    """Pack the run; prints where the archive went and how to rerun it."""
    from reprospec.export.bundle import pack
    from reprospec.store.resultsjson import load_run, run_dir_of

    run_dir = run_dir_of(args.run, args.out)
    run = load_run(run_dir)
    packed = pack(run, run_dir, args.output, as_now=args.as_now, force=args.force)
    for warning in packed.warnings:
        print(f"reprospec: warning: {warning}", file=sys.stderr)
    outside = (
        f" and {len(packed.outside_files)} named from outside it" if packed.outside_files else ""
    )
    print(
        f"wrote {packed.path}: {plural(packed.files, 'file')}, {len(packed.workdir_files)} of them "
        f"from the workdir{outside}; rerun it with: reprospec run {shlex.quote(str(packed.path))}"
    )
    if not args.verify:
        # A file the program opens by a name the cells never give is not carried: the
        # recipient's rerun is the first to miss it, unless this one reruns it first.
        # The command as given, with --verify: its --out too, without which the run id
        # was looked for in .reprospec.
        # The run by its id: `latest` names another run once one more has run.
        again = ["reprospec", "bundle", run.run_id, "-o", str(args.output)]
        again += ["--out", str(args.out)] if args.out != opt.DEFAULT_OUT else []
        again += ["--as-now"] if args.as_now else []
        # The archive is there now: the same command again is refused without --force.
        again += ["--force"]
        print(
            "not verified: add --verify to rerun it unpacked away from this tree "
            f"({shlex.join([*again, '--verify'])})"
        )
        return 0
    return _verify(packed, run, run_dir)


def _verify(packed: Packed, run: RunResult, run_dir: Path) -> int:
    """`--verify`: the archive rerun from a temporary folder, with `run`'s live progress;
    exit 0 when every checked cell came back as in the run, 1 when one did not (or none
    could be checked), 130 when stopped."""
    from reprospec.capture.bundleverify import outside_warnings, report_lines, verify
    from reprospec.errors import EXIT_INTERRUPTED, EXIT_NOT_REPRODUCED

    print(
        f"reprospec: verifying {packed.path}: unpacked in a new temporary folder and rerun "
        "there as `reprospec run FILE --yes` would (each failing cell once; as often as the "
        "run tried it where its attempts differed)",
        file=sys.stderr,
    )
    if packed.replaced:
        # The values are known here, not to the recipient: said, so a pass here is not
        # read as a bundle that reruns without them.
        names = ", ".join(name for name, _ in packed.replaced)
        them = "it" if len(packed.replaced) == 1 else "them"
        print(
            f"reprospec: the rerun has {names} as the run's spec wrote {them} (the bundle "
            f"leaves the value out: its recipient exports {them}, as its README says)",
            file=sys.stderr,
        )
    cancel = threading.Event()
    check = verify(packed, run, run_dir, _executor(cancel))
    for warning in outside_warnings(check):
        print(f"reprospec: warning: {warning}", file=sys.stderr)
    for line in report_lines(check, packed.path, run.run_id):
        print(line)
    if check.interrupted or cancel.is_set():  # a stop while it printed is not raised
        return EXIT_INTERRUPTED
    return 0 if check.reproduced else EXIT_NOT_REPRODUCED


def _executor(cancel: threading.Event) -> Callable[[RunPlan], RunResult]:
    """One run of the unpacked spec with `run`'s progress lines; Ctrl-C stops it.

    Once a run is stored, a stop is not raised but set in `cancel` (commands/run.execute
    writes the run whole), one event for every run of the verify: a stop after a run's
    last attempt, or between two runs, stops the verify, where the next run went on as if
    no Ctrl-C had come."""
    from reprospec.commands.run import execute

    def run(plan: RunPlan) -> RunResult:
        if cancel.is_set():
            raise KeyboardInterrupt
        result = execute(plan, plan.options, cancel=cancel)
        if cancel.is_set() and not result.interrupted:
            raise KeyboardInterrupt
        return result

    return run
