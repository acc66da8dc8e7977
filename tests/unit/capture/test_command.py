"""capture's own wording: where the spec it wrote is said to be."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprospec.capture.command import _shown, chosen_interpreter


def test_the_spec_written_is_shown_as_typed_here_unless_far_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "a" / "b" / "c" / "d"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert _shown(here / "spec.yaml") == "spec.yaml"
    assert _shown(tmp_path / "a" / "b" / "x.yaml") == "../../x.yaml"
    # `-o /srv/x.yaml` read `../../../../srv/x.yaml`: past two folders up it is absolute.
    assert _shown(tmp_path / "x.yaml") == str(tmp_path / "x.yaml")


def test_an_interpreter_beside_the_engines_own_is_another_one(tmp_path: Path) -> None:
    # Same folder was taken for the engine's own: /usr/bin/python3.9 beside an engine of
    # /usr/bin/python3.11 was rewritten `python` and ran the engine's (review).
    ours = chosen_interpreter([sys.executable, "t.py"], None, tmp_path)
    assert ours == (("python", "t.py"), None)
    other = Path(sys.executable).parent / "python3.99"
    command, python = chosen_interpreter([str(other), "t.py"], None, tmp_path)
    assert (command, python) == (("python", "t.py"), str(other))
