"""`reprospec isolate` run again on a finished isolation whose --out was made read-only
since: the probes replay from state.json and the answer is known, but writing isolate.json
failed and the command exited 2 (`Read-only file system: .../.isolate.json.PID.tmp`)
without printing it. The answer is printed, a warning says it could not be saved, and the
exit code is the answer's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT
from tests.support.readonly import read_only

PROGRAM = """\
import ctypes
import sys

if sys.argv[1] == "a" and sys.argv[2] == "x":
    ctypes.string_at(0)
print("ok")
"""

SPEC = """\
reprospec: 1
name: readonly
matrix:
  mode: [a, b]
  flag: [x, y]
command: python prog.py ${{ matrix.mode }} ${{ matrix.flag }}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {mode: b, flag: y}
      outcome: pass
"""


def test_a_replayed_answer_is_printed_though_it_cannot_be_saved(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = tmp_path / "out"
    argv = [
        sys.executable, "-m", "reprospec", "isolate", str(tmp_path / "spec.yaml"), "--out",
        str(out), "-m", "mode=a", "-m", "flag=x", "--passing", "mode=b,flag=y", "--min-rate",
        "0.9",
    ]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1"}
    first = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    answer = first.stdout.splitlines()[0]
    assert answer.startswith("crashes when mode=a AND flag=x"), first.stdout
    try:
        for fmt in ("text", "json"):
            again = subprocess.run(
                read_only(out, [*argv, "--format", fmt]),
                capture_output=True,
                text=True,
                cwd=ROOT,
                env=env,
                timeout=120,
            )
            assert again.returncode == 0, again.stderr
            assert "Traceback" not in again.stderr
            assert "replay" in again.stderr  # nothing ran again
            warning = "reprospec: warning: the answer could not be saved in "
            assert warning in again.stderr, again.stderr
            if fmt == "text":
                assert again.stdout.splitlines()[0] == answer
                assert "report: " not in again.stdout  # no file holds this answer
            else:
                data = json.loads(again.stdout)
                assert data["sentence"] == answer
                assert data["unsaved"].startswith("the answer could not be saved")
    finally:
        for root, dirs, _ in os.walk(out):
            for name in dirs:
                (Path(root) / name).chmod(0o755)
        out.chmod(0o755)
