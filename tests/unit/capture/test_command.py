"""capture's own wording: where the spec it wrote is said to be."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.capture.command import _shown


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
