"""The staging folder of builds, `<root>/.tmp`, and what builds that never ended left there.

Each build fills a folder `.tmp/KEY-*` under its environment's build lock (`build_lock`),
which the uv it runs inherits: while any process of the build lives, the lock is held.
A folder whose lock is free is a dead build's (its engine SIGKILLed, the machine gone down,
a second Ctrl-C as the first removed it): nothing uses it, and `sweep_unfinished` removes
it, as the next build begins and as `envs prune` runs; `envs list` names each (116 MB
left, named by no listing and removed by `prune` as "0 environments, 0.0 MB").
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.trylock import try_locked
from reprospec.core.units import utc_stamp

TMP = ".tmp"
LOCKS = ".locks"


def build_lock(root: Path, key: str) -> Path:
    """The file a run building environment `key` holds an exclusive lock on, it and the uv
    it runs (`locked`): a folder `TMP/KEY-*` whose lock is free is a dead build's."""
    return root / LOCKS / f"{key}.lock"


def folder_size(folder: Path) -> int:
    """The bytes of every file under `folder` (links not followed)."""
    total = 0
    for base, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                # os.walk's strs: a Path per file made this walk 1.8x slower (a 25k-file venv).
                stat = os.lstat(os.path.join(base, name))  # noqa: PTH118
                total += stat.st_size
    return total


@frozen
class Leftover:
    """What the environments folder holds that is no environment, as `envs list` says it:
    an unfinished build's folder (`Unfinished`), a failed build's log (cache.FailedLog), a
    doctor's record of a wheel it built (cache.BuildRecord)."""

    key: str
    path: Path
    size_bytes: int
    modified: float  # epoch seconds: its last change

    def to_dict(self) -> JsonObject:
        return {
            "key": self.key,
            "path": str(self.path),
            "size_bytes": self.size_bytes,
            "modified": utc_stamp(self.modified),
        }


@frozen
class Unfinished(Leftover):
    """A folder under TMP that is no environment: a build in progress (`building`: its build
    lock is held, by a run or by the uv a killed run left), else a dead one's, a build whose
    engine was killed (SIGKILL, the machine's end) or a prune's removal cut short, which
    `sweep_unfinished` removes."""

    building: bool

    def to_dict(self) -> JsonObject:
        return {**super().to_dict(), "building": self.building}


@contextlib.contextmanager
def _if_dead(root: Path, key: str) -> Iterator[bool]:
    """Whether no process builds environment `key` now (its build lock is free: a killed
    engine's lock went with it, and with its uv, which held it too), kept so while inside:
    a run that comes to build it meanwhile waits a moment (and says it waits)."""
    with try_locked(build_lock(root, key)) as free:
        yield free is True


def _unfinished_folders(root: Path) -> list[Path]:
    try:
        return sorted(p for p in (root / TMP).iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _unfinished(folder: Path, building: bool) -> Unfinished:
    try:
        modified = folder.stat().st_mtime
    except OSError:
        modified = 0.0
    key = folder.name.split("-", 1)[0]
    return Unfinished(key, folder, folder_size(folder), modified, building)


def list_unfinished(root: Path) -> list[Unfinished]:
    """Every folder under `root`'s TMP, each said `building` or not (a dead build's)."""
    found = []
    for folder in _unfinished_folders(root):
        with _if_dead(root, folder.name.split("-", 1)[0]) as dead:
            found.append(_unfinished(folder, building=not dead))
    return found


def sweep_unfinished(
    root: Path, *, own: str | None = None, dry_run: bool = False
) -> list[Unfinished]:
    """Remove what dead builds left under TMP (`Unfinished`), and return it (`dry_run`: only
    say so). A folder is removed only while its key's build lock is ours: never one a live
    run builds, nor one a killed run's uv still fills (it holds that lock as long as it
    lives; `_build`). `own`: the key whose build lock the caller holds, about to build it,
    so that every folder of that key is a dead one's (its own is not made yet)."""
    removed: list[Unfinished] = []
    for folder in _unfinished_folders(root):
        key = folder.name.split("-", 1)[0]
        guard = contextlib.nullcontext(True) if key == own else _if_dead(root, key)
        with guard as dead:
            if not dead:
                continue
            found = _unfinished(folder, building=False)
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
                if folder.exists():
                    continue  # not ours to remove (another user's): not said removed
            removed.append(found)
    return removed
