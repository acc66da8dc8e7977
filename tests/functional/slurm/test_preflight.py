"""slurm's preflight on the login node: the venv runner's environments built before submitting."""

from __future__ import annotations

from pathlib import Path

import pytest

import reprospec
from reprospec.slurm.preflight import build_venvs
from tests.functional.runners.test_venv import DEMO, write_spec
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
