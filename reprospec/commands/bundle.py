"""`reprospec bundle RUN -o x.tar.gz`: a finished run as one archive that `reprospec run` reruns."""

from __future__ import annotations

import argparse
import shlex
import sys

from reprospec.commands import options as opt


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


def run(args: argparse.Namespace) -> int:
    """Pack the run; prints where the archive went and how to rerun it."""
    from reprospec.export.bundle import pack
    from reprospec.store.resultsjson import load_run, run_dir_of

    run_dir = run_dir_of(args.run, args.out)
    packed = pack(load_run(run_dir), run_dir, args.output)
    for warning in packed.warnings:
        print(f"reprospec: warning: {warning}", file=sys.stderr)
    outside = (
        f" and {len(packed.outside_files)} named from outside it" if packed.outside_files else ""
    )
    print(
        f"wrote {packed.path}: {packed.files} file(s), {len(packed.workdir_files)} of them "
        f"from the workdir{outside}; rerun it with: reprospec run {shlex.quote(str(packed.path))}"
    )
    return 0
