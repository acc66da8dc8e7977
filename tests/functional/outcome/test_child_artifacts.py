"""What a child writes cannot take the engine's memory, nor fill its results.

Each spec's child writes one huge artifact the engine reads: a 300 MB stack dump
(answering the engine's SIGURG at a hang), a 512 MB events line, two million
events lines naming two million stuck items. The engine runs in a real child
process (tests/adversarial/drive.py: validate, plan and run through the CLI's
entry point) that reports its own peak RSS (VmHWM), so pytest's own memory is
not counted. The bound is generous (the engine needs about 60 MB); before the
artifacts were capped, these runs took the engine to 0.9 to 1.1 GB.

The huge files are sparse where they can be (a header, a hole, a tail): the
engine pays the same to read a hole as to read data, and the disk does not.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import ROOT

DRIVER = ROOT / "tests" / "adversarial" / "drive.py"
MAX_ENGINE_RSS = 300 * 2**20
# What of a child's stack dump may reach results.json and results.db (the evidence cap).
MAX_STORED_STACK = 2 * 2**20

HUGE_STACK = """\
import os, signal, time

def dump(*_):
    path = os.path.join(os.environ["REPROSPEC_STACK_DIR"], f"stack-{os.getpid()}.txt")
    with open(path, "wb") as f:
        f.write(b'Thread 0x1 (most recent call first):\\n  File "huge.py", line 3 in dump\\n')
        f.seek(300 * 2**20)
        f.write(b'\\n  File "huge.py", line 9 in <module>\\n')

signal.signal(signal.SIGURG, dump)
time.sleep(600)
"""

HUGE_EVENT_LINE = """\
import os
with open(os.environ["REPROSPEC_EVENTS"], "wb") as f:
    f.write(b'{"event": "phase", "phase": "train"}\\n{"event": "note", "text": "')
    f.seek(512 * 2**20, os.SEEK_CUR)
    f.write(b'"}\\n{"event": "phase", "phase": "validation"}\\n')
"""

MANY_EVENTS = """\
import os
with open(os.environ["REPROSPEC_EVENTS"], "w") as f:
    for i in range(2_000_000):
        f.write('{"event":"worker_busy","pid":%d,"index":%d,"rank":%d}\\n' % (i, i, i))
    f.write('{"event": "phase", "phase": "validation", "step": 7}\\n')
"""


def _spec(tmp_path: Path, name: str, code: str, expect: str, timeout: str = "60s") -> Path:
    (tmp_path / f"{name}.py").write_text(code)
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(
        textwrap.dedent(
            f"""\
            reprospec: 1
            name: {name}
            command: python {name}.py
            run: {{timeout: {timeout}}}
            expect: {expect}
            """
        )
    )
    return spec


def _drive(spec: Path, out: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(spec), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def _run_dir(out: Path) -> Path:
    (run,) = (out / "runs").iterdir()
    return run


@pytest.mark.parametrize(
    ("name", "code", "expect", "timeout"),
    [
        ("huge_stack", HUGE_STACK, "{outcome: hang}", "4s"),
        ("huge_event_line", HUGE_EVENT_LINE, "{outcome: pass, phase: validation}", "60s"),
        ("many_events", MANY_EVENTS, "{outcome: pass, phase: validation, step: 7}", "120s"),
    ],
)
def test_huge_artifacts_keep_the_engine_small(
    tmp_path: Path, name: str, code: str, expect: str, timeout: str
) -> None:
    spec = _spec(tmp_path, name, code, expect, timeout)
    result = _drive(spec, tmp_path / "out")
    run = result["run"]
    assert isinstance(run, dict)
    # The run judged what happened (the tail of the artifact still counts) and exited 0.
    assert run["code"] == 0, run
    peak = result["peak_rss"]
    assert isinstance(peak, int)
    assert 0 < peak < MAX_ENGINE_RSS, f"engine peak RSS {peak / 2**20:.0f} MB"
    folder = _run_dir(tmp_path / "out")
    results = json.loads((folder / "results.json").read_text())
    (attempt,) = results["cells"][0]["attempts"]
    stack = attempt.get("stack") or ""
    assert len(stack.encode()) < MAX_STORED_STACK
    with sqlite3.connect(tmp_path / "out" / "results.db") as db:
        (stored,) = db.execute("SELECT length(stack) FROM attempts").fetchone()
    assert (stored or 0) < MAX_STORED_STACK
    if name == "huge_stack":
        # The dump's head and tail both reached the report; the middle did not.
        assert "line 3 in dump" in stack
        assert "line 9 in <module>" in stack
        assert "bytes omitted" in stack
        stack_txt = next(folder.glob("cells/*/1/stack.txt"))
        assert stack_txt.stat().st_size < 5 * 2**20


PROBES = """\
import json, sys
from pathlib import Path
from reprospec.environment.probe import probe_environment
from reprospec.environment.packages import probe_installed
from reprospec.runners.local import LocalRunner

python = sys.argv[1]
answers = {}
for name, probe in (
    ("version", lambda: LocalRunner(python)._check_interpreter()),
    ("env", lambda: probe_environment(python)),
    ("packages", lambda: probe_installed(python, ["pip"])),
):
    try:
        answers[name] = str(probe())[:100]
    except Exception as exc:  # the flood before the JSON line is no usable answer
        answers[name] = type(exc).__name__
answers["peak"] = next(
    int(line.split()[1]) * 1024
    for line in Path("/proc/self/status").read_text().splitlines()
    if line.startswith("VmHWM:")
)
print(json.dumps(answers))
"""


def test_a_noisy_interpreter_cannot_flood_the_probes(tmp_path: Path) -> None:
    # An interpreter that prints 300 MB before doing its work (a .pth file, a wrapper):
    # the version check, the environment capture and the package check read it bounded.
    noisy = tmp_path / "python"
    noisy.write_text(f'#!/bin/sh\nhead -c 300000000 /dev/zero\nexec {sys.executable} "$@"\n')
    noisy.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-c", PROBES, str(noisy)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert 0 < result["peak"] < MAX_ENGINE_RSS, f"peak RSS {result['peak'] / 2**20:.0f} MB"
    # The version printed last is still read; the others' JSON was buried: a clear refusal.
    assert result["version"] == ".".join(map(str, sys.version_info[:3]))
    assert result["env"] == result["packages"] == "InfraError"
