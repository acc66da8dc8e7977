"""capped.run's `stop`: asked at every slice of its wait, it ends the helper's whole group
at once (a wrapper's child holding the pipe too), where before only a timeout could; and
stop_group's grace, the SIGTERM a helper (uv) is given before the group's SIGKILL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from time import monotonic, sleep

from reprospec.core import capped

# A wrapper (sh) whose child holds its stdout open, as a site's squeue or sbatch wrapper's
# real client does: its pid is written where the test reads it.
_WRAPPER = 'echo started; sleep 60 & echo $! > "$1"; wait'


def _gone(pid: int) -> bool:
    """Whether `pid` ended: no process, or a zombie its new parent has yet to reap."""
    stat = Path(f"/proc/{pid}/stat")
    deadline = monotonic() + 5
    while monotonic() < deadline:
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        sleep(0.05)
    return False


def test_a_stop_ends_the_helpers_group_at_once_and_says_so(tmp_path: Path) -> None:
    child = tmp_path / "child"
    began = monotonic()
    done = capped.run(
        ["sh", "-c", _WRAPPER, "sh", str(child)],
        limit=1024,
        timeout_s=None,
        stop=lambda: monotonic() - began > 0.5,
    )
    assert monotonic() - began < 5
    assert (done.stopped, done.timed_out, done.stdout) == (True, False, b"started\n")
    assert _gone(int(child.read_text()))


def test_no_stop_said_runs_to_the_end() -> None:
    done = capped.run(["sh", "-c", "echo hi"], limit=1024, timeout_s=None, stop=lambda: False)
    assert (done.returncode, done.stopped, done.timed_out, done.stdout) == (
        0,
        False,
        False,
        b"hi\n",
    )


def test_stop_group_gives_the_leader_its_sigterm_before_the_groups_sigkill(tmp_path: Path) -> None:
    # A leader that cleans up on SIGTERM (uv) does so within the grace; its child, which
    # ignores SIGTERM, is SIGKILLed with the group after.
    code = (
        "import signal, subprocess, sys, time\n"
        "child = subprocess.Popen(['sh', '-c', 'trap \"\" TERM; sleep 60'])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "def term(*_):\n"
        "    open(sys.argv[2], 'w').write('termed')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    pid_file, termed = tmp_path / "child", tmp_path / "termed"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(pid_file), str(termed)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    capped.stop_group(proc, grace_s=10)
    proc.stdout.close()
    assert termed.read_text() == "termed"
    assert proc.returncode == 0
    assert _gone(int(pid_file.read_text()))
