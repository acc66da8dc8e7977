"""compare's program files: each file digested under the store's key, told added, removed
or changed by path; a run without the record is unknown, never the same."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.store import digests
from reprospec.store.compare import FilesChange, compare, files_change
from reprospec.store.digests import FILES_FIELD, file_digests, store_key
from tests.support.runs import error_run


def _record(key: bytes, folder: Path, **files: str) -> JsonObject:
    paths = {}
    for name, text in files.items():
        path = folder / f"{name}.py"
        path.write_text(text)
        paths[f"{name}.py"] = path
    return {FILES_FIELD: file_digests(key, paths)}


def test_files_added_removed_and_changed_by_path(tmp_path: Path) -> None:
    key = store_key(tmp_path / "out")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before = _record(key, tmp_path / "a", train="x = 1\n", util="u\n", gone="g\n")
    after = _record(key, tmp_path / "b", train="x = 2\n", util="u\n", new="n\n")
    assert files_change(before, after, "A", "B") == {
        "added": ["new.py"],
        "removed": ["gone.py"],
        "changed": ["train.py"],
        "by_size": [],
        "same": 1,
        "unknown": "",
        "workdirs": [],
        "named": [],
        "partial": "",
    }
    assert files_change(after, after, "B", "B")["same"] == 3


def test_a_run_without_the_record_is_unknown_never_the_same(tmp_path: Path) -> None:
    key = store_key(tmp_path / "out")
    record = _record(key, tmp_path, train="x\n")
    change = files_change({"python": {}}, record, "old-run", "new-run")
    assert change["unknown"].startswith("old-run kept no digests of the program's files")
    assert (change["same"], change["changed"], change["added"]) == (0, [], [])


def test_runs_of_two_stores_tell_added_and_removed_not_changed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    one = _record(store_key(tmp_path / "one"), tmp_path / "a", train="x\n", old="o\n")
    two = _record(store_key(tmp_path / "two"), tmp_path / "a", train="x\n", new="n\n")
    change = files_change(one, two, "A", "B")
    # The same bytes digest apart under two keys: not "changed", and not "same" either.
    assert (change["added"], change["removed"], change["changed"]) == (["new.py"], ["old.py"], [])
    assert change["unknown"].startswith("whether the 1 file in both runs changed is unknown")
    assert change["same"] == 0
    # A run that named no file needs no key: nothing to compare by digest.
    assert files_change({FILES_FIELD: file_digests(None, {})}, one, "A", "B")["unknown"] == ""


def test_a_digest_is_keyed_not_a_plain_sha256(tmp_path: Path) -> None:
    # A bundle carries a config with its secret masked beside results.json: a plain
    # digest of the file as it ran would let a reader test guesses of the secret.
    path = tmp_path / "config.yaml"
    path.write_text("password: hunter2\n")
    digest = digests.file_digest(store_key(tmp_path / "out"), path)
    assert len(digest) == 32
    assert digest not in hashlib.sha256(path.read_bytes()).hexdigest()
    assert digests.file_digest(b"k" * 32, tmp_path / "missing").startswith("unreadable: ")


def test_a_file_over_the_limit_is_told_by_size_and_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1 MiB: a 60 MiB input took 50 ms of every run's start to digest (64 MiB was the limit).
    assert digests.DIGEST_LIMIT == 1 << 20
    monkeypatch.setattr(digests, "DIGEST_LIMIT", 8)
    key = store_key(tmp_path / "out")
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    os.utime(data, ns=(1_000_000_000, 1_000_000_000))
    before = {FILES_FIELD: file_digests(key, {"data.bin": data})}
    assert before[FILES_FIELD] == {
        "store": before[FILES_FIELD]["store"],
        "of": [["data.bin", "size:10:mtime:1000000000"]],
    }
    data.write_bytes(b"0123456789abc")
    after = {FILES_FIELD: file_digests(key, {"data.bin": data})}
    change = files_change(before, after, "A", "B")
    assert (change["changed"], change["by_size"]) == (["data.bin"], ["data.bin"])
    assert "  data.bin: changed (size or time)" in _files_text(change)


def _files_text(change: FilesChange) -> list[str]:
    from reprospec.report.compare import lines

    comparison = compare(error_run(), error_run())
    return lines({**comparison, "files": change}, "spec")


def test_the_files_the_command_names_are_never_compared_only_named(tmp_path: Path) -> None:
    """A log the command writes (`--log run.log`) was told changed at every run. It is not
    the program's: named as not compared, in either run's record, and not compared where
    a run of the engine before this digested it."""
    key = store_key(tmp_path / "out")
    train, log = tmp_path / "train.py", tmp_path / "run.log"
    train.write_text("x\n")
    log.write_text("log of run 1\n")
    # A run of the engine before this one digested the log as a program file.
    old: JsonObject = {FILES_FIELD: file_digests(key, {"train.py": train, "run.log": log})}
    log.write_text("log of run 2\n")
    new: JsonObject = {
        FILES_FIELD: {**file_digests(key, {"train.py": train}), "named": ["run.log"]}
    }
    change = files_change(old, new, "A", "B")
    assert (change["changed"], change["removed"], change["same"]) == ([], [], 1)
    assert change["named"] == ["run.log"]
    text = _files_text(change)
    at = text.index("same program files (1)")
    assert text[at + 1] == (
        "  not compared, named by the command, which may write them (list in `files` what "
        "it reads): run.log"
    )


def test_a_search_probe_reads_no_files_and_is_unknown(tmp_path: Path) -> None:
    key = store_key(tmp_path / "out")
    record = _record(key, tmp_path, train="x\n")
    probe: JsonObject = {
        FILES_FIELD: {"store": None, "of": [], "skipped": "a probe of isolate: its search's id"}
    }
    change = files_change(record, probe, "A", "P")
    assert change["unknown"] == "P read none (a probe of isolate: its search's id)"
    assert (change["same"], change["added"], change["removed"]) == (0, [], [])
    assert "program files: unknown (P read none (a probe of isolate: its search's id))" in (
        _files_text(change)
    )


def test_a_resume_under_other_files_is_refused(tmp_path: Path) -> None:
    from reprospec.errors import UsageError
    from reprospec.pipeline.programfiles import refuse_other_files

    key = store_key(tmp_path / "out")
    began = _record(key, tmp_path, train="x = 1\n")
    resumed = _record(key, tmp_path, train="x = 2\n")[FILES_FIELD]
    assert isinstance(resumed, dict)
    with pytest.raises(UsageError) as refused:
        refuse_other_files(began, resumed, "run-1")
    assert str(refused.value).startswith(
        "--resume run-1: the program's files are not the run's (train.py: changed): "
    )
    assert refused.value.exit_code == 2
    again = _record(key, tmp_path, train="x = 2\n")[FILES_FIELD]
    assert isinstance(again, dict)
    assert refuse_other_files({FILES_FIELD: resumed}, again, "run-1") == ()  # the same files
    assert refuse_other_files({}, resumed, "run-1") == ()  # a run that kept none
    # A file the run lacked, there now: no attempt ran it (the fix of a `can't open file`).
    (added,) = refuse_other_files({FILES_FIELD: {**resumed, "of": []}}, resumed, "run-1")
    assert added.endswith(": train.py"), added
    # One the run had, gone now: refused as a changed one.
    with pytest.raises(UsageError, match=r"\(train\.py: removed\)"):
        refuse_other_files({FILES_FIELD: resumed}, {**resumed, "of": []}, "run-1")


def _in_workdir(record: JsonObject, workdir: str, **keys: str) -> JsonObject:
    """`record` as a run of this engine keeps it: each file's path in its `workdir` too."""
    files = record[FILES_FIELD]
    assert isinstance(files, dict)
    return {
        FILES_FIELD: {**files, "workdir": workdir, "in_workdir": [[n, k] for n, k in keys.items()]}
    }


def _named(record: JsonObject, names: dict[str, str]) -> JsonObject:
    """`record` with its files named as another run named them (a workdir written absolute)."""
    files = record[FILES_FIELD]
    assert isinstance(files, dict)
    assert isinstance(files["of"], list)
    of: list[JsonValue] = [
        [names[str(pair[0])], pair[1]] for pair in files["of"] if isinstance(pair, list)
    ]
    return {FILES_FIELD: {**files, "of": of}}


def test_a_file_is_matched_by_its_path_in_its_workdir(tmp_path: Path) -> None:
    """amplify's amplified.yaml writes the workdir absolute, and a bundle's rerun runs it in
    the bundle's tree: the same race.py, named `race/race.py` by one run and
    `/home/u/race/race.py` by the other, read "removed" and "added"."""
    key = store_key(tmp_path / "out")
    (tmp_path / "race").mkdir()
    plain = _record(key, tmp_path / "race", race="x = 1\n", util="u\n")
    moved = {"race.py": "/home/u/race/race.py", "util.py": "/home/u/race/util.py"}
    a = _in_workdir(
        _named(plain, {n: f"race/{n}" for n in moved}), "race", **{f"race/{n}": n for n in moved}
    )
    b = _in_workdir(_named(plain, moved), "/home/u/race", **{v: n for n, v in moved.items()})
    change = files_change(a, b, "A", "B")
    assert (change["added"], change["removed"], change["changed"]) == ([], [], [])
    assert change["same"] == 2
    # Said, since the runs' folders differ.
    assert change["workdirs"] == ["race", "/home/u/race"]
    # An edit is told by the first run's name.
    edited = _record(key, tmp_path / "race", race="x = 2\n", util="u\n")
    b = _in_workdir(_named(edited, moved), "/home/u/race", **{v: n for n, v in moved.items()})
    assert files_change(a, b, "A", "B")["changed"] == ["race/race.py"]
    # Of two stores (a bundle rerun elsewhere): in both, whether it changed unknown.
    other = _record(
        store_key(tmp_path / "elsewhere"), tmp_path / "race", race="x = 1\n", util="u\n"
    )
    b = _in_workdir(_named(other, moved), "/home/u/race", **{v: n for n, v in moved.items()})
    change = files_change(a, b, "A", "B")
    assert (change["added"], change["removed"]) == ([], [])
    assert change["unknown"].startswith("whether the 2 files in both runs changed is unknown")


def test_a_record_without_paths_in_the_workdir_is_compared_by_name(tmp_path: Path) -> None:
    """A run of an older engine kept the names alone: both runs' files are matched by them,
    as before (a renamed workdir still reads added and removed)."""
    key = store_key(tmp_path / "out")
    old = _named(_record(key, tmp_path, race="x\n"), {"race.py": "race/race.py"})
    new = _in_workdir(
        _named(_record(key, tmp_path, race="x\n"), {"race.py": "/home/u/race/race.py"}),
        "/home/u/race",
        **{"/home/u/race/race.py": "race.py"},
    )
    change = files_change(old, new, "A", "B")
    assert (change["added"], change["removed"]) == (["/home/u/race/race.py"], ["race/race.py"])
    assert change["workdirs"] == []
    same = _named(_record(key, tmp_path, race="x\n"), {"race.py": "race/race.py"})
    assert files_change(old, same, "A", "B")["same"] == 1
