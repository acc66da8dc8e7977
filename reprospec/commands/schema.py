"""`reprospec schema`: print the packaged JSON Schema."""

from __future__ import annotations

import argparse
import sys
from importlib import resources


def run(_args: argparse.Namespace) -> int:  # every verb is run(args); this one needs none
    text = resources.files("reprospec").joinpath("data/reprospec.schema.json").read_text("utf-8")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
