"""capture of a flaky program that happened to pass: the spec may lack what its failure needs
(the verify keeps only the shell's variables a pass needs), and capture says so before it
points at amplify, which could never make that spec fail."""

from __future__ import annotations

from pathlib import Path

from reprospec.spec.load import load_spec
from tests.support.cli import Cli

# Fails only sometimes, and only with the shared cache on: this capture's one attempt passed.
_PROGRAM = """\
import os
if os.environ.get("DL_SHARED_CACHE") == "1" and os.environ.get("FAIL_NOW") == "1":
    raise RuntimeError("half-written index")
print("fine")
"""


def test_a_capture_that_passed_says_its_spec_may_lack_what_the_failure_needs(
    cli: Cli, tmp_path: Path
) -> None:
    # The spec left DL_SHARED_CACHE out and the last line said `or edit its expect and run
    # reprospec amplify load.yaml`: a spec that can never fail, amplified.
    (tmp_path / "load.py").write_text(_PROGRAM)
    argv = ["capture", "-o", "load.yaml", "--out", str(tmp_path / "out")]
    result = cli(*argv, "--", "python", "load.py", cwd=tmp_path, env={"DL_SHARED_CACHE": "1"})
    assert result.code == 0, result.stdout + result.stderr
    env = load_spec(str(tmp_path / "load.yaml")).document["environment"]
    assert isinstance(env, dict)
    variables = env.get("env") or {}
    assert isinstance(variables, dict)
    assert "DL_SHARED_CACHE" not in variables
    (said,) = [line for line in result.stdout.splitlines() if line.startswith("nothing failed")]
    assert said == (
        "nothing failed: the command passed in 1 attempt, so the spec expects a pass and sets "
        "only the variables of your shell a pass needs: it may lack what the failure needs; "
        "for a failure that comes rarely, capture again with --repeat N, which keeps what a "
        "failure needs; amplifying this spec (edit its expect, then `reprospec amplify "
        "load.yaml`) may never fail"
    )
