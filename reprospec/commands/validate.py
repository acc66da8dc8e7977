"""`reprospec validate PATH...`: every problem of every file, then exit 0 or 2."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.logtext import printable
from reprospec.errors import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from reprospec.core.inputs import Spec


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `validate` verb's arguments."""
    p = sub.add_parser("validate", help="check spec files (or every *.yaml in folders)")
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="spec files, or folders searched for *.yaml and *.yml files",
    )


def run(args: argparse.Namespace) -> int:
    from reprospec.spec.validate import validate

    found = validate(args.paths, _later_notes)
    for line in [*found.notes, *found.problems]:
        print(printable(line), file=sys.stderr)
    if found.problems:
        print(found.summary(), file=sys.stderr)
        return EXIT_USAGE
    print(found.summary())
    return EXIT_OK


def _later_notes(file: str, spec: Spec) -> list[str]:
    """The notes of the stages after spec's: a script the workdir lacks, a test a hang or
    crash expects that a pytest command without `-v` never names."""
    from reprospec.pipeline.quietpytest import quiet_pytest_phases
    from reprospec.plan.missing import missing_script_notes
    from reprospec.spec.yamlsource import locate

    notes = missing_script_notes(file, spec)
    for path, message in quiet_pytest_phases(spec.document):
        line, column = locate(spec.locations, path)
        notes.append(f"{file}:{line}:{column}: {'.'.join(map(str, path))}: {message}")
    return notes
