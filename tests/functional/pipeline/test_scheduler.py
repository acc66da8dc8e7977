"""The scheduler through the CLI: -j, GPU slots, stop_on, shards and merge, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import ROOT, Cli, interrupt_when


def write_spec(path: Path, body: str) -> Path:
    path.write_text("reprospec: 1\n" + body)
    return path


def test_two_jobs_run_attempts_at_the_same_time(cli: Cli, tmp_path: Path) -> None:
    # Each child announces itself, then waits for the other one: with -j 1 this
    # would time out (hang), with -j 2 both pass. No sleeps, a real rendezvous. Its wait
    # (60 s) and the timeout are bounds for a loaded machine, never reached when it works:
    # 10 s was all the second attempt's start had, every core busy.
    spec = write_spec(
        tmp_path / "pair.yaml",
        f"""
name: pair
matrix:
  who: [a, b]
command: >-
  python -c "import os, sys, time, pathlib;
  d = pathlib.Path('{tmp_path}');
  (d / '${{{{ matrix.who }}}}.here').touch();
  other = d / ('b.here' if '${{{{ matrix.who }}}}' == 'a' else 'a.here');
  [time.sleep(0.05) for _ in range(1200) if not other.exists()];
  sys.exit(0 if other.exists() else 1)"
run: {{timeout: 120s}}
expect: {{outcome: pass}}
""",
    )
    result = cli("run", str(spec), "-j", "2")
    assert result.code == 0, result.stderr + result.stdout
    assert result.results()["summary"]["reproduced"] == 2


def test_gpu_slots_each_attempt_sees_its_own_devices(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "gpus.yaml",
        """
name: gpu-slots
matrix:
  n: [1, 2, 3, 4, 5, 6]
environment: {gpus: 1}
command: python -c "import os; print('SAW', os.environ.get('CUDA_VISIBLE_DEVICES'))"
expect: {outcome: pass}
""",
    )
    # The outer CUDA_VISIBLE_DEVICES is respected: ids come from it, not 0..N.
    result = cli("run", str(spec), "-j", "2", env={"CUDA_VISIBLE_DEVICES": "5,7"})
    assert result.code == 0, result.stderr
    run_dir = result.latest_run()
    seen = []
    for cell in result.results()["cells"]:
        attempt = cell["attempts"][0]
        out = (run_dir / attempt["logs"] / "stdout.log").read_text()
        device = out.split("SAW", 1)[1].strip()
        assert [device] == attempt["gpu_slot"]
        seen.append(device)
    assert set(seen) == {"5", "7"}


def test_gpu_cells_without_gpus_are_skipped_as_infra_error(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "needs-gpu.yaml",
        """
name: needs-gpu
environment: {gpus: 1}
command: "true"
expect: {outcome: pass}
""",
    )
    result = cli("run", str(spec), "--gpus", "")
    assert result.code == 3, result.stderr
    cell = result.results()["cells"][0]
    assert cell["verdict"] == "infra-error"
    assert "skipped: needs 1 GPU" in cell["attempts"][0]["infra_error"]


def test_stop_on_first_reproduction_skips_remaining_attempts(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "stop.yaml",
        """
name: stop-early
command: python -c "import os; os.abort()"
run: {repeat: 5, stop_on: first-reproduction}
expect: {outcome: crash, signal: SIGABRT}
""",
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stderr
    cell = result.results()["cells"][0]
    assert len(cell["attempts"]) == 1
    assert cell["attempts"][0]["outcome"]["signal"] == "SIGABRT"


def test_shards_merge_into_the_same_cells_and_verdicts(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "twelve.yaml",
        """
name: twelve
matrix:
  a: [1, 2, 3, 4]
  b: [x, y, z]
command: python -c "import sys; sys.exit(3 if '${{ matrix.b }}' == 'z' else 0)"
expect:
  outcome: pass
  cases:
    - when: {b: z}
      outcome: error
      exit_code: 3
""",
    )
    whole = cli("run", str(spec))
    assert whole.code == 0, whole.stderr
    reference = {c["id"]: c["verdict"] for c in whole.results()["cells"]}
    shard_dirs = []
    for k in (1, 2, 3):
        shard = cli("run", str(spec), "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}"))
        assert shard.code in (0, 1), shard.stderr
        shard_dirs.append(str(next((tmp_path / f"s{k}" / "runs").iterdir())))
    merged = cli("merge", *shard_dirs)
    assert merged.code == 0, merged.stderr
    merged_cells = {c["id"]: c["verdict"] for c in merged.results()["cells"]}
    assert merged_cells == reference
    assert sum(len(c["attempts"]) for c in merged.results()["cells"]) == 12
    assert "--shard" not in (merged.latest_run() / "report.md").read_text()
    # a lost shard must not merge into a green run
    partial = cli("merge", *shard_dirs[:2], "--out", str(tmp_path / "partial"))
    assert partial.code == 2
    assert "missing shard 3/3" in partial.stderr
    # ...and leaves no run folder behind (merge's id is drawn as its folder is made).
    assert not (tmp_path / "partial" / "runs").exists() or not any(
        (tmp_path / "partial" / "runs").iterdir()
    )


def test_a_shard_without_attempts_records_an_empty_run_that_merges(
    cli: Cli, tmp_path: Path
) -> None:
    # One attempt over two shards: shard 2/2 exited 2 ("holds no attempts") and
    # recorded no run, so merge refused "missing shard 2/2" and no command could make it.
    spec = write_spec(
        tmp_path / "one.yaml",
        "name: one\nmatrix: {p: [a, b]}\ncommand: python -c pass\nexpect: {outcome: pass}\n",
    )
    out = str(tmp_path / "o")
    empty = cli("run", str(spec), "-m", "p=b", "--repeat", "1", "--shard", "2/2", "--out", out)
    assert empty.code == 0, empty.stderr
    assert "shard 2/2 holds no attempts" in empty.stderr
    assert empty.results()["cells"] == []
    assert empty.results()["options"]["shard"] == [2, 2]
    full = cli("run", str(spec), "-m", "p=b", "--repeat", "1", "--shard", "1/2", "--out", out)
    assert full.code == 0, full.stderr
    merged = cli("merge", "--out", out, "latest", "latest~1")
    assert merged.code == 0, merged.stderr
    (cell,) = merged.results()["cells"]
    assert (cell["id"], cell["verdict"], len(cell["attempts"])) == ("p=b", "reproduced", 1)


def test_an_empty_shards_capture_judges_its_extras_by_asking_the_interpreter(
    cli: Cli, tmp_path: Path
) -> None:
    # An empty shard's captured attempt is one it never runs, yet the capture waited for
    # the run's check of it: its extras were named unjudged, where it asked before.
    spec = write_spec(
        tmp_path / "extras.yaml",
        "name: extras\nmatrix: {p: [a, b]}\ncommand: python -c pass\n"
        "environment: {packages: ['pytest[dev]']}\nexpect: {outcome: pass}\n",
    )
    out = str(tmp_path / "o")
    empty = cli("run", str(spec), "-m", "p=b", "--repeat", "1", "--shard", "2/2", "--out", out)
    assert empty.code == 0, empty.stderr
    assert "shard 2/2 holds no attempts" in empty.stderr
    environment = empty.results()["environment"]
    assert "python" in environment, environment
    assert "environment_unjudged" not in environment, environment


def test_merged_shards_name_the_command_and_repro_an_unsharded_run_names(
    cli: Cli, tmp_path: Path
) -> None:
    # A cell's attempts split over shards: its command was the first given shard's own
    # first attempt's, and its standalone repro the last shard's, where `${{ attempt }}`
    # makes each attempt's command another (attempt 1 passes, 2 and 3 fail).
    spec = write_spec(
        tmp_path / "attempts.yaml",
        """
name: attempts
command: sh -c 'echo attempt ${{ attempt }}; test ${{ attempt }} -lt 2 || exit 3'
run: {repeat: 3}
expect: {outcome: error, exit_code: 3, rate: ">0"}
""",
    )
    whole = cli("run", str(spec), "--out", str(tmp_path / "whole"))
    assert whole.code == 0, whole.stderr
    shards = []
    for k in (3, 2, 1):  # given in any order
        shard = cli("run", str(spec), "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}"))
        assert shard.code in (0, 4), shard.stderr  # shard 1's pass alone is undecided
        shards.append(str(next((tmp_path / f"s{k}" / "runs").iterdir())))
    merged = cli("merge", *shards, "--out", str(tmp_path / "merged"))
    assert merged.code == 0, merged.stderr
    reference, together = whole.results(), merged.results()
    assert together["cells"][0]["command"] == reference["cells"][0]["command"]
    assert "echo attempt 1" in str(together["cells"][0]["command"])
    assert together["standalone"]["run"] == reference["standalone"]["run"]
    assert "echo attempt 2" in together["standalone"]["run"]


def test_resume_after_sigkill_finishes_exactly_the_missing_attempts(tmp_path: Path) -> None:
    # Attempts 1..6 of one cell; the engine is SIGKILLed while attempt 4 runs. Each attempt
    # writes ran.log before it says it started: the kill takes the attempt with the engine,
    # and one killed between the two (a loaded machine) had not yet logged its first run.
    gate = tmp_path / "gate"
    spec = write_spec(
        tmp_path / "resume.yaml",
        f"""
name: resume-me
command: >-
  python -c "import os, time, pathlib;
  n = int(os.environ['ATTEMPT']);
  open('{tmp_path}/ran.log', 'a').write(f'{{n}}\\n');
  pathlib.Path('{tmp_path}', f'started-{{n}}').touch();
  [time.sleep(0.05) for _ in range(600) if n == 4 and not pathlib.Path('{gate}').exists()]"
environment:
  env: {{ATTEMPT: "${{{{ attempt }}}}"}}
run: {{repeat: 6, timeout: 60s}}
expect: {{outcome: pass}}
""",
    )
    out = tmp_path / "out"
    env = {**os.environ, "NO_COLOR": "1"}
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Killed once attempt 3's line is said: a short attempt is stored by then, not at its
    # end (its commit shared with the others', _Keeper.record).
    assert engine.stderr is not None
    for line in engine.stderr:
        if " #3: " in line:
            break
    while not (tmp_path / "started-4").exists():
        assert engine.poll() is None, "attempt 4 never started"
        time.sleep(0.05)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    gate.touch()
    run_id = next((out / "runs").iterdir()).name
    resumed = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "--resume", run_id, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads((out / "runs" / run_id / "results.json").read_text())
    attempts = data["cells"][0]["attempts"]
    assert [a["attempt"] for a in attempts] == [1, 2, 3, 4, 5, 6]
    # attempts 1-3 finished before the kill and ran once; 4 was cut off and ran again
    ran = (tmp_path / "ran.log").read_text().split()
    assert sorted(ran) == ["1", "2", "3", "4", "4", "5", "6"]
    history = subprocess.run(
        [sys.executable, "-m", "reprospec", "history", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run_id in history.stdout


def test_ctrl_c_stops_everything_writes_a_partial_report_and_exits_130(tmp_path: Path) -> None:
    import psutil

    marker = f"reprospec-ctrl-c-{os.getpid()}"
    spec = write_spec(
        tmp_path / "slow.yaml",
        f"""
name: slow
matrix:
  n: [1, 2, 3]
command: >-
  python -c "import pathlib, subprocess, time;
  pathlib.Path('{tmp_path}', 'started').touch();
  child = subprocess.Popen(['sleep', '300', '--{marker}']);
  time.sleep(300)"
run: {{timeout: 120s}}
expect: {{outcome: pass}}
""",
    )
    out = tmp_path / "out"
    stopped = interrupt_when(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out), "-j", "2"],
        (tmp_path / "started").exists,
    )
    stderr = stopped.stderr
    assert stopped.code == 130, stderr
    assert "Traceback" not in stderr
    run_dir = next((out / "runs").iterdir())
    data = json.loads((run_dir / "results.json").read_text())
    assert data["interrupted"] is True
    assert (run_dir / "report.md").exists()
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(marker in part for part in (p.info["cmdline"] or []))
    ]
    assert leftovers == []


def test_intermittent_rate_and_interval_everywhere(cli: Cli) -> None:
    from tests.support.cli import SPECS

    result = cli(
        "run", str(SPECS / "intermittent.yaml"), "--repeat", "20", "-j", "2", "--format", "junit"
    )
    assert result.code == 0, result.stderr
    cell = result.results()["cells"][0]
    rate = cell["rate"]
    assert rate["attempts"] == 20
    assert 0 < rate["matched"] < 20
    # the true crash probability is 0.3: the Wilson interval must hold it
    assert rate["low"] <= 0.3 <= rate["high"]
    # One wording of the rate in the table (stderr: stdout carries the junit here) and report.
    phrase = f"{rate['matched']}/20 (95% CI {rate['low']:.2f}–{rate['high']:.2f})"
    assert phrase in result.stderr
    report = (result.latest_run() / "report.md").read_text()
    assert phrase in report
    import xml.etree.ElementTree as ET

    case = ET.fromstring(result.stdout).find(".//testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props.get("flaky") == "true"
    assert sum(1 for name in props if name and name.startswith("attempt")) >= 20


def test_adaptive_repeat_stops_once_the_interval_decides(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "auto.yaml",
        """
name: adaptive
command: python -c "import os; os.abort()"
run: {repeat: auto, max_repeat: 40}
expect: {outcome: crash, signal: SIGABRT, rate: ">=0.5"}
""",
    )
    result = cli("run", str(spec), "-j", "2")
    assert result.code == 0, result.stderr
    rate = result.results()["cells"][0]["rate"]
    # every attempt crashes: the interval clears 0.5 long before the cap of 40
    assert rate["matched"] == rate["attempts"]
    assert 5 <= rate["attempts"] < 40
    assert rate["low"] > 0.5
