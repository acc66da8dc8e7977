"""The results store: `.reprospec/results.db` (SQLite, WAL), written as each attempt ends.

Schema versions (`PRAGMA user_version`): 1 the first; 2 adds `attempts.excerpt`
(a failure's log excerpt, so a resumed run's report needs no log files); 3 adds
`attempts.native` (gdb's native stacks of a failure, as markdown); 4 adds
`attempts.instances` (`run.instances`: every instance's outcome and slot, which one
is the attempt's, the start spread; JSON as in results.json); 5 adds
`attempts.child_warnings` (the warnings the child printed, once each); 6 adds
`attempts.launch` and `attempts.launch_note` (forked from a preload server, or fresh,
and why); 7 adds `attempts.gpu` (what environment.debug's GPU diagnostics found, as
markdown); 8 adds `attempts.perturbed` (environment.perturb as the runner applied it);
9 adds `attempts.dead_child_stack` (the own stack of the child that died before a hang).
An older store is migrated in place when opened; a newer one is refused.

Durability: WAL with `synchronous=NORMAL`. Every write is committed before it returns,
so a crashed or killed engine (any signal, SIGKILL included) loses nothing it stored:
a committed transaction is in the WAL file, which the operating system keeps. A run's
short passes are the one exception (`record_attempt(commit=False)`, pipeline/stages.py's
`_Keeper`): each is held, and written and committed before its progress line is said
(`commit`) or by any other write, so the attempts that ended within the last quarter
second (a command line's run says each end STOPPED_SLACK_S late) share one transaction,
where each paid a commit and a statement run cold (issue 30, item 5); a killed engine
loses none it said, and `--resume` runs the others again. At most HELD_MOST attempts and
HELD_BYTES of their rows are held (one more is committed at once, with them), so their
commit needs a bounded room on the disk, which a run's store keeps beside it
(`Store(reserve=True)`): `results.db-reserve`, RESERVE_BYTES allocated as the store opens,
shared by every engine of the store, removed by the last to close it (a killed engine's is
taken over by the next writer, or removed by the next reader). A full disk failing that
commit frees the reserve and writes the held attempts again, alone: they are kept, said or
not, and the store then says the disk is full (`StoreError`, `lost` 0) and the run stops.
Only where the freed room is taken first (another process writing the same disk at that
moment, a second engine of the store that freed it already) are they lost, counted in
`lost` and said. Only a power loss or an
operating-system crash may lose the last transactions (never corrupt the store): those
are made durable at the next checkpoint, not at each commit. That saves an fsync per
attempt (0.3 ms on a quiet disk, 4-7 ms under load).

What can go wrong with a file on a disk says so, as a `StoreError` (exit 3) that
names the store and what to do, never a raw sqlite traceback:

- the disk is full (or fails): the rows committed so far are kept, and those held
  (above), and `--resume` continues once there is space; a disk that has no room for the
  reserve refuses the run as it opens the store;
- the file is damaged: `PRAGMA quick_check` when it is opened, and any
  "malformed" answer later, say how to set it aside and recover its rows;
- several engines open one fresh store at once: they take turns (a lock on the
  folder) while the first creates the schema, and wait for each other's writes
  (the busy timeout) rather than fail with "database is locked";
- the file is deleted while a run goes (an attempt removed `--out`): the next
  write notices, puts the store back from the engine's still-open copy, and
  says so in `warnings`;
- the store is on a read-only disk (an archived `--out`): its readers (`history`,
  `bundle`: `Store(..., reader=True)`) read it as it is. Readers never migrate an older
  store (an older reprospec would then refuse it); its attempts' later columns read NULL.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.results import AttemptResult, CellResult, Outcome
from reprospec.core.runoptions import SEARCH_PURPOSES
from reprospec.core.trylock import SharedHold, hold_shared, try_locked
from reprospec.environment.facts import flatten_environment
from reprospec.errors import FatalError, InfraError, UsageError
from reprospec.store.resultsjson import attempt_from_dict, instances_to_dict, outcome_to_dict
from reprospec.store.runfolder import RunFolder

if TYPE_CHECKING:
    from reprospec.store.storedrun import StoredRun

SCHEMA_VERSION = 9
# How long a write waits for another engine's (seconds): a run's rows are small.
BUSY_TIMEOUT_S = 60.0
STATUSES = ("running", "finished", "interrupted")
# The most attempts `record_attempt(commit=False)` holds, and of their rows' text (bytes,
# counted as characters): past either, the attempt is committed at once as one of those held.
# Each bound alone keeps the commit's cost shared (a run of `true` at -j 1 holds 25-30).
HELD_MOST = 64
HELD_BYTES = 64 * 1024
# The room kept for the commit of the attempts held (`_Reserve`). Measured: committing
# HELD_MOST rows of 1 KiB into cells scattered over a store of 200,000 attempts grew the WAL
# by 422 KiB (105 frames: each row's index leaf and its split, the table's leaves), 64 rows
# of 400 bytes 402 KiB, one of 64 KiB 80 KiB; the -shm may need its next 32 KiB. Twice that.
RESERVE_BYTES = 1024 * 1024
RESERVE_SUFFIX = "-reserve"
# One attempt's row, as `_INSERT_ATTEMPT` takes it (`_attempt_row`): what a store holds.
_Row = tuple[object, ...]
# Facts that define "the same machine and software" (dotted paths into the captured
# environment, or a whole section); free memory, env vars and paths stay out.
FINGERPRINT_FIELDS = (
    "python.version",
    "python.implementation",
    "os.system",
    "os.distribution",
    "os.kernel",
    "os.machine",
    "os.wsl",
    "os.container",
    "cpu.model",
    "cpu.flags",
    "cpu.cores",
    "memory.total",
    "torch.version",
    "torch.cuda",
    "torch.hip",
    "torch.cudnn",
    "torch.cpu_capability",
    "torch.arch_list",
    "nvidia.gpus",
    "nvidia.driver_version",
    "nvcc.version",
    "packages",
)
# A field's own key and those under it: str.startswith with a tuple asks them all in C (a
# generator over the 22 fields for each of a captured environment's 100+ keys took 1.4 ms
# of the fingerprint's 2.2, twice a run).
_FINGERPRINT_KEYS = frozenset(FINGERPRINT_FIELDS)
_FINGERPRINT_PREFIXES = tuple(f"{field}." for field in FINGERPRINT_FIELDS)

_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    spec_name TEXT NOT NULL,
    spec_path TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    spec_text TEXT NOT NULL,
    runner TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted')),
    options TEXT NOT NULL,
    environment TEXT NOT NULL,
    env_fingerprint TEXT NOT NULL
);
CREATE INDEX runs_by_spec ON runs (spec_name, started);
CREATE TABLE cells (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    cell_id TEXT NOT NULL,
    cell_index INTEGER NOT NULL,
    matrix TEXT NOT NULL,
    expected TEXT NOT NULL,
    verdict TEXT NOT NULL,
    reason TEXT NOT NULL,
    rate TEXT NOT NULL,
    PRIMARY KEY (run_id, cell_id)
);
CREATE TABLE attempts (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    cell_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    shard TEXT,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    duration_s REAL NOT NULL,
    outcome TEXT,
    matched INTEGER NOT NULL,
    mismatches TEXT NOT NULL,
    gpu_slot TEXT NOT NULL,
    infra_error TEXT,
    logs TEXT NOT NULL,
    warnings TEXT NOT NULL,
    stack TEXT,
    excerpt TEXT,
    native TEXT,
    instances TEXT,
    child_warnings TEXT,
    launch TEXT,
    launch_note TEXT,
    gpu TEXT,
    perturbed TEXT,
    dead_child_stack TEXT,
    PRIMARY KEY (run_id, cell_id, attempt)
);
"""
# Each step takes the schema from version N (the key) to N + 1.
_MIGRATIONS = {
    1: ("ALTER TABLE attempts ADD COLUMN excerpt TEXT",),
    2: ("ALTER TABLE attempts ADD COLUMN native TEXT",),
    3: ("ALTER TABLE attempts ADD COLUMN instances TEXT",),
    4: ("ALTER TABLE attempts ADD COLUMN child_warnings TEXT",),
    5: (
        "ALTER TABLE attempts ADD COLUMN launch TEXT",
        "ALTER TABLE attempts ADD COLUMN launch_note TEXT",
    ),
    6: ("ALTER TABLE attempts ADD COLUMN gpu TEXT",),
    7: ("ALTER TABLE attempts ADD COLUMN perturbed TEXT",),
    8: ("ALTER TABLE attempts ADD COLUMN dead_child_stack TEXT",),
}
_ATTEMPT_COLUMNS = (
    "run_id",
    "cell_id",
    "attempt",
    "shard",
    "started",
    "finished",
    "duration_s",
    "outcome",
    "matched",
    "mismatches",
    "gpu_slot",
    "infra_error",
    "logs",
    "warnings",
    "stack",
    "excerpt",
    "native",
    "instances",
    "child_warnings",
    "launch",
    "launch_note",
    "gpu",
    "perturbed",
    "dead_child_stack",
)

# One text for every attempt's row: sqlite3 keeps the compiled statement by its text.
_INSERT_ATTEMPT = (
    f"INSERT OR REPLACE INTO attempts ({', '.join(_ATTEMPT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_ATTEMPT_COLUMNS))})"
)


# json.dumps(value, sort_keys=True, ensure_ascii=False, default=str), its encoder made once:
# json.dumps makes one per call with these options, and each attempt's row asks.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def _json(value: object) -> str:
    if isinstance(value, list) and not value:
        return "[]"  # most of an attempt's lists (its mismatches, slots, warnings): no encoder
    return _ENCODER.encode(value)


def environment_fingerprint(env: Mapping[str, JsonValue]) -> str:
    """A short hash of the stable environment facts: equal fingerprints, same machine setup."""
    stable = {
        key: value
        for key, value in flatten_environment(env).items()
        if key in _FINGERPRINT_KEYS or key.startswith(_FINGERPRINT_PREFIXES)
    }
    return hashlib.sha256(_json(stable).encode()).hexdigest()[:16]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StoreError(InfraError):
    """The results store cannot be used or written: the disk, the file, another engine.

    `full`: because the disk is full, which a stopped run says where the store cannot
    (RunFolder.note_stop). `lost`: the attempts held to be written at a commit
    (`record_attempt(commit=False)`) that the failed write took with it and the reserve
    could not bring back (`Store._keep_held`): not stored. Only those whose own
    `record_attempt` had returned, which its caller counted stored: the row of the call
    that failed is `kept_own`'s, True where it is stored all the same (the short pass past
    the held bound, held with them and kept by the reserve), so its caller counts it then;
    a caller that counted it as lost read one attempt too few (-1 in a run of 64)."""

    def __init__(self, message: str, *, full: bool = False) -> None:
        super().__init__(message)
        self.full = full
        self.lost = 0
        self.kept_own = False


# sqlite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xFF).
_SQLITE_BUSY = 5
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`; None when there is none."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


# sqlite's files beside a WAL store, written by every connection that writes it.
_SIDE_FILES = ("-wal", "-shm")


def _owner_and_mode(path: Path) -> str:
    """`alice, 0644`: whose a file is and who may write it, as `ls -l` would tell."""
    import pwd
    import stat

    info = path.stat()
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = f"uid {info.st_uid}"
    return f"{owner}'s, {stat.S_IMODE(info.st_mode):04o}"


# The stores (device, inode) this process found whole.
_CHECKED: set[tuple[int, int]] = set()

# While a search runs (`held_open`): one idle connection to each store its probe runs open,
# by the store's path, and a hold of its reserve, by the reserve's, kept until the search
# ends. None outside a search.
_HELD: dict[str, sqlite3.Connection | SharedHold] | None = None
_HELD_LOCK = threading.Lock()


@contextmanager
def held_open() -> Iterator[None]:
    """Keep every store opened inside this block open until it ends (a search's probe runs).

    The last connection to a WAL store that closes checkpoints it and deletes its -wal file,
    with an fsync of each: every probe run of a search, whose engine opens and closes the
    store, paid that (about 10 ms of wall per probe on this disk, more under load), though
    the next probe opened the store again at once. One idle connection held here makes no
    probe's close the last: the search's end checkpoints once. What is stored is the same,
    and durable as every commit is (the module docstring): a checkpoint moves committed
    rows from the WAL into the file, it commits nothing. The store's reserve is held the
    same way: each probe made and removed a 1 MiB file. Nested blocks share the outer one.
    """
    global _HELD
    with _HELD_LOCK:
        if _HELD is not None:
            outer = True
        else:
            outer, _HELD = False, {}
    if outer:
        yield
        return
    try:
        yield
    finally:
        with _HELD_LOCK:
            held, _HELD = _HELD or {}, None
        for db in held.values():
            with contextlib.suppress(sqlite3.Error, OSError):
                db.close()


def _hold(path: Path, *, reserve: bool = False) -> None:
    """Inside `held_open`: open the one idle connection to the store at `path`, once; or
    with `reserve`, hold the reserve at `path` (`_Reserve`) as its engines do."""
    with _HELD_LOCK:
        if _HELD is None or str(path) in _HELD:
            return
        if reserve:
            if (hold := hold_shared(path)) is not None:
                _HELD[str(path)] = hold
            return
        try:
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            # Read once, so the connection has the store open as WAL (its shared lock).
            db.execute("PRAGMA user_version").fetchone()
        except sqlite3.Error:
            return  # only a saving: the probe's own connection works without it
        _HELD[str(path)] = db


@contextmanager
def _opening_lock(folder: Path) -> Iterator[None]:
    """Engines opening stores in one folder take turns (an advisory lock on the folder).

    Two engines creating one fresh store at once could see sqlite answer "database
    is locked" without waiting (switching to WAL, recovering a WAL another process is
    creating). Best effort: a filesystem without flock just goes without.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class _Reserve:
    """`results.db-reserve`: RESERVE_BYTES allocated on the store's disk, freed when a full
    disk fails the commit of the attempts held, so that commit can land (module docstring).

    One file for every engine of the store, each holding it shared (core/trylock's rule): a
    second engine allocates nothing more, the last to close removes it, a killed engine's is
    taken over by the next (its blocks still allocated) or removed by a reader (`sweep`).
    """

    def __init__(self, hold: SharedHold) -> None:
        self._hold = hold

    @property
    def path(self) -> Path:
        """The file held: what a search holds too (`_hold`), not a path made again."""
        return self._hold.path

    @staticmethod
    def path_of(store: Path) -> Path:
        """The reserve of the store at `store`: beside the file sqlite writes, which is a
        symlink's target (sqlite follows it; its -wal goes there), so the room is on that
        disk, and every engine, reader and search names the one file."""
        resolved = store.resolve()
        return resolved.with_name(resolved.name + RESERVE_SUFFIX)

    @classmethod
    def keep(cls, store: Path) -> _Reserve | None:
        """The reserve beside `store`, allocated whole; None where the folder gives no lock or
        the file system cannot allocate ahead (the run goes on without one, as before it).
        Raises OSError (ENOSPC) where the disk has no room for it.

        Allocated as the file system does it: where `posix_fallocate` succeeds allocating
        nothing (ZFS, copy-on-write, keeps no blocks ahead) the reserve frees no room when a
        full disk comes, useless but harmless: the held attempts are then lost and counted,
        as without one. Where the folder gives no `flock` there is none at all."""
        path = cls.path_of(store)
        hold = hold_shared(path)
        if hold is None:
            return None  # another user's (a shared --out), or no flock: without
        try:
            with contextlib.suppress(OSError):
                # As sqlite makes its -wal and -shm: a store several users write (cli.md)
                # is the group's, and so is its reserve, whoever made it.
                os.fchmod(hold.fileno(), store.stat().st_mode & 0o666)
            os.posix_fallocate(hold.fileno(), 0, RESERVE_BYTES)
        except BaseException as exc:
            # Let go of whatever stops it (a Ctrl-C too): a hold left open kept the file until
            # the next run or reader.
            hold.close()
            if isinstance(exc, OSError) and exc.errno not in _DISK_FULL:
                return None  # EINVAL, EOPNOTSUPP: a file system that cannot allocate ahead
            raise
        return cls(hold)

    def free(self) -> bool:
        """Give its blocks back to the disk; whether it held any (a second engine of the
        store may have freed it first). Truncated, not unlinked: the other engines' open
        descriptors would keep an unlinked file's blocks."""
        fd = self._hold.fileno()
        try:
            had = os.fstat(fd).st_blocks > 0
            os.ftruncate(fd, 0)
        except OSError:
            return False
        return had

    def close(self) -> None:
        self._hold.close()

    @staticmethod
    def sweep(store: Path) -> None:
        """Remove the reserve beside `store` where no engine holds it (a killed one's): a
        reader's open, which keeps none."""
        path = _Reserve.path_of(store)
        if path.is_file():
            with try_locked(path):
                pass  # taken alone, removed as it is let go; held by a run, left


class Store:
    """One connection to `root/results.db`; every write commits before it returns."""

    def __init__(
        self, root: Path | str, *, check: bool = True, reader: bool = False, reserve: bool = False
    ) -> None:
        """`reader`: the store is only read (history, bundle), and one that cannot be opened
        for writing (a read-only disk) is read as it is (`_read_only`). `reserve`: the store
        of a run, which holds attempts (`record_attempt(commit=False)`), keeps the room their
        commit needs on a full disk (`_Reserve`); a disk without that room refuses it."""
        self.path = Path(root) / "results.db"
        self._reader = reader
        # The --out the user gave, as they gave it (run's folder is made under its resolved
        # path), in the words history uses: a file, on a file's path, or with a file for its
        # runs/, exit 2 before anything is made there.
        RunFolder.check_out(Path(root))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            # The path the user gave (`--out FILE`), not the disk: exit 2.
            raise UsageError(
                f"--out {self.path.parent}: not a folder (a file is there, or on its path)"
            ) from exc
        except OSError as exc:
            raise self._os_error(exc, "cannot create its folder") from exc
        if self.path.is_dir():
            raise UsageError(
                f"the results store {self.path}: a folder is there, not a store; move it "
                "aside, or give another --out"
            )
        # Writes come from the scheduler's worker threads; the lock keeps them one at a time.
        self._lock = threading.Lock()
        # Attempts held to be written at the next commit (`record_attempt(commit=False)`): their
        # rows, and the rows' text in all (HELD_BYTES).
        self._held: list[_Row] = []
        self._held_bytes = 0
        # What happened to the store that the run should say (store deleted and restored).
        self.warnings: list[str] = []
        self._reserve: _Reserve | None = None
        with _opening_lock(self.path.parent):
            self._db = self._open(check)
        if reserve:
            self._keep_reserve()
        elif reader:
            with contextlib.suppress(OSError):
                _Reserve.sweep(self.path)

    def _keep_reserve(self) -> None:
        """Allocate the reserve (`_Reserve.keep`), held for a search's time too (`held_open`):
        its probe runs, each opening and closing the store, would each make and remove it."""
        try:
            self._reserve = _Reserve.keep(self.path)
            if self._reserve is not None:
                _hold(self._reserve.path, reserve=True)
        except BaseException as exc:
            # No one holds this store yet to close it (a run's `enter_context` comes after).
            self.close()
            if not isinstance(exc, OSError):
                raise
            size = f"{RESERVE_BYTES >> 20} MiB"
            raise self._os_error(
                exc, f"cannot keep the {size} its commits may need", room=size
            ) from exc

    def _open(self, check: bool) -> sqlite3.Connection:
        """Connect, check and migrate; retried while another process holds the file.

        sqlite answers "database is locked" at once, without waiting, to a connection
        that holds a read lock and wants to write while another one writes (it could
        deadlock): switching a fresh file to WAL is such a moment. Such an answer is
        waited out here, up to BUSY_TIMEOUT_S.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        if self._reader and self.path.is_file() and not os.access(self.path, os.W_OK):
            # Another user's store, or a read-only disk: a connection to write would make its
            # -wal and -shm here before it failed, this user's (`read_only_uris`).
            return self._read_only(
                check, sqlite3.OperationalError("the file is not this user's to write")
            )
        if not self._reader:
            self._refuse_another_users_store()
        while True:
            db: sqlite3.Connection | None = None
            try:
                db = self._connect(self.path)
                self._db = db
                self._identity = _identity(self.path)
                if check:
                    self._check()
                if not (self._reader and self._as_it_is()):
                    self._migrate()
                if not self._reader:
                    _hold(self.path.resolve())
                return db
            except sqlite3.Error as exc:
                if db is not None:
                    db.close()
                code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
                if code in (_SQLITE_CANTOPEN, _SQLITE_READONLY):
                    if self._reader:
                        return self._read_only(check, exc)
                    if not os.access(self.path.parent, os.W_OK):
                        # A --out that cannot be written (a read-only disk, no permission):
                        # the user's path, as a run folder there says (exit 2), not a disk
                        # that failed.
                        raise UsageError(
                            f"the results store {self.path}: cannot be written there: "
                            f"{self.path.parent} is read-only to this user; give another --out"
                        ) from exc
                if code != _SQLITE_BUSY or time.monotonic() > deadline:
                    raise self.error(exc, "cannot open it") from exc
            except BaseException:
                if db is not None:
                    db.close()
                raise
            time.sleep(random.uniform(0.02, 0.1))

    def _refuse_another_users_store(self) -> None:
        """Refuse, before anything runs, a store this user may read but not write.

        sqlite opens such a file read-only without a word, makes a `-wal` and `-shm` of this
        user's (which the store's owner then cannot write either), and fails at the first
        write: a run did every attempt, then stopped with exit 3 saying "the file or its
        disk failed" (lo32). The user's own `--out` to fix or change: exit 2.
        """
        files = [self.path, *(self.path.with_name(f"{self.path.name}{end}") for end in _SIDE_FILES)]
        refused = [p for p in files if p.is_file() and not os.access(p, os.W_OK)]
        if not refused or not os.access(self.path.parent, os.W_OK):
            return  # none, or a read-only --out: the folder's check below says so
        names = ", ".join(f"{p.name} ({_owner_and_mode(p)})" for p in refused)
        raise UsageError(
            f"the results store {self.path}: not this user's to write: {names}. A store "
            f"several users run into needs a group they share and `chmod g+w "
            f"{self.path}*` by its owner (docs/cli.md, 'A store several users write'); "
            "or give another --out"
        )

    def _read_only(self, check: bool, refused: sqlite3.Error) -> sqlite3.Connection:
        """The store opened only to be read, as it is: on a read-only disk (an archived or
        mounted `--out`) opening it to write fails, and a reader of a WAL store makes its
        -shm file, which such a folder refuses too, so `history` and `bundle` said "the
        file or its disk failed" of a whole store. Read as immutable where the
        plain read-only open fails: nothing writes a store there. Not created, not migrated
        (`_as_it_is`)."""
        from reprospec.store.refs import has_wal, read_only_uris

        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        queries = read_only_uris(self.path.resolve())
        if queries == [uri]:
            queries.append(f"{uri}&immutable=1")  # refused below, saying why
        for query in queries:
            if query != uri and has_wal(self.path):
                # Immutable, sqlite reads the file alone, not its write-ahead log: the last
                # writes (a killed engine's, never checkpointed) would be missing unsaid.
                raise StoreError(
                    f"the results store {self.path}: cannot be read where it is: its last "
                    f"writes are in {self.path.name}-wal, which sqlite reads only with a "
                    f"{self.path.name}-shm it can make, and this folder cannot be written "
                    f"({refused}); copy the folder {self.path.parent} somewhere writable "
                    "and give that as --out"
                )
            try:
                db = sqlite3.connect(
                    query, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False
                )
            except sqlite3.Error:
                continue  # gone since (the refusal below says what the first open met)
            db.row_factory = sqlite3.Row
            try:
                version = db.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.Error:
                db.close()
                continue
            self._db = db
            self._identity = _identity(self.path)
            if version > SCHEMA_VERSION:
                db.close()
                raise FatalError(
                    f"{self.path} was written by a newer reprospec (schema {version}): "
                    "upgrade reprospec"
                )
            if not version:
                db.close()
                raise StoreError(
                    f"the results store {self.path}: holds no runs, and cannot be written "
                    f"({refused})"
                )
            try:
                if check:
                    self._check()
                self._as_it_is()
            except BaseException:
                db.close()
                raise
            return db
        raise self.error(refused, "cannot open it")

    def _as_it_is(self) -> bool:
        """For a reader: whether the store has a schema, read as it is, never migrated.

        Migrating is a write: `history` with a newer reprospec made an older reprospec's
        store schema 9, which that reprospec then refused ("written by a newer
        reprospec"), for every user of the `--out`. An older store's attempts lack the
        columns later schemas added; a temporary view of the same name (sqlite looks in
        `temp` first) gives them as NULL, as a migration would have: a read-only one of
        schema 7 said "no such column: a.perturbed", exit 3.
        """
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if not version or version > SCHEMA_VERSION:
            return False  # made now (a reader's fresh store), or refused by _migrate
        have = {row[1] for row in self._db.execute("PRAGMA main.table_info(attempts)")}
        missing = [column for column in _ATTEMPT_COLUMNS if column not in have]
        if missing:
            added = ", ".join(f"NULL AS {column}" for column in missing)
            self._db.execute(f"CREATE TEMP VIEW attempts AS SELECT *, {added} FROM main.attempts")
        return True

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # Durable against a crash of the engine; see the module docstring.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            db.close()
            raise
        return db

    def _check(self) -> None:
        """`PRAGMA quick_check` of a store with a schema: a damaged one is refused, saying how
        to recover. Once per process and file (it reads every page: 0.3 s for 100 MB), so
        isolate's and bisect's many runs pay it once."""
        if self._identity in _CHECKED:
            return
        if not self._db.execute("PRAGMA user_version").fetchone()[0]:
            return  # fresh: nothing to check yet
        rows = self._db.execute("PRAGMA quick_check(3)").fetchall()
        problems = [
            line
            for row in rows
            for line in str(row[0]).splitlines()
            if line.strip() and not line.startswith("*** in database")
        ]
        if problems != ["ok"]:
            raise StoreError(self._damaged("; ".join(problems[:3])))
        if self._identity is not None:
            _CHECKED.add(self._identity)

    def _damaged(self, detail: str) -> str:
        out = self.path.parent
        return (
            f"the results store {self.path} is damaged ({detail}). The run folders under "
            f"{out / 'runs'} are intact. To go on, move the damaged store aside: "
            f"`mv {self.path} {self.path}.damaged` (with its -wal and -shm files, if any); "
            "the next run starts a new one. The sqlite3 tool may save the old rows: "
            f"`sqlite3 {self.path}.damaged .recover | sqlite3 {self.path}`"
        )

    def error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        """A sqlite error as a StoreError that says what it means and what to do."""
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        where = f"the results store {self.path}"
        if code == _SQLITE_FULL:
            return StoreError(
                f"{where}: {doing}: the disk is full ({exc}); free some space", full=True
            )
        if code == _SQLITE_NOTADB:
            return StoreError(
                f"{self.path}: not a usable results store ({exc}): move it aside, "
                "or give another --out"
            )
        if code == _SQLITE_CORRUPT:
            return StoreError(self._damaged(str(exc)))
        if code == _SQLITE_BUSY:
            return StoreError(
                f"{where}: {doing}: another process held it for more than "
                f"{BUSY_TIMEOUT_S:g}s ({exc})"
            )
        if code in (_SQLITE_IOERR, _SQLITE_READONLY, _SQLITE_CANTOPEN):
            return StoreError(f"{where}: {doing}: the file or its disk failed ({exc})")
        return StoreError(f"{where}: {doing}: {exc}")

    def _os_error(self, exc: OSError, doing: str, *, room: str = "some space") -> StoreError:
        """An OSError of the store's files; a full disk's says what to free (`room`)."""
        if exc.errno in _DISK_FULL:
            return StoreError(
                f"the results store {self.path}: {doing}: the disk is full ({exc.strerror}); "
                f"free {room} on that disk, or give another --out",
                full=True,
            )
        return StoreError(f"the results store {self.path}: {doing}: {exc.strerror or exc}")

    def _migrate(self) -> None:
        # A store of this schema needs nothing: read outside a transaction, its version is
        # never lowered by another engine. Where it was written again whole each time (a
        # write transaction of PRAGMA user_version, for every probe run of a search), the
        # open cost a write of the store's first page and the write lock.
        if self._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        # IMMEDIATE takes the write lock first: two engines creating one store cannot both create.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise FatalError(
                    f"{self.path} was written by a newer reprospec (schema {version}): "
                    "upgrade reprospec"
                )
            if version == 0:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
            else:
                for step in range(version, SCHEMA_VERSION):
                    for statement in _MIGRATIONS[step]:
                        self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise

    def close(self) -> None:
        """Close the connection, writing the attempts held first: each ended, so each is
        kept. A failure to write them leaves them to `--resume`: a run has written them, or
        said so, before (pipeline/stages' `_Keeper.flush(at_end=True)`), where a word said
        here came after the run's warnings were read. The reserve goes with the last engine."""
        with self._lock:
            reserve, self._reserve = self._reserve, None
            try:
                if self._held:
                    with contextlib.suppress(sqlite3.Error), self._db:
                        self._write_held()
                self._db.close()
            finally:
                # Whatever the close met (a Ctrl-C in it): a reserve left held would stay
                # allocated until the next run or reader.
                if reserve is not None:
                    reserve.close()

    def commit(self) -> int:
        """Write and commit the attempts `record_attempt(commit=False)` held; how many.

        A failure (a full disk) takes them all back: a StoreError whose `lost` says how
        many, which `--resume` runs again."""
        with self._lock:
            held = len(self._held)
        if held:
            with self._write():
                pass  # `_write` writes them first
        return held

    def _write_held(self) -> int:
        """Write the attempts held, in the transaction open on the connection; how many.
        One statement for all (executemany), where each attempt's own cost it a cold one."""
        held, self._held, self._held_bytes = self._held, [], 0
        if held:
            self._db.executemany(_INSERT_ATTEMPT, held)
        return len(held)

    def _keep_held(self, held: list[_Row], exc: sqlite3.Error) -> bool:
        """After a write that failed with the attempts `held` in it: whether they are kept,
        all of them (one transaction: all or none).

        A full disk frees the reserve (made for this) and writes them again in their own
        transaction, which fits in it: kept, said or not. Another failure, or a reserve that
        is gone or could not be made, loses them (`--resume` runs them again)."""
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if not held or code != _SQLITE_FULL:
            return False
        if self._reserve is None or not self._reserve.free():
            return False
        try:
            with self._db:
                self._db.executemany(_INSERT_ATTEMPT, held)
        except sqlite3.Error:
            return False
        return True

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._writing() as db:
            yield db

    @contextmanager
    def _writing(self, *, own: bool = False) -> Iterator[sqlite3.Connection]:
        """`_write`, its lock held by the caller. `own`: the last row held is the caller's
        (`record_attempt` at the bound), not yet stored as far as its own caller knows."""
        self._restore_if_deleted()
        # The attempts held go first, in the same transaction: they ended before it.
        held = self._held
        try:
            with self._db:
                self._write_held()
                yield self._db
        except sqlite3.Error as exc:
            error = self.error(exc, "cannot write to it")
            kept = self._keep_held(held, exc)
            # The caller's own row is no attempt its caller counted: not one of `lost`.
            error.lost = 0 if kept else len(held) - own
            error.kept_own = own and kept
            raise error from exc

    def _restore_if_deleted(self) -> None:
        """Put the store back when its file was deleted under the open connection.

        An attempt's command may remove `--out` (a cleanup step, `rm -rf .reprospec`):
        sqlite would go on writing into the deleted file and every row would be lost
        when the engine exits. The connection still reads the deleted file, so its
        pages are copied to a new file at the same path (sqlite's backup).
        """
        now = _identity(self.path)
        if self._identity is None or now == self._identity:
            return
        if now is not None:
            raise StoreError(
                f"the results store {self.path} was replaced by another file while this run "
                "went: this run's rows are not in it"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            copy = sqlite3.connect(self.path)
            try:
                self._db.backup(copy)
            finally:
                copy.close()
            restored = self._connect(self.path)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"the results store {self.path} was deleted while this run went, "
                f"and could not be put back: {exc}"
            ) from exc
        self._db.close()
        self._db = restored
        self._identity = _identity(self.path)
        self.warnings.append(
            f"{self.path} was deleted while the run went (did an attempt remove "
            f"{self.path.parent}?): the store was put back from the engine's open copy; "
            "the files deleted with it (attempt logs) are gone"
        )

    def begin_run(
        self,
        run_id: str,
        spec_name: str,
        spec_path: str,
        spec_text: str,
        runner: str,
        options: Mapping[str, JsonValue] | list[str],
        environment: Mapping[str, JsonValue],
        *,
        started: str | None = None,
    ) -> None:
        """Record a new run as `running` (`options`: the argv or run options, to resume it)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 'running', ?, ?, ?)",
                (
                    run_id,
                    spec_name,
                    spec_path,
                    hashlib.sha256(spec_text.encode()).hexdigest(),
                    spec_text,
                    runner,
                    started or _now(),
                    _json(options),
                    _json(dict(environment)),
                    environment_fingerprint(environment),
                ),
            )

    def resume_run(self, run_id: str) -> None:
        """Mark a resumed run `running` again (it kept `interrupted` while it ran, and after
        a SIGKILL of the resuming engine history still said `interrupted`, not `killed`)."""
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status = 'running', finished = NULL WHERE run_id = ?", (run_id,)
            )

    def record_attempt(
        self,
        run_id: str,
        cell_id: str,
        attempt: AttemptResult,
        *,
        shard: str | None = None,
        commit: bool = True,
    ) -> None:
        """Store one finished attempt, committed at once (a killed engine keeps it), or with
        `commit=False` held, to be written at the next `commit` or other write (the
        module's docstring), unless HELD_MOST or HELD_BYTES are held: then at once too,
        as one of them, which a full disk's reserve keeps with them (`_keep_held`): written
        beside them, it was lost on a full disk, its pass said. A row of more than
        HELD_BYTES alone is not held (the reserve is not sized for it): committed at once,
        as a longer attempt is."""
        row = _attempt_row(run_id, cell_id, attempt, shard)
        size = sum(len(value) for value in row if isinstance(value, str))
        held = not commit and size <= HELD_BYTES
        with self._lock:
            if held:
                self._held.append(row)
                self._held_bytes += size
                if len(self._held) <= HELD_MOST and self._held_bytes <= HELD_BYTES:
                    return
            # Under the same lock as the append: another job's attempt cannot join the list
            # past the bound before it is written. Held, its row is the list's last, which a
            # full disk's reserve may keep: `StoreError.kept_own` says whether it did.
            with self._writing(own=held) as db:
                if not held:
                    db.execute(_INSERT_ATTEMPT, row)

    def forget_attempts(self, run_id: str, keys: Iterable[tuple[str, int]]) -> int:
        """Delete stored attempts so `--resume` runs them again; returns how many went.

        For attempts whose end says nothing about the spec: killed together with their
        engine (a Slurm time limit signals every process of the job at once).
        """
        with self._write() as db:
            return sum(
                db.execute(
                    "DELETE FROM attempts WHERE run_id = ? AND cell_id = ? AND attempt = ?",
                    (run_id, cell_id, number),
                ).rowcount
                for cell_id, number in keys
            )

    def finish_cells(self, run_id: str, cells: Iterable[CellResult]) -> None:
        """Store the cells' verdicts in one commit (their attempts are stored as they end).

        The rows are made one at a time as sqlite takes them: a list of every row's JSON
        was 8 MiB at 65,536 cells, on top of the engine's peak at the end of a run.
        """
        with self._write() as db:
            db.executemany(
                "INSERT OR REPLACE INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        run_id,
                        cell.cell.id,
                        cell.cell.index,
                        _json(dict(cell.cell.matrix)),
                        _json(cell.expected.to_dict()),
                        cell.verdict,
                        cell.reason,
                        _json(cell.rate.to_dict()),
                    )
                    for cell in cells
                ),
            )

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        environment: Mapping[str, JsonValue] | None = None,
        finished: str | None = None,
    ) -> None:
        """Mark a run finished or interrupted; `environment` replaces the one given at start."""
        if status not in STATUSES:
            raise ValueError(f"run status must be one of {STATUSES}, not {status!r}")
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status = ?, finished = ? WHERE run_id = ?",
                (status, finished or _now(), run_id),
            )
            if environment is not None:
                db.execute(
                    "UPDATE runs SET environment = ?, env_fingerprint = ? WHERE run_id = ?",
                    (_json(dict(environment)), environment_fingerprint(environment), run_id),
                )

    def _read(self, sql: str, args: tuple[str | int | None, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise self.error(exc, "cannot read it") from exc

    def run_info(self, run_id: str) -> StoredRun | None:
        """What the store keeps of a run's start (spec, options, environment), or None."""
        rows = self._read("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        from reprospec.store.storedrun import StoredRun

        row = rows[0]
        options = json.loads(row["options"])
        environment = json.loads(row["environment"])
        return StoredRun(
            run_id=row["run_id"],
            spec_name=row["spec_name"],
            spec_path=row["spec_path"],
            spec_text=row["spec_text"],
            runner=row["runner"],
            status=row["status"],
            # An argv list is what the first stores kept as options.
            options=options if isinstance(options, dict) else {},
            environment=environment if isinstance(environment, dict) else {},
            env_fingerprint=row["env_fingerprint"],
            started=row["started"] or "",
            finished=row["finished"] or "",
        )

    def runs(
        self,
        spec_name: str | None = None,
        limit: int | None = None,
        *,
        searches: bool = True,
        spec_paths: Sequence[str] = (),
    ) -> list[JsonObject]:
        """Run summaries for `reprospec history`, newest first (the last begun first); the
        newest `limit` only when given. The page (`spec_name`, `spec_paths`, `searches`,
        `limit`) is chosen first and the per-run counts computed for its runs alone: grouping
        every run's attempts first made a filtered `runs()`, which every isolate start asks,
        read the whole attempts table (5 runs of a 480k-attempt store: 450 ms, 10 ms now).

        `perturbed`: the perturbations of the run's first perturbed attempt ([] for a plain
        run): an amplified run's rates are not the program's plain rates, and say so.
        `ran`: its attempts that ran (not infra-errors), `failed_as_expected`: those of them
        that matched `expect`, what a search's probe found in the search's terms (a probe is
        judged by the cell's expect without its rate, so its cell's verdict is not).
        `purpose`: who started the run (`run`, `isolate`, ...), `probe`: what a search's probe
        run tried (`RunOptions.probe`; None for others), `shard`: `K/N` of a `--shard` run
        (None for others); `searches=False` leaves out the probes of the searches
        (`SEARCH_PURPOSES`); `spec_paths`: of the spec file at one of these paths only (other
        files may hold a spec of the same name).
        """
        # Imported at `history`'s reading: a run never lists runs (issue 30, item 4).
        from reprospec.store.refs import PROBE, PURPOSE, SHARD

        where, args = _runs_where(spec_name, searches, "r.", spec_paths)
        # sqlite's LIMIT is a 64-bit integer: a larger one is every run, where sqlite said
        # "datatype mismatch" and `history --limit 10**20` called the store unreadable.
        page = f" LIMIT {int(limit)}" if limit is not None and limit < 2**63 else ""
        rows = self._read(
            f"""
            WITH page AS (
                SELECT r.rowid AS rid, r.* FROM runs r
                {where}
                ORDER BY r.started DESC, r.rowid DESC{page}
            )
            SELECT r.run_id, r.spec_name, r.spec_path, r.runner, r.started, r.finished, r.status,
                   r.env_fingerprint, {PURPOSE.format(r="r.")} AS purpose,
                   {PROBE.format(r="r.")} AS probe, {SHARD.format(r="r.")} AS shard,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id) AS cells,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'reproduced') AS reproduced,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'not-reproduced') AS not_reproduced,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'undecided') AS undecided,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'infra-error') AS infra_error,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'observed') AS observed,
                   COALESCE(g.attempts, 0) AS attempts, COALESCE(g.ran, 0) AS ran,
                   COALESCE(g.failed_as_expected, 0) AS failed_as_expected,
                   COALESCE(g.with_attempts, 0) AS with_attempts,
                   (SELECT a.perturbed FROM attempts a WHERE a.run_id = r.run_id
                        AND a.perturbed IS NOT NULL LIMIT 1) AS perturbed
            FROM page r
            -- One pass over the page's attempts for their four counts, where a subquery
            -- each read a run's attempts four times; the page's runs' attempts alone (by
            -- the primary key), not every run's grouped before the page was chosen.
            LEFT JOIN (
                SELECT run_id, COUNT(*) AS attempts, SUM(infra_error IS NULL) AS ran,
                       SUM(infra_error IS NULL AND matched) AS failed_as_expected,
                       COUNT(DISTINCT cell_id) AS with_attempts
                FROM attempts WHERE run_id IN (SELECT run_id FROM page) GROUP BY run_id
            ) g ON g.run_id = r.run_id
            ORDER BY r.started DESC, r.rid DESC
            """,
            args,
        )
        return [{**dict(row), "perturbed": _perturbed(row["perturbed"])} for row in rows]

    def run_count(
        self,
        spec_name: str | None = None,
        *,
        searches: bool = True,
        spec_paths: Sequence[str] = (),
    ) -> int:
        """How many runs the store holds (of `spec_name`, and the file at `spec_paths`, when
        given; the searches' probes only with `searches`): what `history` left out."""
        where, args = _runs_where(spec_name, searches, "", spec_paths)
        rows = self._read(f"SELECT COUNT(*) AS n FROM runs {where}", args)
        return int(rows[0]["n"])

    def run_ids(self) -> set[str]:
        """Every run id the store lists, the searches' probes' included."""
        return {str(row["run_id"]) for row in self._read("SELECT run_id FROM runs")}

    def finished_attempts(
        self, run_id: str, *, include_infra_errors: bool = False
    ) -> dict[tuple[str, int], AttemptResult]:
        """The stored attempts of a run by (cell id, attempt number), for `--resume`.

        Infra-error attempts never ran, so by default they are left out: a resume retries them.
        """
        infra = "" if include_infra_errors else " AND infra_error IS NULL"
        rows = self._read(
            f"SELECT * FROM attempts WHERE run_id = ?{infra} ORDER BY cell_id, attempt", (run_id,)
        )
        return {(row["cell_id"], row["attempt"]): _attempt(row) for row in rows}


def _instances_json(attempt: AttemptResult) -> str | None:
    instances = instances_to_dict(attempt)
    return None if instances is None else _json(instances)


def _runs_where(
    spec_name: str | None, searches: bool, r: str, spec_paths: Sequence[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause of the runs of `spec_name` (all when None), of a spec file at one
    of `spec_paths` when given, without the searches' probes unless `searches`."""
    from reprospec.store.refs import PURPOSE

    terms: list[str] = []
    args: tuple[str, ...] = ()
    if spec_name:
        terms.append(f"{r}spec_name = ?")
        args = (spec_name,)
    if spec_paths:
        terms.append(f"{r}spec_path IN ({', '.join('?' * len(spec_paths))})")
        args = (*args, *spec_paths)
    if not searches:
        terms.append(f"{PURPOSE.format(r=r)} NOT IN ({', '.join('?' * len(SEARCH_PURPOSES))})")
        args = (*args, *SEARCH_PURPOSES)
    return ("WHERE " + " AND ".join(terms) if terms else ""), args


def _perturbed(column: str | None) -> list[JsonValue]:
    """The `perturbed` column as a list (NULL: a plain attempt, or a store before schema 8)."""
    value = json.loads(column) if column else []
    return [str(note) for note in value] if isinstance(value, list) else []  # text only


def _attempt(row: sqlite3.Row) -> AttemptResult:
    instances = json.loads(row["instances"]) if row["instances"] else {}
    return attempt_from_dict(
        {
            **instances,
            "attempt": row["attempt"],
            "duration_s": row["duration_s"],
            "outcome": json.loads(row["outcome"]) if row["outcome"] else None,
            "matched": bool(row["matched"]),
            "mismatches": json.loads(row["mismatches"]),
            "logs": row["logs"],
            "started": row["started"],
            "finished": row["finished"],
            "gpu_slot": json.loads(row["gpu_slot"]),
            "infra_error": row["infra_error"],
            "warnings": json.loads(row["warnings"]),
            "stack": row["stack"],
            "excerpt": row["excerpt"],
            "native_stacks": row["native"],
            "child_warnings": json.loads(row["child_warnings"] or "[]"),
            "launch": row["launch"],
            "launch_note": row["launch_note"],
            "gpu_findings": row["gpu"],
            "perturbed": _perturbed(row["perturbed"]),
            "dead_child_stack": row["dead_child_stack"],
        }
    )


def _attempt_row(run_id: str, cell_id: str, attempt: AttemptResult, shard: str | None) -> _Row:
    """An attempt's row of `attempts`, in _ATTEMPT_COLUMNS' order."""
    outcome = attempt.outcome
    return (
        run_id,
        cell_id,
        attempt.attempt,
        shard,
        attempt.started,
        attempt.finished,
        attempt.duration_s,
        _json(outcome_to_dict(outcome)) if isinstance(outcome, Outcome) else None,
        int(attempt.matched),
        _json(list(attempt.mismatches)),
        _json(list(attempt.gpu_slot)),
        attempt.infra_error,
        attempt.logs,
        _json(list(attempt.warnings)),
        attempt.stack,
        attempt.excerpt,
        attempt.native,
        _instances_json(attempt),
        _json([w.to_dict() for w in attempt.child_warnings]),
        attempt.launch,
        attempt.launch_note,
        attempt.gpu,
        # NULL, not "[]", for a plain attempt: `runs` finds amplified runs by it.
        _json(list(attempt.perturbed)) if attempt.perturbed else None,
        attempt.dead_child_stack,
    )
