"""stack.txt holds the program's frames: the stackdump sitecustomize's own (its wrappers of
multiprocessing's Popen) are left out, in faulthandler's words and in py-spy's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reprospec.outcome.hangsource import on_disk
from reprospec.outcome.hungstacks import hung_processes
from reprospec.process.stacks import (
    STACK_WAIT_S,
    TASKS_END,
    TASKS_FOLLOW,
    TASKS_GRACE_S,
    keep_program_raised,
    listing,
    read_stack_dump,
    remove_stack_dumps,
    wait_for_stack_files,
    without_our_frames,
)
from tests.support.paths import DATA

# A real dump: a multiprocessing child hung, its parent joining it (an editable install's
# paths, so the sitecustomize is no library file by its path).
CHILD = (DATA / "stacks" / "multiprocessing-child-hang.stack.txt").read_text()

PY_SPY = """\
Thread 26180 (idle): "MainThread"
    poll (/usr/lib/python3.11/multiprocessing/popen_fork.py:27)
    watched (/src/reprospec/reprospec/stackdump/sitecustomize.py:450)
    wait (/usr/lib/python3.11/multiprocessing/popen_fork.py:43)
    <module> (/work/proj/childhang.py:12)
"""


def test_the_sitecustomizes_own_frames_are_left_out_and_every_other_line_kept() -> None:
    cleaned = without_our_frames(CHILD)
    assert "sitecustomize.py" not in cleaned
    kept = [line for line in CHILD.split("\n") if "sitecustomize.py" not in line]
    assert cleaned.split("\n") == kept
    assert len(kept) == len(CHILD.split("\n")) - 2
    # The frames read from it are the same: the wrappers were never the user's code.
    assert hung_processes(cleaned, source=on_disk) == hung_processes(CHILD, source=on_disk)
    spied = without_our_frames(PY_SPY)
    assert "watched" not in spied
    assert "<module> (/work/proj/childhang.py:12)" in spied
    # A program's own file of that name, outside a stackdump folder, stays.
    own = '  File "/work/proj/sitecustomize.py", line 3 in <module>'
    assert without_our_frames(own) == own


# A real stack read from a core by gdb (`line 577, in __init__`, a comma where faulthandler
# has none): a forked DataLoader worker's, which holds the frames of its parent's start of
# it, the sitecustomize's wrapper of Popen.__init__ among them.
FROM_CORE = (DATA / "stacks" / "dataloader-worker-from-core.stack.txt").read_text()


def test_the_sitecustomizes_frame_is_left_out_of_a_stack_read_from_a_core() -> None:
    cleaned = without_our_frames(FROM_CORE)
    assert "sitecustomize.py" not in cleaned
    kept = [line for line in FROM_CORE.split("\n") if "stackdump/sitecustomize.py" not in line]
    assert cleaned.split("\n") == kept
    assert len(kept) == len(FROM_CORE.split("\n")) - 1
    assert (
        ', line 19, in __init__\n  File "/root/.pyenv/versions/3.11.7/lib/python3.11/multi'
        'processing/context.py", line 281, in _Popen' in cleaned
    )


# A real dump of a preloaded attempt (run.preload): its program deadlocked two threads,
# the main thread joining them, all under the fork server's three frames.
PRELOADED = (DATA / "stacks" / "preload-thread-deadlock.stack.txt").read_text()


def test_the_fork_servers_frames_under_the_programs_are_left_out() -> None:
    cleaned = without_our_frames(PRELOADED)
    assert "reprospec_forkserver.py" not in cleaned
    kept = [line for line in PRELOADED.split("\n") if "reprospec_forkserver.py" not in line]
    assert cleaned.split("\n") == kept
    assert cleaned.rstrip().endswith('File "/work/proj/deadlock.py", line 13 in <module>')
    (hung,) = hung_processes(cleaned, source=on_disk)
    assert hung.describe().endswith("joining them in /work/proj/deadlock.py:13 in <module>")
    # Read raw, the server's frames are no user code either: the same process.
    assert hung_processes(PRELOADED, source=on_disk) == hung_processes(cleaned, source=on_disk)


def test_a_process_stopped_in_the_fork_servers_own_code_still_shows_where() -> None:
    # Its innermost frames are the server's: nothing of the program's is above them.
    server = (
        "--- pid 9 (python prog.py) ---\n"
        "Current thread 0x1 (most recent call first):\n"
        '  File "/src/reprospec/reprospec/harness/reprospec_forkserver.py", line 612 in _read\n'
        '  File "/src/reprospec/reprospec/harness/reprospec_forkserver.py", line 878 in <module>\n'
    )
    assert without_our_frames(server) == server
    spied = (
        'Thread 26180 (idle): "MainThread"\n'
        "    wait (/usr/lib/python3.11/threading.py:320)\n"
        "    <module> (/work/proj/prog.py:4)\n"
        "    _run_main (/src/reprospec/reprospec/harness/reprospec_forkserver.py:778)\n"
    )
    assert without_our_frames(spied) == spied.replace(
        "    _run_main (/src/reprospec/reprospec/harness/reprospec_forkserver.py:778)\n", ""
    )


@pytest.mark.parametrize("listed", [False, True], ids=["each-lists", "one-listing"])
def test_the_programs_record_of_its_end_is_kept_and_no_other(tmp_path: Path, listed: bool) -> None:
    # Every Python process writes raised-PID.txt (its parent's pid first); only the
    # program's, the root's or a root shell's one child's, says how the attempt ended.
    # The same with one listing of the folder given to both (run.py's way).
    def records(**texts: str) -> None:
        for pid, text in texts.items():
            (tmp_path / f"raised-{pid.removeprefix('p')}.txt").write_text(text)

    def kept(argv: list[str], root: int | None) -> str | None:
        names = listing(tmp_path) if listed else None
        keep_program_raised(argv, root, tmp_path, names)
        remove_stack_dumps(tmp_path, names)
        path = tmp_path / "raised.txt"
        return path.read_text() if path.exists() else None

    records(p100="1\nTraceback ...\n", p101="100\n")
    assert kept(["python", "x.py"], 100) == "1\nTraceback ...\n"
    assert not list(tmp_path.glob("raised-*"))
    # A shell that forks its one program: the record whose parent is the shell.
    records(p201="200\n", p202="201\nTraceback (a child's)\n")
    assert kept(["/bin/sh", "-c", "cd . && python x.py"], 200) == "200\n"
    # A line that may run several programs, or a python root that left none: none kept.
    records(p301="300\n")
    assert kept(["/bin/sh", "-c", "python a.py; python b.py"], 300) is None
    records(p401="400\n")
    assert kept(["python", "x.py"], 400) is None
    # No root known (a Docker container run without reprospec's init, whose exit.json gives
    # the command's pid): none kept, and an earlier attempt's raised.txt not left as this one's.
    (tmp_path / "raised.txt").write_text("1\nTraceback (an earlier attempt's)\n")
    records(p501="1\nTraceback ...\n")
    assert kept(["python", "x.py"], None) is None


def test_a_daemon_that_left_the_tree_is_tagged_so_no_hang_sits_in_it() -> None:
    """nu-c: `python daemon.py; sleep 100` hung in the shell's sleep, but the phrase read
    `hang in <module> (daemon.py:6)`: the daemon's grandchild, reparented away from the
    root, was the only Python stack. Its block is tagged, and the hang has no frame."""
    from reprospec.core.words import LEFT_THE_TREE
    from reprospec.outcome.hungstacks import hung_frame
    from reprospec.process.stacks import _left_the_tree
    from reprospec.process.tree import ProcInfo

    alive = {
        100: ProcInfo(100, 1, 100, "S", "/bin/sh -c python daemon.py; sleep 100"),
        101: ProcInfo(101, 100, 100, "S", "sleep 100"),
        102: ProcInfo(102, 101, 100, "S", "sleep 1"),
        200: ProcInfo(200, 1, 199, "S", "python3 daemon.py"),  # reparented to the engine
        201: ProcInfo(201, 200, 199, "S", "python3 daemon.py"),
    }
    assert _left_the_tree(alive, 100) == {200, 201}
    assert _left_the_tree(alive, None) == set()
    assert _left_the_tree(alive, 999) == set()  # no live root: no tree to leave
    stack = (
        f"--- pid 200 (python3 daemon.py) {LEFT_THE_TREE} ---\n"
        "Current thread 0x00007f (most recent call first):\n"
        '  File "/w/daemon.py", line 6 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) is None
    frame = hung_frame(stack.replace(f" {LEFT_THE_TREE}", ""), source=on_disk)
    assert frame is not None
    assert (frame.path, frame.line) == ("/w/daemon.py", 6)


@pytest.mark.parametrize(
    ("exe", "python"),
    [
        ("/usr/lib/pypy3.10/bin/pypy3.10-c", True),  # what `pypy3` links to
        ("/srv/.venv/bin/python3.11 (deleted)", True),  # replaced while it ran
        ("/usr/bin/python3.13t", True),
        ("/usr/bin/python3-config", False),
        ("/usr/bin/sleep (deleted)", False),
    ],
)
def test_a_process_is_pythons_by_its_executable(
    exe: str, python: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strict name rule left out PyPy's `pypy3.10-c` and an interpreter replaced while
    it ran (`python3.11 (deleted)`), which `startswith("python")` / `("pypy")` took: a
    silent one showed as a non-Python program, without its `(no Python stack ...)`."""
    import os

    from reprospec.process.stacks import _looks_like_python
    from reprospec.process.tree import ProcInfo

    monkeypatch.setattr(os, "readlink", lambda _path: exe)
    assert _looks_like_python(ProcInfo(7, 1, 7, "S", "x")) is python


@pytest.mark.parametrize(
    ("argv0", "python"),
    [("/usr/bin/python3.11-dbg", True), ("python3-dbg", True), ("python3-dbg-config", False)],
)
def test_a_process_whose_executable_is_unreadable_is_pythons_by_its_argv0(
    argv0: str, python: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where /proc/PID/exe cannot be read (another user's process), the command line's first
    word says: Debian's debug interpreter run as `python3.11-dbg` (a link to `python3.11d`),
    which `startswith("python")` took, showed as a non-Python program and was not sent the
    dump signal."""
    import os

    from reprospec.process.stacks import _looks_like_python
    from reprospec.process.tree import ProcInfo

    def unreadable(_path: str) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "readlink", unreadable)
    assert _looks_like_python(ProcInfo(7, 1, 7, "S", f"{argv0} -X dev t.py")) is python


def test_an_asyncio_processs_dump_is_waited_for_until_its_tasks_end(tmp_path: Path) -> None:
    # faulthandler's threads are written at once, the tasks by a Python handler at the main
    # thread's next bytecode: the file stopped growing between two looks before them, was
    # read as done, and the hang read `hang in <module>` again.
    dump = tmp_path / "stack-7.txt"
    threads = 'Current thread 0x1 (most recent call first):\n  File "m.py", line 3 in main\n'
    dump.write_text(TASKS_FOLLOW + threads)
    task = '\nTask Task-2 (most recent call first):\n  File "m.py", line 9 in w\n'
    looks: list[float] = []

    def pause(seconds: float) -> None:
        looks.append(seconds)
        if len(looks) == 6:  # the handler runs at last
            with dump.open("a") as file:
                file.write(task)
                file.write("\n" + TASKS_END)

    wait_for_stack_files(tmp_path, [7], pause)
    assert len(looks) in (7, 8), looks
    assert read_stack_dump(dump) == threads + task


def test_a_dump_whose_tasks_never_come_is_read_after_a_grace_not_the_deadline(
    tmp_path: Path,
) -> None:
    # The main thread blocked in native code (a CUDA sync) never runs the tasks' handler:
    # the wait ran to STACK_WAIT_S though the threads were written (review).
    threads = 'Current thread 0x1 (most recent call first):\n  File "m.py", line 3 in main\n'
    (tmp_path / "stack-7.txt").write_text(TASKS_FOLLOW + threads)
    started = time.monotonic()
    wait_for_stack_files(tmp_path, [7])
    took = time.monotonic() - started
    assert TASKS_GRACE_S <= took < STACK_WAIT_S - 0.3, took
    assert read_stack_dump(tmp_path / "stack-7.txt") == threads


def test_a_dump_whose_main_thread_waits_in_the_loop_s_selector_waits_for_its_tasks(
    tmp_path: Path,
) -> None:
    # An idle event loop's handler does run, late under load: the grace read its dump
    # without the tasks, and one hang's attempts were titled apart (review).
    dump = tmp_path / "stack-7.txt"
    threads = (
        "Current thread 0x1 (most recent call first):\n"
        '  File "/usr/lib/python3.11/selectors.py", line 468 in select\n'
        '  File "/usr/lib/python3.11/asyncio/base_events.py", line 1898 in _run_once\n'
    )
    dump.write_text(TASKS_FOLLOW + threads)
    task = '\nTask Task-2 (most recent call first):\n  File "m.py", line 9 in w\n'
    started = time.monotonic()
    written: list[bool] = []

    def pause(seconds: float) -> None:
        time.sleep(seconds)
        if not written and time.monotonic() - started > TASKS_GRACE_S + 0.2:
            written.append(True)  # the handler runs at last, past the grace
            with dump.open("a") as file:
                file.write(task + "\n" + TASKS_END)

    wait_for_stack_files(tmp_path, [7], pause)
    assert read_stack_dump(dump) == threads + task


def test_a_loop_idle_dump_is_read_once_while_its_size_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the grace, the selector's dump was opened and read at every 20 ms poll until
    # STACK_WAIT_S: its answer is kept until the dump changes size (review).
    from reprospec.process import stacks

    dump = tmp_path / "stack-7.txt"
    dump.write_text(TASKS_FOLLOW + "Current thread 0x1 (most recent call first):\n")
    reads: list[Path] = []

    def loop_idle(path: Path) -> bool:
        reads.append(path)
        return True

    monkeypatch.setattr(stacks, "_loop_idle", loop_idle)
    monkeypatch.setattr(stacks, "TASKS_GRACE_S", 0.0)
    monkeypatch.setattr(stacks, "STACK_WAIT_S", 0.5)
    wait_for_stack_files(tmp_path, [7])
    assert reads == [dump]
