"""eu-stack's and py-spy's output read back: recorded from one real core (a ctypes strlen
segfault under faulthandler), which gdb read too (tests/data/native/)."""

from __future__ import annotations

import json
from pathlib import Path

from reprospec import native
from reprospec.native import NativeStacks, ProcessStacks, Thread
from reprospec.native.eustack import eustack_error
from reprospec.outcome.classify import _crashed_thread_first

DATA = Path(__file__).resolve().parents[2] / "data" / "native"
CRASHED = 13758
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
# The core's maps around the recorded addresses (coreinfo.read_core's `files`).
MAPS = (
    (0x7FCAEE844000, 0x7FCAEE99A000, LIBC),
    (0x7FCAEE4E9000, 0x7FCAEE4EF000, "/usr/lib/x86_64-linux-gnu/libffi.so.8.1.2"),
    (0x7FCAEE502000, 0x7FCAEE512000, "/py/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
)


def _core(threads: tuple[Thread, ...]) -> NativeStacks:
    return NativeStacks((ProcessStacks(CRASHED, "core", "python", "SIGSEGV", CRASHED, threads),))


def _eustack() -> tuple[Thread, ...]:
    return native.parse_eustack((DATA / "eustack-strlen-core.txt").read_text(), MAPS)


def _gdb() -> tuple[Thread, ...]:
    return native.parse_backtrace((DATA / "gdb-strlen-core.txt").read_text(), MAPS)


def test_eustack_threads_frames_and_source_lines() -> None:
    crashed, sleeper = _eustack()
    assert (crashed.id, crashed.lwp, sleeper.lwp) == ("1", CRASHED, 13759)
    first = crashed.frames[0]
    assert (first.function, first.library) == ("__pthread_kill_implementation", "libc.so.6")
    assert (first.address, first.file, first.line) == (0x7FCAEE8A8EEC, "./nptl/pthread_kill.c", 44)
    # libc's signal trampoline is gdb's `<signal handler called>`
    assert crashed.frames[2].signal_handler
    strlen = crashed.frames[3]
    assert (strlen.function, strlen.file, strlen.line) == (
        "__strlen_avx2",
        "../sysdeps/x86_64/multiarch/strlen-avx2.S",
        76,
    )
    # No symbol covers it: gdb's `??`, the library from the maps (the file, not the soname).
    assert (crashed.frames[4].function, crashed.frames[4].library) == (None, "libffi.so.8.1.2")
    assert crashed.frames[7].library == "_ctypes.cpython-311-x86_64-linux-gnu.so"
    # An address outside the maps given keeps eu-stack's module name.
    assert crashed.frames[10].library == "libpython3.11.so.1.0"
    assert sleeper.frames[1].function == "lll_mutex_unlock_optimized"  # an inlined frame (-i)


def test_eustack_and_gdb_give_the_same_fault_frames_and_signature() -> None:
    ours, theirs = _core(_eustack()[:1]), _core(_gdb())
    assert native.signature_frame(ours) == native.signature_frame(theirs) == "strlen@libc"
    assert native.top_frames(ours) == native.top_frames(theirs)
    process, other = ours.processes[0], theirs.processes[0]
    assert process.crashing_thread is not None
    assert other.crashing_thread is not None
    mine = native.fault_frames(process.crashing_thread)
    gdbs = native.fault_frames(other.crashing_thread)
    assert [(f.symbol, f.library, f.address) for f in mine[:6]] == [
        (f.symbol, f.library, f.address) for f in gdbs[:6]
    ]


def test_eustack_symbol_versions_are_dropped_and_names_demangled_later() -> None:
    text = "\n".join(
        [
            "PID 7 - process",
            "TID 7:",
            "#0  0x00007fa1f22a412b __GI___lll_lock_wait - /usr/lib/x86_64-linux-gnu/libc.so.6",
            "#1  0x00007fa1f22aa482 __pthread_mutex_lock@GLIBC_2.2.5 - /usr/lib/libc.so.6",
            "#2  0x00007fa1f224524a __libc_start_main@@GLIBC_2.34 - /usr/lib/libc.so.6",
            "#3  0x00007fc54a0e4b70 _ZN2at6native3sumERKNS_6TensorE - /x/libtorch_cpu.so",
            "eu-stack: dwfl_thread_getframes tid 7 at 0x1 in /x/a.out: No DWARF information",
        ]
    )
    (thread,) = native.parse_eustack(text)
    names = [f.function for f in thread.frames]
    assert names == [
        "__GI___lll_lock_wait",
        "__pthread_mutex_lock",
        "__libc_start_main",
        "_ZN2at6native3sumERKNS_6TensorE",
    ]
    assert [f.symbol for f in thread.frames[:2]] == ["lll_lock_wait", "pthread_mutex_lock"]
    assert thread.frames[3].library == "libtorch_cpu.so"


def test_eustack_says_why_it_printed_nothing() -> None:
    error = "eu-stack: dwfl_linux_proc_report pid 999999: No such file or directory"
    assert native.parse_eustack(error) == ()
    assert eustack_error(f"{error}\n") == error
    assert eustack_error(f"/usr/bin/{error}\n") == error  # named as it was started
    assert eustack_error("") is None


_PYSPY = [
    {
        "thread_id": 140509558183616,
        "thread_name": "sleeper",
        "os_thread_id": 13759,
        "frames": [{"name": "Thread.run", "filename": "/py/threading.py", "line": 982}],
    },
    {
        "thread_id": 140509570239360,
        "thread_name": "MainThread",
        "os_thread_id": CRASHED,
        "frames": [
            {"name": "crash", "filename": "/t/native_crash.py", "line": 21},
            {"name": "<module>", "filename": "/t/native_crash.py", "line": 44},
        ],
    },
]


def test_pyspy_core_dump_reads_as_py_bt_crashed_thread_first() -> None:
    text = native.python_text_of(json.dumps(_PYSPY), CRASHED)
    assert text.splitlines()[:3] == [
        f"Thread 1 (Thread 0x7fcaef058b80 (LWP {CRASHED})):",
        "Traceback (most recent call first):",
        '  File "/t/native_crash.py", line 21, in crash',
    ]
    assert "Thread 2 (Thread 0x7fcaee4d96c0 (LWP 13759)):" in text
    # What outcome.classify reads of gdb's py-bt it reads of this: the crashed thread first.
    reordered = _crashed_thread_first(native.python_text_of(json.dumps(_PYSPY), 13759), CRASHED)
    assert reordered.startswith(f"Thread 2 (Thread 0x7fcaef058b80 (LWP {CRASHED})):")


def test_pyspy_qualified_names_read_as_the_codes_own_as_py_bt_names_them() -> None:
    frames = [
        {"name": "Items.__getitem__", "filename": "/t/loader.py", "line": 13},
        {"name": "_MapDatasetFetcher.fetch.<locals>.<listcomp>", "filename": "/t/f.py", "line": 54},
        {"name": "<module>", "filename": "/t/loader.py", "line": 17},
    ]
    text = native.python_text_of(json.dumps([{"os_thread_id": 7, "frames": frames}]), 7)
    assert text.splitlines()[2:] == [
        '  File "/t/loader.py", line 13, in __getitem__',
        '  File "/t/f.py", line 54, in <listcomp>',
        '  File "/t/loader.py", line 17, in <module>',
    ]


def test_pyspy_output_that_is_not_a_dump_gives_no_python_stacks() -> None:
    assert native.python_text_of("not json", 1) == ""
    assert native.python_text_of("{}", 1) == ""
    assert native.python_text_of(json.dumps([{"frames": [{"name": 3}]}]), 1) == ""
