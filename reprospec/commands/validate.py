"""`reprospec validate PATH...`: every problem of every file, then exit 0 or 2."""

from __future__ import annotations

import argparse
import sys

from reprospec.errors import EXIT_OK, EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    from reprospec.spec import spec_files, validate_paths

    problems = validate_paths(args.paths)
    for line in problems:
        print(line, file=sys.stderr)
    files = spec_files(args.paths)
    if problems:
        bad = len({line.split(":", 1)[0] for line in problems})
        print(f"{len(problems)} problem(s) in {bad} of {len(files)} file(s)", file=sys.stderr)
        return EXIT_USAGE
    print(f"{len(files)} spec file(s) valid")
    return EXIT_OK
