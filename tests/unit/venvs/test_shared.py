"""$REPROSPEC_ENVS read once for every verb: a file there is the user's mistake, named."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.errors import UsageError
from reprospec.venvs import ENVS_VARIABLE, shared_envs


def test_unset_or_empty_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVS_VARIABLE, raising=False)
    assert shared_envs() is None
    monkeypatch.setenv(ENVS_VARIABLE, "")
    assert shared_envs() is None


def test_a_folder_to_be_is_given_back_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENVS_VARIABLE, "not-yet/envs")
    assert shared_envs() == tmp_path / "not-yet" / "envs"


def test_a_file_is_refused_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A venv run said `Not a directory: FILE/.locks`; `envs list` "no environments in FILE".
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv(ENVS_VARIABLE, str(afile))
    with pytest.raises(
        UsageError, match=rf"^REPROSPEC_ENVS={afile}: not a folder \(a file is there\)"
    ):
        shared_envs()
    monkeypatch.setenv(ENVS_VARIABLE, str(afile / "sub"))
    with pytest.raises(UsageError, match=rf"not a folder \({afile} on its path is a file\)"):
        shared_envs()
