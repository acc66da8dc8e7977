"""minimize's DIR holds the minimal program only: its checks rerun DIR, which imports the
program's modules, and Python wrote their bytecode there (`__pycache__/helper.*.pyc`
handed to a maintainer beside the program). Real runs, bytecode writing on (this machine's
PYTHONDONTWRITEBYTECODE taken out, as most users' shells have it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT


def test_the_answer_folder_keeps_no_bytecode_of_its_checks(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text("import helper\nx = 1\nhelper.boom()\n")
    (tmp_path / "helper.py").write_text(
        "import ctypes\ndef boom():\n    ctypes.string_at(0)\ndef unused():\n    return 2\n"
    )
    (tmp_path / "crash.yaml").write_text(
        "reprospec: 1\nname: crash\ncommand: python crash.py\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = tmp_path / "result"
    argv = [sys.executable, "-m", "reprospec", "minimize", str(tmp_path / "crash.yaml")]
    argv += ["--out", str(tmp_path / "out"), "-o", str(result), "--min-rate", "0.9"]
    argv += ["--budget", "20", "--format", "json"]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env={**env, "NO_COLOR": "1"}
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] in ("minimized", "budget")  # DIR checked
    # The check ran DIR (and imported helper there): its bytecode is gone, the program kept.
    assert (tmp_path / "out" / "minimize").is_dir()
    assert sorted(p.name for p in result.iterdir()) == [
        "crash.py",
        "helper.py",
        "minimize.json",
        "minimize.md",
        "minimized.yaml",
        "repro.sh",
    ]
