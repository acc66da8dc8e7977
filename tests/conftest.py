"""Fixtures shared by the tests; helpers live in the tests.support package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT, Cli, CliResult


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Run `python -m reprospec ARGS` as a user would; `--out` defaults into tmp_path."""

    def invoke(*args: str, env: dict[str, str] | None = None, timeout: float = 180,
               cwd: Path | None = None, stdin: str | None = None) -> CliResult:
        out = tmp_path / "out"
        argv = [sys.executable, "-m", "reprospec", *args]
        takes_out = ("run", "report", "history", "compare", "merge")
        if args and args[0] in takes_out and "--out" not in args:
            argv += ["--out", str(out)]
        child_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        # stdin is never the developer's terminal: a command that asks must not wait for it.
        # (`stdin`: the text a command reads from its standard input, like `--from-log -`.)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=child_env, cwd=cwd or ROOT,
                              **({"input": stdin} if stdin is not None
                                 else {"stdin": subprocess.DEVNULL}))
        return CliResult(proc.returncode, proc.stdout, proc.stderr, out)

    return invoke
