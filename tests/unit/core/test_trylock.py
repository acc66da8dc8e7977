"""One rule of "is another reprospec using this?": core/trylock.py, for amplify's search
folder and the venv runner's environments alike (flock is per open file, so a second open
of the same file here is another holder)."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from reprospec.amplify.state import held
from reprospec.core.trylock import try_locked
from reprospec.errors import UsageError
from reprospec.venvs.build import in_use_lock
from reprospec.venvs.cache import _held


def test_a_lock_file_no_one_holds_is_free_and_a_held_one_is_not(tmp_path: Path) -> None:
    lock = tmp_path / "made" / ".lock"
    with try_locked(lock) as free:
        assert free is True
        with try_locked(lock) as again:
            assert again is False
    # Left behind by whoever held it, and no longer held: free (flock dies with its holder).
    assert lock.exists()
    with try_locked(lock) as free:
        assert free is True


def test_a_lock_that_cannot_be_opened_is_cannot_tell_for_every_caller(tmp_path: Path) -> None:
    """amplify's `held` stopped (exit 2, `Is a directory: .../.lock`) where `envs` read the
    same lock as "cannot tell": now one rule, None, and the search runs unguarded."""
    folder = tmp_path / "amplify" / "spec-0123456789"
    (folder / ".lock").mkdir(parents=True)
    with try_locked(folder / ".lock") as free:
        assert free is None
    with held(folder, "amplification x"):
        pass
    in_use_lock(tmp_path / "envs", "k").mkdir(parents=True)
    assert _held(tmp_path / "envs", "k") is False


def test_a_held_search_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "amplify" / "spec-0123456789"
    folder.mkdir(parents=True)
    with (folder / ".lock").open("a") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with (
            pytest.raises(UsageError, match="is running now in another reprospec"),
            held(folder, "amplification x"),
        ):
            pass
