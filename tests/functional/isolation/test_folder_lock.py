"""One search of a folder at a time, for every search verb (core/trylock.py's `search_held`):
isolate and minimize had no lock, so the same command started twice on one spec and --out
ran every probe twice and the last to write state.json dropped the other's. The holder here
is another real process; killed, its lock is taken over by the next search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT
from tests.support.searchlock import held_elsewhere, refused_as_held

ISOLATE = """reprospec: 1
name: locked
command: sh -c 'test "$X" = 1 && kill -SEGV $$; exit 0'
expect: {outcome: crash, signal: SIGSEGV}
environment: {env: {X: '1'}}
"""


def _search(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "reprospec", *argv, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )


def _refused_while_held_then_taken_over(argv: list[str], verb: str, key: str) -> None:
    first = _search(argv)
    assert first.returncode == 0, first.stderr
    ident = json.loads(first.stdout)[key]
    (folder,) = Path(argv[argv.index("--out") + 1]).glob(f"*/{ident}")
    with held_elsewhere(folder) as pid:
        refused = _search(argv)
    assert refused.returncode == 2, refused.stderr
    assert refused_as_held(f"{verb} {ident}", folder, pid) in refused.stderr
    assert "Traceback" not in refused.stderr
    # The killed holder's lock (its file left with its pid) is free: the next one goes on,
    # answered from the stored probes.
    again = _search(argv)
    assert again.returncode == 0, again.stderr
    assert f"continuing {verb} {ident}" in again.stderr


def test_a_second_isolate_of_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "locked.yaml"
    spec.write_text(ISOLATE)
    argv = ["isolate", str(spec), "--out", str(tmp_path / "out")]
    _refused_while_held_then_taken_over(
        [*argv, "--passing-set", "environment.env.X=0"], "isolation", "isolate"
    )


def test_a_second_minimize_of_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text("import ctypes\nx = 1\nctypes.string_at(0)\n")
    (tmp_path / "crash.yaml").write_text(
        "reprospec: 1\nname: crash\ncommand: python crash.py\n"
        "expect: {outcome: crash, signal: SIGSEGV}\n"
    )
    argv = ["minimize", str(tmp_path / "crash.yaml"), "--out", str(tmp_path / "out")]
    argv += ["-o", str(tmp_path / "result"), "--min-rate", "0.9", "--budget", "20"]
    _refused_while_held_then_taken_over(argv, "minimization", "id")
