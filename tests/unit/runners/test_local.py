"""The local runner refuses an interpreter that does not exist, before it starts anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprospec.environment.interpreter import unusable
from reprospec.errors import InfraError
from reprospec.process.childprotocol import CELL_VAR
from reprospec.runners.local import LocalRunner, outer_environ
from tests.support.local import make_plan


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def test_missing_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "python9"
    runner = LocalRunner(python=str(missing))
    with pytest.raises(InfraError, match=f"interpreter not found: {missing}"):
        runner.prepare([])
    ex = runner.run(make_plan(["true"]), tmp_path / "logs")
    assert ex.infra_error is not None
    assert ex.infra_error.startswith("interpreter not found")
    env = runner.capture_environment(make_plan(["true"]), tmp_path / "env")
    assert env["python"] is None
    assert "error" in env


def test_a_non_executable_interpreter_is_worded_as_every_question_asked_of_one(
    tmp_path: Path,
) -> None:
    # The local runner said `not an executable interpreter: PATH` where the package check
    # and the environment capture say `interpreter not executable: PATH`.
    script = tmp_path / "python9"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(InfraError) as raised:
        LocalRunner(python=str(script)).prepare([])
    assert str(raised.value) == f"interpreter not executable: {script}"
    assert str(raised.value) == unusable(str(script), found=True)


def test_the_engines_environment_is_read_again_once_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Decoded once while os.environ is unchanged; a change between attempts (a fixture's,
    # an API user's) reaches the next child, and the engine's own cell never does.
    monkeypatch.setenv("REPROSPEC_TEST_OUTER", "one")
    monkeypatch.setenv(CELL_VAR, "/engine/own/cell.json")
    first = outer_environ()
    assert first["REPROSPEC_TEST_OUTER"] == "one"
    assert CELL_VAR not in first
    first["REPROSPEC_TEST_OUTER"] = "changed by a caller"  # a copy: the next one is whole
    assert outer_environ()["REPROSPEC_TEST_OUTER"] == "one"
    monkeypatch.setenv("REPROSPEC_TEST_OUTER", "two")
    assert outer_environ()["REPROSPEC_TEST_OUTER"] == "two"
    monkeypatch.delenv("REPROSPEC_TEST_OUTER")
    assert "REPROSPEC_TEST_OUTER" not in outer_environ()
    assert outer_environ() == {k: v for k, v in os.environ.items() if k != CELL_VAR}
