"""`reprospec completion bash|zsh|fish`: the shell code that completes reprospec's verbs and
options, from the same argparse parser the command line uses (argcomplete does both halves:
the shell code here, and the answers when the shell runs `reprospec` with `_ARGCOMPLETE`)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from reprospec.commands import options as opt

SHELLS = ("bash", "zsh", "fish")


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `completion` verb's arguments."""
    p = sub.add_parser(
        "completion",
        help="print shell code that completes verbs and options: "
        'eval "$(reprospec completion bash)"',
    )
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help=" | ".join(SHELLS))


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["reprospec"], shell=args.shell))
    return 0


def complete(parser: argparse.ArgumentParser) -> NoReturn:
    """Answer the shell's completion request (argcomplete exits) and never return."""
    import argcomplete

    argcomplete.autocomplete(parser)
    # autocomplete returns only when the variable is not its own; nothing to complete then.
    raise SystemExit(0)
