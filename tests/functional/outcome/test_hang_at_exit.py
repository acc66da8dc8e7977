"""A hang after the program said it was done is a hang at exit; a late one says so.

Real children through the CLI: one writes a `done` event and then cannot exit (a
non-daemon thread that never ends), one prints `training done` (a marker in the
phase `exit`) and then hangs the same way, one makes progress until the timeout.
Before, the first two read `hang @ train:3` and could not be expected apart, and
the third read as stuck as a deadlock.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.cli import Cli

# Three steps of progress, then `done`, then a thread that keeps the process from leaving.
_DONE_THEN_STUCK = textwrap.dedent(
    """
    import json, os, threading, time
    def emit(**e):
        with open(os.environ["REPROSPEC_EVENTS"], "a") as f:
            f.write(json.dumps({"t": time.time(), **e}) + "\\n")
    for step in range(1, 4):
        emit(event="step", phase="train", step=step)
        print(f"train step {step}", flush=True)
    if os.environ.get("SAY") == "event":
        emit(event="done")
    print("training done", flush=True)
    threading.Thread(target=threading.Event().wait).start()
    """
)

_ALWAYS_PROGRESSING = textwrap.dedent(
    """
    import json, os, time
    step = 0
    while True:
        step += 1
        with open(os.environ["REPROSPEC_EVENTS"], "a") as f:
            f.write(json.dumps({"t": time.time(), "event": "step", "phase": "train",
                                "step": step}) + "\\n")
        time.sleep(0.1)
    """
)


def _spec(tmp_path: Path, body: str, expect: str, extra: str = "") -> Path:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "job.py").write_text(body)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: exit-hang\nenvironment: {workdir: work}\n"
        f"{extra}command: python job.py\nrun: {{timeout: 3s}}\nexpect: {expect}\n"
    )
    return spec


def test_done_event_then_stuck_is_a_hang_at_exit(cli: Cli, tmp_path: Path) -> None:
    spec = _spec(tmp_path, _DONE_THEN_STUCK, "{outcome: hang, phase: exit}")
    result = cli("run", str(spec), env={"SAY": "event"})
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert (outcome["kind"], outcome["phase"], outcome["step"]) == ("hang", "exit", None)
    assert "said its work was done" in outcome["detail"]
    assert "hang @ exit" in result.stdout


def test_a_marker_in_the_exit_phase_is_a_hang_at_exit(cli: Cli, tmp_path: Path) -> None:
    markers = "markers:\n  - {pattern: '^training done', phase: exit}\n"
    spec = _spec(tmp_path, _DONE_THEN_STUCK, "{outcome: hang, phase: train}", markers)
    result = cli("run", str(spec))
    # Expecting the hang where the work was (train) is not what happened.
    assert result.code == 1, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert (outcome["kind"], outcome["phase"], outcome["step"]) == ("hang", "exit", None)
    assert "│ hang @ exit │" in result.stdout


def test_a_hang_that_was_progressing_says_so(cli: Cli, tmp_path: Path) -> None:
    spec = _spec(tmp_path, _ALWAYS_PROGRESSING, "{outcome: hang}")
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert "before the timeout: still progressing?" in outcome["detail"]
    report = (result.latest_run() / "report.md").read_text()
    assert "A longer timeout (`run.timeout`, `run --timeout`)" in report


def test_events_without_a_time_are_timed_by_their_file(cli: Cli, tmp_path: Path) -> None:
    # spec-format.md's command protocol writes `{"event": "step", ...}` with no `t`: the
    # file's last write says when the last one came.
    untimed = _ALWAYS_PROGRESSING.replace('"t": time.time(), ', "")
    assert '"t"' not in untimed
    result = cli("run", str(_spec(tmp_path, untimed, "{outcome: hang}")))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert "before the timeout: still progressing?" in outcome["detail"]
    assert (outcome["phase"], outcome["step"] > 3) == ("train", True)
    # Untimed events that stopped long before the timeout: stuck, said plainly.
    stuck = _DONE_THEN_STUCK.replace('{"t": time.time(), **e}', "e")
    assert '"t"' not in stuck
    result = cli("run", str(_spec(tmp_path, stuck, "{outcome: hang}")))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert "still progressing" not in outcome["detail"]
    assert (outcome["phase"], outcome["step"]) == ("train", 3)


# A non-daemon thread blocked forever on a lock, never joined: the main thread returns, and
# the interpreter waits for the thread at exit (threading's `_shutdown`).
_NEVER_JOINED = textwrap.dedent(
    """
    import threading
    lock = threading.Lock()
    lock.acquire()

    def stuck():
        lock.acquire()

    threading.Thread(target=stuck, name="w1").start()
    print("main done", flush=True)
    """
)


def test_a_thread_never_joined_holds_the_hang_at_exit(cli: Cli, tmp_path: Path) -> None:
    """Its title read just `hang` (no `hung_in`: the main thread had left the program's
    code), where the same thread joined read `hang in stuck (job.py:7)`; now it is named
    as a join's, and the report says the main thread waits for it at exit."""
    spec = _spec(tmp_path, _NEVER_JOINED, "{outcome: hang}")
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    outcome = result.results()["cells"][0]["attempts"][0]["outcome"]
    assert outcome["hung_in"] == {
        "path": str(tmp_path / "work" / "job.py"),
        "line": 7,
        "function": "stuck",
    }
    assert "hang in stuck (job.py:7)" in result.stdout
    report = (result.latest_run() / "report.md").read_text()
    assert "threads were in `work/job.py:7 in stuck`, its main thread waiting at exit" in report
    assert "never joined, in `<python>/" in report
