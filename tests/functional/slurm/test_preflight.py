"""slurm's preflight on the login node: the venv runner's environments built before submitting."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec.slurm.preflight import build_venvs
from tests.functional.runners.test_venv import DEMO, write_spec
from tests.support.cli import Cli
from tests.support.envs import make_wheel, uv_environment


def test_the_preflights_build_lines_go_to_the_options_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """lo35: build_venvs made its VenvRunner without the options' `say`, so the build's
    `reprospec: env ...` lines went to stderr whatever the caller asked, where a run's
    go to `RunOptions.say`."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, DEMO, "1.0", "VERSION_SEEN = '1.0'\n")
    spec = write_spec(tmp_path, "preflight-said", DEMO, ["1.0"], "reprospec_venvdemo")
    for name, value in uv_environment().items():
        monkeypatch.setenv(name, value)
    said: list[str] = []
    options = reprospec.RunOptions(runner="venv", find_links=wheels, say=said.append)
    firsts = reprospec.plan_run(spec, options).attempts.firsts()
    found = build_venvs(firsts, options, tmp_path / "envs", tmp_path)
    assert found.refused == ()
    assert any(line.startswith("env ") for line in said), said
    assert "reprospec: env" not in capfd.readouterr().err


def test_a_python_that_is_no_python_is_refused_before_submitting(cli: Cli, tmp_path: Path) -> None:
    # The check was os.path.exists: a file there that is no Python passed, and every
    # shard would have been infra-error with it. Now `run --python`'s own check.
    script = tmp_path / "notpy"
    script.write_text("#!/bin/sh\necho hello\n")
    script.chmod(0o755)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nmatrix:\n  n: [1, 2]\ncommand: python -c pass\n"
        "expect:\n  outcome: pass\n"
    )
    done = cli(
        "slurm",
        str(spec),
        "--shards",
        "2",
        "--out",
        str(tmp_path / "shared"),
        "--python",
        str(script),
    )
    assert done.code == 3, done.stderr
    assert done.stderr.startswith(
        f"reprospec: not submitted: not a Python 3 interpreter: {script} (no version printed) "
        "(--python): every shard would exit 3 with it."
    ), done.stderr
