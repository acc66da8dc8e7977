"""`--python` names no Python: every verb that takes it says so as `run` does, exit 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli

SPEC = 'reprospec: 1\nname: tiny\ncommand: python -c "print(1)"\n'


@pytest.mark.parametrize("verb", ["run", "env", "doctor", "materialize"])
def test_a_script_that_is_no_python_is_said_to_be_none(tmp_path: Path, verb: str) -> None:
    # env, doctor and materialize asked it for its environment: `printed no JSON:
    # Expecting value: line 1 column 1 (char 0)`.
    fake = tmp_path / "fakepy"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    args = {
        "run": ["run", str(spec)],
        "env": ["env"],
        "doctor": ["doctor"],
        "materialize": ["materialize", str(spec), "-o", str(tmp_path / "bundle")],
    }[verb]
    done = run_cli(tmp_path / "out", *args, "--python", str(fake))
    assert done.code == 3, done.stdout + done.stderr
    assert f"not a Python 3 interpreter: {fake} (no version printed)" in done.stderr
    assert not (tmp_path / "bundle").exists()
