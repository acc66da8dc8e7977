"""The results store on a real disk, with real engines.

A full disk (a small tmpfs, mounted for the test: root only), a store damaged in
the middle of the file, another process creating the store at the same moment,
two engines started together on a fresh store, and an attempt that deletes
`--out` under the running engine. Each ends in a clear message (exit 3 where the
run cannot go on, never a traceback) and nothing already stored is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.inputs import Cell
from reprospec.pipeline.stages import HELD_UNDER_S, _Keeper
from reprospec.store.db import HELD_MOST, RESERVE_BYTES, RESERVE_SUFFIX, Store, StoreError
from tests.support.cli import ROOT, CliResult
from tests.support.killed import gated_spec, killed_run
from tests.support.plans import attempt_plan
from tests.support.runs import hang_run

PY = sys.executable


def _reprospec(*args: str, cwd: Path = ROOT, timeout: float = 180) -> CliResult:
    done = subprocess.run(
        [PY, "-m", "reprospec", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )
    out = Path(args[args.index("--out") + 1]) if "--out" in args else ROOT / ".reprospec"
    return CliResult(done.returncode, done.stdout, done.stderr, out)


def _spec(folder: Path, text: str, name: str = "spec.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


def _no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr


# -- a full disk ---------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MB tmpfs of its own (so a full disk is this test's alone)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


FILL = """\
import os, sys, time
# Cell 3 of the first run fills the disk that holds --out (a checkpoint too big, say).
if sys.argv[1] == "3" and not os.path.exists("FILLED"):
    open("FILLED", "w").close()
    with open(sys.argv[2], "wb") as ballast:
        try:
            while True:
                ballast.write(b"x" * (1 << 16))
                ballast.flush()
        except OSError:
            pass
# Each runs past the engine's HELD_UNDER_S (0.1 s), committed as it ends: none is held for
# the store's reserve to keep (test_a_full_disk_loses_no_attempt_whose_pass_was_said).
time.sleep(0.2)
print("cell", sys.argv[1])
"""


def test_a_full_disk_stops_the_run_with_exit_3_and_resume_finishes_it(
    tmp_path: Path, small_disk: Path
) -> None:
    out = small_disk / "out"
    ballast = small_disk / "ballast"
    (tmp_path / "fill.py").write_text(FILL)
    spec = _spec(
        tmp_path,
        f"""\
        reprospec: 1
        name: full-disk
        matrix:
          n: [1, 2, 3, 4]
        command: python fill.py ${{{{ matrix.n }}}} {ballast}
        expect: {{outcome: pass}}
        """,
    )
    first = _reprospec("run", str(spec), "--out", str(out), "-j", "1")
    assert first.code == 3, first.stderr
    _no_traceback(first)
    assert "disk is full" in first.stderr
    (run_id,) = [p.name for p in (out / "runs").iterdir()]
    assert f"reprospec run --resume {run_id} --out {out}" in first.stderr
    # What the run stored before the disk filled is kept, and it says how much: n=1 and
    # n=2, each committed as it ended; n=3's commit met the full disk. --resume runs it
    # and n=4 (below: every cell reproduced). Both asserts passed with nothing stored
    # (review). The short passes a full disk meets held: the next test.
    stored = [row[0] for row in _rows(out / "results.db", "SELECT cell_id FROM attempts")]
    (count,) = re.findall(
        r"the run stopped; (\d+) attempts? of it (?:was|were) stored", first.stderr
    )
    assert int(count) == len(stored), first.stderr
    assert sorted(map(str, stored)) == ["n=1", "n=2"], stored
    ballast.unlink()
    # The store could not take the run's `interrupted`: history, report and the resume's
    # record said the engine was killed (SIGKILL, the OOM killer), where it stopped, saying
    # why (its engine.json keeps the word, written over its own bytes).
    full = "the disk was full (ENOSPC)"
    listed = _reprospec("history", "--out", str(out), "--format", "json")
    assert listed.code == 0, listed.stderr
    (run,) = json.loads(listed.stdout)
    assert (run["status"], run["stopped"]) == ("interrupted", full), run
    table = _reprospec("history", "--out", str(out))
    assert f"interrupted: {full}" in table.stdout.replace("\n", " "), table.stdout
    assert "killed" not in table.stdout
    report = _reprospec("report", run_id, "--out", str(out))
    assert report.code == 2, report.stderr
    assert f"run {run_id} stopped before it wrote its results because {full}" in report.stderr
    second = _reprospec("run", "--resume", run_id, "--out", str(out))
    assert second.code == 0, second.stderr
    results = second.results()
    assert results["run_id"] == run_id
    assert [part["stopped"] for part in results["resumed"]["parts"]] == ["interrupted"]
    verdicts = {cell["id"]: cell["verdict"] for cell in results["cells"]}
    assert verdicts == dict.fromkeys(["n=1", "n=2", "n=3", "n=4"], "reproduced")
    assert _rows(out / "results.db", "SELECT status FROM runs") == [("finished",)]


def _fill(disk: Path) -> Path:
    """Fill `disk` to its last page with a ballast file; the ballast's path."""
    ballast = disk / "ballast"
    with ballast.open("wb", buffering=0) as handle:
        for chunk in (1 << 16, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"x" * chunk)
    return ballast


def _reserve_of(out: Path) -> Path:
    return out / f"results.db{RESERVE_SUFFIX}"


def test_a_full_disk_keeps_the_attempts_held_for_their_commit(small_disk: Path) -> None:
    # A run's short passes are held for one commit (Store.record_attempt(commit=False)); a
    # disk that filled before it took them all back (StoreError.lost), their progress lines
    # said. The reserve freed, they are written, and the store says the disk is full.
    run = hang_run()
    out = small_disk / "out"
    store = Store(out, reserve=True)
    store.begin_run(run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {}, {})
    attempt = run.cells[0].attempts[0]
    for number in range(1, 21):
        store.record_attempt(run.run_id, "default", replace(attempt, attempt=number), commit=False)
    assert _rows(out / "results.db", "SELECT attempt FROM attempts") == []  # held, all 20
    ballast = _fill(small_disk)
    with pytest.raises(StoreError) as failed:
        store.commit()
    assert failed.value.full, str(failed.value)
    assert "the disk is full" in str(failed.value)
    assert failed.value.lost == 0
    stored = _rows(out / "results.db", "SELECT attempt FROM attempts ORDER BY attempt")
    assert [row[0] for row in stored] == list(range(1, 21))
    store.close()
    assert not _reserve_of(out).exists()
    # The next engine, once there is room, makes the reserve again and reads them all.
    ballast.unlink()
    with Store(out, reserve=True) as again:
        assert len(again.finished_attempts(run.run_id)) == 20
        assert _reserve_of(out).stat().st_blocks * 512 >= RESERVE_BYTES
        # The bound: HELD_MOST held, the next short pass is committed at once with them. It
        # was written beside them, out of what the reserve keeps: the full disk kept the 64
        # (lost 0) and lost it, its pass said.
        numbers = range(21, 21 + HELD_MOST + 1)
        for number in numbers[:-1]:
            again.record_attempt(
                run.run_id, "default", replace(attempt, attempt=number), commit=False
            )
        ballast = _fill(small_disk)
        with pytest.raises(StoreError) as failed:
            again.record_attempt(
                run.run_id, "default", replace(attempt, attempt=numbers[-1]), commit=False
            )
        assert failed.value.full, str(failed.value)
        assert (failed.value.lost, failed.value.kept_own) == (0, True)
        stored = _rows(out / "results.db", "SELECT attempt FROM attempts ORDER BY attempt")
        assert [row[0] for row in stored] == list(range(1, numbers[-1] + 1))
    ballast.unlink()


def test_a_full_disk_at_the_held_bound_counts_the_attempts_the_store_kept(
    small_disk: Path,
) -> None:
    # The short pass past HELD_MOST is committed at once, held with the 64 before it. The
    # store counted its row in `lost` with theirs, where the keeper counts an attempt stored
    # only once its record returned: the reserve keeping all 65, the run said 64 were
    # stored; with none to keep them, "-1 attempts of it are stored" (review of a68e9bc7).
    run = hang_run()
    passed = replace(run.cells[0].attempts[1], duration_s=HELD_UNDER_S / 10)
    plan = attempt_plan("true", small_disk, cell=Cell(id="default", index=0, matrix={}))
    for reserve, kept in [(True, HELD_MOST + 1), (False, 0)]:
        out = small_disk / f"reserve-{reserve}"
        with Store(out, reserve=reserve) as store:
            store.begin_run(
                run.run_id, run.spec_name, run.spec_path, run.spec_text, "local", {}, {}
            )
            keeper = _Keeper(store, run.run_id)
            for number in range(1, HELD_MOST + 1):
                keeper.record(replace(plan, attempt=number), replace(passed, attempt=number))
            assert _rows(out / "results.db", "SELECT attempt FROM attempts") == []  # all held
            assert keeper.stored == HELD_MOST
            ballast = _fill(small_disk)
            last = HELD_MOST + 1
            keeper.record(replace(plan, attempt=last), replace(passed, attempt=last))
            assert keeper.full, keeper.failure
            stored = _rows(out / "results.db", "SELECT attempt FROM attempts ORDER BY attempt")
            assert [row[0] for row in stored] == list(range(1, kept + 1)), reserve
            assert keeper.stored == kept, reserve
        ballast.unlink()


def _free(disk: Path) -> int:
    info = os.statvfs(disk)
    return info.f_bavail * info.f_frsize


def _about(free: int, expected: int) -> bool:
    """The same room but the store's own pages (its -wal and -shm come and go): no second
    reserve, none left."""
    return abs(free - expected) < RESERVE_BYTES // 4


KILLED_HOLDER = """import os, sys
from reprospec.store.db import Store
Store(sys.argv[1], reserve=True)
os._exit(0)  # as a SIGKILLed engine: no close
"""


def test_one_reserve_per_store_gone_with_its_last_engine_or_after_a_killed_one(
    small_disk: Path,
) -> None:
    out = small_disk / "out"
    empty = _free(small_disk)
    first = Store(out, reserve=True)
    reserve = _reserve_of(out)
    assert reserve.stat().st_blocks * 512 >= RESERVE_BYTES
    with_one = _free(small_disk)
    assert empty - with_one >= RESERVE_BYTES
    # A second engine of the store shares it: no second reserve, nothing more allocated.
    second = Store(out, reserve=True)
    assert _about(_free(small_disk), with_one)
    assert [p.name for p in out.iterdir() if p.name.endswith(RESERVE_SUFFIX)] == [reserve.name]
    first.close()
    assert reserve.exists()  # the second still runs
    second.close()
    assert not reserve.exists()
    # A store opened without one (a reader, slurm's resume) makes none.
    Store(out).close()
    Store(out, reader=True).close()
    assert not reserve.exists()
    # A killed engine's stays allocated: the next engine takes it over (the same file,
    # nothing more allocated), and removes it as it closes.
    (small_disk / "holder.py").write_text(KILLED_HOLDER)
    done = subprocess.run(
        [PY, str(small_disk / "holder.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    left = reserve.stat()
    assert left.st_blocks * 512 >= RESERVE_BYTES
    with Store(out, reserve=True):
        assert reserve.stat().st_ino == left.st_ino
        assert _about(_free(small_disk), with_one)
    assert not reserve.exists()
    # Or the next reader removes it: a reader keeps none, and no engine holds it.
    done = subprocess.run(
        [PY, str(small_disk / "holder.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert reserve.exists()
    Store(out, reader=True).close()
    assert not reserve.exists()
    assert _about(_free(small_disk), empty)


def test_a_disk_without_room_for_the_reserve_refuses_the_run_before_it_runs(
    small_disk: Path, tmp_path: Path
) -> None:
    spec = _spec(tmp_path, "reprospec: 1\nname: t\ncommand: 'true'\nexpect: {outcome: pass}\n")
    out = small_disk / "out"
    Store(out).close()  # the store, made while there was room
    # Room to open it (its -wal and -shm), not for its reserve.
    ballast = _fill(small_disk)
    os.truncate(ballast, ballast.stat().st_size - RESERVE_BYTES // 4)
    refused = _reprospec("run", str(spec), "--out", str(out))
    assert refused.code == 3, refused.stderr
    _no_traceback(refused)
    assert f"the results store {out / 'results.db'}: cannot keep the 1 MiB" in refused.stderr
    assert "the disk is full" in refused.stderr
    assert "free 1 MiB on that disk, or give another --out" in refused.stderr
    assert not (out / "runs").exists() or not list((out / "runs").iterdir())
    assert not _reserve_of(out).exists()


FILL_AND_FAIL = """\
import os, sys
if not os.path.exists("FILLED"):
    open("FILLED", "w").close()
    with open(sys.argv[2], "wb") as ballast:
        try:
            while True:
                ballast.write(b"x" * 4096)
                ballast.flush()
        except OSError:
            pass
    sys.exit(1)
"""

QUICK_THEN_FULL = """\
reprospec: 1
name: quick-then-full
matrix:
  n: [1, 2, 3, 4, 5, 6, 7]
# n=1..5 pass at once (`test`, well under HELD_UNDER_S: held for a shared commit); n=6 fills
# the disk and fails, committed at once, which the full disk refuses: it ends an infra-error
# (its output could not be written), said and not stored, which --resume runs again.
command: test ${{ matrix.n }} != 6 || python fill.py ${{ matrix.n }} BALLAST
expect: {outcome: pass}
"""


def test_a_full_disk_loses_no_attempt_whose_pass_was_said(tmp_path: Path, small_disk: Path) -> None:
    # Said "pass" and not stored: on a loaded machine the five short passes all ended
    # within the quarter second before n=6's failing commit, were held, and 0 of the 7 were
    # stored, the five lines said. Now every line said is a stored attempt.
    out = small_disk / "out"
    ballast = small_disk / "ballast"
    (tmp_path / "fill.py").write_text(FILL_AND_FAIL)
    spec = _spec(tmp_path, QUICK_THEN_FULL.replace("BALLAST", str(ballast)))
    first = _reprospec("run", str(spec), "--out", str(out), "-j", "1", cwd=tmp_path)
    assert first.code == 3, first.stderr
    _no_traceback(first)
    assert "disk is full" in first.stderr
    said = re.findall(r"\] (n=\d) #1: pass", first.stderr)
    assert said, first.stderr
    stored = {row[0] for row in _rows(out / "results.db", "SELECT cell_id FROM attempts")}
    assert set(said) <= stored, first.stderr
    (count,) = re.findall(
        r"the run stopped; (\d+) attempts? of it (?:was|were) stored", first.stderr
    )
    assert int(count) == len(stored), first.stderr
    assert not _reserve_of(out).exists()
    ballast.unlink()
    (run_id,) = [p.name for p in (out / "runs").iterdir()]
    second = _reprospec("run", "--resume", run_id, "--out", str(out), cwd=tmp_path)
    assert second.code == 0, second.stderr
    assert second.results()["summary"]["reproduced"] == 7


# -- a damaged store -----------------------------------------------------------------------

QUICK = """\
reprospec: 1
name: quick
matrix:
  n: [1, 2, 3, 4, 5, 6]
command: python -c "import sys; print('x' * 3000); open('RAN-${{ matrix.n }}', 'w').close()"
expect: {outcome: pass}
"""


def test_a_damaged_store_is_refused_before_anything_runs_and_says_how_to_recover(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    spec = _spec(tmp_path, QUICK)
    assert _reprospec("run", str(spec), "--out", str(out)).code == 0
    runs = [p.name for p in (out / "runs").iterdir()]
    for ran in tmp_path.glob("RAN-*"):
        ran.unlink()
    db = out / "results.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    assert size >= 5 * 4096
    # Garbage in the middle of the file: every page after the first.
    with db.open("r+b") as handle:
        for page in range(1, size // 4096):
            handle.seek(page * 4096 + 8)
            handle.write(b"\x07" * 64)
    for args in (("run", str(spec)), ("history",), ("run", "--resume", "whatever")):
        result = _reprospec(*args, "--out", str(out))
        assert result.code == 3, (args, result.stderr)
        _no_traceback(result)
        assert f"the results store {db} is damaged" in result.stderr
        assert f"mv {db} {db}.damaged" in result.stderr
        assert ".recover" in result.stderr
    assert not list(tmp_path.glob("RAN-*")), "an attempt ran against a damaged store"
    # The refused run leaves no folder (of an engine.json alone), which `latest`
    # named: `report latest` said "no run" with the whole run before it there.
    assert [p.name for p in (out / "runs").iterdir()] == runs
    # The advice works: the damaged store set aside, the next run starts a new one.
    db.rename(db.with_name("results.db.damaged"))
    # lo32 item 3: --resume of a run of the store set aside spoke of `reprospec merge`
    # (none was made); it says where the store went and what can be done, before and after
    # a new store is there, and what it gives works pasted.
    (old,) = runs
    for args in (("run", "--resume", old), ("run", "--resume", str(out / "runs" / old))):
        refused = _reprospec(*args, "--out", str(out))
        assert refused.code == 2, refused.stderr
        _no_traceback(refused)
        assert "merge" not in refused.stderr
        assert f"moved aside or removed ({db}.damaged is there)" in refused.stderr
        assert f"Run its spec again, `reprospec run {spec} --out {out}`" in refused.stderr
        assert f"`reprospec report {old} --out {out}`" in refused.stderr
    again = _reprospec("run", str(spec), "--out", str(out))
    assert again.code == 0, again.stderr
    assert len(list(tmp_path.glob("RAN-*"))) == 6
    refused = _reprospec("run", "--resume", old, "--out", str(out))
    assert refused.code == 2, refused.stderr
    assert refused.stderr.startswith(f"reprospec: --resume {old}: {db} does not hold it: ")
    assert "merge" not in refused.stderr
    assert _reprospec("report", old, "--out", str(out)).code == 0


# -- a store on a read-only disk -------------------------------------------------------------


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a folder, a read-only bind mount of it): an archived `--out` (root only)."""
    source, view = tmp_path / "source", tmp_path / "view"
    source.mkdir()
    view.mkdir()
    for step in (["--bind", str(source), str(view)], ["-o", "remount,bind,ro", str(view)]):
        done = subprocess.run(["mount", *step], capture_output=True, text=True)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(view)], check=False, capture_output=True)
            pytest.skip(f"cannot mount a read-only view here: {done.stderr.strip()}")
    try:
        yield source, view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


def test_a_store_on_a_read_only_disk_is_read_by_history_and_bundle(
    tmp_path: Path, read_only_view: tuple[Path, Path]
) -> None:
    # History and bundle opened the store to write; on a read-only disk they said
    # "cannot open it: the file or its disk failed (unable to open database file)", exit 3.
    source, view = read_only_view
    spec = _spec(tmp_path, "reprospec: 1\nname: ro\ncommand: 'true'\nexpect: {outcome: pass}\n")
    ran = _reprospec("run", str(spec), "--out", str(source / "out"))
    assert ran.code == 0, ran.stderr
    run_id = ran.results()["run_id"]
    out = view / "out"
    history = _reprospec("history", "--out", str(out), "--format", "json")
    assert history.code == 0, history.stderr
    assert [(r["run_id"], r["status"]) for r in json.loads(history.stdout)] == [
        (run_id, "finished")
    ]
    packed = _reprospec("bundle", "latest", "--out", str(out), "-o", str(tmp_path / "b.tgz"))
    assert packed.code == 0, packed.stderr
    _no_traceback(packed)
    assert (tmp_path / "b.tgz").is_file()
    assert not (source / "out" / "results.db-shm").exists()  # nothing written there
    # A run into it: the path the user gave cannot be written (exit 2), as before the store
    # was opened ahead of the run folder, not "the file or its disk failed" (exit 3).
    refused = _reprospec("run", str(spec), "--out", str(out))
    assert refused.code == 2, refused.stderr
    _no_traceback(refused)
    assert f"the results store {out / 'results.db'}: cannot be written there: " in refused.stderr


def test_an_older_store_on_a_read_only_disk_is_read_by_history_and_bundle(
    tmp_path: Path, read_only_view: tuple[Path, Path]
) -> None:
    # Read as it is, a store of schema 7 (before attempts.perturbed) made history
    # ask for the column it lacks: "cannot read it: no such column: a.perturbed", exit 3.
    source, view = read_only_view
    spec = _spec(tmp_path, "reprospec: 1\nname: ro\ncommand: 'true'\nexpect: {outcome: pass}\n")
    ran = _reprospec("run", str(spec), "--out", str(source / "out"))
    assert ran.code == 0, ran.stderr
    with closing(sqlite3.connect(source / "out" / "results.db")) as db:
        db.executescript(
            "ALTER TABLE attempts DROP COLUMN dead_child_stack;"
            "ALTER TABLE attempts DROP COLUMN perturbed; PRAGMA user_version = 7;"
        )
    out = view / "out"
    history = _reprospec("history", "--out", str(out), "--format", "json")
    assert history.code == 0, history.stderr
    assert [(r["run_id"], r["perturbed"]) for r in json.loads(history.stdout)] == [
        (ran.results()["run_id"], [])
    ]
    packed = _reprospec("bundle", "latest", "--out", str(out), "-o", str(tmp_path / "b.tgz"))
    assert packed.code == 0, packed.stderr
    _no_traceback(packed)


def test_latest_on_a_read_only_disk_is_the_killed_run_the_store_lists(
    tmp_path: Path, read_only_view: tuple[Path, Path]
) -> None:
    # Latest counts a folder without results.json only where the store lists it, and
    # refs read the store read-only alone, which a WAL store on a read-only disk refuses
    # (no -shm can be made): the killed run, history's newest, was passed over and `report
    # latest` reported the run before it, exit 0, or alone said "OUT has no runs".
    source, view = read_only_view
    out = source / "out"
    killed = killed_run(gated_spec(tmp_path / "gated.yaml", tmp_path / "gate"), out)
    # Archived after a clean close: the last connection's close checkpoints the -wal into
    # the file and removes it and the -shm.
    with closing(sqlite3.connect(out / "results.db")) as db:
        db.execute("SELECT count(*) FROM runs").fetchone()
    assert not (out / "results.db-wal").exists()
    assert not (out / "results.db-shm").exists()
    report = _reprospec("report", "latest", "--out", str(view / "out"))
    _no_traceback(report)
    assert f"run {killed} was killed" in report.stderr, (report.code, report.stderr)
    assert report.code != 0


@pytest.fixture
def shared_out() -> Iterator[Path]:
    """A folder every user may write, out of the test's own (0700) tmp folder: a team's
    shared `--out`, read below as another user (root only, with setpriv)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("reading as another user needs root and setpriv")
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="reprospec-shared-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_another_user(shared_out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`reprospec ARGS` as the user nobody (setpriv), in `shared_out`; the test is skipped
    where this interpreter cannot run as another user."""
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PY, "-m"]
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), "HOME": str(shared_out)}
    if subprocess.run([*nobody, "reprospec", "--version"], env=env, check=False).returncode:
        pytest.skip("this interpreter cannot be run as another user here")
    return subprocess.run(
        [*nobody, "reprospec", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=shared_out,
        timeout=180,
    )


def test_another_user_reading_a_shared_store_leaves_no_wal_files_its_owner_cannot_write(
    shared_out: Path,
) -> None:
    # A teammate's `history` (or `report latest`) made results.db-wal and -shm
    # there, theirs, 0644, and the store's owner's next run said "cannot open it: the file
    # or its disk failed (attempt to write a readonly database)", exit 3, until removed.
    spec = _spec(shared_out, "reprospec: 1\nname: t\ncommand: 'true'\nexpect: {outcome: pass}\n")
    spec.chmod(0o644)
    out = shared_out / "out"
    ran = _reprospec("run", str(spec), "--out", str(out))
    assert ran.code == 0, ran.stderr
    out.chmod(0o777)
    assert not (out / "results.db-shm").exists()
    for verb in (["history"], ["report", "latest"]):
        done = _as_another_user(shared_out, *verb, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert ran.results()["run_id"] in done.stdout
    assert not [p.name for p in out.iterdir() if p.name.startswith("results.db-")]


# A writer that leaves its last transaction in the write-ahead log, as a killed engine does
# (os._exit: no close, so no checkpoint).
LEAVE_WAL = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_autocheckpoint=0")
db.execute("UPDATE runs SET status = 'interrupted'")
db.commit()
os._exit(0)
"""


def test_a_read_only_store_whose_last_writes_are_in_its_wal_is_refused_not_read_stale(
    tmp_path: Path, read_only_view: tuple[Path, Path]
) -> None:
    # Without its -shm, which sqlite cannot make there, a WAL store is read immutable: the
    # file alone, so the last writes (here the run's `interrupted`) would be missing unsaid.
    source, view = read_only_view
    spec = _spec(tmp_path, "reprospec: 1\nname: ro\ncommand: 'true'\nexpect: {outcome: pass}\n")
    assert _reprospec("run", str(spec), "--out", str(source / "out")).code == 0
    db = source / "out" / "results.db"
    subprocess.run([PY, "-c", LEAVE_WAL, str(db)], check=True, timeout=60)
    (source / "out" / "results.db-shm").unlink()
    assert (source / "out" / "results.db-wal").stat().st_size > 0
    history = _reprospec("history", "--out", str(view / "out"))
    assert history.code == 3, history.stdout
    _no_traceback(history)
    assert "its last writes are in results.db-wal" in history.stderr
    assert f"copy the folder {view / 'out'} somewhere writable" in history.stderr


def test_a_resume_into_a_read_only_run_folder_names_the_folder(tmp_path: Path) -> None:
    # It said "Read-only file system: .../engine.json.tmp1234", a temporary file.
    gate = tmp_path / "gate"
    out = tmp_path / "out"
    run_id = killed_run(gated_spec(tmp_path / "gated.yaml", gate), out)
    gate.touch()
    folder = out / "runs" / run_id
    for step in (["--bind", str(folder), str(folder)], ["-o", "remount,bind,ro", str(folder)]):
        done = subprocess.run(["mount", *step], capture_output=True, text=True)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)
            pytest.skip(f"cannot mount a read-only folder here: {done.stderr.strip()}")
    try:
        refused = _reprospec("run", "--resume", run_id, "--out", str(out))
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
    assert refused.code == 2, refused.stderr
    _no_traceback(refused)
    assert refused.stderr == (
        f"reprospec: --resume {run_id}: its folder {folder} cannot be written: "
        "Read-only file system\n"
    )
    resumed = _reprospec("run", "--resume", run_id, "--out", str(out))
    assert resumed.code == 0, resumed.stderr


# -- several engines on one store ----------------------------------------------------------

HOLDER = """\
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")  # what an engine creating the store holds
open(sys.argv[1] + ".held", "w").close()
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def test_an_engine_waits_while_another_process_creates_the_store(tmp_path: Path) -> None:
    # sqlite answers "database is locked" at once (no busy wait) to a connection that
    # reads and then wants to write while another writes: a fresh store switching to
    # WAL while another process holds the write lock.
    out = tmp_path / "out"
    out.mkdir()
    db = out / "results.db"
    holder = subprocess.Popen([PY, "-c", HOLDER, str(db), "2"])
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{db}.held").exists():
            assert time.monotonic() < deadline
            assert holder.poll() is None
            time.sleep(0.02)
        result = _reprospec("run", str(_spec(tmp_path, QUICK)), "--out", str(out))
    finally:
        holder.wait(timeout=60)
    assert result.code == 0, result.stderr
    _no_traceback(result)
    assert _rows(db, "SELECT count(*) FROM attempts") == [(6,)]


def test_two_engines_started_together_on_a_fresh_store_both_finish(tmp_path: Path) -> None:
    spec = _spec(tmp_path, QUICK)
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    for round_ in range(3):
        out = tmp_path / f"out{round_}"
        engines = [
            subprocess.Popen(
                [PY, "-m", "reprospec", "run", str(spec), "--out", str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env=env,
            )
            for _ in range(2)
        ]
        for engine in engines:
            _, err = engine.communicate(timeout=300)
            assert engine.returncode == 0, err
            assert "locked" not in err
        assert _rows(out / "results.db", "SELECT count(*) FROM runs") == [(2,)]
        assert _rows(out / "results.db", "SELECT count(*) FROM attempts") == [(12,)]


# -- an attempt deletes --out --------------------------------------------------------------


# The cleanup step of cell n=2: it removes --out whole. Until it is gone: the engine writes
# into --out beside the attempts (the environment capture's cache/tools.json and the
# store's digest.key, on the capture's thread), so a single rmtree could meet a file made
# after its listing, fail with "Directory not empty" (a load of 20 widens that window)
# and fail the cell, where the store's deletion is what is tested. Then, given words, it
# prints them: a step that says what it did, after the folder of its logs went with --out.
_CLEANUP = """\
import os, shutil, sys
if sys.argv[1] == "2":
    while os.path.exists(sys.argv[2]):
        shutil.rmtree(sys.argv[2], ignore_errors=True)
    if sys.argv[3]:
        print(sys.argv[3])
"""


def _cleanup_run(tmp_path: Path, said: str) -> tuple[CliResult, Path]:
    out = tmp_path / "out"
    (tmp_path / "cleanup.py").write_text(_CLEANUP)
    spec = _spec(
        tmp_path,
        f"""\
        reprospec: 1
        name: cleanup
        matrix:
          n: [1, 2, 3]
        command: python {tmp_path / "cleanup.py"} ${{{{ matrix.n }}}} {out} '{said}'
        expect: {{outcome: pass}}
        """,
    )
    return _reprospec("run", str(spec), "--out", str(out), "-j", "1"), out


def test_an_attempt_deleting_out_does_not_lose_the_store(tmp_path: Path) -> None:
    result, out = _cleanup_run(tmp_path, "")
    assert result.code == 0, result.stderr
    assert f"{out / 'results.db'} was deleted while the run went" in result.stderr
    db = out / "results.db"
    assert _rows(db, "SELECT count(*) FROM attempts") == [(3,)]
    assert _rows(db, "SELECT status FROM runs") == [("finished",)]
    report = (result.latest_run() / "report.md").read_text()
    assert "was deleted while the run went" in report
    shutil.rmtree(out)


def test_an_attempt_that_prints_after_deleting_out_is_judged_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    # Its log is made at its first byte, in a folder the step had just removed: the output
    # was lost, the attempt an infra error whose own empty logs could not be made either,
    # and the run stopped there (exit 3, "stdout.log: No such file or directory").
    result, out = _cleanup_run(tmp_path, "cleaned up")
    assert result.code == 0, result.stderr
    assert "No such file or directory" not in result.stderr
    db = out / "results.db"
    assert _rows(db, "SELECT count(*) FROM attempts") == [(3,)]
    assert _rows(db, "SELECT status FROM runs") == [("finished",)]
    logs = result.latest_run() / "cells" / "n=2" / "1" / "stdout.log"
    assert logs.read_text() == "cleaned up\n"
    assert result.results()["summary"]["reproduced"] == 3
    shutil.rmtree(out)


def test_another_users_run_into_a_store_it_cannot_write_is_refused_before_it_runs(
    shared_out: Path,
) -> None:
    # lo32: without `chmod g+w` on results.db, a teammate's run opened the store read-only
    # without a word, ran every attempt, then stopped with exit 3 ("the file or its disk
    # failed"), and left a -wal and -shm of its own that the owner could not write either.
    spec = _spec(shared_out, "reprospec: 1\nname: t\ncommand: 'true'\nexpect: {outcome: pass}\n")
    spec.chmod(0o644)
    out = shared_out / "out"
    ran = _reprospec("run", str(spec), "--out", str(out))
    assert ran.code == 0, ran.stderr
    # Every folder the group's to write (g+rwX, as the docs say); results.db left 0644.
    for folder in [out, *(p for p in out.rglob("*") if p.is_dir())]:
        folder.chmod(0o777)
    before = sorted(p.name for p in (out / "runs").iterdir())
    done = _as_another_user(shared_out, "run", str(spec), "--out", str(out))
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "not this user's to write: results.db (root's, 0644)" in done.stderr, done.stderr
    assert "chmod g+w" in done.stderr
    assert not [p.name for p in out.iterdir() if p.name.startswith("results.db-")]
    assert sorted(p.name for p in (out / "runs").iterdir()) == before  # nothing ran
    again = _reprospec("run", str(spec), "--out", str(out))
    assert again.code == 0, again.stderr
