"""`reprospec envs`: options that would be dropped without a word are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.cli import main


@pytest.mark.parametrize(
    ("words", "said"),
    [
        # nu45 F11: `list --older-than 1d` listed every environment, the option unread.
        (["list", "--older-than", "1d"], "--older-than: for `envs prune` only"),
        (["list", "--all", "--dry-run"], "--all, --dry-run: for `envs prune` only"),
        # ...and `prune --all --older-than 1d` removed every one, however new.
        (["prune", "--all", "--older-than", "1d"], "--all and --older-than: give one"),
    ],
)
def test_options_envs_would_drop_are_refused(
    words: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["envs", *words, "--out", str(tmp_path / "o")]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
