"""eu-stack reads real cores and real hung processes with gdb's frames; without it, gdb does
and the stacks say why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprospec import native
from reprospec.native import NativeStacks
from reprospec.runners.local import LocalRunner
from tests.support.local import child, make_plan

needs_both = pytest.mark.skipif(
    native.eustack_path() is None or native.gdb_path() is None,
    reason="eu-stack and gdb both needed (apt-get install elfutils gdb)",
)
needs_plain_cores = pytest.mark.skipif(
    native.core_pattern().piped, reason="kernel.core_pattern pipes cores to a handler"
)


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def _gdb_only_path(tmp_path: Path) -> str:
    """A PATH with gdb and c++filt, and no eu-stack."""
    folder = tmp_path / "gdb-only"
    folder.mkdir()
    for tool in ("gdb", "c++filt"):
        found = shutil.which(tool)
        assert found is not None
        (folder / tool).symlink_to(found)
    return str(folder)


def _strlen_crash(runner: LocalRunner, tmp_path: Path, name: str) -> NativeStacks:
    workdir = tmp_path / f"work-{name}"
    workdir.mkdir()
    logs = tmp_path / f"logs-{name}"
    ex = runner.run(make_plan(child("native_crash.py", "strlen"), workdir=workdir), logs)
    assert ex.returncode == -11, ex.stderr_path.read_text()
    stacks = native.read(logs)
    assert stacks is not None
    assert list(workdir.iterdir()) == []  # the core was read and deleted
    return stacks


@needs_both
@needs_plain_cores
def test_eu_stack_and_gdb_read_a_crash_with_the_same_frames(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _strlen_crash(runner, tmp_path, "eu-stack")
    monkeypatch.setenv("PATH", _gdb_only_path(tmp_path))
    assert native.eustack_path() is None
    slow = _strlen_crash(runner, tmp_path, "gdb")
    assert native.GDB_FALLBACK not in fast.notes
    assert native.GDB_FALLBACK in slow.notes  # read by gdb, and why
    for stacks in (fast, slow):
        (process,) = stacks.processes
        assert process.error is None
        assert process.crashing_thread is not None
        assert process.crashing_thread.lwp == process.pid
        assert len(process.threads) == 2  # the sleeping thread too
    assert native.signature_frame(fast) == native.signature_frame(slow) == "strlen@libc"
    assert native.top_frames(fast) == native.top_frames(slow)
    ours, theirs = fast.processes[0].crashing_thread, slow.processes[0].crashing_thread
    assert ours is not None
    assert theirs is not None
    assert [(f.symbol, f.library) for f in native.fault_frames(ours)[:5]] == [
        (f.symbol, f.library) for f in native.fault_frames(theirs)[:5]
    ]
    if native.pyspy_path() is not None:  # py-spy's Python stacks of the core, as py-bt's
        assert "native_crash.py" in fast.processes[0].python
        assert "in crash" in fast.processes[0].python


def _deadlocked(ready: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([*child("native_deadlock.py"), str(ready)])
    for _ in range(1000):
        if list(ready.glob("*.ready")):
            time.sleep(0.05)  # the ready file is written just before the last lock
            return process
        time.sleep(0.02)
    process.kill()
    raise AssertionError("the deadlock was not reached")


@needs_both
def test_eu_stack_reads_a_hung_process_and_gdb_does_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready = tmp_path / "ready"
    ready.mkdir()
    hung = _deadlocked(ready)
    try:
        fast = native.live_stacks({hung.pid: "deadlock"}, budget_s=20)
        monkeypatch.setenv("PATH", _gdb_only_path(tmp_path))
        slow = native.live_stacks({hung.pid: "deadlock"}, budget_s=20)
    finally:
        hung.kill()
        hung.wait()
    assert native.GDB_FALLBACK in slow.notes
    assert not fast.notes
    for stacks in (fast, slow):
        (process,) = stacks.processes
        assert process.error is None, process.error
        assert len(process.threads) == 2  # the main thread and its waiter
        for thread in process.threads:
            symbols = {frame.symbol for frame in thread.frames[:5]}
            assert symbols & {"lll_lock_wait", "pthread_mutex_lock", "futex_wait"}, symbols
        assert all(t.name for t in process.threads)  # their names, as gdb gives them
    names = [sorted(str(t.name) for t in s.processes[0].threads) for s in (fast, slow)]
    assert names[0] == names[1]
    # Each thread's top frames read the same (gdb adds the inlined frames eu-stack leaves
    # out of a live process), and both unwind through libffi to ctypes' call of
    # pthread_mutex_lock: gdb with --readnever read no unwind tables and guessed below the
    # first frames (a mutex's address as a frame, _PyRuntime as a caller).
    ours = sorted([f.symbol for f in t.frames[:2]] for t in fast.processes[0].threads)
    theirs = sorted([f.symbol for f in t.frames[:5]] for t in slow.processes[0].threads)
    for top, gdbs in zip(ours, theirs, strict=True):
        assert [symbol for symbol in gdbs if symbol in top] == top, (top, gdbs)
    for stacks in (fast, slow):
        for thread in stacks.processes[0].threads:
            frames = [frame.symbol for frame in thread.frames]
            assert "_ctypes_callproc" in frames, frames
            assert "_PyRuntime" not in frames, frames


@needs_both
def test_eu_stack_says_what_it_could_not_read() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stacks = native.live_stacks({gone.pid: "python -c pass"}, budget_s=20)
    (process,) = stacks.processes
    assert process.threads == ()
    assert process.error is not None
    assert process.error.startswith(("eu-stack:", "ptrace:")), process.error


@needs_both
def test_eu_stack_stops_at_its_budget() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stacks = native.attach_eustack({sleeper.pid: "sleeper", os.getpid(): "me"}, 0.0)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert all(p.error and "0s" in p.error for p in stacks.processes), stacks
    assert stacks.notes
    assert "0s" in stacks.notes[0]


_ODD_BYTES = r"""
import ctypes, mmap, os, sys, time
folder = sys.argv[1].encode()
path = os.path.join(folder, b"lib\x80odd.so")
with open(path, "wb") as handle:
    handle.write(b"\0" * 4096)
with open(path, "rb") as handle:
    mapped = mmap.mmap(handle.fileno(), 4096, prot=mmap.PROT_READ)
# A thread name is cut at 15 bytes, here in the middle of a two-byte character.
ctypes.CDLL(None).prctl(15, "ппппппппп".encode())  # PR_SET_NAME
open(os.path.join(folder, b"ready"), "w").close()
time.sleep(120)
"""


@needs_both
def test_a_thread_name_cut_mid_character_and_an_undecodable_library_path_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread's `comm` is its name cut at 15 bytes, which may cut a UTF-8 character in
    half, and a mapped file's path need not be UTF-8: both were read as strict UTF-8 and
    the UnicodeDecodeError ended the stacks of every process. Read with the bytes replaced,
    by eu-stack and by gdb."""
    hung = subprocess.Popen([sys.executable, "-c", _ODD_BYTES, str(tmp_path)])
    try:
        for _ in range(1000):
            if (tmp_path / "ready").exists():
                break
            time.sleep(0.02)
        fast = native.live_stacks({hung.pid: "odd"}, budget_s=20)
        monkeypatch.setenv("PATH", _gdb_only_path(tmp_path))
        slow = native.live_stacks({hung.pid: "odd"}, budget_s=20)
    finally:
        hung.kill()
        hung.wait()
    for stacks in (fast, slow):
        (process,) = stacks.processes
        assert process.error is None, process.error
        (thread,) = process.threads
        assert str(thread.name).startswith("ппппппп"), thread.name
        assert thread.frames, thread
