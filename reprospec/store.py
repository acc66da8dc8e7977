"""The results store: `.reprospec/results.db` (SQLite, WAL), written as each attempt ends.

Schema versions (`PRAGMA user_version`): 1 the first; 2 adds `attempts.excerpt`
(a failure's log excerpt, so a resumed run's report needs no log files); 3 adds
`attempts.native` (gdb's native stacks of a failure, as markdown); 4 adds
`attempts.instances` (`run.instances`: every instance's outcome and slot, which one
is the attempt's, the start spread; JSON as in results.json); 5 adds
`attempts.child_warnings` (the warnings the child printed, once each). An older store is
migrated in place when opened; a newer one is refused.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reprospec.envfacts import flatten_environment
from reprospec.errors import FatalError
from reprospec.models import AttemptResult, CellResult, Outcome
from reprospec.results import attempt_from_dict, instances_to_dict, outcome_to_dict

SCHEMA_VERSION = 5
STATUSES = ("running", "finished", "interrupted")
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
    PRIMARY KEY (run_id, cell_id, attempt)
);
"""
# Each step takes the schema from version N (the key) to N + 1.
_MIGRATIONS = {
    1: ("ALTER TABLE attempts ADD COLUMN excerpt TEXT",),
    2: ("ALTER TABLE attempts ADD COLUMN native TEXT",),
    3: ("ALTER TABLE attempts ADD COLUMN instances TEXT",),
    4: ("ALTER TABLE attempts ADD COLUMN child_warnings TEXT",),
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
)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def environment_fingerprint(env: Mapping[str, Any]) -> str:
    """A short hash of the stable environment facts: equal fingerprints, same machine setup."""
    stable = {
        key: value
        for key, value in flatten_environment(env).items()
        if any(key == f or key.startswith(f"{f}.") for f in FINGERPRINT_FIELDS)
    }
    return hashlib.sha256(_json(stable).encode()).hexdigest()[:16]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Store:
    """One connection to `root/results.db`; every write commits before it returns."""

    def __init__(self, root: Path | str) -> None:
        self.path = Path(root) / "results.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Writes come from the scheduler's worker threads; the lock keeps them one at a time.
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except BaseException as exc:
            self._db.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise FatalError(f"{self.path}: not a usable results store: {exc}") from exc
            raise

    def _migrate(self) -> None:
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
        """Close the connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._db:
            yield self._db

    def begin_run(
        self,
        run_id: str,
        spec_name: str,
        spec_path: str,
        spec_text: str,
        runner: str,
        options: Mapping[str, Any] | list[str],
        environment: Mapping[str, Any],
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

    def record_attempt(
        self, run_id: str, cell_id: str, attempt: AttemptResult, *, shard: str | None = None
    ) -> None:
        """Store one finished attempt, committed at once (a killed engine keeps it)."""
        outcome = attempt.outcome
        with self._write() as db:
            db.execute(
                f"INSERT OR REPLACE INTO attempts ({', '.join(_ATTEMPT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_ATTEMPT_COLUMNS))})",
                (
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
                ),
            )

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

    def finish_cell(self, run_id: str, cell: CellResult) -> None:
        """Store a cell's verdict (its attempts are stored one by one as they end)."""
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    cell.cell.id,
                    cell.cell.index,
                    _json(dict(cell.cell.matrix)),
                    _json(cell.expected.to_dict()),
                    cell.verdict,
                    cell.reason,
                    _json(cell.rate.to_dict()),
                ),
            )

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        environment: Mapping[str, Any] | None = None,
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

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def run_info(self, run_id: str) -> dict[str, Any] | None:
        """Everything stored about a run (spec text, options, environment), or None."""
        rows = self._read("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        info = dict(rows[0])
        for key in ("options", "environment"):
            info[key] = json.loads(info[key])
        return info

    def runs(self, spec_name: str | None = None) -> list[dict[str, Any]]:
        """Run summaries for `reprospec history`, newest first (the last begun first)."""
        where, args = ("WHERE r.spec_name = ?", (spec_name,)) if spec_name else ("", ())
        rows = self._read(
            f"""
            SELECT r.run_id, r.spec_name, r.spec_path, r.runner, r.started, r.finished, r.status,
                   r.env_fingerprint,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id) AS cells,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'reproduced') AS reproduced,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'not-reproduced') AS not_reproduced,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'undecided') AS undecided,
                   (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id
                        AND c.verdict = 'infra-error') AS infra_error,
                   (SELECT COUNT(*) FROM attempts a WHERE a.run_id = r.run_id) AS attempts
            FROM runs r {where}
            ORDER BY r.started DESC, r.rowid DESC
            """,
            args,
        )
        return [dict(row) for row in rows]

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
        }
    )
