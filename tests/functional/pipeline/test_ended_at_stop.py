"""A stop (Ctrl-C, the API's `cancel`) keeps the attempts whose program had ended, or
was ending of its own, as it came; only those still running are cut short and not kept.

The end caught is a real one: a root that segfaults with a few hundred MiB of memory takes
a moment to write its core (the kernel's flag PF_DUMPCORE says so in /proc), and the stop
is given right then. The old engine killed it there, mid-core: its status read SIGKILL's,
the attempt was dropped as cut short, and a run of nothing else read "Nothing ran".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import reprospec
from reprospec.runners.local import LocalRunner
from tests.support.local import make_plan

PY = sys.executable

# Its pid written first; its pages touched, so that its core holds them and takes a while.
BIG_CRASH = (
    "import ctypes, os, sys\n"
    "block = bytearray(200 << 20)\n"
    "block[::4096] = b'x' * (len(block) // 4096)\n"
    "with open(sys.argv[1] + '.tmp', 'w') as f: f.write(str(os.getpid()))\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "ctypes.string_at(0)\n"
)
_PF_DUMPCORE = 0x200


def _dumping(pid: int) -> bool | None:
    """Whether `pid` is writing its core now; None once it is gone (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return bool(int(fields[6]) & _PF_DUMPCORE)


class StopAsItDumps:
    """Sets `cancel` once the process whose pid `pid_file` names is writing its core, as a
    Ctrl-C pressed then would; `caught` says whether it was caught so (a machine whose
    kernel writes no core here cannot show it)."""

    def __init__(self, pid_file: Path, cancel: threading.Event) -> None:
        self.pid_file = pid_file
        self.cancel = cancel
        self.caught = False
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        deadline = time.monotonic() + 120
        while not self.pid_file.exists():
            if time.monotonic() > deadline:
                return
            time.sleep(0.002)
        pid = int(self.pid_file.read_text())
        while (now := _dumping(pid)) is not None and time.monotonic() < deadline:
            if now:
                self.caught = True
                self.cancel.set()
                return
            time.sleep(0.001)

    def join(self) -> None:
        self.thread.join(timeout=130)
        if not self.caught:
            pytest.skip(
                "the crash wrote no core here (core_pattern, RLIMIT_CORE): nothing to catch"
            )


def test_a_root_writing_its_core_as_the_stop_comes_is_finished_not_cut_short(
    tmp_path: Path,
) -> None:
    runner = LocalRunner()
    runner.prepare([])
    cancel = threading.Event()
    pid_file = tmp_path / "pid"
    stop = StopAsItDumps(pid_file, cancel)
    ex = runner.run(
        make_plan([PY, "-c", BIG_CRASH, str(pid_file)], workdir=tmp_path, timeout_s=60),
        tmp_path / "a",
        cancel=cancel,
    )
    stop.join()
    assert cancel.is_set()
    # Its own end, SIGSEGV, classified as any other: not SIGKILL's, not cut short.
    assert not ex.interrupted, ex
    assert ex.returncode == -11, ex
    assert "Fatal Python error: Segmentation fault" in ex.stderr_path.read_text()


def _crash_and_hang(tmp_path: Path, pid_file: Path) -> Path:
    """The user's spec, shortened: a crash (its pid written to `pid_file`, its core a
    moment's writing) and a hang."""
    (tmp_path / "prog.py").write_text(
        "import sys, time\n"
        "if sys.argv[1] == 'hang':\n"
        "    time.sleep(600)\n"
        "sys.argv[1:] = sys.argv[2:]\n"
        f"exec({BIG_CRASH!r}, {{'__name__': '__main__'}})\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: ended-at-stop\n"
        "matrix: {mode: [crash, hang]}\n"
        f"command: python3 prog.py ${{{{ matrix.mode }}}} {pid_file}\n"
        "run: {timeout: 60s}\n"
        "expect: {outcome: crash, signal: SIGSEGV, "
        "cases: [{when: {mode: hang}, outcome: hang}]}\n"
    )
    return spec


def test_a_stop_keeps_the_crash_that_had_ended_and_cuts_the_hang_short(tmp_path: Path) -> None:
    # The user's report, on the local runner: a crash and a hang under -j 2, stopped as the
    # crash's core was being written. The crash is judged and stored; the hang, running at
    # the stop, is cut short (`--resume` runs it); the headline says what was kept.
    pid_file = tmp_path / "pid"
    spec = _crash_and_hang(tmp_path, pid_file)
    cancel = threading.Event()
    stop = StopAsItDumps(pid_file, cancel)
    begin = time.monotonic()
    result = reprospec.run(spec, reprospec.RunOptions(out=tmp_path / "out", jobs=2), cancel=cancel)
    stop.join()
    assert time.monotonic() - begin < 50  # stopped, not the hang's 60 s timeout
    assert result.interrupted
    verdicts = {cell.cell.matrix["mode"]: cell for cell in result.cells}
    crash = verdicts["crash"]
    assert crash.verdict == "reproduced", crash
    (attempt,) = crash.attempts
    assert attempt.ran is not None
    assert (attempt.ran.kind, attempt.ran.signal) == ("crash", "SIGSEGV")
    assert verdicts["hang"].verdict == "not-run"
    report = (tmp_path / "out" / "runs" / result.run_id / "report.md").read_text()
    assert "**crash SIGSEGV in 1 of 2 cells;" in report, report[:600]
    assert "Nothing" not in report.split("\n\n")[1], report[:600]


def test_a_ctrl_c_keeps_the_crash_that_had_ended(tmp_path: Path) -> None:
    # The same through the command line and a real SIGINT, whose handler (and the SIGTERM
    # rule's clock beside it) sets nothing aside: a Ctrl-C never reaches the attempts.
    pid_file = tmp_path / "pid"
    spec = _crash_and_hang(tmp_path, pid_file)
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out), "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        ctrl_c = threading.Event()
        stop = StopAsItDumps(pid_file, ctrl_c)
        stop.thread.join(timeout=130)
        if stop.caught:
            engine.send_signal(signal.SIGINT)
        stdout, stderr = engine.communicate(timeout=60)
    finally:
        engine.kill()
    stop.join()
    assert engine.returncode == 130, stdout + stderr
    (folder,) = (out / "runs").iterdir()
    results = json.loads((folder / "results.json").read_text())
    verdicts = {cell["id"]: cell["verdict"] for cell in results["cells"]}
    assert verdicts == {"mode=crash": "reproduced", "mode=hang": "not-run"}, stderr
    assert "set aside" not in stderr
    report = (folder / "report.md").read_text()
    assert "**crash SIGSEGV in 1 of 2 cells;" in report, report[:600]
