"""`reprospec schema`: print (or write) the packaged JSON Schema.

`-o FILE` keeps a copy where an editor can read it, for specs kept anywhere: the printed
`# yaml-language-server: $schema=FILE` line is what a spec's first line names (the schema's
`$id`, its URL in the repository, serves the same file to an editor that may fetch it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprospec.commands import options as opt


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `schema` verb."""
    p = sub.add_parser("schema", help="print the JSON Schema of the spec format")
    opt.output(
        p,
        metavar="FILE",
        help="write it to FILE (folders created) and print the line that points an editor at it",
        names_file=True,
    )
    opt.force_output(p)


def run(args: argparse.Namespace) -> int:
    from reprospec.spec.schema import schema_text

    text = schema_text()
    text = text if text.endswith("\n") else text + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    target: Path = args.output.expanduser()
    opt.write_output(target, text, force=args.force)
    print(f"wrote {target}; a spec's first line points an editor at it:", file=sys.stderr)
    print(f"# yaml-language-server: $schema={target.resolve()}")
    return 0
