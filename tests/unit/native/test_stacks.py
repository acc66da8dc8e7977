"""Native stacks in-process: gdb output parsed, frames and signatures, core patterns, the core
watch."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reprospec import native
from reprospec.native import CorePattern, Frame, NativeStacks, ProcessStacks, Thread
from reprospec.native.corewatch import WATCH, CoreWatch
from reprospec.native.stacks import Pipes
from tests.support.native import held_fds, until


def test_only_a_pattern_without_a_pid_shares_one_name() -> None:
    assert CorePattern("core").shared_name
    assert CorePattern("core.%e").shared_name
    assert CorePattern("/var/crash/core.%%p").shared_name  # %%p is a literal "%p"
    assert not CorePattern("core", uses_pid=True).shared_name
    assert not CorePattern("core.%p").shared_name
    assert not CorePattern("/var/crash/core.%e.%P").shared_name
    assert not CorePattern("|/usr/share/apport/apport %p").shared_name


# -- pure functions ----------------------------------------------------------------------


def test_core_pattern_kinds() -> None:
    piped = CorePattern("|/usr/share/apport/apport -p%p -s%s")
    assert piped.piped
    assert piped.handler == "/usr/share/apport/apport"
    assert piped.globs(Path("/w")) == []
    assert CorePattern("core").globs(Path("/w")) == ["/w/core"]
    assert CorePattern("core", uses_pid=True).globs(Path("/w")) == ["/w/core", "/w/core.*"]
    assert CorePattern("core.%e.%p").globs(Path("/w")) == ["/w/core.*.*"]
    assert CorePattern("/var/crash/%e-%%.core").globs(Path("/w")) == ["/var/crash/*-%.core"]
    assert CorePattern("core").globs(Path("/w[1]")) == ["/w[[]1]/core"]


@pytest.mark.parametrize(
    ("function", "library", "short"),
    [
        ("__strlen_evex", "libc.so.6", "strlen"),
        ("__memmove_avx_unaligned_erms", "libc.so.6", "memmove"),
        ("___pthread_mutex_lock", "libc.so.6", "pthread_mutex_lock"),
        ("__GI___lll_lock_wait", "libc.so.6", "lll_lock_wait"),
        ("_private_helper", "libfoo.so", "_private_helper"),
        (
            "at::native::add(at::Tensor const&, c10::Scalar const&)",
            "libtorch_cpu.so",
            "at::native::add",
        ),
        (
            "void at::native::(anonymous namespace)::inner<float, X<int> >(char**, long)",
            "libtorch_cpu.so",
            "at::native::(anonymous namespace)::inner",
        ),
        (
            "f(int)::{lambda(long, long)#1}::operator()(long, long) const",
            "a.so",
            "f::{lambda#1}::operator()",
        ),
        ("std::vector<int>::operator[](unsigned long)", "a.so", "std::vector::operator[]"),
        ("operator new(unsigned long)", "libstdc++.so.6", "operator new"),
        ("g [clone .cold]", "a.so", "g"),
    ],
)
def test_short_symbol(function: str, library: str, short: str) -> None:
    assert native.short_symbol(function, library) == short


def test_short_library() -> None:
    assert native.short_library("libc.so.6") == "libc"
    assert native.short_library("/usr/lib/libffi.so.8.1.2") == "libffi"
    assert native.short_library("libgomp-a34b3233.so.1") == "libgomp"
    assert native.short_library("_C.cpython-311-x86_64-linux-gnu.so") == "_C"
    assert native.short_library("python3.11") == "python3.11"
    # Removed after it was loaded: the kernel's mapping says so, the library is the same.
    assert native.short_library("/tmp/tmpx/libcrash.so (deleted)") == "libcrash"
    assert native.short_library("libtorch_cpu.so.2 (deleted)") == "libtorch_cpu"


def _stacks(*frames: Frame) -> NativeStacks:
    thread = Thread("1", 10, None, frames)
    return NativeStacks((ProcessStacks(10, "core", "prog", "SIGSEGV", 10, (thread,)),))


def test_signature_frame_names_the_library_that_called_into_libc() -> None:
    stacks = _stacks(
        Frame(0, "__pthread_kill_implementation", "libc.so.6"),
        Frame(1, "raise", "libc.so.6"),
        Frame(2, None, None, signal_handler=True),
        Frame(3, "___pthread_mutex_lock", "libc.so.6"),
        Frame(4, "libnvJitLink_static_0d1e", "libnvJitLink.so.12"),
        Frame(5, "_cffi_f_nvJitLinkCreate", "_cffi_backend.cpython-311-x86_64-linux-gnu.so"),
    )
    assert native.top_frames(stacks, limit=2) == (
        "pthread_mutex_lock (libc.so.6) <- libnvJitLink_static_0d1e (libnvJitLink.so.12)"
    )
    assert (
        native.signature_frame(stacks)
        == "pthread_mutex_lock@libc<-libnvJitLink_static_0d1e@libnvJitLink"
    )
    assert native.with_native_frame("error:RuntimeError", stacks) == "error:RuntimeError"


def test_signature_frame_of_an_abort_without_a_handler() -> None:
    stacks = _stacks(
        Frame(0, "__pthread_kill_implementation", "libc.so.6"),
        Frame(1, "__GI_raise", "libc.so.6"),
        Frame(2, "__GI_abort", "libc.so.6"),
        Frame(3, "c10::detail::torchCheckFail(char const*)", "libc10.so"),
    )
    assert (
        native.top_frames(stacks) == "abort (libc.so.6) <- c10::detail::torchCheckFail (libc10.so)"
    )
    assert native.signature_frame(stacks) == "abort@libc<-c10::detail::torchCheckFail@libc10"


def test_written_stacks_read_back_equal(tmp_path: Path) -> None:
    stacks = _stacks(Frame(0, "__strlen_evex", "libc.so.6", 0x7F00, "strlen.S", 79))
    # A live process's parent and pipes too (a hang's leaf-first place reads them back).
    live = ProcessStacks(
        11,
        "attach",
        "./nap",
        threads=stacks.processes[0].threads,
        ppid=10,
        pipes=Pipes(reads=(7,), writes=(8, 9)),
    )
    stacks = NativeStacks((*stacks.processes, live), None, ("a note",))
    path = native.write(stacks, tmp_path)
    assert path == tmp_path / "native-stacks.txt"
    assert native.read(tmp_path) == stacks
    text = path.read_text()
    assert "a note" in text
    assert "#0  __strlen_evex (libc.so.6) at strlen.S:79" in text
    assert native.read(tmp_path / "nowhere") is None


def test_the_python_stacks_of_a_core_name_no_reader_that_may_not_have_read_them(
    tmp_path: Path,
) -> None:
    # Beside eu-stack, py-spy reads a core's Python stacks (written in py-bt's form): the
    # text said "Python stacks (gdb py-bt):" and the report "as gdb read it from its core",
    # where gdb never ran.
    python = 'Thread 1 (Thread 0x7f (LWP 10)):\nTraceback (most recent call first):\n  File "x.py"'
    process = ProcessStacks(10, "core", "prog", "SIGSEGV", 10, python=python)
    text = native.write(NativeStacks((process,)), tmp_path).read_text()
    assert "gdb" not in text
    assert f"Python stacks (read from the core):\n{python}" in text


def test_parse_backtrace_of_gdb_output() -> None:
    text = "\n".join(
        [
            'Thread 2 (Thread 0x7f00 (LWP 12) "python"):',
            "#0  0x00007f10 in futex_wait (...) at ../sysdeps/nptl/futex-internal.h:146",
            "#1  0x00007f20 in ?? () from /lib/x86_64-linux-gnu/libffi.so.8",
            "#2  <signal handler called>",
            "#3  0x00007f30 in at::f(at::Tensor const&) () from /x/libtorch_cpu.so",
            "Backtrace stopped: previous frame inner to this frame (corrupt stack?)",
            "",
            "Thread 3.1 (LWP 13):",
            "#0  0x0000000000401000 in main ()",
        ]
    )
    first, second = native.parse_backtrace(text, [(0x400000, 0x402000, "/usr/bin/prog")])
    assert (first.id, first.lwp, first.name) == ("2", 12, "python")
    futex, unknown, handler, torch_frame = first.frames
    assert (futex.function, futex.library, futex.file, futex.line) == (
        "futex_wait",
        None,
        "../sysdeps/nptl/futex-internal.h",
        146,
    )
    assert (unknown.function, unknown.library) == (None, "libffi.so.8")
    assert handler.signal_handler
    assert (torch_frame.function, torch_frame.library) == (
        "at::f(at::Tensor const&)",
        "libtorch_cpu.so",
    )
    # gdb's `3.1` (thread 1 of its third inferior, once one session has read several
    # processes) is thread 1 of that process: the report showed `thread 2.1` of a worker.
    assert (second.id, second.lwp, second.frames[0].library) == ("1", 13, "prog")


def _new_watch(tmp_path: Path) -> tuple[CoreWatch, Path]:
    """A private watch and an empty folder to watch."""
    folder = tmp_path / "watched"
    folder.mkdir()
    return CoreWatch(), folder


def _replace_core(folder: Path, data: bytes) -> None:
    """What the kernel does for a core: unlink the one there, create a new one."""
    (folder / "core").unlink(missing_ok=True)
    (folder / "core").write_bytes(data)


def _release_leaves_nothing_held(watch: CoreWatch, folder: Path) -> None:
    watch.release(folder)
    assert held_fds(folder) == []


def test_the_watch_holds_a_replaced_core_while_attempts_run_and_nothing_after(
    tmp_path: Path,
) -> None:
    # A private watch on a real folder, the kernel's way of replacing a core done by hand:
    # unlink `core`, create it anew.
    watch, folder = _new_watch(tmp_path)
    assert watch.acquire(folder, ("core",))
    (folder / "core").write_bytes(b"first")
    (folder / "notes.txt").write_text("not a core's name")
    assert until(lambda: len(held_fds(folder)) == 1)
    _replace_core(folder, b"second")
    assert until(lambda: len(watch.replaced(folder)) == 1)
    (first,) = watch.replaced(folder)
    assert first.path.read_bytes() == b"first"  # readable although no name leads to it
    target = tmp_path / "claimed"
    assert watch.copy_out(first.file, target)
    assert target.read_bytes() == b"first"
    assert watch.replaced(folder) == []
    assert until(lambda: len(held_fds(folder)) == 1)  # the second, still at its name
    watch.release(folder)
    assert held_fds(folder) == []  # the last attempt there ended: nothing held
    _replace_core(folder, b"while idle")
    time.sleep(0.1)
    assert held_fds(folder) == []  # an idle watch holds nothing
    assert watch.acquire(folder, ("core",))  # the same watch, in use again
    _replace_core(folder, b"third")
    assert until(lambda: len(held_fds(folder)) == 1)
    _release_leaves_nothing_held(watch, folder)


def test_the_watch_holds_a_core_once_when_it_reads_its_events_late(tmp_path: Path) -> None:
    # The reader is late (the lock held): both creations are handled once the second core
    # exists. It is held once, not twice: one file, one claim.
    watch, folder = _new_watch(tmp_path)
    assert watch.acquire(folder, ("core",))
    with watch._lock:
        (folder / "core").write_bytes(b"first")
        _replace_core(folder, b"second")
        time.sleep(0.1)  # both events wait for the lock
    assert until(lambda: len(held_fds(folder)) == 1)
    time.sleep(0.1)  # the second event too
    _replace_core(folder, b"third")
    assert until(lambda: len(held_fds(folder)) == 2)
    time.sleep(0.1)
    (replaced,) = watch.replaced(folder)
    assert replaced.path.read_bytes() == b"second"
    _release_leaves_nothing_held(watch, folder)


def test_two_spellings_of_a_folder_are_one_watched_folder(tmp_path: Path) -> None:
    watch, folder = _new_watch(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert watch.acquire(folder / ".." / "watched", ("core",))
    assert watch.acquire(link, ("core",))  # inotify: the same watch descriptor
    watch.release(link)  # one attempt of two ended: the other still runs there
    (folder / "core").write_bytes(b"held")
    assert until(lambda: len(held_fds(folder)) == 1)
    _release_leaves_nothing_held(watch, folder)


def test_a_removed_and_recreated_folder_is_watched_anew(tmp_path: Path) -> None:
    watch, folder = _new_watch(tmp_path)
    assert watch.acquire(folder, ("core",))
    watch.release(folder)
    folder.rmdir()  # the kernel drops the watch (IN_IGNORED, which the reader may not
    folder.mkdir()  # have handled yet: the next acquire must not depend on it)
    assert watch.acquire(folder, ("core",))
    (folder / "core").write_bytes(b"held")
    assert until(lambda: len(held_fds(folder)) == 1)
    _release_leaves_nothing_held(watch, folder)


def test_a_core_replaced_between_its_claim_and_its_move_is_taken_from_the_watch(
    tmp_path: Path,
) -> None:
    # Claimed at its name, then replaced by another attempt's core before it is moved: the
    # move takes ours from the watch and puts the other one back where its attempt looks.
    folder = tmp_path / "watched"
    folder.mkdir()
    assert WATCH.acquire(folder, ("core",))
    try:
        (folder / "core").write_bytes(b"ours")
        assert until(lambda: len(held_fds(folder)) == 1)
        ours = native.CoreInfo(
            folder / "core", 7, "SIGSEGV", None, "", (), file=_file(folder / "core")
        )
        _replace_core(folder, b"theirs")
        assert until(lambda: len(held_fds(folder)) == 2)
        kept = native.move_core(ours, tmp_path / "attempt")
        assert kept == tmp_path / "attempt" / "core.7"
        assert kept.read_bytes() == b"ours"
        assert (folder / "core").read_bytes() == b"theirs"
        # Nothing leads to a core the watch no longer holds: lost, never another's.
        gone = native.CoreInfo(
            Path("/proc/self/fd/999999"), 8, "SIGSEGV", None, "", (), file=(0, 1)
        )
        assert native.move_core(gone, tmp_path / "attempt") is None
    finally:
        WATCH.release(folder)
    assert held_fds(folder) == []


def _file(path: Path) -> tuple[int, int]:
    info = path.stat()
    return (info.st_dev, info.st_ino)


@pytest.mark.parametrize(
    ("signature", "target", "unknown", "agree"),
    [
        ("crash:SIGSEGV:main:strlen@libc", "crash:SIGSEGV:main:strlen@libc", False, True),
        # Its core lost to a parallel crash in the same folder: the frame is unknown.
        ("crash:SIGSEGV:main", "crash:SIGSEGV:main:strlen@libc", True, True),
        ("crash:SIGSEGV:main:forward", "crash:SIGSEGV:main:forward:gemm@libtorch", True, True),
        ("crash:SIGSEGV:main:kernel=oob", "crash:SIGSEGV:main:f@libx:kernel=oob", True, True),
        # Read, and no frame: another crash. Unknown, but the rest differs: another crash.
        ("crash:SIGSEGV:main", "crash:SIGSEGV:main:strlen@libc", False, False),
        ("crash:SIGABRT:main", "crash:SIGSEGV:main:strlen@libc", True, False),
        ("crash:SIGSEGV:child", "crash:SIGSEGV:main:strlen@libc", True, False),
        # Not the frame missing, the stage: the stage is known whether or not gdb read.
        ("crash:SIGSEGV:main:strlen@libc", "crash:SIGSEGV:main:forward:strlen@libc", True, False),
        ("crash:SIGSEGV:main", "crash:SIGSEGV:main", True, True),
        ("error:ValueError", "error:ValueError:x", True, False),
    ],
)
def test_a_crash_whose_native_frame_is_unknown_agrees_with_the_target(
    signature: str, target: str, unknown: bool, agree: bool
) -> None:
    assert native.agrees(signature, target, native_unknown=unknown, across_builds=False) is agree


def test_a_fragment_says_whether_native_stacks_were_read() -> None:
    lost = native.NativeStacks(unavailable="native stacks unavailable: left no core")
    assert native.read_none(native.render_markdown(lost))
    assert native.read_none(None)
    read = native.render_markdown(_stacks(Frame(0, "strlen", "libc.so.6")))
    assert not native.read_none(read)
    # A core found, then lost before it was read (a later crash's attempt moved its own out
    # of the shared `core` name first), or one the reader could not open: none read either.
    replaced = ProcessStacks(10, "core", "prog", "SIGSEGV", error=native.REPLACED)
    unopened = ProcessStacks(11, "core", "prog", "SIGSEGV", error="eu-stack: Cannot open core")
    fragment = native.render_markdown(NativeStacks((replaced, unopened)), link="x.txt")
    assert native.read_none(fragment)
    assert f"pid 10: {native.REPLACED}; pid 11: eu-stack: Cannot open core" in fragment
    # One process read among them is a reading: its frame is the signature's.
    both = NativeStacks((replaced, *_stacks(Frame(0, "strlen", "libc.so.6")).processes))
    assert not native.read_none(native.render_markdown(both))


def test_a_hung_processs_threads_are_ordered_by_what_they_wait_in() -> None:
    """One on a lock or a condition before one that runs, a sleeper last; the main thread
    after the others of its rank, and last where it waits in a C join beside them."""
    from reprospec.native.stacks import hung_thread_order

    sleeper = (False, ["__GI___clock_nanosleep", "__GI___nanosleep", "__sleep", "beat"])
    on_mutex = (False, ["futex_wait", "__GI___lll_lock_wait", "___pthread_mutex_lock", "work"])
    joining = (True, ["__futex_abstimed_wait_common64", "__pthread_clockjoin_ex", "main"])
    runs = (False, ["compute"])
    assert hung_thread_order([sleeper, on_mutex, joining]) == [1, 0, 2]
    assert hung_thread_order([sleeper, runs, joining]) == [1, 0, 2]
    # Python's lock (its join, `with lock`) is a semaphore's wait: the main thread's last
    # among them; a timed one (a wait given a timeout) wakes.
    python_join = (True, ["do_futex_wait", "__new_sem_wait", "PyThread_acquire_lock_timed"])
    python_lock = (False, ["do_futex_wait", "__new_sem_wait_slow64", "__new_sem_wait"])
    timed = (False, ["do_futex_wait", "__new_sem_wait_slow64", "__sem_clockwait"])
    assert hung_thread_order([timed, python_join, python_lock]) == [2, 1, 0]
    # A lone main thread, whatever it waits in, is the one.
    assert hung_thread_order([joining]) == [0]
    # glibc's `__libc_` names (an older glibc's sleep) are its API's, as short_symbol
    # reads them: `libc_nanosleep` was in no set, and its sleeper ranked as one that runs.
    old_sleeper = (False, ["__libc_nanosleep", "beat"])
    assert hung_thread_order([old_sleeper, runs]) == [1, 0]
