"""capped.run's `stop`: asked at every slice of its wait, it ends the helper's whole group
at once (a wrapper's child holding the pipe too), where before only a timeout could; a
helper that had answered and exited when the stop or the timeout came is taken as ended,
its answer kept; an output past what is kept is said to be cut; and stop_group's grace,
the SIGTERM a helper (uv) is given before the group's SIGKILL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from time import monotonic, sleep

import pytest

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


def _written(path: Path) -> bool:
    """Whether the wrapper has written its child's pid."""
    try:
        return path.read_text().strip().isdigit()
    except FileNotFoundError:
        return False


def _stop_once_started(child: Path) -> Callable[[], bool]:
    """A stop that fires once the wrapper has written its child's pid, where a stop after
    0.5 s, on a loaded machine, could come before the child started and test nothing of the
    group. It fires at the second asking after that: a wait (a read of what is ready)
    lies between, so what the wrapper printed before the pid is read first."""
    seen = 0

    def stop() -> bool:
        nonlocal seen
        seen += _written(child)
        return seen > 1

    return stop


def test_a_stop_ends_the_helpers_group_at_once_and_says_so(tmp_path: Path) -> None:
    child = tmp_path / "child"
    began = monotonic()
    done = capped.run(
        ["sh", "-c", _WRAPPER, "sh", str(child)],
        limit=1024,
        timeout_s=None,
        stop=_stop_once_started(child),
    )
    assert monotonic() - began < 5
    assert (done.stopped, done.timed_out, done.stdout) == (True, False, b"started\n")
    assert _gone(int(child.read_text()))


@pytest.mark.parametrize("cut_by", ["stop", "timeout"])
def test_a_helper_that_answered_and_exited_is_ended_by_its_answer(
    tmp_path: Path, cut_by: str
) -> None:
    # A site's sbatch wrapper: the job id printed, exit 0, a logger it left in the
    # background holding stdout. A stop (a second Ctrl-C) or the timeout that came then
    # read as "stopped before it answered", the job id dropped (the job queued unrecorded).
    child = tmp_path / "child"
    done = capped.run(
        ["sh", "-c", 'echo 101; sleep 60 & echo $! > "$1"', "sh", str(child)],
        limit=1024,
        timeout_s=None if cut_by == "stop" else 2,
        stop=_stop_once_started(child) if cut_by == "stop" else None,
    )
    assert (done.returncode, done.stdout, done.stopped, done.timed_out) == (
        0,
        b"101\n",
        False,
        False,
    )
    assert _gone(int(child.read_text()))  # the group's lingering member killed all the same


def test_an_output_past_what_is_kept_is_said_cut() -> None:
    whole = capped.run(["sh", "-c", "seq 100"], limit=1024, tail=0, timeout_s=None)
    assert (whole.cut, whole.stdout.count(b"\n")) == (False, 100)
    cut = capped.run(["sh", "-c", "seq 100000; echo last >&2"], limit=1024, tail=0, timeout_s=None)
    assert cut.cut
    assert cut.stdout.endswith(b" bytes omitted ...]\n")
    with_tail = capped.run(["sh", "-c", "seq 100000"], limit=1024, tail=4096, timeout_s=None)
    assert (with_tail.cut, with_tail.stdout.endswith(b"100000\n")) == (True, True)


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
