"""capture --repeat of a flaky program whose failing attempts disagree on a key `expect` could
carry: the spec expects only what every failing attempt shared (capture/writer.py's
process_keys), so its own rerun counts each of them a match."""

from __future__ import annotations

from pathlib import Path

from reprospec.capture.writer import FAILED_BEFORE_ANY_STEP, unshared_note
from reprospec.spec.load import load_spec
from tests.support.cli import Cli

# Attempt N, counted in a file beside it, raises the same RuntimeError either after the
# loop's first `step 0` (odd N) or before any step (even N), as a DataLoader whose workers
# race on a half-written cache file raises at its first batch or before it; every third
# attempt passes, so the failure is a flake.
_PROGRAM = """\
import pathlib
count = pathlib.Path({count!r})
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if n % 3 == 0:
    for step in range(3):
        print(f"step {{step}}", flush=True)
    raise SystemExit(0)
if n % 2:
    print("step 0", flush=True)
raise RuntimeError("Expecting ',' delimiter: line 1 column 5 (char 4)")
"""


def test_a_failure_some_attempts_met_before_any_step_expects_no_step(
    cli: Cli, tmp_path: Path
) -> None:
    # The first run's attempts 1, 5 raised at step 0 and 2, 4 before any step: capture
    # wrote `step: 0`, and its spec's run counted the stepless ones `miss: step`.
    (tmp_path / "load.py").write_text(_PROGRAM.format(count=str(tmp_path / "count")))
    out = str(tmp_path / "out")
    argv = ["capture", "--repeat", "6", "--no-verify", "-o", "spec.yaml", "--out", out]
    result = cli(*argv, "--", "python", "load.py", cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "wrote spec.yaml: error:RuntimeError in 4/6 attempts"
    expect = load_spec(str(tmp_path / "spec.yaml")).document["expect"]
    assert isinstance(expect, dict)
    assert "step" not in expect, expect
    assert (expect["outcome"], expect["exception"]) == ("error", "RuntimeError")
    text = (tmp_path / "spec.yaml").read_text()
    assert f"# 2 of 4 attempts {FAILED_BEFORE_ANY_STEP}" in text, text
    # The spec's own run counts every failing attempt, with a step or without, a match.
    ran = cli("run", "spec.yaml", "--repeat", "6", "--out", out, cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    failed = [a for a in cell["attempts"] if a["outcome"]["kind"] != "pass"]
    assert len(failed) == 4
    assert all(a["matched"] for a in failed), [a["outcome"] for a in failed]


def test_a_failure_whose_message_differs_between_attempts_expects_no_message(
    cli: Cli, tmp_path: Path
) -> None:
    # A half-written JSON file read by json.loads: cut at one place it says `Expecting ','
    # delimiter`, at another `Expecting value`; the spec expected the first attempt's, and its
    # own run counted the other `miss: message`.
    (tmp_path / "load.py").write_text(
        "import json, pathlib\n"
        f"count = pathlib.Path({str(tmp_path / 'count')!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        "blob = json.dumps({'offsets': [10, 20]})\n"
        "json.loads(blob[:15] if n % 2 else blob[:17])\n"
    )
    out = str(tmp_path / "out")
    argv = ["capture", "--repeat", "4", "--no-verify", "-o", "spec.yaml", "--out", out]
    result = cli(*argv, "--", "python", "load.py", cwd=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    assert (
        result.stdout.splitlines()[0]
        == "wrote spec.yaml: error:json.decoder.JSONDecodeError in 4/4 attempts"
    )
    expect = load_spec(str(tmp_path / "spec.yaml")).document["expect"]
    assert isinstance(expect, dict)
    assert "message" not in expect, expect
    assert expect["exception"] == "json.decoder.JSONDecodeError"
    text = (tmp_path / "spec.yaml").read_text()
    assert (
        f"exception: json.decoder.JSONDecodeError  # 2 of 4 attempts {unshared_note('message')}"
        in text
    )
    ran = cli("run", "spec.yaml", "--repeat", "4", "--out", out, cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    (cell,) = ran.results()["cells"]
    assert [a["matched"] for a in cell["attempts"]] == [True] * 4
