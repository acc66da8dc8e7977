"""One way to replace a file that others may be reading: the run folder's results.json and
report, slurm.json, and the searches' state and reports (isolate, amplify, minimize), which
`status`, a second search or a crashed one's `--resume` may read at any moment."""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable
from pathlib import Path


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (or its pieces) so readers see the old file or the new one, never half.

    The temporary file's name is this writer's own (pid and a random part): two searches of
    one spec write the same state file, and a shared `.tmp` let one rename the other's half.
    The file is made as the attempts' logs are (0644 under the umask): mkstemp's 0600 left
    results.json, report.md and spec.yaml unreadable to another user of a shared `--out`,
    whose `history` listed the run while `report` and `compare` said "Permission denied".
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.writelines((text,) if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def unwritable(folder: Path) -> str:
    """Why no file can be made in `folder` (or, not made yet, in the nearest folder above it
    that is): "Read-only file system" (a read-only mount, which stops root too),
    "Permission denied"; "" where one can. Asked before a search replays or runs anything,
    so a folder its answer must go to is refused up front, not after the work."""
    here = folder
    while not here.is_dir():
        if here.exists() or here == here.parent:
            return ""  # a file on the path: making the folder says so (ENOTDIR)
        here = here.parent
    try:
        if os.statvfs(here).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    except OSError:
        return ""  # not a folder to ask: the write itself says what is wrong
    return "" if os.access(here, os.W_OK | os.X_OK) else os.strerror(errno.EACCES)
