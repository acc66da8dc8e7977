"""`reprospec isolate` run again on a finished isolation whose --out was made read-only
since: the probes replay from state.json and the answer is known, but writing isolate.json
failed and the command exited 2 (`Read-only file system: .../.isolate.json.PID.tmp`)
without printing it. The answer is printed, a warning says it could not be saved, and the
exit code is the answer's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT

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


def _read_only(out: Path, argv: list[str]) -> list[str]:
    """`argv` run with `out` read-only: chmod for a user, a read-only bind mount of its own
    (unshare) for root, whom no mode stops."""
    if os.geteuid() != 0:
        for root, dirs, files in os.walk(out):
            for name in [*dirs, *files]:
                (Path(root) / name).chmod(0o555 if name in dirs else 0o444)
        out.chmod(0o555)
        return argv
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare: no way to make --out read-only")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -m refused: {probe.stderr.decode(errors='replace').strip()}")
    mount = f'mount --bind -o ro "{out}" "{out}" && exec "$0" "$@"'
    return ["unshare", "-m", "sh", "-c", mount, *argv]


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
                _read_only(out, [*argv, "--format", fmt]),
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
