"""`reprospec docker setup`: make a Docker engine answer and build the runner's images.

The docker runner's default image (`reprospec-runner:latest`) and its base are built on this
machine, never pulled. The script that builds them ships in the package
(runners/docker/setup.sh, beside its Dockerfile), so a pip user runs the same steps as a
checkout's `scripts/docker-setup.sh`; `--print-path` names it, for reading it first or running
it by hand.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from reprospec.commands import options as opt

SETUP_SCRIPT = Path(__file__).resolve().parent.parent / "runners" / "docker" / "setup.sh"


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `docker` verb: `setup`."""
    p = sub.add_parser(
        "docker",
        help="set up a Docker engine and the docker runner's images (no registry needed)",
        description=(
            "setup: install docker.io and mmdebstrap with apt-get when missing (sudo unless "
            "root), start dockerd when no engine answers, and build reprospec-base:bookworm "
            "and reprospec-runner:latest (torch from a local wheelhouse). Each step is skipped "
            "when already done."
        ),
    )
    p.add_argument("action", choices=("setup",), metavar="ACTION", help="setup")
    p.add_argument(
        "--print-path",
        action="store_true",
        help="print the path of the setup script instead of running it",
    )


def run(args: argparse.Namespace) -> int:
    from reprospec.errors import EXIT_INFRA, InfraError

    if args.print_path:
        print(SETUP_SCRIPT)
        return 0
    # pip downloads the image's wheels: this interpreter's, which has pip (a dependency).
    environment = {**os.environ, "REPROSPEC_PYTHON": sys.executable}
    try:
        finished = subprocess.run(["bash", str(SETUP_SCRIPT)], env=environment, check=False)
    except FileNotFoundError:
        raise InfraError("docker setup needs bash, which is not on PATH") from None
    return 0 if finished.returncode == 0 else EXIT_INFRA
