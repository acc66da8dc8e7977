"""The environments cache: list what is kept (size, last use, which specs used it), prune it.

Each environment is removed under its build lock (a run building it is never cut short),
and only while no run holds it (`build.hold`: a run using it is never cut short either).
What killed builds left in `.tmp` is `staging.Unfinished`: listed and swept there, by
`envs prune` as by the next build.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TypeVar

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.trylock import sweep_free, try_locked
from reprospec.core.units import format_size, utc_stamp
from reprospec.venvs.build import (
    BUILD_LOG,
    BUILT,
    FAILED,
    KEY_LENGTH,
    META,
    USED_BY,
    cutoff_of,
    in_use_lock,
    link_target,
    locked,
    read_meta_why,
    uploaded_before,
)
from reprospec.venvs.staging import LOCKS, TMP, Leftover, build_lock, folder_size

# An environment's name (EnvRequest.key): a link so named whose target is gone, or cannot be
# read, is one made for an environment, where a link of another name may be anything the
# user keeps there (listed only where it is a whole environment).
_KEY = re.compile(rf"[0-9a-f]{{{KEY_LENGTH}}}")
# Why such a link cannot be read (`EnvInfo.unreadable`; `EnvInfo.target_gone` tells it).
_TARGET_GONE = "its target is gone"


@frozen
class EnvInfo:
    """One cached environment as `envs list` shows it."""

    key: str
    path: Path
    python: str
    packages: tuple[str, ...]
    size_bytes: int
    created: str
    last_used: float  # epoch seconds
    used_by: tuple[str, ...]
    in_use: bool = False  # a run holds it now (build.hold): prune leaves it
    # Of each path entry (`./mypkg`), its absolute path and files' digest: what tells two
    # environments of the same `packages` apart (EnvRequest.sources).
    sources: tuple[str, ...] = ()
    # The upload cutoff it was resolved under (EnvRequest.cutoff, `cutoff_of`: the request's
    # exclude_newer, else a UV_EXCLUDE_NEWER of uv's settings): `bisect --by-date` builds
    # one environment of the same unpinned `packages` per day, which read alike without it.
    # Its JSON key is `exclude_newer` (docs/cli.md's `envs`).
    cutoff: str = ""
    # Why its description (reprospec-env.json) cannot be read, where it cannot ("": it can):
    # such a folder was left out of `envs list` and `envs prune` without a word, "no
    # environments" said beside a folder of megabytes that nothing would ever remove. Its
    # python and packages are unknown, but where its description is read and its bin/python
    # alone is gone (the interpreter uninstalled): they say what to reinstall. Its size,
    # uses and lock are read as any other's.
    unreadable: str = ""
    # Where a link in the environments folder points ("": no link), one hop, absolute
    # (`build.link_target`: the link's own target, `../shared/KEY`, is relative to the
    # environments folder, not to where the user reads it; the folders above it are not
    # resolved, as the user names them): prune removes the link alone, never its target, and
    # frees nothing (its size is the target's). Its JSON key is `linked_to`.
    linked_to: str = ""
    # Its path's inode (`lstat`: the link's own, of a link) as listed: prune removes it only
    # while it is still this one, not one another prune removed and a run built again since.
    inode: int = field(default=0, compare=False, repr=False)

    def to_dict(self) -> JsonObject:
        return {
            "key": self.key,
            "path": str(self.path),
            "python": self.python,
            "packages": list(self.packages),
            "size_bytes": self.size_bytes,
            "created": self.created,
            "last_used": utc_stamp(self.last_used),
            "used_by": list(self.used_by),
            "in_use": self.in_use,
            "sources": list(self.sources),
            "exclude_newer": self.cutoff or None,
            "unreadable": self.unreadable or None,
            "linked_to": self.linked_to or None,
        }

    @property
    def target_gone(self) -> bool:
        """A link whose target is gone: prune's message says nothing of its target kept,
        where it says so of every other link's (one that cannot be read too)."""
        return self.unreadable == _TARGET_GONE

    def holds(self) -> str:
        """Its packages as a listing says them, with the upload cutoff it was resolved under:
        `packaging (uploaded before 2022-12-06T23:59:59Z)`."""
        return (" ".join(self.packages) or "(none)") + uploaded_before(self.cutoff)

    def listed(self) -> str:
        """What it holds as `envs list` and `envs prune` say it: `holds`, then each path
        entry's absolute path and files' digest (`./mypkg (./mypkg: /a/mypkg 0123...)`),
        without which two `./mypkg` environments read alike. One whose description cannot be
        read says so instead, and where it is (`unreadable: its reprospec-env.json is not
        JSON (...), /envs/KEY`): what it holds is unknown, and the folder is the user's to see;
        a link's, with its target (`/envs/KEY (a link to /shared/KEY)`)."""
        if self.unreadable:
            known = f"{self.holds()}, " if self.packages else ""
            link = f" (a link to {self.linked_to})" if self.linked_to else ""
            return f"{known}unreadable: {self.unreadable}, {self.path}{link}"
        return self.holds() + "".join(f" ({source})" for source in self.sources)


def list_envs(root: Path) -> list[EnvInfo]:
    """Every environment under `root`, most recently used first: each complete one, and each
    folder of one whose description cannot be read (`EnvInfo.unreadable`, `read_meta_why`:
    the python and packages of one whose description is there but whose bin/python is gone).
    A link is listed as its target is (`EnvInfo.linked_to`); one named as an environment (a
    key) also where its target cannot be read or is gone: prune removes the link alone. They were
    left out, to be removed only by the next run of their key, which nothing said."""
    out: list[EnvInfo] = []
    if not root.is_dir():
        return out
    for folder in root.iterdir():
        if folder.name.startswith("."):
            continue
        if folder.is_dir():
            meta, unreadable = read_meta_why(folder)
        elif folder.is_symlink() and not folder.exists() and _KEY.fullmatch(folder.name):
            meta, unreadable = None, _TARGET_GONE
        else:
            continue
        if meta is None and not unreadable:
            continue  # no environment's folder: not ours to list, nor to remove
        if unreadable and folder.is_symlink() and not _KEY.fullmatch(folder.name):
            # A link of another name (`my-project-venv -> ~/proj/.venv`, a venv of the
            # user's with no reprospec-env.json) is not one made for an environment: never
            # listed as one that cannot be read, never pruned.
            continue
        request = (meta or {}).get("request")
        request = request if isinstance(request, dict) else {}
        users = _users(folder)
        last_used = _last_used(folder, users)
        python = request.get("python")
        wanted = request.get("packages")
        sources = request.get("sources")
        out.append(
            EnvInfo(
                key=folder.name,
                path=folder,
                python=str(python.get("version") or "") if isinstance(python, dict) else "",
                packages=tuple(str(p) for p in wanted) if isinstance(wanted, list) else (),
                size_bytes=folder_size(folder),
                created=str((meta or {}).get("created") or ""),
                last_used=last_used,
                used_by=tuple(name for _, name in sorted(users, reverse=True) if name != "-"),
                in_use=_held(root, folder.name),
                sources=tuple(
                    f"{pair[0]}: {pair[1]}"
                    for pair in (sources if isinstance(sources, list) else ())
                    if isinstance(pair, list) and len(pair) == 2
                ),
                cutoff=cutoff_of(request) or "",
                unreadable=unreadable,
                linked_to=link_target(folder) if folder.is_symlink() else "",
                inode=_inode(folder),
            )
        )
    return sorted(out, key=lambda e: e.last_used, reverse=True)


def _users(folder: Path) -> list[tuple[float, str]]:
    """(time, name) of each mark a run left of its use of `folder`'s environment."""
    users: list[tuple[float, str]] = []
    with contextlib.suppress(OSError):
        for marker in (folder / USED_BY).iterdir():
            users.append((marker.stat().st_mtime, marker.name))
    return users


def _last_used(folder: Path, users: Sequence[tuple[float, str]] | None = None) -> float:
    """When `folder`'s environment was last used: its newest user's mark (`users`, else read
    now), else when it was last changed (`_changed`)."""
    users = _users(folder) if users is None else users
    return max((t for t, _ in users), default=_changed(folder))


def _inode(path: Path) -> int:
    """`path`'s own inode (a link's, not its target's); 0 where it cannot be read."""
    with contextlib.suppress(OSError):
        return path.lstat().st_ino
    return 0


def _changed(folder: Path) -> float:
    """When `folder`'s environment was last changed: its description's time, else (one that
    cannot be read, or is gone) the folder's own, else (a link whose target is gone) the
    link's; 0.0 where none can be read."""
    for path in (folder / META, folder):
        with contextlib.suppress(OSError):
            return path.stat().st_mtime
    with contextlib.suppress(OSError):
        return folder.lstat().st_mtime
    return 0.0


def prune_envs(
    root: Path,
    *,
    older_than_s: float | None = None,
    keys: Sequence[str] = (),
    dry_run: bool = False,
    now: float | None = None,
    listed: Sequence[EnvInfo] | None = None,
) -> list[EnvInfo]:
    """Remove environments unused for `older_than_s` (None: all), or only `keys`; returns them.

    Each is removed under its build lock and only while no run holds it (`in_use`: left
    out, neither removed nor returned). What killed builds left in `.tmp` is the caller's to
    sweep (`staging.sweep_unfinished`), which says what it removed where this said nothing.
    `listed`: `list_envs(root)` where the caller has it already (each walks every file of
    every environment for its size).
    """
    now = time.time() if now is None else now
    removed: list[EnvInfo] = []
    for env in list_envs(root) if listed is None else listed:
        if not _due(env, older_than_s, keys, now):
            continue
        if env.in_use:
            continue
        if env.linked_to:
            # A link to an environment elsewhere: the rename below moved the link alone into
            # .tmp, where rmtree (which refuses a link) and every later sweep left it, and its
            # target's size was said freed. The link goes; the target is never touched.
            env = replace(env, size_bytes=0)
        if not dry_run:
            with locked(build_lock(root, env.key)), _alone(root, env.key) as alone:
                if not alone:
                    continue  # a run took it up since it was listed
                if not _as_listed(env, older_than_s, keys, now):
                    continue  # changed since it was listed: a later prune sees it as it is
                if env.linked_to:
                    env.path.unlink()
                else:
                    trash = root / TMP / f"{env.key}-pruned-{os.getpid()}"
                    trash.parent.mkdir(parents=True, exist_ok=True)
                    env.path.rename(trash)  # gone at once for readers; deleted after
                    shutil.rmtree(trash, ignore_errors=True)
        removed.append(env)
    if not dry_run:
        # The lock files no run holds: each goes with its last holder now, but an earlier
        # version left one per environment ever built, and a killed run leaves its own.
        sweep_free(root / LOCKS)
    return removed


def _as_listed(env: EnvInfo, older_than_s: float | None, keys: Sequence[str], now: float) -> bool:
    """Whether `env`'s path is still what it was listed as, and still due, read under its
    build lock: `listed` is read before (each rmtree of an earlier one takes seconds), and
    a run may have built the environment over the link since (`build._build`), where
    unlinking the folder raised IsADirectoryError, or another prune removed it, where the
    rename raised FileNotFoundError, a traceback each. The same kind of path was not enough:
    one another prune removed and a run built again (another inode), or one a run used and
    let go meanwhile (a newer use, no longer `older_than_s` old), was removed on the
    listing's stale word. No size walk: its marks and inode alone are read again."""
    if env.linked_to:
        if not env.path.is_symlink():
            return False
    elif not env.path.is_dir() or env.path.is_symlink():
        return False
    if env.inode and _inode(env.path) != env.inode:
        return False
    used = _last_used(env.path)
    return used <= env.last_used or _due(replace(env, last_used=used), older_than_s, keys, now)


def kept_in_use(
    listed: Sequence[EnvInfo],
    *,
    older_than_s: float | None = None,
    keys: Sequence[str] = (),
    now: float | None = None,
) -> list[EnvInfo]:
    """Of `listed` (list_envs'), those `prune_envs` with these options would remove but
    leaves, a run holding them: not every one in use, whose `kept` read as if this prune
    would have removed it (a run's environment, used minutes ago, beside a prune of
    30-day-old ones)."""
    now = time.time() if now is None else now
    return [e for e in listed if e.in_use and _due(e, older_than_s, keys, now)]


def _due(env: EnvInfo, older_than_s: float | None, keys: Sequence[str], now: float) -> bool:
    """Whether a prune with these options removes `env` where no run holds it."""
    if keys and env.key not in keys:
        return False
    return older_than_s is None or now - env.last_used >= older_than_s


@contextlib.contextmanager
def _alone(root: Path, key: str) -> Iterator[bool | None]:
    """Whether no run holds environment `key` (build.hold), kept so while inside: a run that
    comes to use it meanwhile waits for the removal, then builds it again; None where its
    lock cannot be opened to tell (core/trylock.py)."""
    with try_locked(in_use_lock(root, key)) as alone:
        yield alone


def _held(root: Path, key: str) -> bool:
    """Whether a run holds environment `key` now (build.hold); False where its lock cannot
    be taken to tell (a folder this user cannot write, another's, shared), as `envs list`
    read such a folder before runs held their environments, where it stopped on the
    OSError."""
    if not in_use_lock(root, key).exists():
        return False
    with _alone(root, key) as alone:
        return alone is False


@frozen
class FailedLog(Leftover):
    """A failed build's whole output kept under the environments folder (`FAILED`,
    build.failed_build_log: `slurm`'s preflight on the login node writes one per environment
    whose build failed; `modified`: when it was written). Nothing removed them but a later
    build of that environment that succeeds: `envs prune` left them to pile up, and `envs
    list` never said them."""


@frozen
class BuildRecord(Leftover):
    """A doctor's record of a wheel it built, kept under the environments folder (`BUILT`,
    resolve.Built: one per entry and interpreter, `./mypkg` one more at each edit of its
    folder; `modified`: when it was built), by which the next doctor builds it no more.
    They piled up unseen as FailedLog's did, and `envs prune --all` left doctor skipping
    the builds they name."""


_Kept = TypeVar("_Kept", FailedLog, BuildRecord)


def list_failed_logs(root: Path) -> list[FailedLog]:
    """Each failed build's log kept under `root` (`FailedLog`), newest first."""
    return _kept_files(root / FAILED, f".{BUILD_LOG}", FailedLog)


def list_build_records(root: Path) -> list[BuildRecord]:
    """Each doctor's record of a wheel it built kept under `root` (`BuildRecord`), newest
    first."""
    return _kept_files(root / BUILT, ".json", BuildRecord)


def _kept_files(folder: Path, suffix: str, kind: type[_Kept]) -> list[_Kept]:
    """Each file of `folder` named KEY`suffix` (a plain file: a link is no one's), as `kind`,
    newest first; none where `folder` cannot be read."""
    out: list[_Kept] = []
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            if not path.name.endswith(suffix) or path.is_symlink() or not path.is_file():
                continue
            with contextlib.suppress(OSError):
                stat = path.stat()
                key = path.name.removesuffix(suffix)
                out.append(kind(key, path, stat.st_size, stat.st_mtime))
    return sorted(out, key=lambda kept: kept.modified, reverse=True)


def prune_failed_logs(
    root: Path,
    *,
    older_than_s: float | None = None,
    dry_run: bool = False,
    now: float | None = None,
) -> list[FailedLog]:
    """Remove the failed builds' logs written `older_than_s` ago or more (None: all), the
    rule `prune_envs` removes environments by (a log's age is its build's); returns them."""
    return _pruned(list_failed_logs(root), older_than_s, dry_run, now)


def prune_build_records(
    root: Path,
    *,
    older_than_s: float | None = None,
    dry_run: bool = False,
    now: float | None = None,
) -> list[BuildRecord]:
    """Remove doctor's records of the wheels it built written `older_than_s` ago or more
    (None: all), by `prune_failed_logs`' rule; returns them. A wheel whose record is gone
    is built by the next doctor again, as uv's cache may have lost it too."""
    return _pruned(list_build_records(root), older_than_s, dry_run, now)


def _pruned(
    kept: list[_Kept], older_than_s: float | None, dry_run: bool, now: float | None
) -> list[_Kept]:
    """Of `kept`, those written `older_than_s` ago or more (None: all), removed unless
    `dry_run`: the ones removed (or that would be)."""
    now = time.time() if now is None else now
    removed: list[_Kept] = []
    for each in kept:
        if older_than_s is not None and now - each.modified < older_than_s:
            continue
        if not dry_run:
            try:
                each.path.unlink()
            except FileNotFoundError:
                continue  # (another prune, or its owner: a build of it that succeeded)
        removed.append(each)
    return removed


def summarize(envs: Sequence[EnvInfo], now: float | None = None) -> list[dict[str, str]]:
    """Rows for a table: key, python, packages, size, last used (relative), used by."""
    now = time.time() if now is None else now
    rows = []
    for env in envs:
        rows.append(
            {
                "key": env.key,
                "python": env.python or "?",
                "packages": env.listed(),
                "size": human_size(env.size_bytes),
                "last_used": ago(now - env.last_used),
                "used_by": (", ".join(env.used_by) or "-")
                + (" (in use now)" if env.in_use else ""),
            }
        )
    return rows


def human_size(size: float) -> str:
    """A size as `envs` shows it (1.4 GB, 28.4 KB), in the unit that fits: the totals were
    MB to one decimal, and a list of small environments read "0.0 MB". The docker runner's
    images are shown alike. A size that rounds to 1024.0 of a unit is said in the next
    (1.0 MB, not 1024.0 KB): core/units.format_size, with these labels."""
    return format_size(size, ("B", "KB", "MB", "GB"))


def ago(seconds: float) -> str:
    """How long ago, in one unit (3d ago, just now)."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return "just now"
