"""One way to replace a file that others may be reading: the run folder's results.json and
report, slurm.json, and the searches' state and reports (isolate, amplify, minimize), which
`status`, a second search or a crashed one's `--resume` may read at any moment; and the one
probe of whether a path can be written at all (`write_probe`), asked before anything runs."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path


def write_atomic(path: Path, text: str | Iterable[str], *, durable: bool = True) -> None:
    """Write `text` (or its pieces) so readers see the old file or the new one, never half.

    `durable`: fsynced before it replaces the old one, so an operating-system crash or a
    power loss leaves the old file or the new, never an empty one. Not for a search's probe
    runs' folders (pipeline/stages.py): a killed engine loses nothing unsynced (the system
    still holds what it wrote), only such a crash could, which may lose the store's last
    commits too (store/db.py); their three fsyncs were about 12 ms of each probe's wall.

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
            if durable:
                os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save_all(
    folder: Path,
    files: Iterable[tuple[str, Callable[[], str]]],
    failed: Sequence[tuple[str, str]] = (),
) -> str:
    """Write each of a search's answer files into `folder` (`write_atomic`), each tried on
    its own, its text made only then; the sentence a warning gives of those not written
    ("" where all were: a full disk may take one and not the next, which one try said
    were both not this run's). `failed`: files the caller could not write before these
    (amplify's amplified.yaml), each with its error's words, named first."""
    return save_each(folder, files, failed)[0]


def save_each(
    folder: Path,
    files: Iterable[tuple[str, Callable[[], str]]],
    failed: Sequence[tuple[str, str]] = (),
) -> tuple[str, tuple[str, ...]]:
    """`save_all`'s sentence, and the names it says are not this run's (`failed`'s and
    those not written): bisect names its bisect.md unless that one is among them."""
    missed = [name for name, _ in failed]
    why = next((said for _, said in failed if said), "")
    for name, text in files:
        try:
            write_atomic(folder / name, text())
        except OSError as exc:
            missed.append(name)
            why = why or exc.strerror or str(exc)  # its file is a temporary one of write_atomic
    return unsaved_sentence(folder, missed, why), tuple(missed)


def unsaved_sentence(folder: Path, missed: Sequence[str], why: str) -> str:
    """`the answer could not be saved in FOLDER (WHY): its a.json and a.md are not this
    run's` ("" where `missed` is empty): isolate's, minimize's and amplify's warning."""
    if not missed:
        return ""
    from reprospec.core.words import agree  # only for this warning: the writer imports none

    names = missed[0] if len(missed) == 1 else ", ".join(missed[:-1]) + " and " + missed[-1]
    are = agree(len(missed), "is", "are")
    return f"the answer could not be saved in {folder} ({why}): its {names} {are} not this run's"


def write_probe(
    path: Path, *, folder: bool = True, existing: bool = False
) -> tuple[str, OSError] | None:
    """Why nothing can be written at `path`: the call that failed (`mkdir`, `write`) and its
    error, or None where it can. The one rule of `-o`/`--out` checked before a verb runs
    anything (commands/options.check_writable) and of minimize's DIR (its driver, asked by
    the Python API too).

    The probe makes and removes what writing would make first, as writing will: the
    missing folder nearest the root, or the file itself where its folder exists and it
    names a file (not `folder`). Permissions alone do not tell: root may write anywhere by
    them, yet nothing can be made in /proc, on a read-only mount, an NFS root_squash one or
    in an immutable folder. A path that exists is left to the caller (a file where a folder
    is wanted is its to say), but for a folder where `existing`: a file is made in it and
    removed (named as write_atomic's are), its error given as writing in it."""
    if path.exists() or path.is_symlink():
        if not existing or not path.is_dir():
            return None
        probe = path / f".reprospec-probe.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        except OSError as exc:
            return "write in", OSError(exc.errno, exc.strerror, str(path))
        with contextlib.suppress(OSError):
            probe.unlink()
        return None
    first = path
    while not first.parent.exists() and first.parent != first.parent.parent:
        first = first.parent
    make: Callable[[], object]
    undo: Callable[[], object]
    if first == path and not folder:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        make, undo, doing = (lambda: os.close(os.open(path, flags, 0o600))), path.unlink, "write"
    else:
        make, undo, doing = first.mkdir, first.rmdir, "mkdir"
    try:
        make()
    except FileExistsError:
        return None  # made meanwhile: the caller finds it there
    except OSError as exc:
        return doing, exc
    with contextlib.suppress(OSError):
        undo()
    return None


def unwritable(folder: Path) -> str:
    """Why no file can be made in `folder` (`Read-only file system`, `Permission denied`,
    `Not a directory` of a file on its path), "" where one can: `write_probe` asked of a
    folder that exists too (an --out made read-only since an earlier run). The words of
    minimize's refusals of DIR and --out, and of bisect's of a version that needs attempts."""
    failed = write_probe(folder, existing=True)
    return "" if failed is None else str(failed[1].strerror or failed[1])
