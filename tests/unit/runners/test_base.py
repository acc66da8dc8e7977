"""What every runner shares: the logs an attempt that ran and did not pass keeps."""

from __future__ import annotations

from pathlib import Path

from reprospec.runners.base import keep_logs


def test_an_attempt_that_ran_keeps_both_logs_and_what_it_wrote(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_bytes(b"Traceback")
    keep_logs(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "stdout.log": b"",
        "stderr.log": b"Traceback",
    }


def test_a_folder_gone_is_left_gone(tmp_path: Path) -> None:
    keep_logs(tmp_path / "gone")
    assert not (tmp_path / "gone").exists()


def test_a_cd_out_of_the_workdir_is_not_inside_it() -> None:
    from reprospec.core.sections import Command
    from reprospec.runners.base import _cd_folders_of

    workdir = Path("/w/proj")
    out = _cd_folders_of(Command(("/bin/sh", "-c", "cd ../other && ./prog")), workdir)
    assert out == (Path("/w/other"),)
    assert not out[0].is_relative_to(workdir)  # docker watches no folder beyond its mount
    inside = _cd_folders_of(Command(("/bin/sh", "-c", "cd sub/../build && ./t")), workdir)
    assert inside == (Path("/w/proj/build"),)
