"""`reprospec schema`: print the packaged JSON Schema."""

from __future__ import annotations

import argparse
import sys

from reprospec.commands import options as opt


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `schema` verb (no arguments)."""
    sub.add_parser("schema", help="print the JSON Schema of the spec format")


def run(_args: argparse.Namespace) -> int:  # every verb is run(args); this one needs none
    from importlib import resources

    text = resources.files("reprospec").joinpath("data/reprospec.schema.json").read_text("utf-8")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
