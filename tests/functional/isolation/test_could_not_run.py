"""An isolate whose attempts could not run learned nothing of the program: the same command,
once the machine is fixed, runs the search again instead of replaying "could not run".
Real isolate runs (the CLI), the program put on PATH between them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_a_search_none_of_whose_attempts_could_run_is_run_again(tmp_path: Path) -> None:
    # nu-a: `segpy` not on PATH ended infra-error (exit 3); put on PATH, the same command
    # replayed "command not found" from its state and exited 3 again.
    tool = tmp_path / "bin" / "segpy"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\ntest "$X" = 1 && kill -SEGV $$\nexit 0\n')
    tool.chmod(0o755)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\ncommand: segpy\nexpect: {outcome: crash, signal: SIGSEGV}\n"
        "environment: {env: {X: '1'}}\n"
    )
    argv = [sys.executable, "-m", "reprospec", "isolate", str(spec), "--format", "json"]
    argv += ["--out", str(tmp_path / "out"), "--passing-set", "environment.env.X=0"]
    env = {k: v for k, v in os.environ.items() if k != "X"}

    def isolate(path: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=300, env={**env, "PATH": path}
        )

    first = isolate(os.environ["PATH"])
    assert first.returncode == 3, first.stdout + first.stderr
    assert "command not found: segpy" in first.stdout + first.stderr
    again = isolate(f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "its earlier run's attempts could not run (" in again.stderr, again.stderr
    assert "run again, not replayed" in again.stderr
    data = json.loads(again.stdout)
    assert [(c["path"], c["value"]) for c in data["culprits"]] == [("environment.env.X", "1")]
