"""A stop (SIGTERM, Ctrl-C, SIGHUP) while `reprospec slurm` submits: it waits until
slurm.json records what was submitted, then exits 130. This machine has no Slurm: sbatch
is a fake on PATH that sends the verb its stop as it submits the merge job, as a CI's
cancel or a closed terminal would at that moment."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reprospec.slurm.submit import LookupWait, _sbatch_or_found
from tests.support.cli import ROOT, Cli
from tests.support.fakeslurm import fake_tool

# The array is job 101, the merge 102. The merge's sbatch stops its caller (reprospec:
# the script's parent), then lingers so that the stop lands while it runs, and answers.
SBATCH = """\
echo "$*" >> "$(dirname "$0")/submitted"
case "$*" in
  *merge.sbatch*) kill -{signal} $PPID; sleep 0.5; echo 102 ;;
  *) echo 101 ;;
esac"""


@pytest.mark.parametrize("signal", ["TERM", "HUP"])
def test_a_stop_while_submitting_waits_for_the_jobs_to_be_recorded(
    cli: Cli, tmp_path: Path, signal: str
) -> None:
    # The stop was raised after the array's sbatch, before the merge was submitted or
    # slurm.json saved: the array was queued, `slurm status` said it was never submitted
    # and `slurm resume` submitted it again.
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "sbatch", SBATCH.format(signal=signal))
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    done = cli("slurm", str(spec), "--shards", "1", "--out", str(shared), env=env)
    # Both jobs were submitted (the merge's sbatch ended, its job id read) ...
    assert len((tools / "submitted").read_text().splitlines()) == 2, done.stderr
    (run,) = (shared / "slurm").iterdir()
    record = json.loads((run / "slurm.json").read_text())
    # ... and recorded: status and resume know them.
    jobs = [(sub["array_job"], sub["merge_job"]) for sub in record["submissions"]]
    assert jobs == [("101", "102")], record
    assert done.stdout.startswith("submitted s: array job 101 (1 shard, 1 attempt), merge job 102")
    assert (done.code, done.stderr.splitlines()[-1:]) == (130, ["reprospec: interrupted"]), (
        done.stderr
    )


def test_a_ctrl_c_to_the_terminals_group_while_submitting_spares_sbatch(tmp_path: Path) -> None:
    # A terminal's Ctrl-C is SIGINT to its whole foreground process group: sbatch, run in
    # reprospec's, was killed as it submitted the merge ('sbatch refused the job: exit -2',
    # exit 3, the run's folder removed). In a session of its own it ends, and the jobs are
    # recorded. reprospec runs in a session of its own here, so the group is only its own.
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "sbatch", SBATCH.replace("kill -{signal} $PPID", "kill -s INT -- -$PPID"))
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    argv = [sys.executable, "-m", "reprospec", "slurm", str(spec), "--shards", "1"]
    done = subprocess.run(
        [*argv, "--out", str(shared)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"},
    )
    assert len((tools / "submitted").read_text().splitlines()) == 2, done.stderr
    (run,) = (shared / "slurm").iterdir()
    record = json.loads((run / "slurm.json").read_text())
    jobs = [(sub["array_job"], sub["merge_job"]) for sub in record["submissions"]]
    assert jobs == [("101", "102")], done.stderr
    assert "refused" not in done.stderr
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (130, ["reprospec: interrupted"]), (
        done.stderr
    )


@pytest.mark.parametrize("stop", ["kill -s TERM $PPID", "kill -s INT -- -$PPID"])
def test_a_stop_while_resume_resubmits_waits_for_the_jobs_to_be_recorded(
    tmp_path: Path, stop: str
) -> None:
    # `slurm resume` submitted with no stop handler and no deferral: a SIGTERM killed it
    # outright between the array's sbatch and slurm.json's save (the array queued, the
    # shard still `missing`, resubmitted by the next resume), a Ctrl-C raised there alike.
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "sbatch", SBATCH.replace("kill -{signal} $PPID", ":"))
    for tool in ("squeue", "sacct"):  # the first jobs are gone from the queue: no answer lines
        fake_tool(tools, tool, "exit 0")
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}

    def reprospec(*args: str) -> subprocess.CompletedProcess[str]:
        # In a session of its own: the group the fake sbatch signals is only this one.
        return subprocess.run(
            [sys.executable, "-m", "reprospec", *args, "--out", str(shared)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )

    first = reprospec("slurm", str(spec), "--shards", "1")
    assert first.returncode == 0, first.stderr
    (run,) = (shared / "slurm").iterdir()
    fake_tool(tools, "sbatch", SBATCH.replace("kill -{signal} $PPID", stop))
    resumed = reprospec("slurm", "resume", run.name)
    assert len((tools / "submitted").read_text().splitlines()) == 4, resumed.stderr
    record = json.loads((run / "slurm.json").read_text())
    jobs = [(sub["array_job"], sub["merge_job"]) for sub in record["submissions"]]
    assert jobs == [("101", "102"), ("101", "102")], resumed.stderr
    assert "resubmitted shard 1 of 1: array job 101, merge job 102 after it" in resumed.stdout
    assert (resumed.returncode, resumed.stderr.splitlines()[-1:]) == (
        130,
        ["reprospec: interrupted"],
    ), resumed.stderr


def test_a_ctrl_c_while_a_timed_out_sbatch_is_looked_up_says_so_and_a_second_ends_the_wait(
    tmp_path: Path,
) -> None:
    # sbatch timed out and squeue did not answer: a Ctrl-C waited silently for the rest of
    # the lookup (90 s, squeue's calls 30 s each beyond it) and a second was only "stopping:
    # writing what finished first". The first is told what it waits for and how long; the
    # second ends the wait, the job unconfirmed and the run folder kept (exit 3).
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(
        tools,
        "sbatch",
        'echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv '
        'operation" >&2; exit 1',
    )
    # A squeue that never answers (exec: its end is sleep's, no orphan holding the pipe).
    fake_tool(tools, "squeue", 'touch "$(dirname "$0")/asked"; exec sleep 600')
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    argv = [sys.executable, "-m", "reprospec", "slurm", str(spec), "--shards", "1"]
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [*argv, "--out", str(shared)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tools / "asked").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tools / "asked").exists(), "squeue was never asked"
        proc.send_signal(signal.SIGINT)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
    finally:
        # Its group: the never-answering squeue with it, where the wait was not ended.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert time.monotonic() - started < 10, stderr
    (run,) = (shared / "slurm").iterdir()
    lines = stderr.splitlines()
    assert re.fullmatch(
        r"reprospec: stopping once squeue says whether sbatch queued the job \(up to \d+ s\), "
        r"so that slurm\.json records it: press Ctrl-C again to stop waiting \(the run folder "
        r"is kept\)",
        lines[0],
    ), stderr
    assert lines[1:] == [
        "reprospec: stopping: squeue is no longer asked whether sbatch queued the job",
        "reprospec: sbatch timed out: sbatch: error: Batch job submission failed: Socket timed "
        "out on send/recv operation; its lookup in squeue was stopped: the job of "
        f"{run / 'array.sbatch'} may be queued all the same; the run folder is kept: {run}",
    ], stderr
    assert proc.returncode == 3, stderr


def test_a_second_ctrl_c_while_sbatch_has_not_answered_ends_it_at_once(tmp_path: Path) -> None:
    # A hung sbatch: a second Ctrl-C was told "stopping once sbatch answers (up to 118 s)"
    # and waited that out; only the squeue lookup after it was cut. It ends sbatch's group
    # at once; the run is unconfirmed (exit 3), its folder kept. (tests/real/slurm's
    # test_sbatch_stopped.py: the same with the real sbatch behind a slow wrapper.)
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "sbatch", f'touch "{tools}/asked"; sleep 60; echo 101')
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    argv = [sys.executable, "-m", "reprospec", "slurm", str(spec), "--shards", "1"]
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [*argv, "--out", str(shared)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tools / "asked").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tools / "asked").exists(), "sbatch was never started"
        time.sleep(2.5)  # past sbatch's first moment, where a first stop is told its wait
        proc.send_signal(signal.SIGINT)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert time.monotonic() - started < 10, stderr
    (run,) = (shared / "slurm").iterdir()
    lines = stderr.splitlines()
    assert lines[1] == (
        "reprospec: stopping: sbatch is ended before it answers, and squeue is not asked "
        "whether it queued the job"
    ), stderr
    assert re.fullmatch(
        r"reprospec: sbatch was stopped before it answered \(after \d+ s\); squeue was not "
        + re.escape(f"asked: the job of {run / 'array.sbatch'} (with this sbatch's reprospec:")
        + r"[0-9a-f]{32}\) may be queued all the same \(see squeue --me "
        + re.escape(f"--format=%i,%V,%k,%o); the run folder is kept: {run}"),
        lines[2],
    ), stderr
    assert proc.returncode == 3, stderr


@pytest.mark.parametrize("scancel", ["answers", "hangs"])
def test_the_array_of_a_merge_stopped_unsubmitted_is_cancelled_within_a_bound_and_named(
    tmp_path: Path, scancel: str
) -> None:
    # The merge's sbatch hung (slurmctld not answering) and a second Ctrl-C ended it: the
    # array (555) was then scancelled for up to 60 s, unsaid and beyond any stop, and the
    # message named only merge.sbatch. The cancel is told, bounded, ended by a third
    # Ctrl-C, and its result named with the array job.
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(
        tools,
        "sbatch",
        'for a; do last=$a; done\ncase "$last" in *array.sbatch) echo 555 ;; '
        f'*) touch "{tools}/asked"; sleep 100; echo 556 ;; esac',
    )
    hang = "exec sleep 100" if scancel == "hangs" else "exit 0"
    fake_tool(tools, "scancel", f'echo "$*" > "{tools}/cancelled"; {hang}')
    spec = tmp_path / "s.yaml"
    spec.write_text("reprospec: 1\nname: s\ncommand: 'true'\nexpect: {outcome: pass}\n")
    shared = tmp_path / "shared"
    argv = [sys.executable, "-m", "reprospec", "slurm", str(spec), "--shards", "1"]
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [*argv, "--out", str(shared)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tools / "asked").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tools / "asked").exists(), "the merge's sbatch was never started"
        time.sleep(2.5)  # past sbatch's first moment, where a first stop is told its wait
        proc.send_signal(signal.SIGINT)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        if scancel == "hangs":
            while not (tools / "cancelled").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert time.monotonic() - started < 8, stderr
    assert (tools / "cancelled").read_text() == "555\n"
    (run,) = (shared / "slurm").iterdir()
    lines = stderr.splitlines()
    assert lines[2] == "reprospec: cancelling array job 555 (up to 10 s)", stderr
    result = "array job 555 was cancelled"
    if scancel == "hangs":
        assert lines[3] == (
            "reprospec: stopping: scancel is no longer waited for (array job 555 may stay queued)"
        ), stderr
        result = "array job 555 may still be queued: its scancel was stopped (scancel 555)"
    assert re.fullmatch(
        r"reprospec: sbatch was stopped before it answered \(after \d+ s\); squeue was not "
        + re.escape(f"asked: the job of {run / 'merge.sbatch'} (with this sbatch's reprospec:")
        + r"[0-9a-f]{32}\) may be queued all the same \(see squeue --me "
        + re.escape(f"--format=%i,%V,%k,%o); {result}; the run folder is kept: {run}"),
        lines[-1],
    ), stderr
    assert proc.returncode == 3, stderr


def test_a_second_stop_after_sbatch_answered_keeps_its_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A site's sbatch wrapper: the real sbatch answered 101 and the wrapper exited, a logger
    # it started in the background holding stdout. A second Ctrl-C then said "sbatch was
    # stopped before it answered" and dropped job 101, queued and unrecorded.
    fake_tool(tmp_path, "sbatch", f'echo 101; sleep 60 & echo $! > "{tmp_path}/logger"')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    wait = LookupWait(lambda _: None)

    def stop_twice() -> None:
        deadline = time.monotonic() + 30
        while not (tmp_path / "logger").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        wait.heard(False)
        wait.heard(True)

    stopper = threading.Thread(target=stop_twice, daemon=True)
    stopper.start()
    began = time.monotonic()
    job = _sbatch_or_found(
        ["sbatch", "--parsable", str(tmp_path / "array.sbatch")],
        frozenset({1}),
        set(),
        lambda _: None,
        wait,
    )
    stopper.join()
    assert (job, wait.given_up) == ("101", True)
    assert time.monotonic() - began < 10
