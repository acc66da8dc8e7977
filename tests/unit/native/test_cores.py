"""Where an attempt's cores are looked for: a core pattern's files, as glob.glob finds them."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from reprospec.native.cores import (
    MAX_MOVED_TO,
    MOVED_TO,
    CorePattern,
    _matches,
    _read_core_pattern,
    looked_in,
    moved_to,
)


def test_a_pattern_without_a_wildcard_is_found_as_glob_finds_it(tmp_path: Path) -> None:
    (tmp_path / "core").write_bytes(b"")
    (tmp_path / "core.12").write_bytes(b"")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    weird = tmp_path / "a[b]"
    weird.mkdir()
    (weird / "core").write_bytes(b"")
    for pattern in (
        f"{tmp_path}/core",
        f"{tmp_path}/missing",
        f"{tmp_path}/dangling",
        f"{tmp_path}/core.*",
        f"{glob.escape(str(weird))}/core",
    ):
        assert sorted(_matches(pattern)) == sorted(glob.glob(pattern)), pattern  # noqa: PTH207
    assert _matches(f"{tmp_path}/core") == [f"{tmp_path}/core"]
    assert _matches(f"{glob.escape(str(weird))}/core") == [f"{weird}/core"]


def test_the_folders_an_attempt_moved_to_are_read_once_each_without_the_workdir(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    lines = [str(tmp_path / "a"), str(work), "relative", str(tmp_path / "b"), str(tmp_path / "a")]
    (tmp_path / MOVED_TO).write_text("\n".join(lines) + "\n")
    # The last move last: a crash comes after the move that put its core there.
    assert moved_to(tmp_path, work) == [tmp_path / "b", tmp_path / "a"]
    assert not (tmp_path / MOVED_TO).exists()  # read once: removed
    assert moved_to(tmp_path, work) == []


def test_the_record_of_moves_is_looked_for_only_where_the_attempts_folder_lists_it(
    tmp_path: Path,
) -> None:
    """The listing the runner took once the attempt's processes were gone: a record it
    does not hold is not opened to be found missing (most attempts move nowhere)."""
    work = tmp_path / "work"
    (tmp_path / MOVED_TO).write_text(f"{tmp_path / 'a'}\n")
    assert moved_to(tmp_path, work, frozenset({"stdout.log"})) == []
    assert (tmp_path / MOVED_TO).exists()  # not read: the listing has no record
    assert moved_to(tmp_path, work, frozenset({MOVED_TO})) == [tmp_path / "a"]
    assert not (tmp_path / MOVED_TO).exists()


def test_a_program_that_moves_at_every_step_has_its_last_folders_looked_in(
    tmp_path: Path,
) -> None:
    moves = [str(tmp_path / f"step{n}") for n in range(100)]
    (tmp_path / MOVED_TO).write_text("\n".join(moves) + "\n")
    found = moved_to(tmp_path, tmp_path)
    assert len(found) == MAX_MOVED_TO
    assert found[-1] == tmp_path / "step99"


def test_the_program_a_shell_root_reported_the_death_of_is_the_main_process() -> None:
    """`/bin/sh -c ./prog`: the shell (the root) forks prog, which dies of SIGSEGV, and
    exits 139. The outcome takes it for the main process's crash; its core's header said
    "a child process". The root's child dead of that signal, the last one, is the main
    program's; a child dead of another signal, or any where the root exited 0, is not."""
    from reprospec.native.capture import main_core
    from reprospec.native.coreinfo import CoreInfo

    def core(pid: int, ppid: int, signal: str) -> CoreInfo:
        return CoreInfo(Path(f"core.{pid}"), pid, signal, "/p", "./p", (), ppid)

    shell = 100
    cores = [core(101, shell, "SIGSEGV"), core(102, 101, "SIGSEGV"), core(103, shell, "SIGSEGV")]
    assert main_core(cores, shell, 139) == 2
    assert main_core(cores, shell, 0) is None
    assert main_core(cores, shell, 134) is None  # SIGABRT reported: none died of it
    assert main_core(cores, None, 139) is None
    assert main_core([*cores, core(shell, 1, "SIGSEGV")], shell, -11) == 3  # the root's own


def test_a_pipelines_later_process_is_not_the_main_process(tmp_path: Path) -> None:
    """`set -o pipefail; a | b | c` whose b crashed: bash exits 139 and its report lists b
    after the pipeline's first process, a child's crash to the outcome; its first process
    (`python train.py | tee log`) is the command's program, the main one."""
    from reprospec.native.capture import main_core
    from reprospec.native.coreinfo import CoreInfo

    stderr = tmp_path / "stderr.log"
    stderr.write_text(
        "bash: line 1:  201 Done                    echo x\n"
        "      202 Segmentation fault      (core dumped) | ./b\n"
        "      203                       | cat\n"
    )
    b = CoreInfo(Path("core.202"), 202, "SIGSEGV", "/b", "./b", (), 200)
    assert main_core([b], 200, 139, stderr) is None
    assert main_core([b], 200, 139) == 0  # no report read: the shell's program, as before
    stderr.write_text(
        "bash: line 1:  202 Segmentation fault      (core dumped) ./b 2>&1\n"
        "      203 Done                    | tee log\n"
    )
    assert main_core([b], 200, 139, stderr) == 0
    assert main_core([b], 200, 139, tmp_path / "missing.log") == 0


def test_the_walk_for_cores_leaves_a_run_store_under_the_workdir_out(tmp_path: Path) -> None:
    """`--out out` in the workdir: its attempt folders hold the cores moved there (another
    attempt's, with -j), named as core_pattern names cores; the walk finds none of them."""
    import time

    from reprospec.native.cores import CorePattern, walked_to
    from reprospec.spec.files import STORE_DB

    started = time.time()
    attempt = tmp_path / "out" / "runs" / "r1" / "cells" / "c" / "1"
    attempt.mkdir(parents=True)
    (tmp_path / "out" / STORE_DB).write_bytes(b"")
    (attempt / "core.4242").write_bytes(b"")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "core.77").write_bytes(b"")
    assert walked_to(tmp_path, started, CorePattern("core.%p")) == ([tmp_path / "build"], False)


def test_no_walk_for_a_core_where_the_hard_core_limit_is_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ulimit -Hc 0`: no process could write a core; a crash's reason says so at once,
    without the walk of up to WALK_MAX_ENTRIES entries under the workdir first."""
    import resource
    import time

    from reprospec.native import capture
    from reprospec.native.cores import CorePattern

    walks: list[Path] = []
    real = resource.getrlimit
    monkeypatch.setattr(
        resource,
        "getrlimit",
        lambda which: (0, 0) if which == resource.RLIMIT_CORE else real(which),
    )
    monkeypatch.setattr(capture, "core_pattern", lambda: CorePattern("core"))

    def walked_to(folder: Path, *_: object) -> tuple[list[Path], bool]:
        walks.append(folder)
        return [], False

    monkeypatch.setattr(capture, "walked_to", walked_to)
    stacks = capture.collect_crash_stacks(
        tmp_path / "attempt", token="t", workdir=tmp_path, root_pid=None, returncode=-11,
        started=time.time(), keep_cores=True,
    )  # fmt: skip
    assert stacks is not None
    assert stacks.unavailable is not None
    assert "ulimit -Hc" in stacks.unavailable
    assert walks == []


def test_a_walk_cut_at_its_bound_says_so_in_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workdir of more entries than the walk reads: the reason that no core was found
    says that only the first WALK_MAX_ENTRIES of them were looked in, not all."""
    import resource
    import time

    from reprospec.native import capture, cores

    for n in range(6):
        (tmp_path / f"d{n}" / "sub").mkdir(parents=True)
    monkeypatch.setattr(cores, "WALK_MAX_ENTRIES", 4)
    monkeypatch.setattr(capture, "core_pattern", lambda: cores.CorePattern("core"))
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (-1, -1))
    assert cores.walked_to(tmp_path, time.time(), cores.CorePattern("core")) == ([], True)
    stacks = capture.collect_crash_stacks(
        tmp_path / "attempt", token="t", workdir=tmp_path, root_pid=None, returncode=-11,
        started=time.time(), keep_cores=True,
    )  # fmt: skip
    assert stacks is not None
    assert f"looked in {tmp_path} and the folders under it (the first 4 entries)" in str(
        stacks.unavailable
    )
    monkeypatch.setattr(cores, "WALK_MAX_ENTRIES", 100)
    assert cores.walked_to(tmp_path, time.time(), cores.CorePattern("core")) == ([], False)
    assert "(the first" not in cores.looked_in(tmp_path, cores.CorePattern("core"))


def test_a_core_pattern_whose_path_is_not_utf8_is_kept_as_its_bytes(tmp_path: Path) -> None:
    # `core_pattern` set to /var/cores-\xe9/core.%p (an admin's latin-1 folder): read as
    # strict UTF-8, every run that looks for a core ended with a UnicodeDecodeError.
    (tmp_path / "core_pattern").write_bytes(b"/var/cores-\xe9/core.%p\n")
    (tmp_path / "core_uses_pid").write_bytes(b"0\n")
    pattern = _read_core_pattern(tmp_path)
    assert pattern.raw == "/var/cores-\udce9/core.%p"
    assert os.fsencode(pattern.globs(tmp_path)[0]) == b"/var/cores-\xe9/core.*"
    assert not pattern.uses_pid
    # The reason that says no core was found names the folder as its bytes, written out:
    # its lone surrogate ended results.json's UTF-8 write with a traceback.
    said = looked_in(tmp_path, pattern)
    assert said.encode("utf-8") == b"looked in /var/cores-\\xe9"
    workdir = Path(os.fsdecode(b"/work-\xe9"))
    assert (
        looked_in(workdir, CorePattern("core", False))
        .encode("utf-8")
        .startswith(b"looked in /work-\\xe9 and the folders under it")
    )
