"""A $REPROSPEC_ENVS that names a file: every verb that reads it names it, exit 2."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli

SPEC = 'reprospec: 1\nname: tiny\ncommand: python -c "raise ValueError(1)"\n'


def test_run_and_envs_list_name_the_variable_that_names_a_file(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    env = {"REPROSPEC_ENVS": str(afile)}
    said = f"REPROSPEC_ENVS={afile}: not a folder (a file is there)"
    # run said `Not a directory: FILE/.locks`; envs list, exit 0, "no environments in FILE".
    ran = run_cli(tmp_path / "out", "run", str(spec), "--runner", "venv", env=env)
    assert ran.code == 2, ran.stderr
    assert said in ran.stderr
    assert "Traceback" not in ran.stderr
    listed = run_cli(tmp_path / "out", "envs", "list", "--out", str(tmp_path / "out"), env=env)
    assert listed.code == 2, listed.stdout + listed.stderr
    assert said in listed.stderr
