"""A bundle's run.sh reads a DataLoader worker's signal as `reprospec run` does: torch's
words (`Segmentation fault`) or, from older torch, the number (`is killed by signal: 11`).
Its `signal_of` run with bash, as the bundle runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: signals
workload:
  model: {builtin: mlp}
  data:
    dataset: {builtin: synthetic, size: 8, shape: [4], classes: 2}
  phases: [{name: train, steps: 1}]
expect: {outcome: crash, signal: SIGSEGV}
"""


def test_run_sh_reads_a_signals_number_and_its_words(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(SPEC)
    spec = load_spec(tmp_path / "spec.yaml")
    bundle = tmp_path / "bundle"
    write_bundle(spec, [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1], bundle)
    script = (bundle / "run.sh").read_text()
    said = ["11", "7", "Segmentation fault", "Killed", "Aborted", "99", "term"]
    calls = "".join(f"signal_of '{words}' || echo none\n" for words in said)
    (bundle / "signals.sh").write_text(f"{script[: script.index(chr(10) + '# cell 1:')]}\n{calls}")
    done = subprocess.run(
        ["bash", str(bundle / "signals.sh")], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == [
        "SIGSEGV", "SIGBUS", "SIGSEGV", "SIGKILL", "SIGABRT", "none", "none", ""
    ]  # fmt: skip
