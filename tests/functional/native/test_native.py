"""Native stacks: real crashes leave real cores that gdb reads; gdb attaches to real C deadlocks."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from reprospec import native
from reprospec.native import NativeStacks
from reprospec.native.readers import gdb_path
from reprospec.native.render import SHELL_WAITING
from reprospec.runners.local import LocalRunner
from tests.support.local import child, make_plan
from tests.support.native import assert_fault_in_a_torch_op, fd_target, held_fds, until

needs_gdb = pytest.mark.skipif(
    native.gdb_path() is None, reason="gdb not installed (apt-get install gdb)"
)


needs_plain_cores = pytest.mark.skipif(
    native.core_pattern().piped, reason="kernel.core_pattern pipes cores to a handler"
)


WAITING = {"futex_wait", "lll_lock_wait", "pthread_mutex_lock", "futex_abstimed_wait_common"}


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def crash(runner: LocalRunner, tmp_path: Path, kind: str) -> tuple[NativeStacks, Path, Path]:
    """Run native_crash.py KIND in its own workdir; (stacks, workdir, attempt folder)."""
    workdir, logs = tmp_path / f"work-{kind}", tmp_path / f"logs-{kind}"
    workdir.mkdir()
    ex = runner.run(make_plan(child("native_crash.py", kind), workdir=workdir), logs)
    assert ex.returncode == (1 if kind == "child" else -11), ex.stderr_path.read_text()
    stacks = native.read(logs)
    assert stacks is not None, sorted(p.name for p in logs.iterdir())
    return stacks, workdir, logs


# -- crashes -----------------------------------------------------------------------------

# -- hangs -------------------------------------------------------------------------------


@needs_gdb
@needs_plain_cores
def test_segfault_in_strlen_shows_strlen_on_top(runner: LocalRunner, tmp_path: Path) -> None:
    stacks, workdir, logs = crash(runner, tmp_path, "strlen")
    assert stacks.unavailable is None
    (process,) = stacks.processes
    assert process.source == "core"
    assert process.signal == "SIGSEGV"
    assert process.error is None
    assert process.root
    thread = process.crashing_thread
    assert thread is not None
    assert thread.lwp == process.pid  # the main thread took the signal
    assert len(process.threads) >= 2  # the sleeping thread too: all threads
    top = native.top_frames(stacks)
    assert top is not None
    assert top.startswith("strlen (libc.so"), top
    assert native.signature_frame(stacks) == "strlen@libc"
    # The signal handler (faulthandler's re-raise) is above the fault, not in the top frames.
    assert any(frame.signal_handler for frame in thread.frames)
    assert "raise" not in top
    text = (logs / native.TEXT_NAME).read_text()
    assert "(crashed)" in text
    assert "strlen" in text
    helper = Path(os.path.realpath(sys.executable) + "-gdb.py")
    if helper.is_file():  # CPython's gdb extension sits next to this interpreter: py-bt works
        assert "native_crash.py" in process.python
        assert "in crash" in process.python
    # The core was moved out of the workdir, read, and deleted.
    assert list(workdir.iterdir()) == []
    assert not list(logs.glob("core*"))


@needs_gdb
@needs_plain_cores
def test_two_different_segfaults_get_different_signature_frames(
    runner: LocalRunner, tmp_path: Path
) -> None:
    strlen, _, _ = crash(runner, tmp_path, "strlen")
    memmove, _, _ = crash(runner, tmp_path, "memmove")
    top = native.top_frames(memmove)
    # glibc's memmove and memcpy share one implementation; gdb names either.
    assert top is not None
    assert top.split(" ")[0] in ("memmove", "memcpy"), top
    assert native.signature_frame(memmove) != native.signature_frame(strlen)
    signature = native.with_native_frame("crash:SIGSEGV:main", memmove)
    assert signature.startswith("crash:SIGSEGV:main:mem")
    assert signature.endswith("@libc")


@needs_gdb
@needs_plain_cores
def test_a_crashed_child_process_is_read_from_its_own_core(
    runner: LocalRunner, tmp_path: Path
) -> None:
    stacks, workdir, logs = crash(runner, tmp_path, "child")
    died = (logs / "stdout.log").read_text().split("child ")[1].split()[0]
    (process,) = stacks.processes  # the parent exited 1: no core of its own
    assert process.pid == int(died)
    assert process.signal == "SIGSEGV"
    assert not process.root
    assert (native.top_frames(stacks) or "").startswith("strlen (libc.so")
    assert list(workdir.iterdir()) == []


@needs_gdb
@needs_plain_cores
def test_a_crash_in_a_thread_is_the_process_s_with_that_thread_marked(tmp_path: Path) -> None:
    # The core's first NT_PRSTATUS is the thread that took the signal, its pr_pid that
    # thread's LWP; the process is NT_PRPSINFO's. Read as the process, the LWP named a pid
    # nothing ran as, a child rather than the main process, and lost a DataLoader worker's
    # Python stack (its pid no longer the one the main process reported).
    stacks, _, logs = crash(LocalRunner(keep_cores=True), tmp_path, "thread")
    pid = int((logs / "stdout.log").read_text().split("pid ")[1].split()[0])
    (process,) = stacks.processes
    assert (process.pid, process.root) == (pid, True)
    assert process.core == str(logs / f"core.{pid}")
    thread = process.crashing_thread
    assert thread is not None
    assert thread.lwp != pid
    assert native.crashed_process(stacks, pid) is process
    assert (native.top_frames(stacks, pid=pid) or "").startswith("strlen (libc.so")
    if process.python:  # py-spy's (or py-bt's) Python stacks: the crashed thread's first
        assert f"LWP {thread.lwp})" in process.python.split("\n\n")[0]
        assert "in crash" in process.python.split("\n\n")[0]


@needs_gdb
@needs_plain_cores
def test_keep_cores_keeps_the_core_in_the_attempt_folder(tmp_path: Path) -> None:
    keeper = LocalRunner(keep_cores=True)
    stacks, workdir, logs = crash(keeper, tmp_path, "strlen")
    (process,) = stacks.processes
    assert process.core == str(logs / f"core.{process.pid}")
    info = native.read_core(Path(process.core))
    assert info is not None
    assert (info.pid, info.signal) == (process.pid, "SIGSEGV")
    assert info.executable == os.path.realpath(sys.executable)
    assert list(workdir.iterdir()) == []


@needs_gdb
@needs_plain_cores
def test_crash_inside_a_torch_op_shows_a_torch_symbol(runner: LocalRunner, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    stacks, _, _ = crash(runner, tmp_path, "torch")
    assert_fault_in_a_torch_op(stacks)


@needs_gdb
@needs_plain_cores
def test_cores_of_other_processes_are_left_alone(runner: LocalRunner, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    _crash_in(workdir)  # a real core of a process that is not the attempt's
    foreign = sorted(workdir.iterdir())
    assert foreign
    assert native.read_core(foreign[0]) is not None
    before = foreign[0].read_bytes()
    ex = runner.run(
        make_plan([sys.executable, "-c", "print('fine')"], workdir=workdir), tmp_path / "a"
    )
    assert ex.returncode == 0
    assert native.read(tmp_path / "a") is None
    assert sorted(workdir.iterdir()) == foreign
    assert foreign[0].read_bytes() == before


@needs_gdb
@needs_plain_cores
def test_a_crash_that_cannot_leave_a_core_says_why(runner: LocalRunner, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "core").mkdir(parents=True)  # the kernel cannot write a core over a folder
    if native.core_pattern().raw != "core":
        pytest.skip("kernel.core_pattern is not 'core'")
    ex = runner.run(make_plan(child("native_crash.py", "strlen"), workdir=workdir), tmp_path / "a")
    assert ex.returncode == -11
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.processes == ()
    assert stacks.unavailable is not None
    assert "left no core" in stacks.unavailable
    assert str(workdir) in stacks.unavailable


@needs_gdb
@needs_plain_cores
@pytest.mark.parametrize(
    "move",
    [
        "os.chdir({moved!r}); ctypes.string_at(8)",
        # A child started in another folder (a test binary run in its build folder).
        "import subprocess, sys; r = subprocess.run([sys.executable, '-c',"
        " 'import ctypes; ctypes.string_at(8)'], cwd={moved!r});"
        " os.kill(os.getpid(), -r.returncode)",
    ],
    ids=["chdir", "subprocess-cwd"],
)
def test_the_core_of_a_process_that_moved_is_claimed_where_it_moved(
    runner: LocalRunner, tmp_path: Path, move: str
) -> None:
    """A relative core_pattern puts the core in the crashing process's working directory:
    a program that moved (hydra's outputs/DATE/TIME) left its core there, where the runner
    said it left none and the core stayed in the user's folder."""
    if native.core_pattern().raw.startswith("/"):
        pytest.skip("kernel.core_pattern is an absolute path: no core lands where it moved")
    workdir, moved = tmp_path / "work", tmp_path / "outputs" / "run"
    workdir.mkdir()
    moved.mkdir(parents=True)
    code = "import ctypes, os; " + move.format(moved=str(moved))
    ex = runner.run(make_plan([sys.executable, "-c", code], workdir=workdir), tmp_path / "a")
    assert ex.returncode == -11
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert any(p.signal == "SIGSEGV" and p.source == "core" for p in stacks.processes)
    assert "strlen" in (tmp_path / "a" / native.TEXT_NAME).read_text()
    # Claimed and deleted there; the record of the move is read and gone.
    assert list(moved.iterdir()) == []
    assert list(workdir.iterdir()) == []
    assert not (tmp_path / "a" / "cwds.txt").exists()


@needs_gdb
@needs_plain_cores
@pytest.mark.parametrize(
    "move",
    [
        # chdir() from native code, as a C program calls it: no record of the move.
        "ctypes.CDLL(None).chdir(b'sub'); ctypes.string_at(8)",
        # A child a shell starts in another folder, as posix_spawn's addchdir does.
        'import subprocess; r = subprocess.run("cd sub/deeper && exec {python} -S -c'
        " 'import ctypes; ctypes.string_at(8)'\", shell=True); sys.exit(128 - r.returncode)",
    ],
    ids=["native-chdir", "child-elsewhere"],
)
def test_the_core_of_a_process_that_moved_without_a_record_is_found_under_the_workdir(
    runner: LocalRunner, tmp_path: Path, move: str
) -> None:
    """A C program's chdir() or a child started in another folder leaves no record of the
    move (cwds.txt, the shell line): the crash's core lay in sub/ while the runner said
    it left none. A crash with no core where the records say is looked for under the
    workdir."""
    if native.core_pattern().raw.startswith("/"):
        pytest.skip("kernel.core_pattern is an absolute path: no core lands where it moved")
    workdir = tmp_path / "work"
    (workdir / "sub" / "deeper").mkdir(parents=True)
    code = "import ctypes, os, sys; " + move.format(python=sys.executable)
    ex = runner.run(make_plan([sys.executable, "-c", code], workdir=workdir), tmp_path / "a")
    assert ex.returncode in (-11, 139), ex.stderr_path.read_text()
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert [p.signal for p in stacks.processes] == ["SIGSEGV"]
    assert "strlen" in (tmp_path / "a" / native.TEXT_NAME).read_text()
    assert [str(p.relative_to(workdir)) for p in workdir.rglob("*")] == ["sub", "sub/deeper"]


def test_the_walk_for_cores_is_bounded_and_leaves_hidden_folders_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """walked_to finds a fresh core below the workdir, not one in a hidden folder (the run
    store, .git) nor an older one, and reads at most WALK_MAX_ENTRIES entries."""
    pattern = native.CorePattern("core")
    started = time.time()
    for folder in ("a/b", ".store/c", "old"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "core").write_bytes(b"")
    os.utime(tmp_path / "old" / "core", (started - 60, started - 60))
    (tmp_path / "core").write_bytes(b"")  # the workdir's own: find_cores looks there
    assert native.walked_to(tmp_path, started, pattern) == ([tmp_path / "a" / "b"], False)
    crash = native.CorePattern("/var/crash/core")
    assert native.walked_to(tmp_path, started, crash) == ([], False)
    # A fresh core past the bound: `big` holds more entries than the walk reads, so the
    # folder under it is never listed, whichever order the folders list theirs in.
    bounded = tmp_path / "bounded"
    (bounded / "big" / "deep").mkdir(parents=True)
    for n in range(10):
        (bounded / "big" / f"file{n}").write_bytes(b"")
    (bounded / "big" / "deep" / "core").write_bytes(b"")
    monkeypatch.setattr(native.cores, "WALK_MAX_ENTRIES", 5)
    assert native.walked_to(bounded, started, pattern) == ([], True)
    monkeypatch.setattr(native.cores, "WALK_MAX_ENTRIES", 100)
    assert native.walked_to(bounded, started, pattern) == ([bounded / "big" / "deep"], False)


@needs_gdb
@needs_plain_cores
def test_the_program_a_shell_line_runs_is_the_main_process_in_the_header(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """A command runs under `/bin/sh -c`, which forks the program and exits 139 when it
    dies of SIGSEGV: the outcome is the main process's crash, and the stacks' header said
    "a child process" of the program the command runs."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "crash.py").write_text("import ctypes\nctypes.string_at(8)\n")
    ex = runner.run(make_plan(f"X=1 {sys.executable} -S crash.py", workdir=workdir), tmp_path / "a")
    assert ex.returncode == 139
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert [(p.signal, p.root) for p in stacks.processes] == [("SIGSEGV", True)]
    header = (tmp_path / "a" / native.TEXT_NAME).read_text().splitlines()[0]
    assert "crash.py) [native, core, SIGSEGV, the attempt's main process]" in header, header


@needs_gdb
@needs_plain_cores
def test_the_core_of_a_program_a_shell_line_cds_to_is_claimed_there(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """`cd build && ./test`: the shell's `cd` moves no Python process, and the crash's core
    lay in build/ while the runner said it left none."""
    if native.core_pattern().raw.startswith("/"):
        pytest.skip("kernel.core_pattern is an absolute path: no core lands where it moved")
    workdir = tmp_path / "work"
    (workdir / "build").mkdir(parents=True)
    (workdir / "build" / "crash.py").write_text("import ctypes\nctypes.string_at(8)\n")
    line = f"cd build && {sys.executable} -S crash.py"
    ex = runner.run(make_plan(line, workdir=workdir), tmp_path / "a")
    assert ex.returncode in (-11, 139)
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert [p.signal for p in stacks.processes] == ["SIGSEGV"]
    assert [p.name for p in (workdir / "build").iterdir()] == ["crash.py"]


def _crash_in(workdir: Path) -> None:
    """A real SIGSEGV of a process that is not the attempt's, dumping its core in `workdir`."""
    subprocess.run(
        [sys.executable, "-c", "import ctypes; ctypes.string_at(8)"],
        cwd=workdir,
        preexec_fn=native.allow_cores,
        capture_output=True,
        check=False,
    )


def _crash_later(
    monkeypatch: pytest.MonkeyPatch, crash: Callable[[Path], object], *, held: bool = True
) -> list[object]:
    """Make the race certain: `crash(workdir)` runs after the attempt died and before the
    engine looks for its core, the window in which a second crash there replaces it.
    `held`: only once the watch holds the attempt's core (what it does within a few ms,
    and a loaded machine may take longer over; that race is measured, not tested)."""
    real_find = native.find_cores
    done: list[object] = []
    once: list[bool] = []  # set first: `crash` may be an attempt, which claims its own cores

    def late_claim(token: str, folder: Path, *args: object) -> list[native.CoreInfo]:
        if not once:
            once.append(True)
            assert not held or until(lambda: bool(held_fds(folder)))
            done.append(crash(folder))
        return real_find(token, folder, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(native.capture, "find_cores", late_claim)
    return done


def _crash_with_a_later_crash(
    runner: LocalRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    crash: Callable[[Path], object],
    *,
    held: bool = True,
) -> tuple[Path, list[object]]:
    """A real strlen segfault in its own workdir, attempt folder `a`, while `crash` crashes
    there between its end and its claim; (workdir, what `crash` returned)."""
    _shared_name_or_skip()
    workdir = tmp_path / "work"
    workdir.mkdir()
    done = _crash_later(monkeypatch, crash, held=held)
    ex = runner.run(make_plan(child("native_crash.py", "strlen"), workdir=workdir), tmp_path / "a")
    assert ex.returncode == -11
    assert done
    return workdir, done


def _another_attempt(runner: LocalRunner, logs: Path) -> Callable[[Path], NativeStacks | None]:
    """A strlen segfault as an attempt of the same runner in `folder` (attempt folder `logs`)."""

    def crash(folder: Path) -> NativeStacks | None:
        plan = make_plan(child("native_crash.py", "strlen"), workdir=folder)
        assert runner.run(plan, logs).returncode == -11
        return native.read(logs)

    return crash


def _shared_name_or_skip() -> None:
    pattern = native.core_pattern()
    if not pattern.shared_name:
        pytest.skip("kernel.core_pattern gives each process its own core")
    if Path(pattern.raw).is_absolute():
        pytest.skip("kernel.core_pattern puts cores outside the workdir")


def _strlen_on_top(stacks: NativeStacks | None) -> None:
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    (process,) = stacks.processes
    assert process.root
    assert process.signal == "SIGSEGV"
    assert process.error is None
    assert native.signature_frame(stacks) == "strlen@libc", native.full_text(stacks)


@needs_gdb
@needs_plain_cores
def test_a_core_a_later_crash_replaced_is_read_all_the_same(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With `core` and core_uses_pid=0 the second crash in a folder unlinks the first's core
    # before it writes its own. The runner held the first open from its creation.
    workdir, _ = _crash_with_a_later_crash(runner, tmp_path, monkeypatch, _crash_in)
    _strlen_on_top(native.read(tmp_path / "a"))
    (core,) = workdir.iterdir()  # the other process's core: left alone
    info = native.read_core(core)
    assert info is not None
    assert "ctypes.string_at" in info.command
    # Nothing held after the attempt: no descriptor of a core left open.
    assert not [fd for fd in Path("/proc/self/fd").iterdir() if "core" in fd_target(fd)]


@needs_gdb
@needs_plain_cores
def test_two_attempts_crashing_in_one_folder_each_read_their_own_core(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # -j 2: the other attempt crashes in the same workdir and claims the core that
    # replaced this one's, before this attempt looks for its own.
    other = _another_attempt(runner, tmp_path / "b")
    workdir, done = _crash_with_a_later_crash(runner, tmp_path, monkeypatch, other)
    first, second = native.read(tmp_path / "a"), done[0]
    assert isinstance(second, NativeStacks)
    _strlen_on_top(first)
    _strlen_on_top(second)
    assert first is not None
    assert first.processes[0].pid != second.processes[0].pid
    assert list(workdir.iterdir()) == []


@needs_gdb
@needs_plain_cores
def test_a_core_replaced_between_its_claim_and_its_move_is_read_from_the_watch(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # -j 2 in one workdir, both crashing together (seen under minimize at load 4): this
    # attempt found its core at `core`, then the other crashed there (unlinking this one's)
    # and moved its own out before this one moved "its" name: nothing lay at `core` any
    # more. The held core is read; the reader is never sent to the empty name.
    _shared_name_or_skip()
    workdir = tmp_path / "work"
    workdir.mkdir()
    other = _another_attempt(runner, tmp_path / "b")
    real_move = native.move_cores
    done: list[NativeStacks | None] = []
    once: list[bool] = []  # set first: the other attempt moves its own cores through here

    def other_crash_first(
        cores: list[native.CoreInfo], out_dir: Path
    ) -> list[tuple[native.CoreInfo, Path | None]]:
        if not once:
            once.append(True)
            assert until(lambda: bool(held_fds(workdir)))
            done.append(other(workdir))
            assert not (workdir / "core").exists()  # the other claimed and moved its own
        return real_move(cores, out_dir)

    monkeypatch.setattr(native.capture, "move_cores", other_crash_first)
    ex = runner.run(make_plan(child("native_crash.py", "strlen"), workdir=workdir), tmp_path / "a")
    assert ex.returncode == -11
    first, second = native.read(tmp_path / "a"), done[0]
    _strlen_on_top(first)
    _strlen_on_top(second)
    assert first is not None
    assert second is not None
    assert first.processes[0].pid != second.processes[0].pid
    assert list(workdir.iterdir()) == []


@needs_gdb
@needs_plain_cores
@pytest.mark.parametrize("other", ["process", "attempt"])
def test_without_the_watch_a_replaced_core_says_so(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: str
) -> None:
    # Where inotify cannot watch the folder (out of watches), the core is lost as before:
    # the attempt says why, and never shows the other crash's stack.
    monkeypatch.setattr(native.Capture, "watch", lambda _self, _workdir: ())
    crash = _crash_in if other == "process" else _another_attempt(runner, tmp_path / "b")
    workdir, _ = _crash_with_a_later_crash(runner, tmp_path, monkeypatch, crash, held=False)
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.processes == ()
    assert stacks.unavailable is not None
    assert f"another crash in {workdir} since this attempt started most likely replaced it" in (
        stacks.unavailable
    )
    assert "core_uses_pid=1" in stacks.unavailable
    # The other process's core is still there; the other attempt's was claimed and removed.
    assert len(list(workdir.iterdir())) == (1 if other == "process" else 0)


def test_without_gdb_the_report_says_why(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert native.gdb_path() is None
    workdir = tmp_path / "work"
    workdir.mkdir()
    ex = runner.run(make_plan(child("native_crash.py", "strlen"), workdir=workdir), tmp_path / "a")
    assert ex.returncode == -11
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.unavailable == "native stacks unavailable: gdb not found (apt-get install gdb)"
    assert list(workdir.iterdir()) == []  # nothing could read a core, so none was written
    assert native.render_markdown(stacks) == f"_{stacks.unavailable}_\n"


def test_only_the_child_gets_a_core_limit(runner: LocalRunner, tmp_path: Path) -> None:
    ours = resource.getrlimit(resource.RLIMIT_CORE)
    code = "import resource; print(*resource.getrlimit(resource.RLIMIT_CORE))"
    ex = runner.run(make_plan([sys.executable, "-c", code], workdir=tmp_path), tmp_path / "a")
    soft, hard = (int(n) for n in ex.stdout_path.read_text().split())
    assert resource.getrlimit(resource.RLIMIT_CORE) == ours
    if native.gdb_path() is not None and not native.core_pattern().piped:
        assert soft == hard == ours[1]
    else:
        assert (soft, hard) == ours


@needs_gdb
def test_a_deadlock_in_c_shows_every_thread_waiting_on_the_lock(
    runner: LocalRunner, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    ready.mkdir()
    plan = make_plan(child("native_deadlock.py", str(ready), "fork"), timeout_s=3.0)
    ex = runner.run(plan, tmp_path / "logs")
    assert ex.timed_out
    pids = {int(p.stem) for p in ready.glob("*.ready")}
    assert len(pids) == 2, "both processes reached the deadlock before the timeout"
    stacks = native.read(tmp_path / "logs")
    assert stacks is not None
    assert stacks.unavailable is None
    attached = {p.pid: p for p in stacks.processes if p.source == "attach"}
    assert set(attached) == pids
    for process in attached.values():
        assert process.error is None
        assert len(process.threads) == 2
        for thread in process.threads:
            symbols = [frame.symbol for frame in thread.frames[:5]]
            assert WAITING & set(symbols), (process.pid, thread.id, symbols)
    lines = native.thread_tops(stacks)
    assert len(lines) == 4
    assert all("lock" in line or "futex" in line for line in lines)
    # The Python stacks are taken too, after the native ones (asked while stopped).
    assert ex.stack_path is not None
    assert "deadlock" in ex.stack_path.read_text()
    markdown = native.render_markdown(stacks)
    assert "Native frames of every thread" in markdown
    assert "<details>" in markdown


@needs_gdb
def test_a_string_commands_shell_waiting_for_its_program_is_one_line(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """`/bin/sh -c LINE` (dash forks the program) waits in wait4 for it at every string
    command's hang: its frames led the report's list (`?? (dash) <- wait4 (libc.so.6)`),
    true but no place of the hang. One line now, after the program's threads; the full
    text keeps its frames."""
    line = f"{sys.executable} -c 'import time; time.sleep(60)'; exit $?"
    ex = runner.run(make_plan(line, workdir=tmp_path, timeout_s=2.0), tmp_path / "logs")
    assert ex.timed_out
    stacks = native.read(tmp_path / "logs")
    assert stacks is not None
    shell = next(p for p in stacks.processes if p.command.startswith("/bin/sh -c"))
    lines = native.thread_tops(stacks)
    assert lines[-1] == (f"pid {shell.pid} ({shell.command}): {SHELL_WAITING} wait4 (libc.so.6)"), (
        lines
    )
    assert not any(line.startswith(f"pid {shell.pid} thread") for line in lines), lines
    assert any("(python" in line or "libpython" in line for line in lines[:-1]), lines
    assert "wait4 (libc.so.6)" in (tmp_path / "logs" / native.TEXT_NAME).read_text()


# Leaves as soon as the file GO appears: the test makes it as the native read begins, so a
# process the engine did not freeze first is gone before the reader reaches it, as a
# process that was exiting at the deadline is. Its main thread blocks SIGURG, so the
# leaving thread is the one that takes the engine's ask for the Python stacks, and dumps
# them before it runs on to leave: the thread that takes it dumps before anything else, but
# another thread of the process may run on meanwhile (docs/native-stacks.md), and a leave
# there cut the dump short or left none.
LEAVES_WHEN_TOLD = """
import os, signal, sys, threading, time
def leave():
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    os._exit(0)
threading.Thread(target=leave, daemon=True).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGURG})
time.sleep(60)
"""


def _held(pid: int) -> bool:
    """Whether every thread of `pid` is held by a stop signal (or a tracer)."""
    try:
        states = [(task / "stat").read_text() for task in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return False
    return all(stat.rpartition(")")[2].split()[0] in ("T", "t") for stat in states)


@needs_gdb
def test_a_process_leaving_just_after_the_deadline_is_read_where_it_was(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Frozen before it is read, it is read (its sleep on top) instead of
    answering the reader with `ptrace: No such process`.

    The process is told to leave as the read begins, once each of its threads is held: no
    race against a timer (it left 0.8 s after its dump, which the engine on a loaded machine
    did not always beat, and a slow reader could), nor against the stop itself, which takes
    hold after the SIGSTOP is sent (told before, its thread left first in 3 of 40 loaded
    runs, and the read found no process). An engine that does not freeze it fails here."""
    go = tmp_path / "go"
    real_hang = native.Capture.hang

    def hang(self: native.Capture, pids: Mapping[int, str], timed_out_at: float) -> NativeStacks:
        assert until(lambda: all(_held(pid) for pid in pids)), pids
        go.touch()
        return real_hang(self, pids, timed_out_at)

    monkeypatch.setattr(native.Capture, "hang", hang)
    plan = make_plan([sys.executable, "-c", LEAVES_WHEN_TOLD, str(go)], timeout_s=2.0)
    ex = runner.run(plan, tmp_path / "logs")
    assert ex.timed_out
    assert go.exists()  # the read was reached
    assert ex.stack_path is not None
    # Asked while held, the leaving thread dumped every thread's stack before it left.
    python = ex.stack_path.read_text()
    assert "in leave" in python, python
    assert "in <module>" in python, python
    stacks = native.read(tmp_path / "logs")
    assert stacks is not None
    (process,) = [p for p in stacks.processes if p.source == "attach"]
    assert process.error is None, process.error
    symbols = {frame.symbol for thread in process.threads for frame in thread.frames[:4]}
    assert symbols & {"clock_nanosleep", "__clock_nanosleep", "nanosleep", "select"}, symbols


# Waits in pause(), which returns after any signal handler (the kernel never restarts it),
# then sleeps: where it went next once woken.
PAUSES = """
import ctypes, time
ctypes.CDLL(None).pause()
time.sleep(60)
"""


@needs_gdb
def test_a_wait_a_signal_would_end_is_read_before_the_python_stacks_are_asked_for(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """The Python stacks are asked for with a signal (SIGURG), whose handler ends a
    pause(): read after it, the native stack showed the sleep the program went on to, not
    the wait it hung in (fx49b). The native reader now reads the stopped tree first."""
    plan = make_plan([sys.executable, "-c", PAUSES], timeout_s=2.0)
    ex = runner.run(plan, tmp_path / "logs")
    assert ex.timed_out
    # The Python stack is still taken, asked while the process was stopped.
    assert ex.stack_path is not None
    assert "line 3" in ex.stack_path.read_text(), ex.stack_path.read_text()
    stacks = native.read(tmp_path / "logs")
    assert stacks is not None
    (process,) = [p for p in stacks.processes if p.source == "attach"]
    assert process.error is None, process.error
    symbols = [frame.symbol for thread in process.threads for frame in thread.frames[:3]]
    assert any("pause" in symbol for symbol in symbols), symbols
    assert not any("nanosleep" in symbol for symbol in symbols), symbols


@needs_gdb
def test_attach_reports_processes_it_could_not_read() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stacks = native.attach_stacks({gone.pid: "python -c pass"}, budget_s=20)
    (process,) = stacks.processes
    assert process.threads == ()
    assert process.error is not None
    assert "ptrace" in process.error


@needs_gdb
def test_attach_stops_at_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget too short for gdb: the call returns at it, and says what was not done."""
    # The real gdb, started late: a bare gdb can finish inside the shortest budget on a fast,
    # quiet machine, and the test would then pass or fail by the machine's speed.
    real_gdb = gdb_path()
    late = tmp_path / "bin" / "gdb"
    late.parent.mkdir()
    late.write_text(f'#!/bin/sh\nsleep 60\nexec {real_gdb} "$@"\n')
    late.chmod(0o755)
    monkeypatch.setenv("PATH", f"{late.parent}{os.pathsep}{os.environ['PATH']}")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        begin = time.monotonic()
        stacks = native.attach_stacks({sleeper.pid: "sleeper"}, budget_s=0.01)
        took = time.monotonic() - begin
    finally:
        sleeper.kill()
        sleeper.wait()
    # Cut at the budget, not when the late gdb would have ended (60 s on): 30 s leaves a
    # loaded machine room to start and kill it, where 4 s against a 5 s gdb left it little.
    assert took < 30, took
    (process,) = stacks.processes
    assert process.error == "gdb did not reach this process within 0.01s", stacks
    assert stacks.notes, stacks
    assert "0.01s" in stacks.notes[0], stacks


@needs_gdb
@needs_plain_cores
def test_a_pass_over_a_crashed_process_says_so(tmp_path: Path) -> None:
    # `python train.py | tee log`: python segfaults, the shell's status is tee's (0). The
    # pass is what ran; the crash beside it is said, with how to make it the pipeline's.
    import json

    (tmp_path / "segv.py").write_text(
        "import ctypes\nprint('step 1', flush=True)\nctypes.string_at(0)\n"
    )
    spec = tmp_path / "tee.yaml"
    spec.write_text(
        "reprospec: 1\nname: tee\ncommand: python segv.py | tee out.log\nexpect: {outcome: pass}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = next((tmp_path / "out" / "runs").glob("*/results.json"))
    attempt = json.loads(results.read_text())["cells"][0]["attempts"][0]
    assert attempt["outcome"]["kind"] == "pass"
    (warning,) = [w for w in attempt["warnings"] if "died of" in w]
    assert "died of SIGSEGV (pid " in warning
    assert "segv.py" in warning
    assert "[bash, -o, pipefail, -c, ...]" in warning
    # Said where one looks, not only in results.json and the report's end: the attempt's
    # line and the table's `actual` (both read `pass` alone before).
    assert "default #1: pass, but a process died of SIGSEGV (match" in done.stderr, done.stderr
    assert "pass, but a process died of SIGSEGV" in done.stdout, done.stdout
    # capture says what the pass hid, and writes no spec expecting a pass of it (exit 1).
    captured = subprocess.run(
        [sys.executable, "-m", "reprospec", "capture", "--no-verify", "-o", "cap.yaml",
         "--out", str(tmp_path / "out"), "--", "sh", "-c", "python segv.py | tee out.log"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert captured.returncode == 1, captured.stdout + captured.stderr
    assert captured.stdout.startswith(
        "it passed, but a process of the attempt died of SIGSEGV (pid "
    )
    assert "capture `bash -o pipefail -c 'python segv.py | tee out.log'`" in captured.stdout
    assert not (tmp_path / "cap.yaml").exists()


def test_the_attach_script_runs_the_gdb_attach_gdb_argv_is(tmp_path: Path) -> None:
    """The docker runner lists a hung container's processes and runs gdb in one exec (two
    cost an engine round trip more): the script's gdb gets attach_gdb_argv's words, for
    several pids, one, and none (then no gdb runs)."""
    fake = tmp_path / "gdb"
    fake.write_text('#!/bin/sh\nfor word in "$@"; do printf "%s\\n" "$word"; done\n')
    fake.chmod(0o755)
    script = native.attach_gdb_script(gdb=str(fake))
    for pids in ([7, 12, 8], [7], []):
        ran = subprocess.run(
            ["sh", "-c", f"pids=' {' '.join(map(str, pids))} '\n{script}"],
            capture_output=True,
            text=True,
            check=True,
        )
        expected = native.attach_gdb_argv(pids, gdb=str(fake))[1:] if pids else []
        assert ran.stdout.splitlines() == expected, ran.stdout


def test_the_container_listing_attaches_in_the_order_it_is_read() -> None:
    """The script that lists a hung container's processes hands its gdb `$pids` in
    parse_listing's order (the init's children first, then by pid): the stacks are read
    back in that order, and a gdb cut at the deadline is cut in the last one reached. Run
    on this machine's own /proc; the listing folded into one exec with gdb had glob order
    (pid 10 before pid 8). Read as attach reads it, undecodable bytes replaced: CI's
    machine had a process whose command line was not UTF-8."""
    from reprospec.runners.docker.attach import _LIST, LISTED, parse_listing

    ran = subprocess.run(
        ["sh", "-c", f'exec 2>/dev/null\n{_LIST}echo "@@pids" $pids'],
        capture_output=True,
        text=True,
        errors="replace",  # as attach reads it: a process's cmdline need not be UTF-8
        check=True,
        timeout=60,
    )
    listing, _, after = ran.stdout.partition(LISTED)
    pids = [int(word) for word in after.split("@@pids", 1)[1].split()]
    listed = parse_listing(listing)
    assert len(pids) > 2
    assert pids == [p.pid for p in listed]
    assert pids == [p.pid for p in sorted(listed, key=lambda p: (p.ppid != 1, p.pid))]


@needs_gdb
@needs_plain_cores
def test_a_crash_under_a_hard_core_limit_of_zero_says_so(tmp_path: Path) -> None:
    """`ulimit -Hc 0` before reprospec: no process can write a core, and the crash's reason
    named a folder to look at ("must be writable and the hard RLIMIT_CORE above 0"); it
    says the hard limit is 0. Run as a CLI under that limit (it cannot be raised again)."""
    (tmp_path / "crash.py").write_text("import ctypes\nctypes.string_at(8)\n")
    (tmp_path / "spec.yaml").write_text(
        "reprospec: 1\nname: nocore\ncommand: [python3, -S, crash.py]\nexpect: {outcome: crash}\n"
    )

    def no_cores() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    ran = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "spec.yaml", "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=no_cores,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = next((tmp_path / "out").glob("runs/*/report.md")).read_text()
    assert "the hard core size limit (ulimit -Hc) is 0" in report, report
    assert not list(tmp_path.glob("core*"))


@needs_gdb
@needs_plain_cores
def test_a_core_a_later_crash_replaced_in_a_cd_folder_is_read_all_the_same(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd build && ./prog` run as two instances (or -j 2) crashing together: the kernel
    unlinks build/core to write the next one, and the watch held only the workdir's cores,
    so one attempt said its crash left no core. build/ is watched too: a real crash there
    between this attempt's end and its claim replaces the core, which is read from the
    watch."""
    _shared_name_or_skip()
    workdir = tmp_path / "work"
    build = workdir / "build"
    build.mkdir(parents=True)
    (build / "crash.py").write_text("import ctypes\nctypes.string_at(8)\n")
    real_find = native.find_cores
    later: list[bool] = []

    def late_claim(token: str, folder: Path, *args: object) -> list[native.CoreInfo]:
        if not later:
            later.append(True)
            assert until(lambda: bool(held_fds(build)))
            _crash_in(build)
        return real_find(token, folder, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(native.capture, "find_cores", late_claim)
    line = f"cd build && {sys.executable} -S crash.py"
    ex = runner.run(make_plan(line, workdir=workdir), tmp_path / "a")
    assert ex.returncode in (-11, 139)
    assert later
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert stacks.unavailable is None, stacks.unavailable
    assert [p.signal for p in stacks.processes] == ["SIGSEGV"]
    assert "crash.py" in stacks.processes[0].command


@needs_gdb
@needs_plain_cores
def test_a_pipelines_later_process_that_crashed_is_a_child_in_the_header(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """`set -o pipefail; a | b | c` whose b dies of SIGSEGV: bash exits 139 with b's status,
    and its report lists b as a pipeline's later process, which the outcome reads as a
    child's crash (where: child). b's core is a child's, not the main process's, in the
    header, and the outcome's reader of children finds it there (`_cored`)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "crash.py").write_text("import ctypes, sys\nsys.stdin.read()\nctypes.string_at(8)\n")
    line = f"set -o pipefail; echo x | {sys.executable} -S crash.py | cat"
    ex = runner.run(make_plan(["bash", "-c", line], workdir=workdir), tmp_path / "a")
    assert ex.returncode == 139, ex.stderr_path.read_text()
    assert "| " in ex.stderr_path.read_text()  # bash's report of the pipeline
    stacks = native.read(tmp_path / "a")
    assert stacks is not None
    assert [(p.signal, p.root) for p in stacks.processes] == [("SIGSEGV", False)]
    header = (tmp_path / "a" / native.TEXT_NAME).read_text().splitlines()[0]
    assert "crash.py) [native, core, SIGSEGV, a child process]" in header, header
    # The pipeline's first process is the command's program (`python train.py | tee log`):
    # its crash is the main process's, as the outcome reads it.
    line = f"set -o pipefail; {sys.executable} -S crash.py < /dev/null 2>&1 | cat"
    ex = runner.run(make_plan(["bash", "-c", line], workdir=workdir), tmp_path / "b")
    assert ex.returncode == 139, ex.stderr_path.read_text()
    stacks = native.read(tmp_path / "b")
    assert stacks is not None
    assert [(p.signal, p.root) for p in stacks.processes] == [("SIGSEGV", True)]
