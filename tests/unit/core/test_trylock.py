"""One rule of "is another reprospec using this?": core/trylock.py, for amplify's search
folder and the venv runner's environments alike (flock is per open file, so a second open
of the same file here is another holder)."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from reprospec.core.trylock import SharedHold, hold_shared, search_held, sweep_free, try_locked
from reprospec.errors import UsageError
from reprospec.runners.docker.cache import hold_image
from reprospec.runners.docker.image import BUILT_REPOSITORY
from reprospec.venvs.build import hold, in_use_lock, locked
from reprospec.venvs.cache import _held
from reprospec.venvs.staging import build_lock


def test_a_lock_file_no_one_holds_is_free_and_a_held_one_is_not(tmp_path: Path) -> None:
    lock = tmp_path / "made" / ".lock"
    with try_locked(lock) as free:
        assert free is True
        with try_locked(lock) as again:
            assert again is False
    # Removed by its holder as it let go; one a killed holder left behind is free (flock
    # dies with its holder), and taken over.
    assert not lock.exists()
    lock.write_text("4242\n")
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
    opened: list[int] = []
    closed: list[int] = []
    real_open, real_close = os.open, os.close

    def tracked(path: Path, flags: int, mode: int = 0o777) -> int:
        fd = real_open(path, flags, mode)
        opened.append(fd)
        return fd

    def untracked(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    def refused(*_: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(os, "open", tracked)
    monkeypatch.setattr(os, "close", untracked)
    monkeypatch.setattr(fcntl, "flock", refused)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert hold_image(f"{BUILT_REPOSITORY}:abc123") is None
    assert hold(tmp_path / "envs", "k") is None
    assert len(opened) == 2
    assert closed == opened


def test_lock_files_go_with_their_last_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file per environment and image ever used piled up, empty, in the environments'
    `.locks/` and `~/.cache/reprospec/docker-holds`: each goes as its last holder lets go."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    image = hold_image(f"{BUILT_REPOSITORY}:abc123")
    assert image is not None
    image.close()
    assert list((tmp_path / "cache" / "reprospec" / "docker-holds").iterdir()) == []
    root = tmp_path / "envs"
    first, second = hold(root, "k"), hold(root, "k")
    assert first is not None
    assert second is not None
    first.close()
    assert in_use_lock(root, "k").exists()  # the second holds it still
    assert _held(root, "k") is True
    second.close()
    assert not in_use_lock(root, "k").exists()
    with locked(build_lock(root, "k")):
        assert build_lock(root, "k").exists()
    folder = tmp_path / "isolate" / "spec-0123456789"
    with search_held(folder, "isolation x"):
        assert (folder / ".lock").read_text() == f"{os.getpid()}\n"
    assert sorted(p.name for p in folder.iterdir()) == []
    assert list((root / ".locks").iterdir()) == []


def test_a_waiter_on_a_lock_file_removed_under_it_locks_the_new_one(tmp_path: Path) -> None:
    """The classic race of removing lock files: a run waiting for a prune's lock got it on
    the file the prune unlinked as it let go, and a second prune, finding no file there,
    made a new one and took it alone: both would have held "the" lock. The waiter locks
    the file at the path again."""
    lock = tmp_path / "k.use"
    got: list[SharedHold | None] = []
    with try_locked(lock) as alone:
        assert alone is True
        waiter = threading.Thread(target=lambda: got.append(hold_shared(lock)))
        waiter.start()
        # Blocked on the file the prune is about to unlink, not merely not started yet:
        # its wait is a `->` entry of /proc/locks on that file's inode.
        assert _blocked_on(lock, waiter)
    waiter.join(10)
    (held,) = got
    assert held is not None
    with held, try_locked(lock) as again:
        assert again is False  # the new file, the one the waiter holds
    assert not lock.exists()


def _blocked_on(lock: Path, waiter: threading.Thread) -> bool:
    """Whether `waiter` comes to wait on `lock`'s flock (within 10 s, while alive)."""
    inode = f":{lock.stat().st_ino} "
    deadline = time.monotonic() + 10
    while waiter.is_alive() and time.monotonic() < deadline:
        locks = Path("/proc/locks").read_text(encoding="ascii").splitlines()
        if any("->" in line and inode in line for line in locks):
            return True
        time.sleep(0.005)
    return False


def test_a_sweep_removes_the_lock_files_no_one_holds(tmp_path: Path) -> None:
    """An earlier version left one lock file per environment and image ever used; a prune
    sweeps those no one holds, and leaves a held one."""
    locks = tmp_path / ".locks"
    locks.mkdir()
    for name in ("old.use", "old.lock", "held.use"):
        (locks / name).write_text("")
    held = hold_shared(locks / "held.use")
    assert held is not None
    with held:
        sweep_free(locks)
        assert sorted(p.name for p in locks.iterdir()) == ["held.use"]
    assert list(locks.iterdir()) == []
    sweep_free(tmp_path / "missing")  # nothing there: nothing to do
