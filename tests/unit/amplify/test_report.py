"""The amplified spec's document: its folders made absolute, as written."""

from __future__ import annotations

from pathlib import Path

from reprospec.amplify.report import amplified_document
from reprospec.core.jsontypes import JsonObject


def test_the_amplified_workdir_is_absolute_without_dot_dots(tmp_path: Path) -> None:
    # `/work/repo/../incidents/race` ran, but read as a path nobody typed.
    base = tmp_path / "repo"
    document: JsonObject = {"reprospec": 1, "environment": {"workdir": "../incidents/race"}}
    out = amplified_document(document, (("switch_interval", 1e-06),), base)
    environment = out["environment"]
    assert isinstance(environment, dict)
    assert environment["workdir"] == str(tmp_path / "incidents" / "race")
    assert environment["perturb"] == {"switch_interval": 1e-06}
