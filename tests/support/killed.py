"""A run whose engine was SIGKILLed mid-attempt, made by a real `reprospec run`: the store
calls it running, its folder holds no results.json, and `--resume` finishes it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.paths import ROOT


def gated_spec(path: Path, gate: Path) -> Path:
    """A one-cell spec whose attempts pass once `gate` exists and wait for it until then
    (a minute at most): the engine is killed while one waits."""
    path.write_text(
        "reprospec: 1\nname: gated\n"
        "command: >-\n"
        '  python -c "import pathlib, time;\n'
        f'  [time.sleep(0.05) for _ in range(1200) if not pathlib.Path({str(gate)!r}).exists()]"\n'
        "expect: {outcome: pass}\n"
    )
    return path


def killed_run(spec: Path, out: Path, *options: str) -> str:
    """Run `reprospec run SPEC --out OUT OPTIONS` and SIGKILL its engine once its first
    attempt has begun; the run's id."""
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 120
        while not list((out / "runs").glob("*/cells/*/1")):
            assert engine.poll() is None, "the engine ended before its first attempt began"
            assert time.monotonic() < deadline, "the first attempt never began"
            time.sleep(0.05)
    finally:
        engine.kill()
        engine.wait(timeout=30)
    (folder,) = (out / "runs").iterdir()
    assert not (folder / "results.json").exists()
    return folder.name
