"""venvs/resolve.py's record of the wheels doctor built (`Built`): files only, no process."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.venvs import build
from reprospec.venvs.build import Interpreter
from reprospec.venvs.index import IndexConfig
from reprospec.venvs.resolve import Built

PYTHON = Interpreter("/py/3.11/bin/python3.11", "3.11.7")


def _package(spec_dir: Path, files: int) -> None:
    (spec_dir / "mypkg").mkdir(parents=True)
    (spec_dir / "mypkg" / "pyproject.toml").write_text("[project]\nname = 'mypkg'\n")
    for n in range(files):
        (spec_dir / "mypkg" / f"m{n}.py").write_text(f"N = {n}\n")


def test_a_folder_keyed_whole_is_recorded(tmp_path: Path) -> None:
    _package(tmp_path / "spec", 2)
    kept = Built(tmp_path / "envs" / ".built", PYTHON)
    assert not kept.has("./mypkg", IndexConfig(), tmp_path / "spec")
    assert kept.add("./mypkg", IndexConfig(), tmp_path / "spec", 1.0)
    assert kept.has("./mypkg", IndexConfig(), tmp_path / "spec")


def test_a_folder_keyed_in_part_is_never_said_built_as_it_is_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past SOURCE_FILES_CAP files the key holds the first ones only: an edit past them was
    # "built by an earlier doctor as it is now ...: not built again", never built.
    monkeypatch.setattr(build, "SOURCE_FILES_CAP", 2)
    _package(tmp_path / "spec", 3)
    kept = Built(tmp_path / "envs" / ".built", PYTHON)
    # (said not recorded: doctor says why it builds it again, where it said nothing)
    assert not kept.add("./mypkg", IndexConfig(), tmp_path / "spec", 1.0)
    assert not kept.has("./mypkg", IndexConfig(), tmp_path / "spec")
    assert not (tmp_path / "envs" / ".built").exists()  # (nothing recorded)
