"""The verify run capture makes (a rerun of the written spec, in a copy of its folder that
is removed after) names the spec capture wrote, not the copy: it is the newest run, and
`report latest` right after `capture` showed a temporary folder's path, gone, as the spec
and as the command to rerun."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Cli

_CRASH = "import os\nos.kill(os.getpid(), 11)\n"


def test_report_latest_after_capture_names_the_written_spec(cli: Cli, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "crash.py").write_text(_CRASH, encoding="utf-8")
    out = tmp_path / "out"
    made = cli(
        "capture", "-o", "crash.yaml", "--out", str(out), "--repeat", "2", "--timeout", "20s",
        "--", "python", "crash.py",
        cwd=work,
    )  # fmt: skip
    assert made.code == 0, made.stdout + made.stderr
    spec = str(work / "crash.yaml")
    report = cli("report", "latest", "--out", str(out), cwd=work)
    assert report.code == 0, report.stderr
    assert "reprospec-verify-" not in report.stdout
    assert f'path="{spec}"' in report.stdout.splitlines()[0]
    assert f"reprospec run {spec}\n" in report.stdout
    listed = cli("history", "--out", str(out), "--format", "json", cwd=work)
    latest = json.loads(listed.stdout)[0]
    # The verify run (judged against the written spec's expect), not capture's first run.
    assert {k: n for k, n in latest["verdicts"].items() if n} == {"reproduced": 1}
    assert latest["spec_path"] == spec
    results = json.loads((out / "runs" / latest["run_id"] / "results.json").read_text())
    assert (results["spec"]["path"], results["command_line"]) == (spec, f"reprospec run {spec}")
