"""Which of the program's files changed since a run, by the digests the run recorded.

A bundle packs the workdir's files as they are when it is written, and its report and
results.json say what the run saw: a config edited since a passing run was packed, and the
bundle of a `pass` crashed wherever it was rerun (or the bundle of a failing run carried the
fix). Each run digests its program's files as it begins (pipeline/programfiles.py, what
`compare` tells `train.py changed` by); here they are digested again, under the same store
key, and told apart: a file whose digest differs changed since the run, one that is no
longer there is gone. Bundle refuses either.

Only what the run recorded can be told: a file it kept no digest of (a run of an engine
that recorded none, a search's probe, a file its words name that it may write, such as
`--log run.log`) is packed as it is, unchecked. A file over DIGEST_LIMIT was recorded by its
size and modification time, and is told changed by those.

A program may write one of its own inputs (it resumes from `state.json` and saves it back):
every run of it changes the file, so every run would be refused, and running again changes
it again. Such a file, changed and last written while the run ran (its modification time
within the run's start..end), is told apart (`written`) so the refusal can say so and name
`bundle --as-now`, which packs the files as they are now with a warning naming each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.store.digests import (
    FILES_FIELD,
    KEY_FILE,
    UNDIGESTED,
    file_digest,
    key_id,
    read_key,
    recorded,
)
from reprospec.store.refs import lists_run
from reprospec.store.runfolder import SHARDS, RunFolder

# A digest the run could not take (`unreadable: why`): nothing to compare today's with.
_UNREADABLE = "unreadable:"


@frozen
class SinceRun:
    """The run's recorded program files that differ today, by the names it recorded them
    under (relative to the spec's folder, else absolute), and why the rest went unchecked."""

    changed: tuple[str, ...] = ()
    # Of `changed`, those recorded by size and modification time (over DIGEST_LIMIT).
    by_size: tuple[str, ...] = ()
    gone: tuple[str, ...] = ()
    # Of `changed`, those last written while the run ran (the run's program wrote them).
    written: tuple[str, ...] = ()
    # Why the digests could not be compared (None: compared, or none recorded).
    unchecked: str | None = None

    def named(self) -> list[str]:
        """Each file with how it differs: `conf.json (changed)`, `util.py (gone)`."""
        how = {name: "changed" for name in self.changed}
        how.update({name: "changed: its size or modification time" for name in self.by_size})
        how.update({name: "gone" for name in self.gone})
        return [f"{name} ({how[name]})" for name in sorted(how)]


def since_run(
    environment: Mapping[str, JsonValue],
    run_dir: Path,
    base: Path,
    packed: Iterable[Path],
    ran: tuple[float, float] | None = None,
) -> SinceRun:
    """The files the run (its captured `environment`, its folder `run_dir`) recorded
    digests of, named relative to `base` (the spec's folder), that are gone today, or that
    are among the files to be `packed` and whose digest under the store's key differs;
    of those, the ones last modified within `ran` (the run's start and end, epoch seconds).

    The key is its store's; a merged Slurm run's folder is in no store (the merge writes
    only the folder), so it is the key of the shard's store whose run recorded the digests
    the merge kept, told by the key's fingerprint the record carries."""
    store, of = recorded(environment.get(FILES_FIELD))
    if not of:
        return SinceRun()
    base = base.resolve()
    paths = {name: (Path(name) if Path(name).is_absolute() else base / name) for name in of}
    gone = tuple(name for name, path in paths.items() if not path.exists())
    folder = RunFolder(run_dir)
    shards = folder.shard_stores
    stores = shards or ([] if folder.merged_of is not None else [run_dir.parent.parent])
    key = next((k for k in map(_key, stores) if k is not None and key_id(k) == store), None)
    if key is None or store is None:
        why = (
            f"the key they were taken under is in none of its Slurm run's shard stores "
            f"({folder.merged_of / SHARDS if folder.merged_of else run_dir}: a shard's "
            "folder was removed, or its digest.key)"
            if folder.merged_of is not None
            else f"the key they were taken under is not in {run_dir.parent.parent} ("
            + (
                # A run `reprospec merge` wrote is in no store: its digests are its first
                # shard's, under that shard's store's key. "Moved from its store" sent the
                # user looking for a store the run never had. Only a store read to hold no
                # run of this exact id says so: one that cannot be read may list it.
                "no store there lists the run: a run merge made, whose digests are its "
                "first shard's, under that shard's store's key, or a folder moved from its store"
                if lists_run(run_dir.name, run_dir.parent.parent) is False
                else "the run folder was moved from its store, or its digest.key was removed"
            )
            + ")"
        )
        return SinceRun(gone=gone, unchecked=why)
    carried = {path.resolve() for path in packed}
    changed: list[str] = []
    for name, path in paths.items():
        digest = of[name]
        if name in gone or digest.startswith(_UNREADABLE) or path.resolve() not in carried:
            continue  # not packed (hidden, too large): nothing of it contradicts the run
        if file_digest(key, path.resolve()) != digest:
            changed.append(name)
    by_size = tuple(name for name in changed if of[name].startswith(UNDIGESTED))
    written = tuple(name for name in changed if ran and _written_in(paths[name], ran))
    return SinceRun(tuple(changed), by_size, gone, written)


def _written_in(path: Path, ran: tuple[float, float]) -> bool:
    """Whether `path` was last modified while the run ran (between its start and end)."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    return ran[0] <= mtime <= ran[1]


def _key(out: Path) -> bytes | None:
    """The store's key, never made here: a store without one recorded no digest to check."""
    try:
        return read_key(out / KEY_FILE)
    except OSError:
        return None


__all__ = ["SinceRun", "since_run"]
