"""`reprospec capture -- CMD` where the command, its folder or the shell's variables hold bytes
that are not UTF-8, which a spec (UTF-8 text) cannot: refused before anything runs, or read
back from the environment; never an internal error after the command ran."""

from __future__ import annotations

import os
from pathlib import Path

from reprospec.spec.load import load_spec
from tests.support.cli import Cli

FAIL = "import sys; sys.exit(3)"


def test_a_word_of_the_command_that_is_not_utf8_is_refused_before_it_runs(
    cli: Cli, tmp_path: Path
) -> None:
    # Written into the spec as "\uDC80", it ended the capture with "internal error:
    # UnicodeEncodeError" once the command had run.
    ran = cli("capture", "-o", "s.yaml", "--", "python", "-c", FAIL, "\udc80z", cwd=tmp_path)
    assert ran.code == 2, ran.stderr
    assert "capture: \\x80z: the command's word is not UTF-8 (byte 0x80)" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert not (tmp_path / "s.yaml").exists()
    assert not (tmp_path / ".reprospec").exists()


def test_a_folder_whose_path_is_not_utf8_is_refused_before_it_runs(
    cli: Cli, tmp_path: Path
) -> None:
    folder = tmp_path / "d\udcffir"
    folder.mkdir()
    ran = cli("capture", "-o", str(tmp_path / "s.yaml"), "--", "python", "-c", FAIL, cwd=folder)
    assert ran.code == 2, ran.stderr
    assert "d\\xffir: the folder it runs in is not UTF-8 (byte 0xff)" in ran.stderr
    assert not (tmp_path / "s.yaml").exists()


def test_a_variable_of_the_shell_that_is_not_utf8_is_read_back_not_written(
    cli: Cli, tmp_path: Path
) -> None:
    # OMP_NUM_THREADS=$'\x80' was written `"\uDC80"` and the capture ended with an internal
    # UnicodeEncodeError writing results.json.
    check = "import os, sys; sys.exit(3 if os.environb[b'OMP_NUM_THREADS'] == b'\\x80' else 0)"
    ran = cli(
        "capture", "-o", "s.yaml", "--", "python", "-c", check,
        cwd=tmp_path, env={"OMP_NUM_THREADS": "\udc80"},
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    text = (tmp_path / "s.yaml").read_bytes().decode("utf-8")
    assert (
        "OMP_NUM_THREADS: ${{ env.OMP_NUM_THREADS }}  # your shell's value is not UTF-8 "
        "(byte 0x80): read from your environment"
    ) in text
    assert "verdict reproduced" in ran.stdout, ran.stdout
    load_spec(str(tmp_path / "s.yaml"))


def test_a_file_read_whose_name_holds_a_newline_or_a_backslash_is_in_files(
    cli: Cli, tmp_path: Path
) -> None:
    # One path a line: `new\nline.txt` was recorded as two lines, left out of `files`, and
    # the verify in a copy failed with FileNotFoundError ("more than capture saw it read").
    (tmp_path / "new\nline.txt").write_text("x", encoding="utf-8")
    (tmp_path / "back\\slash.txt").write_text("y", encoding="utf-8")
    # A line separator str.splitlines() also splits at (valid UTF-8 in a name).
    (tmp_path / "line\u2028sep.txt").write_text("z", encoding="utf-8")
    (tmp_path / "carriage\rreturn.txt").write_text("w", encoding="utf-8")
    code = (
        "import sys; open('new\\nline.txt').read(); open('back\\\\slash.txt').read(); "
        "open('line\\u2028sep.txt').read(); open('carriage\\rreturn.txt').read(); sys.exit(3)"
    )
    ran = cli("capture", "-o", "s.yaml", "--", "python", "-c", code, cwd=tmp_path)
    assert ran.code == 0, ran.stderr
    spec = load_spec(str(tmp_path / "s.yaml"))
    files = spec.document["files"]
    assert isinstance(files, list)
    assert set(map(str, files)) == {
        "new\nline.txt",
        "back\\slash.txt",
        "line\u2028sep.txt",
        "carriage\rreturn.txt",
    }
    # Said on one line, the newline written out.
    assert "new\\x0aline.txt" in ran.stdout
    assert "new\nline.txt" not in ran.stdout
    assert "verdict reproduced" in ran.stdout, ran.stdout


def test_a_file_read_whose_name_is_not_utf8_is_said_not_carried(cli: Cli, tmp_path: Path) -> None:
    # Its bytes are lost to the record: it was left out of `files` without a word, and the
    # verify's miss said "name it in the spec's files", which no spec can.
    (tmp_path / os.fsdecode(b"bad\x80.txt")).write_text("x", encoding="utf-8")
    code = "open(b'bad\\x80.txt').read(); raise SystemExit(3)"
    ran = cli("capture", "-o", "s.yaml", "--", "python3", "-c", code, cwd=tmp_path)
    assert ran.code == 1, ran.stderr  # the copy's verify missed, as said
    assert "under a name that is not UTF-8, which no spec can name" in ran.stdout, ran.stdout
    assert "bad\ufffd.txt, whose name is not UTF-8, which no spec can name" in ran.stdout
    assert "name it in the spec's `files`" not in ran.stdout
    assert "bad\ufffd.txt (its name is not UTF-8)" in (tmp_path / "s.yaml").read_text("utf-8")
