"""The root's program looked up on the child's PATH, as Popen would, and kept a moment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprospec.process import start


def program(folder: Path, name: str = "tool") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_first_executable_on_path_is_found(tmp_path: Path) -> None:
    program(tmp_path / "late")
    (tmp_path / "early").mkdir()
    (tmp_path / "early" / "tool").write_text("not executable")
    env = {"PATH": os.pathsep.join([str(tmp_path / "early"), str(tmp_path / "late")])}
    assert start._executable("tool", env, tmp_path) == str(tmp_path / "late" / "tool")
    assert start._executable("./tool", env, tmp_path) == "./tool"  # a slash: as given
    with pytest.raises(FileNotFoundError):
        start._executable("missing", env, tmp_path)


def test_a_lookup_is_kept_for_its_time_then_done_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    late = program(tmp_path / "late")
    env = {"PATH": os.pathsep.join([str(tmp_path / "early"), str(tmp_path / "late")])}
    assert start._executable("tool", env, tmp_path) == str(late)
    early = program(tmp_path / "early")
    # Within FOUND_TTL_S the kept answer stands (the stat of every folder is what it saves).
    assert start._executable("tool", env, tmp_path) == str(late)
    monkeypatch.setattr(start, "FOUND_TTL_S", 0.0)
    assert start._executable("tool", env, tmp_path) == str(early)
    early.unlink()
    late.unlink()
    with pytest.raises(FileNotFoundError):
        start._executable("tool", env, tmp_path)
