"""RunFolder.prune: what an attempt that passed leaves in the run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.errors import InfraError
from reprospec.process.childprotocol import EVENTS
from reprospec.process.leftovers import INFLIGHT, RECORD_SIZE
from reprospec.store import runfolder
from reprospec.store.runfolder import SPARE, RunFolder


def _attempt(folder: RunFolder, cell: str, number: int, files: dict[str, str]) -> Path:
    path = folder.attempt_dir(cell, number)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path


def test_a_silent_attempt_leaves_no_folder_and_its_cell_goes_when_it_ends(
    tmp_path: Path,
) -> None:
    folder = RunFolder(tmp_path / "run").create()
    _attempt(folder, "a=1", 1, {"stdout.log": "", "stderr.log": "", "events.jsonl": ""})
    assert folder.prune("a=1", 1)
    assert not (folder.cells / "a=1" / "1").exists()
    # Kept for the cell's next attempt (one mkdir each, not two and an rmdir)...
    assert (folder.cells / "a=1").is_dir()
    _attempt(folder, "a=1", 2, {"stdout.log": ""})
    assert folder.prune("a=1", 2)
    # ...and gone with the cell, when none of its attempts left a folder.
    folder.end_cells(["a=1"])
    assert not (folder.cells / "a=1").exists()
    assert folder.cells.is_dir()
    folder.end_cells(["a=1"])  # again, or a cell that made no folder: no error


def test_a_silent_pass_hands_its_empty_folder_to_the_cells_next_attempt(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").create()
    first = _attempt(folder, "a=1", 1, {"stdout.log": "", "events.jsonl": ""})
    (first / "stack.txt").write_text("")
    assert folder.prune("a=1", 1)
    spare = folder.cells / "a=1" / SPARE
    # Renamed, not removed: the next attempt's folder is a rename, not a mkdir (and the
    # rmdir before it), which cost a silent pass about 50 us of the engine's CPU.
    assert spare.is_dir()
    assert not first.exists()
    assert [p.name for p in spare.iterdir()] == [EVENTS]  # empty: the next attempt's
    assert folder.attempt_folders() == []  # no attempt's folder
    second = folder.attempt_dir("a=1", 2)
    assert second.is_dir()
    assert [p.name for p in second.iterdir()] == [EVENTS]
    assert not spare.exists()
    # One that wrote something is kept as it is, and the spare waits for the next.
    (second / "stdout.log").write_text("hello\n")
    assert not folder.prune("a=1", 2)
    assert (second / "stdout.log").read_text() == "hello\n"
    assert not spare.exists()
    _attempt(folder, "a=1", 3, {})
    assert folder.prune("a=1", 3)
    assert spare.is_dir()
    # A folder of files already there (a resumed attempt's) is set aside, kept, and the
    # attempt gets an empty one of its name.
    assert folder.attempt_dir("a=1", 2) == second
    assert list(second.iterdir()) == []
    assert (folder.cells / "a=1" / "2.interrupted" / "stdout.log").read_text() == "hello\n"
    assert spare.is_dir()
    folder.end_cells(["a=1"])
    assert not spare.exists()
    assert sorted(p.name for p in (folder.cells / "a=1").iterdir()) == ["2", "2.interrupted"]
    _attempt(folder, "b=2", 1, {})
    assert folder.prune("b=2", 1)
    folder.end_cells(["b=2"])
    assert not (folder.cells / "b=2").exists()


def test_what_an_attempt_wrote_stays_and_the_empty_files_go(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").create()
    kept = _attempt(
        folder,
        "a=1",
        1,
        {
            "stdout.log": "hello\n",
            "stderr.log": "",
            "events.jsonl": "",
            "instance-0/stdout.log": "",
            "instance-1/stderr.log": "warning\n",
        },
    )
    silent = _attempt(folder, "a=1", 2, {"stdout.log": ""})
    assert not folder.prune("a=1", 1)
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == [
        "instance-1",
        "instance-1/stderr.log",
        "stdout.log",
    ]
    # The cell keeps its folder while one of its attempts has something in it.
    assert folder.prune("a=1", 2)
    assert not silent.exists()
    folder.end_cells(["a=1"])
    assert kept.is_dir()
    # Pruning again, or an attempt that made no folder, is no error.
    assert folder.prune("a=1", 2)
    assert folder.prune("b=2", 1)


def test_engine_gone_only_where_this_machine_can_tell(tmp_path: Path) -> None:
    """`history` calls a `running` run `killed` on this answer: only for an engine of this
    machine that has ended, never for one that runs, one another machine ran (a Slurm
    shard on a compute node sharing `--out`), or a folder that names none."""
    import json
    import socket

    from reprospec.store.runfolder import ENGINE_JSON, RunFolder

    folder = RunFolder.of(tmp_path, "r1").create()
    assert not folder.engine_gone()  # no engine.json: a run from before it was written
    folder.claim()
    assert not folder.engine_gone()  # this process
    # This pid, but not this process: the engine's pid taken by a later one.
    record = json.loads((folder.path / ENGINE_JSON).read_text())
    ended = {**record, "started": record["started"] - 1}
    (folder.path / ENGINE_JSON).write_text(json.dumps(ended))
    assert folder.engine_gone()
    elsewhere = {**ended, "host": socket.gethostname() + "-other"}
    (folder.path / ENGINE_JSON).write_text(json.dumps(elsewhere))
    assert not folder.engine_gone()


def test_a_stop_is_noted_over_engine_json_own_bytes(tmp_path: Path) -> None:
    """`note_stop` writes where a full disk gives no new block: within the size `claim`
    wrote, the engine kept, a reason too long for the room cut to fit."""
    from reprospec.store.runfolder import ENGINE_JSON, RunFolder

    folder = RunFolder.of(tmp_path, "r1").create().claim()
    size = (folder.path / ENGINE_JSON).stat().st_size
    assert folder.stop_noted() == ""
    folder.note_stop("the disk was full (ENOSPC)")
    assert folder.stop_noted() == "the disk was full (ENOSPC)"
    assert not folder.engine_gone()  # the engine is still read
    folder.note_stop("a write failed: " + "x" * 2000)
    assert (folder.path / ENGINE_JSON).stat().st_size == size
    assert folder.stop_noted().startswith("a write failed: xxx")
    assert folder.stop_noted().endswith("...")


def test_merged_slurm_runs_are_found_under_a_shared_out_and_counted_by_latest_only_if_asked(
    tmp_path: Path,
) -> None:
    from reprospec.store.refs import recent_run_ids, resolve_run_id

    def results(folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "results.json").write_text("{}")

    results(tmp_path / "runs" / "20261201-000001-own-aaaa")
    results(
        tmp_path / "slurm" / "20261201-000002-s-bbbb" / "merged" / "runs" / "20261201-000009-s-cccc"
    )
    # A shard's own run, and a merge that has not written its results yet: not merged runs.
    results(
        tmp_path
        / "slurm"
        / "20261201-000002-s-bbbb"
        / "shards"
        / "1"
        / "runs"
        / "20261201-000003-s-dddd"
    )
    (
        tmp_path / "slurm" / "20261201-000004-t-eeee" / "merged" / "runs" / "20261201-000010-t-ffff"
    ).mkdir(parents=True)
    found = RunFolder.merged_slurm_under(tmp_path)
    assert [f.run_id for f in found] == ["20261201-000009-s-cccc"]
    assert RunFolder.merged_slurm_under(tmp_path / "nowhere") == []
    assert recent_run_ids(tmp_path) == ["20261201-000001-own-aaaa"]
    assert recent_run_ids(tmp_path, slurm_merged=True) == [
        "20261201-000009-s-cccc",
        "20261201-000001-own-aaaa",
    ]
    # `run --resume latest` reads the store: a merged run is not its `latest`.
    assert resolve_run_id("latest", tmp_path) == "20261201-000001-own-aaaa"
    assert resolve_run_id("latest", tmp_path, slurm_merged=True) == "20261201-000009-s-cccc"


def test_a_run_id_prefix_shared_with_a_merged_slurm_run_is_ambiguous_for_a_reader(
    tmp_path: Path,
) -> None:
    # `report 20261201-011307` named the store's run without a word, though a
    # merged Slurm run under the same --out begins with it too (history lists both).
    import pytest

    from reprospec.errors import UsageError
    from reprospec.store.refs import run_id_named
    from reprospec.store.resultsjson import find_run

    def results(folder: Path) -> Path:
        folder.mkdir(parents=True)
        (folder / "results.json").write_text("{}")
        return folder / "results.json"

    own = results(tmp_path / "runs" / "20261201-011307-b-9053")
    merged = results(
        tmp_path / "slurm" / "S1" / "merged" / "runs" / "20261201-011307-b-ffff",
    )
    with pytest.raises(
        UsageError, match="ambiguous: 20261201-011307-b-9053, 20261201-011307-b-ffff"
    ):
        find_run("20261201-011307", tmp_path)
    assert find_run("20261201-011307-b-9", tmp_path) == own
    assert find_run("20261201-011307-b-f", tmp_path) == merged
    assert find_run("20261201-011307-b-ffff", tmp_path) == merged
    # `run --resume` reads the store alone: a merged run is never resumed.
    assert run_id_named("20261201-011307", tmp_path) == "20261201-011307-b-9053"


def test_a_merged_slurm_run_was_made_under_the_shared_out_not_its_merge_folder(
    tmp_path: Path,
) -> None:
    # Bundle --verify of a venv run found the run's environments in
    # run_dir.parent.parent/envs: for a merged Slurm run, SHARED/slurm/<id>/merged/envs,
    # where none are; slurm builds them in SHARED/envs.
    slurm = tmp_path / "slurm" / "20261201-000002-s-bbbb"
    merged = RunFolder(slurm / "merged" / "runs" / "20261201-000009-s-cccc")
    for k in (2, 1, 10):
        (slurm / "shards" / str(k)).mkdir(parents=True)
    assert merged.merged_of == slurm
    assert merged.made_under == tmp_path
    assert merged.shard_stores == [slurm / "shards" / str(k) for k in (1, 2, 10)]
    own = RunFolder.of(tmp_path, "20261201-000001-own-aaaa")
    assert own.merged_of is None
    assert own.made_under == tmp_path == own.out
    assert own.shard_stores == []
    # A shard's own run is a store's run, made under its shard folder.
    shard = RunFolder.of(slurm / "shards" / "1", "20261201-000003-s-dddd")
    assert shard.merged_of is None
    assert shard.made_under == slurm / "shards" / "1"


def test_a_silent_pass_hands_on_its_empty_events_and_blank_record_and_no_other_folder_keeps_them(
    tmp_path: Path,
) -> None:
    folder = RunFolder(tmp_path / "run").create()
    blank = " " * RECORD_SIZE
    first = _attempt(folder, "a=1", 1, {EVENTS: "", INFLIGHT: blank, "stdout.log": ""})
    inodes = {name: (first / name).stat().st_ino for name in (EVENTS, INFLIGHT)}
    assert folder.prune("a=1", 1)
    second = folder.attempt_dir("a=1", 2)
    # The next attempt's folder holds them, the same files: none created, none unlinked.
    assert sorted(p.name for p in second.iterdir()) == [EVENTS, INFLIGHT]
    assert {name: (second / name).stat().st_ino for name in inodes} == inodes
    assert (second / INFLIGHT).read_text() == blank
    # A pass that printed keeps what it printed, and neither of them.
    (second / "stdout.log").write_text("hello\n")
    assert not folder.prune("a=1", 2)
    assert sorted(p.name for p in second.iterdir()) == ["stdout.log"]
    # A record that is not a blank one's size (its attempt's own command wrote to it) is
    # no blank record: kept where it is, with the folder.
    third = _attempt(folder, "a=1", 3, {EVENTS: "", INFLIGHT: blank + "x"})
    assert not folder.prune("a=1", 3)
    assert sorted(p.name for p in third.iterdir()) == [INFLIGHT]
    # A folder that stays (a failure's) loses its blank record.
    fourth = _attempt(folder, "a=1", 4, {EVENTS: "", INFLIGHT: blank})
    folder.clear_record("a=1", 4)
    assert sorted(p.name for p in fourth.iterdir()) == [EVENTS]
    _attempt(folder, "a=1", 5, {EVENTS: "", INFLIGHT: blank})
    assert folder.prune("a=1", 5)
    assert (folder.cells / "a=1" / SPARE / INFLIGHT).exists()
    folder.end_cells(["a=1"])
    assert not (folder.cells / "a=1" / SPARE).exists()
    assert sorted(p.name for p in (folder.cells / "a=1").iterdir()) == ["2", "3", "4"]


def test_the_run_folder_spells_the_child_protocol_and_record_names_as_their_modules() -> None:
    # Spelled in runfolder.py so that a reader of the run folder imports neither module.
    assert {(0, EVENTS), (RECORD_SIZE, INFLIGHT)} == runfolder._HANDED_SIZES


def test_a_new_run_never_gets_a_folder_another_run_has(tmp_path: Path) -> None:
    """Two runs of one spec in one second drew the same 4 random hex digits: the second wrote
    into the first's folder and the store refused its row (a minimize's probes met it)."""
    taken = RunFolder.new(tmp_path, lambda: "20261201-040000-spec-3f9a")
    (taken.path / "report.md").write_text("the first run's")
    draws = iter(
        ["20261201-040000-spec-3f9a", "20261201-040000-spec-3f9a", "20261201-040000-spec-77c1"]
    )
    folder = RunFolder.new(tmp_path, lambda: next(draws))
    assert folder.run_id == "20261201-040000-spec-77c1"
    assert folder.path.is_dir()
    assert (taken.path / "report.md").read_text() == "the first run's"
    with pytest.raises(InfraError, match="64 new run ids were all taken"):
        RunFolder.new(tmp_path, lambda: "20261201-040000-spec-3f9a")


def test_an_attempt_folder_of_files_is_set_aside_not_run_into(tmp_path: Path) -> None:
    """A resumed run's attempt, run again where its killed run left files."""
    folder = RunFolder(tmp_path / "run")
    first = folder.attempt_dir("default", 1)
    (first / "events.jsonl").write_text('{"step": 57}\n')
    again = folder.attempt_dir("default", 1)
    assert again == first
    assert list(again.iterdir()) == []
    aside = again.with_name("1.interrupted")
    assert (aside / "events.jsonl").read_text() == '{"step": 57}\n'
    (again / "core.1").write_text("core")
    folder.attempt_dir("default", 1)
    assert (again.with_name("1.interrupted-2") / "core.1").read_text() == "core"
    # An empty folder is its own again, nothing set aside for it; the set-aside ones are
    # no attempt's folder.
    assert folder.attempt_dir("default", 1) == again
    assert sorted(p.name for p in again.parent.iterdir()) == [
        "1",
        "1.interrupted",
        "1.interrupted-2",
    ]
    assert folder.attempt_folders() == [again]
    # Killed before it wrote: the empty files the runner made as it started (events.jsonl,
    # a stack file, its private tmp/) are no attempt's evidence; they go.
    (again / "events.jsonl").write_text("")
    (again / "stack-7341.txt").write_text("")
    (again / "tmp").mkdir()
    assert folder.attempt_dir("default", 1) == again
    assert list(again.iterdir()) == []
    assert sorted(p.name for p in again.parent.iterdir()) == [
        "1",
        "1.interrupted",
        "1.interrupted-2",
    ]


def test_a_resumed_runs_earlier_parts_are_kept_in_its_folder(tmp_path: Path) -> None:
    """What the next resume reads of the parts before a resumed part killed (it wrote no
    results.json): read back as written; none where the file is missing or damaged."""
    from reprospec.core.resumed import ResumedPart

    folder = RunFolder.of(tmp_path, "run-1").create()
    assert folder.resumed_parts() == ()
    parts = (ResumedPart(1, "interrupted", "2026-12-01T09:00:00+00:00"), ResumedPart(2, "killed"))
    folder.write_resumed_parts(parts)
    assert folder.resumed_parts() == parts
    (folder.path / runfolder.RESUMED_JSON).write_text("{not json")
    assert folder.resumed_parts() == ()
