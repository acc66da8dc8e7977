"""The SQLite store: runs, cells and attempts written and read back, migrations, concurrent
writers."""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import NotRun, RunResult
from reprospec.errors import FatalError
from reprospec.store.db import (
    _SCHEMA,
    HELD_BYTES,
    HELD_MOST,
    SCHEMA_VERSION,
    Store,
    environment_fingerprint,
)
from tests.support.runs import hang_run, infra_run, pool_hang_run, segfault_matrix

OPTIONS: JsonObject = {"runner": "local", "jobs": 2, "repeat": None}


def _record(store: Store, run: RunResult, status: str = "finished") -> None:
    store.begin_run(
        run.run_id,
        run.spec_name,
        run.spec_path,
        run.spec_text,
        run.runner,
        OPTIONS,
        {},
        started=run.started,
    )
    for cell in run.cells:
        for attempt in cell.attempts:
            store.record_attempt(run.run_id, cell.cell.id, attempt)
    store.finish_cells(run.run_id, run.cells)
    store.finish_run(run.run_id, status, environment=run.environment, finished=run.finished)


def test_write_and_read_back(tmp_path: Path) -> None:
    run = segfault_matrix()
    with Store(tmp_path) as store:
        _record(store, run)
        info = store.run_info(run.run_id)
        assert info is not None
        assert info.spec_text == run.spec_text
        assert info.options == OPTIONS
        assert info.status == "finished"
        assert info.environment == dict(run.environment)
        assert info.env_fingerprint == environment_fingerprint(run.environment)
        assert store.run_info("missing") is None
        attempts = store.finished_attempts(run.run_id)
    assert attempts == {(cell.cell.id, a.attempt): a for cell in run.cells for a in cell.attempts}


def test_attempts_round_trip_with_infra_errors_and_stacks(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for run in (hang_run(), infra_run(), pool_hang_run()):
        _record(store, run)
        stored = store.finished_attempts(run.run_id, include_infra_errors=True)
        assert list(stored.values()) == list(run.cells[0].attempts)
    infra_id = infra_run().run_id
    stored_infra = store.finished_attempts(infra_id, include_infra_errors=True)[("default", 1)]
    assert stored_infra.outcome == NotRun("docker engine not reachable")
    # An attempt that never ran is not finished: a resumed run retries it.
    assert store.finished_attempts(infra_id) == {}


def test_history_lists_runs_newest_first_with_verdict_counts(tmp_path: Path) -> None:
    store = Store(tmp_path)
    old = segfault_matrix()
    new = replace(old, run_id="20261122-new", started="2026-11-22T00:00:00")
    _record(store, old)
    _record(store, new, status="interrupted")
    _record(store, hang_run())
    rows = store.runs(spec_name="val-segfault")
    assert [r["run_id"] for r in rows] == ["20261122-new", old.run_id]
    assert rows[1]["status"] == "finished"
    assert rows[0]["status"] == "interrupted"
    assert (
        rows[1]["cells"],
        rows[1]["reproduced"],
        rows[1]["not_reproduced"],
        rows[1]["infra_error"],
        rows[1]["attempts"],
    ) == (4, 1, 3, 0, 4)
    assert len(store.runs()) == 3


def test_running_run_and_bad_status(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.begin_run("r1", "s", "s.yaml", "name: s\n", "local", ["run", "s.yaml"], {})
    assert store.runs()[0]["status"] == "running"
    assert store.runs()[0]["finished"] is None
    # No attempt stored yet: its counts are 0, not null (one grouped join gives them).
    (row,) = store.runs()
    counts = ("attempts", "ran", "failed_as_expected", "with_attempts")
    assert [row[key] for key in counts] == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="run status"):
        store.finish_run("r1", "done")


def test_concurrent_writers_from_threads(tmp_path: Path) -> None:
    run = hang_run()
    attempt = run.cells[0].attempts[0]
    store = Store(tmp_path)
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {}, {})

    def write(worker: int) -> None:
        for n in range(25):
            store.record_attempt(run.run_id, f"cell-{worker}", replace(attempt, attempt=n))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.finished_attempts(run.run_id)) == 100


def test_schema_is_versioned(tmp_path: Path) -> None:
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(FatalError, match="newer reprospec"):
        Store(tmp_path)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "results.db").write_bytes(b"not a database" * 100)
    with pytest.raises(FatalError, match="not a usable results store"):
        Store(tmp_path / "junk")


def test_a_version_1_store_is_migrated_and_keeps_its_attempts(tmp_path: Path) -> None:
    run = segfault_matrix()
    crash = run.cells[3].attempts[0]
    assert crash.excerpt
    # A store as the first schema made it: no `excerpt` column.
    db = sqlite3.connect(tmp_path / "results.db")
    version_1 = _SCHEMA
    for column in (
        "excerpt",
        "native",
        "instances",
        "child_warnings",
        "launch",
        "launch_note",
        "gpu",
        "perturbed",
        "dead_child_stack",
    ):
        version_1 = version_1.replace(f"    {column} TEXT,\n", "")
    db.executescript(version_1 + "PRAGMA user_version = 1;")
    db.execute(
        "INSERT INTO runs VALUES (?, 's', 's.yaml', 'h', '', 'local', '', NULL, 'running',"
        " '{}', '{}', 'f')",
        (run.run_id,),
    )
    db.execute(
        "INSERT INTO attempts VALUES (?, ?, 1, NULL, '', '', 1.0, NULL, 1, '[]', '[]', NULL,"
        " '', '[]', NULL)",
        (run.run_id, "old"),
    )
    db.commit()
    db.close()
    with Store(tmp_path) as store:
        (old,) = store.finished_attempts(run.run_id).values()
        assert old.excerpt is None
        assert (old.launch, old.launch_note) == ("fresh", None)
        store.record_attempt(run.run_id, "new", crash)
        assert store.finished_attempts(run.run_id)[("new", 1)] == crash
        forked = replace(crash, attempt=2, launch="forked", launch_note="seed 7")
        store.record_attempt(run.run_id, "new", forked)
        assert store.finished_attempts(run.run_id)[("new", 2)] == forked
        assert old.perturbed == ()  # a store before schema 8: its attempts ran plain
        amplified = replace(crash, attempt=3, perturbed=("switch_interval=1e-06",))
        store.record_attempt(run.run_id, "new", amplified)
        assert store.finished_attempts(run.run_id)[("new", 3)] == amplified
        assert old.dead_child_stack is None  # a store before schema 9: no child's apart
        (pool,) = pool_hang_run().cells[0].attempts
        store.record_attempt(run.run_id, "pool", pool)
        assert store.finished_attempts(run.run_id)[("pool", 1)] == pool
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9


def test_a_reader_reads_an_older_store_as_it_is_and_never_migrates_it(tmp_path: Path) -> None:
    # `history` (a reader) migrated a schema-8 store to 9, and the reprospec that
    # made it, still used by others of the --out, then refused it ("written by a newer
    # reprospec"). A reader reads the columns a later schema added as NULL.
    run = segfault_matrix()
    with Store(tmp_path) as store:
        _record(store, run)
    db = sqlite3.connect(tmp_path / "results.db")
    db.executescript(
        "ALTER TABLE attempts DROP COLUMN dead_child_stack;"
        "ALTER TABLE attempts DROP COLUMN perturbed; PRAGMA user_version = 7;"
    )
    db.close()
    with Store(tmp_path, reader=True) as store:
        (listed,) = store.runs()
        assert (listed["run_id"], listed["attempts"], listed["perturbed"]) == (run.run_id, 4, [])
        attempts = store.finished_attempts(run.run_id)
        assert [a.perturbed for a in attempts.values()] == [()] * 4
        assert {a.dead_child_stack for a in attempts.values()} == {None}
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7
    db.close()
    with Store(tmp_path) as store:  # a writer migrates it
        assert len(store.finished_attempts(run.run_id)) == 4
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_perturbed_attempts_are_stored_and_history_says_the_run_was_amplified(
    tmp_path: Path,
) -> None:
    plain, amplified = segfault_matrix(), segfault_matrix()
    notes = ("switch_interval=1e-06", "memory_limit=256.0 MiB (cgroup v2 memory.max)")
    amplified = replace(
        amplified,
        run_id="amplified",
        started="2099-01-01T00:00:00+00:00",  # the newer of the two
        cells=tuple(
            replace(c, attempts=tuple(replace(a, perturbed=notes) for a in c.attempts))
            for c in amplified.cells
        ),
    )
    with Store(tmp_path) as store:
        _record(store, plain)
        _record(store, amplified)
        stored = store.finished_attempts("amplified")
        assert {a.perturbed for a in stored.values()} == {notes}
        assert {a.perturbed for a in store.finished_attempts(plain.run_id).values()} == {()}
        rows = store.runs()
    assert [(r["run_id"], r["perturbed"]) for r in rows] == [
        ("amplified", list(notes)),
        (plain.run_id, []),
    ]
    # A plain attempt is NULL in the column (what `runs` finds amplified runs by).
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute(
        "SELECT COUNT(*) FROM attempts WHERE perturbed IS NULL AND run_id = ?", (plain.run_id,)
    ).fetchone()[0] == sum(len(c.attempts) for c in plain.cells)


def test_wal_commits_without_an_fsync_each(tmp_path: Path) -> None:
    """synchronous=NORMAL in WAL mode: a commit survives the engine's death
    (test_store_survives_sigkill_mid_run), the fsync waits for the checkpoint."""
    with Store(tmp_path) as store:
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_environment_fingerprint_ignores_volatile_keys() -> None:
    env: JsonObject = {
        "python": {"version": "3.11.7", "executable": "/usr/bin/python3"},
        "torch": {"version": "2.13.0", "cuda": None},
        "nvidia": {"gpus": [{"name": "A100", "capability": "8.0"}]},
        "memory": {"total": 1 << 34, "available": 1 << 33},
    }
    same: JsonObject = {
        **env,
        "python": {"version": "3.11.7", "executable": "/opt/venv/bin/python"},
        "memory": {"total": 1 << 34, "available": 1 << 30},
        "env": {"OMP_NUM_THREADS": "4"},
    }
    assert environment_fingerprint(env) == environment_fingerprint(same)
    other_torch: JsonObject = {**env, "torch": {"version": "2.5.0", "cuda": None}}
    assert environment_fingerprint(env) != environment_fingerprint(other_torch)
    other_gpu: JsonObject = {**env, "nvidia": {"gpus": [{"name": "H100", "capability": "9.0"}]}}
    assert environment_fingerprint(env) != environment_fingerprint(other_gpu)
    assert len(environment_fingerprint({})) == 16


def test_history_shows_the_newest_runs_and_says_how_many_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reprospec.cli import main

    with Store(tmp_path) as store:
        for n in range(25):
            store.begin_run(f"r{n:02}", "s", "s.yaml", "name: s\n", "local", ["run"], {})
        assert store.run_count() == 25
        assert store.run_count("other") == 0
        assert [r["run_id"] for r in store.runs(limit=2)] == ["r24", "r23"]
    assert main(["history", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "r24" in text
    assert "r05" in text
    assert "r04" not in text  # the newest 20 by default
    assert "the newest 20 of 25 runs" in text
    assert main(["history", "--out", str(tmp_path), "--all"]) == 0
    text = capsys.readouterr().out
    assert "r00" in text
    assert "of 25 runs" not in text
    assert main(["history", "--out", str(tmp_path), "--limit", "3", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert [r["run_id"] for r in json.loads(captured.out)] == ["r24", "r23", "r22"]
    assert "the newest 3 of 25 runs" in captured.err
    assert main(["history", "--out", str(tmp_path), "--limit", "30"]) == 0
    assert "of 25 runs" not in capsys.readouterr().out  # nothing left out: nothing said


def test_a_stored_run_is_found_by_its_id_or_a_unique_prefix(tmp_path: Path) -> None:
    from reprospec.store.refs import ListedRun, listed_run

    with Store(tmp_path) as store:
        for run_id in ("20260101-000000-a-1111", "20260101-000000-a-2222", "20260102-x-3333"):
            store.begin_run(run_id, "a", "/p/a.yaml", "", "local", {"command_line": "rr"}, {})
    assert listed_run("20260102", tmp_path) == ListedRun(
        "20260102-x-3333", "/p/a.yaml", "rr", "running"
    )
    assert listed_run("20260101-000000-a-2222", tmp_path) == ListedRun(
        "20260101-000000-a-2222", "/p/a.yaml", "rr", "running"
    )
    assert listed_run("20260101", tmp_path) is None  # two runs by that prefix
    assert listed_run("2027", tmp_path) is None
    assert listed_run("x", tmp_path / "none") is None  # no store


def test_a_run_id_is_named_by_a_prefix_unique_among_the_store_and_the_folders(
    tmp_path: Path,
) -> None:
    """One rule for every verb that reads a RUN (`report` through find_run, `run --resume`),
    which said an ambiguous prefix in two wordings and counted different runs."""
    from reprospec.errors import UsageError
    from reprospec.store.refs import run_id_named

    with Store(tmp_path) as store:
        for run_id in ("20260101-000000-a-1111", "20260102-000000-b-2222"):
            store.begin_run(run_id, "a", "/p/a.yaml", "", "local", {}, {})
    (tmp_path / "runs" / "20260102-000000-merged-3333").mkdir(parents=True)  # a folder alone
    assert run_id_named("20260101", tmp_path) == "20260101-000000-a-1111"
    assert run_id_named("20260102-000000-b-2222", tmp_path) == "20260102-000000-b-2222"
    assert run_id_named("20260102-000000-m", tmp_path) == "20260102-000000-merged-3333"
    # The store's run and the folder's: either alone would have named one without a word.
    with pytest.raises(UsageError) as refused:
        run_id_named("20260102", tmp_path)
    assert str(refused.value) == (
        "run id '20260102' is ambiguous: 20260102-000000-b-2222, 20260102-000000-merged-3333"
    )
    assert refused.value.exit_code == 2
    assert run_id_named("2027", tmp_path) == "2027"  # none: the caller says so
    assert run_id_named("runs/20260102", tmp_path) == "runs/20260102"  # a path, not an id


def test_a_filtered_runs_reads_the_attempts_of_its_page_alone(tmp_path: Path) -> None:
    # The per-run counts grouped every run's attempts before the filter and LIMIT chose
    # the page (`MATERIALIZE g; SCAN attempts`): `runs(spec, 5)`, asked at every isolate
    # start, read the whole attempts table (the figures: Store.runs's docstring).
    with Store(tmp_path) as store:
        for n, spec in enumerate(("s", "t", "s")):
            run = replace(segfault_matrix(), run_id=f"r{n}", spec_name=spec)
            _record(store, replace(run, started=f"2099-01-0{n + 1}T00:00:00+00:00"))
        asked: list[tuple[str, tuple[str | int | None, ...]]] = []
        read = store._read

        def spy(sql: str, args: tuple[str | int | None, ...] = ()) -> list[sqlite3.Row]:
            asked.append((sql, args))
            return read(sql, args)

        store._read = spy  # type: ignore[method-assign]
        for rows, kwargs in (
            (["r2"], {"spec_name": "s", "limit": 1}),
            (["r2", "r0"], {"spec_name": "s", "spec_paths": [segfault_matrix().spec_path]}),
            (["r2", "r1"], {"limit": 2}),
        ):
            asked.clear()
            listed = store.runs(**kwargs)
            assert [r["run_id"] for r in listed] == rows
            assert {r["attempts"] for r in listed} == {4}
            (sql, args) = asked[-1]
            # SQLite before 3.36 says `SCAN TABLE attempts`, `SEARCH TABLE attempts ...`.
            plan = [
                row[3].replace(" TABLE ", " ")
                for row in store._db.execute(f"EXPLAIN QUERY PLAN {sql}", args)
            ]
            assert not [step for step in plan if step.startswith("SCAN attempts")], plan
            assert "SEARCH attempts USING INDEX sqlite_autoindex_attempts_1 (run_id=?)" in plan


def test_held_attempts_are_written_at_the_commit_or_the_next_write(tmp_path: Path) -> None:
    """A run's attempts share one transaction (`commit=False`), where a commit per attempt
    was a third of the store's cost of it (issue 30, item 5): another reader sees them once
    committed, by `commit` or by any other write, and `close` writes what is still held."""
    run = hang_run()
    attempts = run.cells[0].attempts
    store = Store(tmp_path)
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {}, {})
    reader = Store(tmp_path, reader=True)
    store.record_attempt(run.run_id, "default", attempts[0], commit=False)
    store.record_attempt(run.run_id, "default", attempts[1], commit=False)
    assert reader.finished_attempts(run.run_id) == {}
    assert store.commit() == 2
    assert store.commit() == 0
    stored = reader.finished_attempts(run.run_id)
    assert stored == {("default", a.attempt): a for a in attempts[:2]}
    store.record_attempt(run.run_id, "default", attempts[2], commit=False)
    store.finish_run(run.run_id, "interrupted")  # another write takes it with it
    assert len(reader.finished_attempts(run.run_id)) == 3
    # A held attempt a forget names goes, as a committed one does.
    store.record_attempt(run.run_id, "default", replace(attempts[2], attempt=9), commit=False)
    assert store.forget_attempts(run.run_id, [("default", 9)]) == 1
    store.record_attempt(run.run_id, "default", replace(attempts[2], attempt=10), commit=False)
    store.close()
    assert ("default", 10) in reader.finished_attempts(run.run_id)
    assert ("default", 9) not in reader.finished_attempts(run.run_id)
    reader.close()


def test_held_attempts_past_their_bounds_are_committed_at_once(tmp_path: Path) -> None:
    # The store's reserve covers the commit of a bounded batch (store/db.py's RESERVE_BYTES):
    # a run of `true` at -j 16 held every attempt of its last quarter second, hundreds, and a
    # pass whose child printed warnings by the thousand held them all, for one commit.
    run = hang_run()
    short = run.cells[0].attempts[1]  # a pass: a few hundred bytes of row
    store = Store(tmp_path)
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {}, {})
    reader = Store(tmp_path, reader=True)
    for number in range(1, HELD_MOST + 1):
        store.record_attempt(run.run_id, "default", replace(short, attempt=number), commit=False)
    assert reader.finished_attempts(run.run_id) == {}
    # One more is committed at once, with them.
    store.record_attempt(run.run_id, "default", replace(short, attempt=100), commit=False)
    assert len(reader.finished_attempts(run.run_id)) == HELD_MOST + 1
    # So is one whose row alone is past HELD_BYTES.
    store.record_attempt(run.run_id, "default", replace(short, attempt=101), commit=False)
    big = replace(short, attempt=102, warnings=("w" * HELD_BYTES,))
    store.record_attempt(run.run_id, "default", big, commit=False)
    assert {101, 102} <= {number for _, number in reader.finished_attempts(run.run_id)}
    assert store.commit() == 0
    store.close()
    reader.close()


def test_held_attempts_close_cannot_write_do_not_fail_the_close(tmp_path: Path) -> None:
    # A run writes its held attempts, or says it could not, before it closes the store
    # (pipeline/stages' `_Keeper.flush(at_end=True)`, test_keeper): the close's word went
    # into `warnings` after the run had read them, so no one saw it (review).
    run = hang_run()
    store = Store(tmp_path)
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {}, {})
    store.record_attempt(run.run_id, "default", run.cells[0].attempts[0], commit=False)
    store.record_attempt(run.run_id, "default", run.cells[0].attempts[1], commit=False)

    def full() -> int:
        raise sqlite3.OperationalError("database or disk is full")

    store._write_held = full  # type: ignore[method-assign]
    store.close()
    assert store.warnings == []
