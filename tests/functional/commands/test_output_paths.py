"""`-o`/`--output` and `--out` that cannot be written are refused before anything runs.

`minimize -o /proc/min-out` ran its whole search, then exited 2 with `No such file or
directory: /proc/min-out`, naming no option; `-o a_file/sub` the same (`Not a
directory`). Every verb that writes a folder or file checks these paths first
(cli._dispatch, options.check_writable): a located error naming the option, exit 2, no
traceback, no run stored.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import ROOT, run_cli

SPEC = str(ROOT / "tests" / "data" / "minimize" / "crash.yaml")


def _cases(tmp: Path) -> list[tuple[list[str], str]]:
    store = str(tmp / "store")
    under_file = str(tmp / "a_file" / "sub")
    cases: list[tuple[list[str], str]] = []
    for bad in ("/proc/reprospec-out", under_file):
        cases += [
            (["minimize", SPEC, "-o", bad, "--out", store], "-o"),
            (["capture", "--from-log", "-", "-o", bad, "--out", store], "-o"),
            (["bundle", "latest", "-o", bad, "--out", store], "-o"),
            (["materialize", str(tmp / "nothing.tar.gz"), "-o", bad], "-o"),
            (["run", SPEC, "--out", bad], "--out"),
            (["isolate", SPEC, "--out", bad], "--out"),
            (["minimize", SPEC, "--out", bad], "--out"),
            (["amplify", SPEC, "--out", bad], "--out"),
            (["bisect", SPEC, "--out", bad], "--out"),
            # merge writes its run into --out; slurm its scripts and the shards' runs.
            (["merge", str(tmp / "shard"), "--out", bad], "--out"),
            (["slurm", SPEC, "--shards", "1", "--out", bad], "--out"),
        ]
    return cases


@pytest.mark.parametrize("index", range(22))
def test_an_unwritable_output_is_refused_before_anything_runs(tmp_path: Path, index: int) -> None:
    (tmp_path / "a_file").write_text("not a folder\n", encoding="utf-8")
    argv, flag = _cases(tmp_path)[index]
    bad = argv[argv.index(flag) + 1]
    # Before the fix minimize ran its whole search (minutes) before it said anything.
    result = run_cli(tmp_path, *argv, cwd=tmp_path, stdin="", timeout=60)
    assert result.code == 2, result.stderr
    assert f"reprospec: {flag} {bad}: cannot write there: " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    # Nothing ran: no store was made, neither the one named nor the default.
    assert not (tmp_path / "store").exists()
    assert not (tmp_path / ".reprospec").exists()


# The probe made a folder in the nearest one that exists and named that one with
# the errno of the folder made inside it: `--out /proc/x` said `No such file or directory:
# /proc`, as if /proc were missing. The mkdir that failed is named now, on its own path.
PROC = "/proc/reprospec-out"
IN_PROC = f"mkdir {PROC}: No such file or directory (/proc exists, but nothing can be made in it)"


def _said(tmp: Path, *argv: str) -> str:
    """What the command printed on stderr, refused: exit 2, no traceback, nothing made."""
    result = run_cli(tmp, *argv, cwd=tmp, stdin="", timeout=60)
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp / ".reprospec").exists()
    return result.stderr.strip()


@pytest.mark.parametrize(
    "verb",
    [
        ["run", SPEC],
        ["merge", "shard"],
        ["slurm", SPEC, "--shards", "1"],
        ["bundle", "latest", "-o", "b.tar.gz"],
        ["isolate", SPEC],
    ],
)
def test_out_in_proc_names_the_mkdir_that_failed(tmp_path: Path, verb: list[str]) -> None:
    said = _said(tmp_path, *verb, "--out", PROC)
    assert said == f"reprospec: --out {PROC}: cannot write there: {IN_PROC}"


def test_an_output_file_in_proc_names_the_mkdir_that_failed(tmp_path: Path) -> None:
    for argv in (["schema"], ["bundle", "latest"], ["minimize", SPEC]):
        said = _said(tmp_path, *argv, "-o", f"{PROC}/out.json")
        assert said == f"reprospec: -o {PROC}/out.json: cannot write there: {IN_PROC}", argv
    # A file right in /proc: its folder is there, the file cannot be made (report -o's
    # writer, write_output, is schema's).
    said = _said(tmp_path, "schema", "-o", "/proc/reprospec.json")
    assert said == (
        "reprospec: -o /proc/reprospec.json: cannot write there: write /proc/reprospec.json: "
        "No such file or directory (/proc exists, but nothing can be made in it)"
    )


def test_a_file_output_whose_folder_exists_is_probed_as_that_file(tmp_path: Path) -> None:
    """capture's spec and bundle's archive are files: `capture -o /proc/x.yaml` said `mkdir
    /proc/x.yaml`, naming the file as a folder it tried to make; now the write that fails."""
    (tmp_path / "a_file").write_text("not a folder\n", encoding="utf-8")
    for argv in (["capture", "--from-log", "-"], ["bundle", "latest"]):
        said = _said(tmp_path, *argv, "-o", "/proc/x.yaml")
        assert said == (
            "reprospec: -o /proc/x.yaml: cannot write there: write /proc/x.yaml: "
            "No such file or directory (/proc exists, but nothing can be made in it)"
        ), argv
        bad = tmp_path / "a_file" / "x.yaml"
        said = _said(tmp_path, *argv, "-o", str(bad))
        assert said == (
            f"reprospec: -o {bad}: cannot write there: write {bad}: "
            f"Not a directory ({tmp_path / 'a_file'} is a file)"
        ), argv
    # The probe's file is gone again; a folder output is still probed as a folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]
    said = _said(tmp_path, "minimize", SPEC, "-o", "/proc/x.yaml")
    assert said == (
        "reprospec: -o /proc/x.yaml: cannot write there: mkdir /proc/x.yaml: "
        "No such file or directory (/proc exists, but nothing can be made in it)"
    )


def test_out_under_a_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("not a folder\n", encoding="utf-8")
    bad = tmp_path / "a_file" / "sub" / "deeper"
    is_a_file = f"Not a directory ({tmp_path / 'a_file'} is a file)"
    # The first folder the run would make, as its probe makes it.
    said = _said(tmp_path, "run", SPEC, "--out", str(bad))
    assert said == (f"reprospec: --out {bad}: cannot write there: mkdir {bad.parent}: {is_a_file}")
    # Python's mkdir with its parents fails on the deepest one first.
    said = _said(tmp_path, "schema", "-o", f"{bad}/s.json")
    assert said == f"reprospec: -o {bad}/s.json: cannot write there: mkdir {bad}: {is_a_file}"


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[Path]:
    """A read-only file system mounted on `folder` (root with CAP_SYS_ADMIN); else skip."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_out_on_a_read_only_file_system_says_so(tmp_path: Path) -> None:
    with _read_only(tmp_path / "ro") as ro:
        for argv in (["run", SPEC, "--out", f"{ro}/out"], ["merge", "x", "--out", f"{ro}/out"]):
            said = _said(tmp_path, *argv)
            assert said == (
                f"reprospec: --out {ro}/out: cannot write there: mkdir {ro}/out: "
                "Read-only file system"
            )
        said = _said(tmp_path, "schema", "-o", f"{ro}/s.json")
        assert said == (
            f"reprospec: -o {ro}/s.json: cannot write there: write {ro}/s.json: "
            "Read-only file system"
        )


def test_an_output_file_reprospec_did_not_write_is_kept(tmp_path: Path) -> None:
    # `schema -o /etc/passwd`, run as root, wrote the schema over the machine's users
    # (note71): a file that is not reprospec's is replaced only with --force.
    theirs = tmp_path / "passwd"
    theirs.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    store = str(tmp_path / "store")
    spec = tmp_path / "ok.yaml"
    spec.write_text("reprospec: 1\nname: ok\ncommand: 'true'\nexpect: {outcome: pass}\n")
    assert run_cli(tmp_path, "run", str(spec), "--out", store, cwd=tmp_path).code == 0
    for argv in (["schema"], ["report", "latest", "--out", store]):
        said = _said(tmp_path, *argv, "-o", str(theirs))
        assert said == (
            f"reprospec: -o {theirs}: it exists and is not a file reprospec wrote (a report "
            "or the schema, whose first lines say so): pass --force to replace it, or name "
            "another file"
        ), argv
        assert theirs.read_text(encoding="utf-8") == "root:x:0:0:root:/root:/bin/bash\n"
    # Files that name reprospec are not its outputs: any mention was taken for one, and
    # `schema -o ok.yaml` wrote the schema over the spec beside it.
    readme = tmp_path / "README.md"
    readme.write_text("# demo\n\n    pip install reprospec\n", encoding="utf-8")
    for file in (spec, readme):
        kept = file.read_text(encoding="utf-8")
        for argv in (["schema"], ["report", "latest", "--out", store]):
            said = _said(tmp_path, *argv, "-o", str(file))
            assert "it exists and is not a file reprospec wrote" in said, argv
            assert file.read_text(encoding="utf-8") == kept
    # Each report format replaces what it wrote before.
    for fmt in ("md", "html", "junit", "json", "github"):
        report = tmp_path / f"report.{fmt}"
        for _ in range(2):
            argv = ["report", "latest", "--format", fmt, "--out", store, "-o", str(report)]
            done = run_cli(tmp_path, *argv)
            assert done.code == 0, (fmt, done.stderr)
    said = _said(tmp_path, "schema", "-o", str(tmp_path))
    assert said == f"reprospec: -o {tmp_path}: it is a folder: name the file to write"
    # What an earlier -o wrote is replaced, as --force replaces theirs.
    ours = tmp_path / "schema.json"
    for argv in (["-o", str(ours)], ["-o", str(ours)], ["-o", str(theirs), "--force"]):
        done = run_cli(tmp_path, "schema", *argv, cwd=tmp_path)
        assert done.code == 0, (argv, done.stderr)
    assert '"$id"' in theirs.read_text(encoding="utf-8")


def test_an_output_file_ending_in_a_slash_is_refused(tmp_path: Path) -> None:
    # `report latest -o out/` wrote the report as a file named `out`: Path drops the trailing
    # slash that said a folder was meant, and no folder was there yet to refuse.
    store = str(tmp_path / "store")
    spec = tmp_path / "ok.yaml"
    spec.write_text("reprospec: 1\nname: ok\ncommand: 'true'\nexpect: {outcome: pass}\n")
    assert run_cli(tmp_path, "run", str(spec), "--out", store, cwd=tmp_path).code == 0
    for argv in (["schema"], ["report", "latest", "--out", store]):
        said = _said(tmp_path, *argv, "-o", f"{tmp_path}/out/")
        assert said.endswith(
            f"argument -o/--output: {tmp_path}/out/ names a folder (the trailing /): "
            "name the file to write"
        ), argv
        assert not (tmp_path / "out").exists()
