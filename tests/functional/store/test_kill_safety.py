"""The SQLite store survives an engine SIGKILLed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

from reprospec.store.db import Store
from tests.support.cli import Cli
from tests.support.killed import gated_spec, killed_run
from tests.support.paths import ROOT
from tests.support.runs import hang_run

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from tests.support.runs import hang_run
    from reprospec.store.db import Store

    run = hang_run()
    store = Store(Path({root!r}))
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {{}}, {{}})
    for attempt in run.cells[0].attempts[:2]:
        store.record_attempt(run.run_id, "default", attempt)
    # An attempt being written when the engine dies: begun, never committed.
    store._db.execute("BEGIN IMMEDIATE")
    store._db.execute("INSERT INTO attempts (run_id, cell_id, attempt, started, finished, "
                      "duration_s, matched, mismatches, gpu_slot, logs, warnings) "
                      "VALUES (?, 'default', 3, '', '', 0, 0, '[]', '[]', '', '[]')",
                      (run.run_id,))
    Path({marker!r}).write_text("ready")
    time.sleep(60)
    """
)


def test_store_survives_sigkill_mid_run(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    root = ROOT
    code = CHILD.format(tests=str(root), root=str(tmp_path), marker=str(marker))
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, "child died before recording its attempts"
            assert time.monotonic() < deadline, "child never got ready"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    store = Store(tmp_path)
    run = hang_run()
    assert store.finished_attempts(run.run_id) == {
        ("default", a.attempt): a for a in run.cells[0].attempts[:2]
    }
    info = store.run_info(run.run_id)
    assert info is not None
    assert info.status == "running"
    # The store is writable again after the crash: the resumed run finishes it.
    store.record_attempt(run.run_id, "default", run.cells[0].attempts[2])
    store.finish_run(run.run_id, "finished")
    assert len(store.finished_attempts(run.run_id)) == 3


def test_history_says_killed_of_a_run_whose_engine_was_sigkilled(cli: Cli, tmp_path: Path) -> None:
    """A SIGKILLed engine leaves no word in the store: its run stayed `running` for good in
    `history`. The run folder's engine.json names the engine, so history says `killed`
    (text and JSON) once that process is gone, and `running` while it runs."""
    spec = tmp_path / "slow.yaml"
    spec.write_text(
        "reprospec: 1\nname: slow\ncommand: sleep 20\nrun: {timeout: 60s}\n"
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"  # the `cli` fixture's default --out

    def history() -> list[dict[str, object]]:
        done = cli("history", "--format", "json", timeout=60)
        assert done.code == 0, done.stderr
        rows: list[dict[str, object]] = json.loads(done.stdout)
        return rows

    # Started apart (not by `cli`, which waits for the command): it is the engine to kill.
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while not list((out / "runs").glob("*/cells/default/1")) and time.monotonic() < deadline:
            time.sleep(0.1)
        (row,) = history()
        assert row["status"] == "running"
    finally:
        engine.kill()
        engine.wait(timeout=30)  # reaped: its pid names no process any more
    (row,) = history()
    assert row["status"] == "killed"


def test_history_names_the_attempts_a_killed_run_kept(cli: Cli, tmp_path: Path) -> None:
    """A run killed before it judged a cell showed `0` cells and `—`, though its finished
    attempts were stored (and `--resume` does not run them again): it says how many."""
    spec = tmp_path / "quick.yaml"
    spec.write_text(
        "reprospec: 1\nname: quick\ncommand: sleep 0.2\nrun: {timeout: 60s}\n"
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"  # the `cli` fixture's default --out
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--repeat", "200", "-j", "1",
         "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    try:
        deadline, stored = time.monotonic() + 60, 0
        while stored < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            done = cli("history", "--format", "json", timeout=60)
            rows = json.loads(done.stdout) if done.code == 0 else []
            stored = int(rows[0]["attempts"]) if rows else 0
    finally:
        engine.kill()
        engine.wait(timeout=30)
    (row,) = json.loads(cli("history", "--format", "json", timeout=60).stdout)
    assert row["status"] == "killed"
    assert row["attempts"] >= 2, row
    text = cli("history", timeout=60)
    assert f"none judged; {row['attempts']} attempts stored" in text.stdout, text.stdout


def test_report_of_a_killed_run_says_it_was_killed_and_how_to_finish_it(
    cli: Cli, tmp_path: Path
) -> None:
    """A SIGKILLed engine writes no results.json: `report ID` said "no run ID", of a run
    `history` lists and `--resume` finishes. It says the run was killed, and the command
    that finishes it, which then does."""
    gate = tmp_path / "gate"
    spec = gated_spec(tmp_path / "gated.yaml", gate)
    out = tmp_path / "out"
    run_id = killed_run(spec, out)
    try:
        for named in (run_id, run_id[:20], str(out / "runs" / run_id)):
            report = cli("report", named, "--out", str(out), timeout=60)
            assert report.code == 2, report.stderr
            assert "Traceback" not in report.stderr
            assert "no run" not in report.stderr
            assert f"run {run_id} was killed" in report.stderr, report.stderr
            assert f"`reprospec run --resume {run_id} --out {out}`" in report.stderr
    finally:
        gate.touch()
    resumed = cli("run", "--resume", run_id, "--out", str(out), timeout=300)
    assert resumed.code == 0, resumed.stderr
    report = cli("report", run_id, "--out", str(out), timeout=60)
    assert report.code == 0, report.stderr


def test_a_resumed_attempt_reads_none_of_what_its_killed_run_left(cli: Cli, tmp_path: Path) -> None:
    """The attempt a killed engine left is run again by --resume in the same
    folder, whose events.jsonl still held the killed attempt's line: the rerun's error,
    which reached no step, read `@ step 57`. Its files are now set aside, and kept."""
    flag = tmp_path / "first-ran"
    spec = tmp_path / "stale.yaml"
    script = (
        f"if [ ! -e {flag} ]; then "
        'echo \'{"step": 57, "t": 0.1}\' >> "$REPROSPEC_EVENTS"; '
        f"touch {flag}; sleep 60; fi; "
        "exec python3 -c 'raise RuntimeError(1)'"
    )
    spec.write_text(
        "reprospec: 1\nname: stale\n"
        f"command: [sh, -c, {json.dumps(script)}]\n"
        "expect: {outcome: error}\n"
    )
    out = tmp_path / "out"  # the `cli` fixture's default --out
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert engine.poll() is None, "the engine ended before its attempt wrote its step"
            assert time.monotonic() < deadline, "the attempt never wrote its step"
            time.sleep(0.05)
    finally:
        engine.kill()
        engine.wait(timeout=30)
    resumed = cli("run", "--resume", "latest", timeout=120)
    assert resumed.code == 0, resumed.stderr
    (run,) = (out / "runs").iterdir()
    result = json.loads((run / "results.json").read_text())
    (attempt,) = result["cells"][0]["attempts"]
    assert attempt["outcome"]["kind"] == "error", attempt
    assert attempt["outcome"]["step"] is None, attempt
    assert "step 57" not in resumed.stdout, resumed.stdout
    # The killed attempt's files are kept beside the rerun's, not under its name.
    cell = run / "cells" / "default"
    assert '"step": 57' in (cell / "1.interrupted" / "events.jsonl").read_text()
    assert "57" not in (cell / "1" / "events.jsonl").read_text()
    # A bundle packs them too, and its README says what they are.
    archive = tmp_path / "stale.tar.gz"
    packed = cli("bundle", "latest", "-o", str(archive), "--out", str(out), timeout=120)
    assert packed.code == 0, packed.stderr
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        readme = tar.extractfile(f"{run.name}/README.md")
        assert readme is not None
        text = readme.read().decode()
    assert f"{run.name}/logs/cells/default/1.interrupted/events.jsonl" in names
    assert "`logs/cells/CELL/N.interrupted/` holds what attempt N wrote before its run" in text


def test_a_sigkilled_engine_kept_every_attempt_it_had_said(tmp_path: Path) -> None:
    """A run's attempts share a commit (issue 30, item 5), each committed before its
    progress line is said: an engine SIGKILLed mid-run, its lines read as they come, kept
    every attempt it said, and `--resume` runs the rest."""
    spec = tmp_path / "many.yaml"
    spec.write_text("reprospec: 1\nname: many\ncommand: [true]\nexpect: {outcome: pass}\n")
    out = tmp_path / "out"
    engine = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reprospec",
            "run",
            str(spec),
            "--repeat",
            "10000",
            "-j",
            "1",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        text=True,
    )
    said: list[int] = []
    try:
        assert engine.stderr is not None
        deadline = time.monotonic() + 60
        while len(said) < 150 and time.monotonic() < deadline:
            line = engine.stderr.readline()
            assert line, "the engine ended before it said 150 attempts"
            if line.startswith("[") and "default #" in line:
                said.append(int(line.split("#")[1].split(":")[0]))
        assert len(said) >= 150
    finally:
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait(timeout=30)
    with Store(out, reader=True) as store:
        (run_id,) = store.run_ids()
        kept = {number for _, number in store.finished_attempts(run_id)}
    assert set(said) <= kept, sorted(set(said) - kept)
