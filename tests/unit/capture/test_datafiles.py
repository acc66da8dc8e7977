"""The workdir's files a run's records name, and the file names a failing program's output
gives: what a copy of its workdir lacked."""

from __future__ import annotations

from pathlib import Path

from reprospec.capture.datafiles import WorkdirFiles, in_machine_folders, named_in, read_files
from reprospec.core.results import AttemptResult, Outcome


def test_a_quoted_name_with_spaces_is_found_whole(tmp_path: Path) -> None:
    """coreutils and Python quote a name that holds spaces; the plain words found only
    `data.txt` of `my data.txt`."""
    text = (
        "cat: 'my data.txt': No such file or directory\n"
        'FileNotFoundError: [Errno 2] No such file or directory: "conf/run 1.yaml"\n'
    )
    found = named_in(text, tmp_path)
    assert str(tmp_path / "my data.txt") in found
    assert str(tmp_path / "conf/run 1.yaml") in found


def test_plain_words_with_a_dot_or_a_slash_are_names_and_others_are_not(tmp_path: Path) -> None:
    found = named_in(
        "cat: data.txt: No such file or directory\nerror: took ~1.5s, no more", tmp_path
    )
    assert str(tmp_path / "data.txt") in found
    assert not any(name.endswith(("error", "~1.5s", "took")) for name in found)


def test_an_apostrophe_before_a_quoted_name_does_not_pair_with_its_quote(tmp_path: Path) -> None:
    found = named_in("error: can't open 'my data.txt': it isn't there\n", tmp_path)
    assert str(tmp_path / "my data.txt") in found


def test_a_module_only_looked_for_is_listed_only_when_asked(tmp_path: Path) -> None:
    """The child records the names it looked for (imports-PID.txt) and the files whose
    code ran (loaded-PID.txt): a name looked for and never found (`mylib`, not on the
    pytest script's sys.path) is no file of the run's, but a copy's failed import is how
    the verify learns what the copy lacks, so it asks for the names."""
    workdir = tmp_path / "proj"
    for name in ("mylib/__init__.py", "helpers/__init__.py", "helpers/util.py"):
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text("")
    site = workdir / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (workdir / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "dep.py").write_text("")
    run = tmp_path / "run"
    (run / "a").mkdir(parents=True)
    (run / "a" / "imports-7.txt").write_text("helpers\nhelpers.util\nmylib\ndep\n")
    (run / "a" / "syspath-7.txt").write_text(f"{workdir}\n{site}\n")
    (run / "a" / "loaded-7.txt").write_text(
        "".join(f"{path}\n" for path in (workdir / "helpers/__init__.py",
                                          workdir / "helpers/util.py", site / "dep.py"))
    )  # fmt: skip
    attempt = AttemptResult(1, 0.1, Outcome(kind="pass"), True, (), logs="a")
    files = WorkdirFiles(workdir, workdir, tmp_path / "out", leave_out=(), before=0.0)
    assert files.read(run, [attempt]).listed == ("helpers/__init__.py", "helpers/util.py")
    looked = files.read(run, [attempt], ("helpers", "helpers.util", "mylib", "dep"))
    assert looked.listed == ("helpers/__init__.py", "helpers/util.py", "mylib/__init__.py")


def test_code_an_in_memory_loader_made_is_no_file_of_the_workdir(tmp_path: Path) -> None:
    """torch compiles a template as `<_remote_module_non_scriptable>.py` when it is
    imported; the child records it made absolute, in its workdir. It is no file: listed,
    it made a spec whose `files` failed validation (exit 2) for every torch program."""
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "train.py").write_text("")
    run = tmp_path / "run"
    (run / "a").mkdir(parents=True)
    (run / "a" / "loaded-7.txt").write_text(
        f"{workdir / 'train.py'}\n{workdir / '<_remote_module_non_scriptable>.py'}\n"
    )
    attempt = AttemptResult(1, 0.1, Outcome(kind="pass"), True, (), logs="a")
    files = WorkdirFiles(workdir, workdir, tmp_path / "out", leave_out=(), before=0.0)
    assert files.read(run, [attempt]).listed == ("train.py",)


def test_written_since_names_what_a_run_left_but_caches_environments_and_the_store(
    tmp_path: Path,
) -> None:
    import os
    import time

    from reprospec.capture.datafiles import written_since

    old = tmp_path / "data.csv"
    old.write_text("1\n")
    os.utime(old, (time.time() - 60, time.time() - 60))
    before = time.time() - 1
    for name in ("out/ckpt.txt", "out/__pycache__/m.pyc", ".cache/x", "venv/lib/y.py", "s/a.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "spec.yaml").write_text("x")
    store = tmp_path / "store"
    assert written_since(tmp_path, before, (store, tmp_path / "spec.yaml")) == (
        "out/ckpt.txt",
        "s/a.txt",
    )
    (store / "runs").mkdir(parents=True)
    (store / "runs" / "r.json").write_text("{}")
    assert written_since(tmp_path, before, (store,), most=1) == ("out/ckpt.txt",)
    assert "store/runs/r.json" not in written_since(tmp_path, before, (store,), most=9)


def test_a_free_threaded_or_pypy_standard_librarys_file_is_no_data_of_the_programs(
    tmp_path: Path,
) -> None:
    # datafiles' own `/lib/python\d+(\.\d+)?/` beside the stacks' missed another
    # interpreter's lib/python3.13t/ (and lib/pypy3.10/): a file it opened there was taken
    # for the program's input. Judged as read_files judges a path opened outside the workdir.
    def outside(path: Path) -> tuple[str, ...]:
        before = path.stat().st_mtime + 10
        found = read_files(tmp_path, (), tmp_path / "work", before=before, also=[str(path)])
        return found.outside

    for folder in ("python3.13t", "pypy3.10", "python3.11"):
        read = tmp_path / "other" / "lib" / folder / "encodings" / "aliases.txt"
        read.parent.mkdir(parents=True)
        read.write_text("x")
        assert outside(read) == (), folder
    data = tmp_path / "data" / "train.csv"
    data.parent.mkdir()
    data.write_text("1,2\n")
    assert outside(data) == (str(data.resolve()),)


def test_the_machines_folders_are_told_by_the_first_folder_whole() -> None:
    # A `startswith("/lib")` rule took `/library/data.csv` for the system's and missed
    # `/boot`, `/nix` and `/lib32`; the first folder is compared whole.
    assert not in_machine_folders(Path("/library/data.csv"))
    assert not in_machine_folders(Path("/home/a/lib/x"))
    assert not in_machine_folders(Path("/"))
    for machine in ("/lib64/x", "/nix/store/x", "/boot/x", "/lib32/x", "/usr/lib/x"):
        assert in_machine_folders(Path(machine)), machine
