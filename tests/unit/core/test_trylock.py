"""One rule of "is another reprospec using this?": core/trylock.py, for amplify's search
folder and the venv runner's environments alike (flock is per open file, so a second open
of the same file here is another holder)."""

from __future__ import annotations

import errno
import fcntl
from pathlib import Path
from typing import IO

import pytest

from reprospec.core.trylock import hold_shared, search_held, try_locked
from reprospec.errors import UsageError
from reprospec.runners.docker.cache import hold_image
from reprospec.runners.docker.image import BUILT_REPOSITORY
from reprospec.venvs.build import hold, in_use_lock
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
    with search_held(folder, "amplification x"):
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
            search_held(folder, "amplification x"),
        ):
            pass


def test_a_shared_hold_blocks_a_prune_and_is_none_where_it_cannot_be_made(tmp_path: Path) -> None:
    handle = hold_shared(tmp_path / "made" / "k.use")
    assert handle is not None
    with handle, try_locked(tmp_path / "made" / "k.use") as alone:
        assert alone is False
    (tmp_path / "dir.use").mkdir()
    assert hold_shared(tmp_path / "dir.use") is None


def test_a_hold_flock_refuses_is_none_and_leaves_no_file_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The venv runner's `hold` stopped on a file system without flock (ENOLCK), and the
    docker runner's `hold_image` returned None with its file left open: one rule now,
    None and closed, for both."""
    opened: list[IO[str]] = []
    real_open = Path.open

    def tracked(self: Path, *args: object, **kwargs: object) -> IO[str]:
        handle = real_open(self, *args, **kwargs)  # type: ignore[call-overload]
        opened.append(handle)
        return handle  # type: ignore[no-any-return]

    def refused(*_: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(Path, "open", tracked)
    monkeypatch.setattr(fcntl, "flock", refused)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert hold_image(f"{BUILT_REPOSITORY}:abc123") is None
    assert hold(tmp_path / "envs", "k") is None
    assert len(opened) == 2
    assert all(handle.closed for handle in opened)
