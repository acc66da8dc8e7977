"""`reprospec schema`: print the packaged JSON Schema."""

from __future__ import annotations

import argparse
import sys
from importlib import resources


def run(args: argparse.Namespace) -> int:
    text = resources.files("reprospec").joinpath("data/reprospec.schema.json").read_text("utf-8")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
