"""Shared test helpers: run the real CLI in a child process, find the run folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str
    out: Path

    def latest_run(self) -> Path:
        runs = sorted((self.out / "runs").iterdir())
        assert runs, "no run folder written"
        return runs[-1]

    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.latest_run() / "results.json").read_text())
        return data


@pytest.fixture
def cli(tmp_path: Path):
    """Run `python -m reprospec ARGS` as a user would; `--out` defaults into tmp_path."""

    def invoke(*args: str, env: dict[str, str] | None = None, timeout: float = 180,
               cwd: Path | None = None) -> CliResult:
        out = tmp_path / "out"
        argv = [sys.executable, "-m", "reprospec", *args]
        takes_out = ("run", "report", "history", "compare", "merge")
        if args and args[0] in takes_out and "--out" not in args:
            argv += ["--out", str(out)]
        child_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=child_env, cwd=cwd or ROOT)
        return CliResult(proc.returncode, proc.stdout, proc.stderr, out)

    return invoke
