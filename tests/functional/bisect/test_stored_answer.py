"""A bisect finished under an earlier, less strict stop (before a51dea31's second reading of
the rate, or f019f95c's third), run again on an --out made read-only since: its state.json
holds the answer, but not every attempt the present stop asks, so the rerun was refused as a
version needing attempts (exit 2). It prints the stored answer with a warning that it came
from the earlier stop, where the state was stored before that stop (state.json without its
`stop` mark, or with the second reading's) and the same --error and --min-rate are asked;
otherwise the refusal stands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT
from tests.support.readonly import read_only


def _writable(folder: Path) -> None:
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            (Path(root) / name).chmod(0o755)
        for name in files:
            (Path(root) / name).chmod(0o644)
    folder.chmod(0o755)


def test_a_stored_answer_short_of_the_present_stop_is_printed_on_a_read_only_out(
    tmp_path: Path,
) -> None:
    from reprospec import venvs
    from tests.support.envs import make_releases, uv_environment

    wheels = make_releases(
        tmp_path / "wheels", "reprospec-oldstop", 4, lambda m: f"REGRESSED = {m >= 2}\n"
    )
    (tmp_path / "prog.py").write_text(
        "import reprospec_oldstop\nassert not reprospec_oldstop.REGRESSED\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: oldstop\nenvironment:\n  packages: [reprospec-oldstop==1.3]\n"
        "command: python prog.py\nexpect:\n  outcome: error\n  exception: AssertionError\n"
    )
    out = tmp_path / "out"
    argv = [
        sys.executable, "-m", "reprospec", "bisect", str(tmp_path / "spec.yaml"), "--package",
        "reprospec-oldstop", "--good", "1.0", "--bad", "1.3", "--find-links", str(wheels),
        "--out", str(out),
    ]  # fmt: skip
    env = {
        **os.environ,
        "NO_COLOR": "1",
        venvs.ENVS_VARIABLE: str(tmp_path / "envs"),
        **uv_environment(),
    }

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)

    first = run(argv)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.startswith("first bad: reprospec-oldstop 1.2 (last good 1.1)")
    # As the earlier stop left it: the answer stored, fewer attempts than the present stop asks
    # (here only 1.2's trial kept).
    (folder,) = (p for p in (out / "bisect").iterdir() if p.is_dir())
    state_path = folder / "state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state["trials"] = {"1.2": state["trials"]["1.2"]}
    # Stored under the present stop (its mark kept), the answer is not printed for attempts it
    # never ran: the refusal stands.
    state_path.write_text(json.dumps(state), encoding="utf-8")
    try:
        present = run(read_only(out, argv))
    finally:
        _writable(out)
    assert present.returncode == 2, present.stdout + present.stderr
    assert "cannot be written" in present.stderr
    assert "less strict stop" not in present.stdout
    # The second reading's stop (a51dea31) marked it "second-reading": stored before the third
    # reading (f019f95c), its answer is printed with the warning, not refused.
    assert state["stop"] != "second-reading"
    state["stop"] = "second-reading"
    state_path.write_text(json.dumps(state), encoding="utf-8")
    try:
        second = run(read_only(out, argv))
    finally:
        _writable(out)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.splitlines()[0] == first.stdout.splitlines()[0]
    assert "the one an earlier run stored, under an earlier, less strict stop" in second.stdout
    # The first stop wrote no mark.
    del state["stop"]
    state_path.write_text(json.dumps(state), encoding="utf-8")
    # A stricter --error (which the bisect's key leaves out) asks a confidence the stored
    # answer never reached: refused, not printed at the stored error.
    try:
        stricter = run(read_only(out, [*argv, "--error", "0.0001"]))
    finally:
        _writable(out)
    assert stricter.returncode == 2, stricter.stdout + stricter.stderr
    assert "cannot be written" in stricter.stderr
    assert "less strict stop" not in stricter.stdout
    try:
        older = run(read_only(out, argv))
    finally:
        _writable(out)
    assert older.returncode == 0, older.stdout + older.stderr
    assert "Traceback" not in older.stderr
    assert older.stdout.splitlines()[0] == first.stdout.splitlines()[0]
    assert "the one an earlier run stored, under an earlier, less strict stop" in older.stdout
    assert "the present one asks attempts of 1." in older.stdout
    # Where --out can be written, the present stop checks it: the version's attempts run.
    checked = run(argv)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "less strict stop" not in checked.stdout
    assert checked.stdout.startswith("first bad: reprospec-oldstop 1.2 (last good 1.1)")
