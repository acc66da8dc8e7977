"""`reprospec validate PATH...`: every problem of every file, then exit 0 or 2."""

from __future__ import annotations

import argparse
import sys

from reprospec.core.logtext import printable
from reprospec.errors import EXIT_OK, EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    from reprospec.spec.validate import validate

    found = validate(args.paths)
    for line in found.problems:
        print(printable(line), file=sys.stderr)
    if found.problems:
        print(found.summary(), file=sys.stderr)
        return EXIT_USAGE
    print(found.summary())
    return EXIT_OK
