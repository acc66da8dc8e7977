"""How a hang's native threads are listed: the stuck DataLoader worker's first and marked."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import pytest

from reprospec.core.words import STUCK_MARK, STUCK_UNREAD
from reprospec.native.render import (
    SHELL_WAITING,
    full_text,
    hung_descendant,
    hung_frame,
    hung_process,
    python_caller,
    render_markdown,
    runs_own_code,
    shell_waiting,
    signature_frame,
    thread_tops,
)
from reprospec.native.stacks import Frame, NativeStacks, Pipes, ProcessStacks, Thread


def _thread(lwp: int, *symbols: str) -> Thread:
    frames = tuple(Frame(n, name, "libc.so.6") for n, name in enumerate(symbols))
    return Thread(str(lwp), lwp, None, frames)


# A command's DataLoader at a hang: the main process polls, one worker waits for work, the
# other is stuck in a ctypes call (a mutex it holds), its helper threads wait alike.
HUNG = NativeStacks(
    processes=(
        ProcessStacks(10, "attach", threads=(_thread(10, "poll"), _thread(11, "futex_wait"))),
        ProcessStacks(20, "attach", threads=(_thread(20, "poll"),)),
        ProcessStacks(
            30,
            "attach",
            threads=(_thread(31, "futex_wait"), _thread(30, "lll_lock_wait", "pthread_mutex_lock")),
        ),
    )
)


def test_the_stuck_workers_thread_is_listed_first_and_marked() -> None:
    # The Python summary named worker pid 30 stuck fetching an item; the native list showed
    # its thread last among ten alike, unmarked, and cut at 20 it could be left out.
    lines = thread_tops(HUNG, stuck=30)
    assert lines[0] == (
        f"pid 30 thread 30 (LWP 30){STUCK_MARK}: lll_lock_wait (libc.so.6) <- "
        "pthread_mutex_lock (libc.so.6)"
    )
    assert lines[1].startswith("pid 30 thread 31 (LWP 31): ")
    assert [line.split(" thread")[0] for line in lines[2:]] == ["pid 10", "pid 10", "pid 20"]
    assert sum(STUCK_MARK in line for line in lines) == 1
    markdown = render_markdown(HUNG, stuck=30, link="cells/default/1/native-stacks.txt")
    assert markdown.startswith(
        "Native frames of every thread, the stuck DataLoader worker's (pid 30) first:\n"
        f"- `pid 30 thread 30 (LWP 30){STUCK_MARK}: "
    )


def test_without_a_stuck_worker_the_threads_keep_their_order() -> None:
    assert thread_tops(HUNG) == thread_tops(HUNG, stuck=None)
    assert [line.split(":")[0] for line in thread_tops(HUNG)] == [
        "pid 10 thread 10 (LWP 10)",
        "pid 10 thread 11 (LWP 11)",
        "pid 20 thread 20 (LWP 20)",
        "pid 30 thread 31 (LWP 31)",
        "pid 30 thread 30 (LWP 30)",
    ]
    assert render_markdown(HUNG).startswith("Native frames of every thread:\n")


def test_a_stuck_worker_that_was_not_read_is_said_so() -> None:
    markdown = render_markdown(HUNG, stuck=99)
    assert markdown.startswith(
        "Native frames of every thread (the stuck DataLoader worker, pid 99, is not among them):"
    )
    assert STUCK_MARK not in markdown


def test_a_stuck_worker_whose_stacks_could_not_be_read_is_listed_first_with_its_error() -> None:
    # Its process was read with an attach error and no threads: the heading said "(the stuck
    # DataLoader worker, pid 30, is not among them)" above a list that then showed
    # `pid 30: ptrace: ...` last, unmarked.
    refused = ProcessStacks(30, "attach", error="ptrace: Operation not permitted")
    stacks = NativeStacks(processes=(*HUNG.processes[:2], refused))
    lines = thread_tops(stacks, stuck=30)
    assert lines[0] == f"pid 30{STUCK_UNREAD}: ptrace: Operation not permitted"
    assert [line.split(" thread")[0] for line in lines[1:]] == ["pid 10", "pid 10", "pid 20"]
    markdown = render_markdown(stacks, stuck=30, link="native-stacks.txt")
    assert markdown.startswith(
        "Native frames of every thread, the stuck DataLoader worker's (pid 30) first:\n"
        f"- `pid 30{STUCK_UNREAD}: ptrace: Operation not permitted`\n"
    )
    assert "not among them" not in markdown
    assert STUCK_MARK not in markdown
    # Another process's error keeps its place and says nothing of the stuck worker.
    other = NativeStacks(processes=(refused, *HUNG.processes[:2]))
    assert thread_tops(other, stuck=20)[0].startswith(f"pid 20 thread 20 (LWP 20){STUCK_MARK}: ")
    assert thread_tops(other, stuck=20)[1] == "pid 30: ptrace: Operation not permitted"


def test_the_full_text_lists_and_marks_the_stuck_worker_as_the_report_does() -> None:
    """report.md and results.json marked the stuck worker's thread; native-stacks.txt, the
    file they link, listed it unmarked in pid order among threads that look alike."""
    text = full_text(HUNG, stuck=30)
    headers = [line for line in text.splitlines() if line.startswith(("---", "Thread"))]
    assert headers == [
        "--- pid 30 () [native, attached] ---",
        f"Thread 30 (LWP 30){STUCK_MARK}:",
        "Thread 31 (LWP 31):",
        "--- pid 10 () [native, attached] ---",
        "Thread 10 (LWP 10):",
        "Thread 11 (LWP 11):",
        "--- pid 20 () [native, attached] ---",
        "Thread 20 (LWP 20):",
    ]
    # Without a stuck worker (a crash, a hang in the main process): as read, unmarked.
    assert STUCK_MARK not in full_text(HUNG)
    assert full_text(HUNG).index("--- pid 10 ") < full_text(HUNG).index("--- pid 30 ")
    # The report's own copy of it (no link to the file) is marked alike.
    assert f"Thread 30 (LWP 30){STUCK_MARK}:" in render_markdown(HUNG, stuck=30)
    refused = ProcessStacks(30, "attach", error="ptrace: Operation not permitted")
    unread = full_text(NativeStacks(processes=(*HUNG.processes[:2], refused)), stuck=30)
    assert unread.startswith(
        f"--- pid 30 () [native, attached]{STUCK_UNREAD} ---\n(ptrace: Operation not permitted)\n"
    )


# py-spy's dump of a torch op's core (`torch.frombuffer(...).sum()` over unmapped memory):
# the fault is in an OpenMP worker (LWP 5417), which runs no Python; the main thread waits
# in the op its Python called.
_OP_PYTHON = (
    "Thread 1 (Thread 0x7f0e04c07b80 (LWP 5412)):\n"
    "Traceback (most recent call first):\n"
    '  File "/tmp/try/torchop.py", line 9, in reduce\n'
    '  File "/tmp/try/torchop.py", line 12, in <module>'
)


def _cored(crashed: int, python: str) -> NativeStacks:
    threads = (
        _thread(5412, "futex_wait", "gomp_team_barrier_wait_end"),
        _thread(5417, "vectorized_inner_sum", "gomp_thread_start"),
    )
    process = ProcessStacks(
        5412, "core", signal="SIGSEGV", crashed_lwp=crashed, threads=threads, python=python
    )
    return NativeStacks(processes=(process,))


def test_a_crash_in_a_thread_without_python_names_the_processs_python_frames() -> None:
    """faulthandler prints nothing for a thread with no Python state: the report named the
    OpenMP worker's native frames alone, and the user's line that called the op was in
    native-stacks.txt only."""
    stacks = _cored(5417, _OP_PYTHON)
    assert python_caller(stacks) == "reduce (torchop.py:9) <- <module> (torchop.py:12)"
    said = render_markdown(stacks, link="cells/default/1/native-stacks.txt")
    assert "Native frames of the crashing thread: `vectorized_inner_sum (libc.so.6)" in said
    assert "Python frames (read from its core): `reduce (torchop.py:9) <- <module>" in said


def test_a_crash_in_a_thread_running_python_adds_no_other_threads_frames() -> None:
    # The main thread crashed: its own stack is faulthandler's, in the log excerpt.
    assert python_caller(_cored(5412, _OP_PYTHON)) is None
    # gdb's py-bt names the thread too (`"python3"`), the crashed thread's frames its own.
    gdb = _OP_PYTHON + (
        '\nThread 2 (Thread 0x7f0e (LWP 5417) "python3"):\nTraceback (most recent call first):\n'
        '  File "/tmp/try/worker.py", line 3, in work\n'
    )
    assert python_caller(_cored(5417, gdb)) is None
    # No Python stacks read from the core: nothing to add.
    assert python_caller(_cored(5417, "")) is None
    assert "Python frames" not in render_markdown(_cored(5417, ""), link="x.txt")


@pytest.mark.parametrize(
    "interpreter",
    [
        "libpython3.11.so.1.0",
        "libpython3.13t.so.1.0",
        "python3.13t",
        "python3",
        # PyPy's and a debug build's (pythonargs.is_interpreter_file): read as user code.
        "libpypy3.10-c.so",
        "libpython3.11d.so.1.0",
        "python3.11d",
    ],
)
def test_the_signatures_caller_is_past_the_interpreter_whatever_its_build(
    interpreter: str,
) -> None:
    # A fault in libc called by the interpreter called by the user's library: the caller
    # the signature names is the user's. render.py's own `libpython[\d.]*|python[\d.]*`
    # beside pythonargs.is_python read a free-threaded build's libpython3.13t as the
    # user's code: the same crash signed `memcpy@libc<-_PyEval_EvalFrameDefault@...`.
    frames = (
        Frame(0, "memcpy", "libc.so.6"),
        Frame(1, "_PyEval_EvalFrameDefault", interpreter),
        Frame(2, "fill", "libfoo.so"),
    )
    process = ProcessStacks(
        7, "core", signal="SIGSEGV", crashed_lwp=7, threads=(Thread("7", 7, None, frames),)
    )
    assert signature_frame(NativeStacks(processes=(process,))) == "memcpy@libc<-fill@libfoo"


def _shell(
    source: Literal["core", "attach"], *frames: Frame, command: str = "/bin/sh -c python3 t.py"
) -> ProcessStacks:
    return ProcessStacks(7, source, command=command, threads=(Thread("1", 7, "sh", frames),))


_WAIT4 = (
    Frame(0, None, "dash"),
    Frame(1, None, None, signal_handler=True),
    Frame(2, "__GI___wait4", "libc.so.6"),
    Frame(3, None, "dash"),
)


def test_a_shell_waiting_for_its_child_is_folded_and_one_that_crashed_or_reads_is_not() -> None:
    program = ProcessStacks(8, "attach", threads=(_thread(8, "poll"),))
    waiting = _shell("attach", *_WAIT4)
    assert shell_waiting(waiting) == "wait4 (libc.so.6)"
    assert thread_tops(NativeStacks(processes=(waiting, program))) == [
        "pid 8 thread 8 (LWP 8): poll (libc.so.6)",
        f"pid 7 (/bin/sh -c python3 t.py): {SHELL_WAITING} wait4 (libc.so.6)",
    ]
    assert shell_waiting(_shell("attach", *_WAIT4, command="bash run.sh")) is not None
    # Its own crash, its own hang (a `read`), or no shell: listed as any process.
    assert shell_waiting(_shell("core", *_WAIT4)) is None
    assert shell_waiting(_shell("attach", Frame(0, "__GI___libc_read", "libc.so.6"))) is None
    assert shell_waiting(_shell("attach", *_WAIT4, command="python3 t.py")) is None


def _launched(command: str, pid: int, *threads: tuple[str, ...]) -> ProcessStacks:
    """A live process, its threads' frames given as `function@library` from innermost."""
    return ProcessStacks(
        pid,
        "attach",
        command=command,
        threads=tuple(
            Thread(
                str(n),
                pid + n,
                None,
                tuple(
                    Frame(k, name or None, lib)
                    for k, (name, _, lib) in enumerate(part.partition("@") for part in frames)
                ),
            )
            for n, frames in enumerate(threads)
        ),
    )


# `./nap` (a C program asleep in main), under make and a multi-threaded launcher (main in
# waitpid, a helper idle on a condition: cargo's), as eu-stack read them at the hang.
_NAP = _launched("./nap", 30, ("clock_nanosleep@libc.so.6", "sleep@libc.so.6", "main@nap"))
_MAKE = _launched("make", 20, ("wait4@libc.so.6", "reap_children@make", "main@make"))
_CARGO = _launched(
    "cargo test",
    10,
    ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "status@cargo", "main@cargo"),
    ("futex_wait@libc.so.6", "pthread_cond_wait@libc.so.6", "helper@cargo"),
)


def test_a_hang_is_placed_in_the_child_a_launcher_waits_for_not_in_its_wait() -> None:
    # `capture -- make` of a Makefile running ./nap was titled `make: hang in
    # wait4@libc<-reap_children@make`: only a shell's wait for its child was passed over.
    assert hung_frame(NativeStacks(processes=(_MAKE, _NAP))) == "clock_nanosleep@libc<-main@nap"
    # A launcher whose other thread waits on a lock (ranked before a wait) is passed over too.
    stacks = NativeStacks(processes=(_CARGO, _MAKE, _NAP))
    assert hung_frame(stacks) == "clock_nanosleep@libc<-main@nap"
    # Only launchers read (the child that hangs was not): their wait is no place of it.
    assert hung_frame(NativeStacks(processes=(_CARGO, _MAKE))) is None
    assert hung_frame(NativeStacks(processes=(_shell("attach", *_WAIT4),))) is None


def test_a_program_whose_helper_thread_reaps_a_child_is_placed_in_its_own_deadlock() -> None:
    # reap.c: main deadlocks on a mutex it holds, a helper thread reaps `sleep 1000` in
    # waitpid. Any thread in a child wait passed the program over whole, and its hang was
    # placed in the idle child (`clock_nanosleep@libc`): only a main thread's wait says
    # launcher. Its main thread is the one whose LWP is the pid, wherever it is listed.
    listed = _launched(
        "./reap",
        50,
        ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "stuck@reap", "main@reap"),
        ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "reaper@reap"),
    )
    main, reaper = listed.threads
    reap = replace(listed, threads=(reaper, main))  # the reaper listed first
    child = _launched("sleep 1000", 60, ("clock_nanosleep@libc.so.6", "@sleep"))
    assert hung_frame(NativeStacks(processes=(reap, child))) == "lll_lock_wait@libc<-stuck@reap"
    # Its launchers are still passed over: make's, a shell's, cargo's main thread waits.
    stacks = NativeStacks(processes=(_CARGO, _MAKE, reap, child))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-stuck@reap"


def test_a_thread_that_reaps_a_child_is_no_place_and_a_launcher_that_idles_is_passed_over() -> None:
    # A supervisor: main sleeps in a loop, a helper reaps ./nap in waitpid. The reaper's
    # bare wait4 ranked as one that runs, before main's sleep: `wait4@libc<-reaper@sup`.
    sup = _launched(
        "./sup",
        50,
        ("clock_nanosleep@libc.so.6", "__nanosleep@libc.so.6", "sleep@libc.so.6", "main@sup"),
        ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "reaper@sup"),
    )
    assert hung_frame(NativeStacks(processes=(sup, _NAP))) == "clock_nanosleep@libc<-main@nap"
    # `cargo build`: main in a timed wait, a worker thread in Child::wait (a timed wait tied
    # the reaper, and the non-main one came first).
    cargo = _launched(
        "cargo build",
        10,
        (
            "futex_wait@libc.so.6",
            "__pthread_cond_wait_common@libc.so.6",
            "pthread_cond_timedwait@libc.so.6",
            "std::sync::mpsc::Receiver::recv_timeout@cargo",
            "main@cargo",
        ),
        ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "std::process::Child::wait@cargo"),
    )
    assert hung_frame(NativeStacks(processes=(cargo, _NAP))) == "clock_nanosleep@libc<-main@nap"
    # Only the idling launcher read: its own place, never its reaper's wait.
    assert hung_frame(NativeStacks(processes=(sup,))) == "clock_nanosleep@libc<-main@sup"
    # reap.c's main on its own mutex beside its reaper is no launcher idling: its place.
    reap = _launched(
        "./reap",
        50,
        ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "stuck@reap", "main@reap"),
        ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "reaper@reap"),
    )
    assert hung_frame(NativeStacks(processes=(reap, _NAP))) == "lll_lock_wait@libc<-stuck@reap"
    # Nor is one whose main runs its own code (a busy loop) beside its reaper.
    reaper = ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "reaper@busy")
    busy = _launched("./busy", 50, ("alpha@busy", "main@busy"), reaper)
    assert hung_frame(NativeStacks(processes=(busy, _NAP))) == "alpha@busy"


def test_a_main_thread_that_joins_or_awaits_its_reaper_is_a_launcher() -> None:
    # C++ `std::thread t([]{ system("./nap"); }); t.join();`: the reaper left out of the
    # ranking, main's join was ranked alone and named (`futex_abstimed_wait_common64@libc<-
    # main@sup`) where the hang is the child's.
    reaper = ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "system@libc.so.6", "run@sup")
    joins = _launched(
        "./sup",
        50,
        (
            "__futex_abstimed_wait_common64@libc.so.6",
            "__pthread_clockjoin_ex@libc.so.6",
            "main@sup",
        ),
        reaper,
    )
    assert hung_frame(NativeStacks(processes=(joins, _NAP))) == "clock_nanosleep@libc<-main@nap"
    # `std::async(...).get()`: main on a condition its reaper signals at the child's end.
    awaits = _launched(
        "./sup",
        50,
        ("futex_wait@libc.so.6", "___pthread_cond_wait@libc.so.6", "main@sup"),
        reaper,
    )
    assert hung_frame(NativeStacks(processes=(awaits, _NAP))) == "clock_nanosleep@libc<-main@nap"
    # Read alone, each keeps its own place; reap.c's main on its own mutex stays placed
    # there (the test above), and a join beside a thread of its own that hangs is no launcher.
    assert hung_frame(NativeStacks(processes=(awaits,))) == "futex_wait@libc<-main@sup"
    stuck = ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "work@sup")
    busy = replace(joins, threads=(*joins.threads, _launched("x", 52, stuck).threads[0]))
    assert hung_frame(NativeStacks(processes=(busy, _NAP))) == "lll_lock_wait@libc<-work@sup"


def test_a_thread_busy_in_the_c_runtime_beside_a_reaper_is_the_programs_hang() -> None:
    # `while (1) strlen(s)` beside a thread reaping ./nap: any C-runtime innermost frame
    # counted as idling, and the hang was placed in the child's sleep.
    spin = _launched(
        "./sup",
        50,
        ("__strlen_avx2@libc.so.6", "spin@sup", "main@sup"),
        ("__GI___wait4@libc.so.6", "waitpid@libc.so.6", "reaper@sup"),
    )
    assert hung_frame(NativeStacks(processes=(spin, _NAP))) == "strlen@libc<-spin@sup"
    # One whose main loop polls a descriptor only idles: the child's place.
    polls = replace(
        spin,
        threads=(
            _launched("x", 50, ("__GI___poll@libc.so.6", "loop@sup", "main@sup")).threads[0],
            spin.threads[1],
        ),
    )
    assert hung_frame(NativeStacks(processes=(polls, _NAP))) == "clock_nanosleep@libc<-main@nap"


# `./pp` forks `./nap` with a pipe and reads its output: a launcher that waits in `read`,
# not in `wait4` (cargo's `Command::output`, ctest's epoll loop), its parent recorded.
_PP_MAIN = ("__GI___libc_read@libc.so.6", "main@pp")
_PP = replace(_launched("./pp", 20, _PP_MAIN), ppid=10)
_PP_NAP = replace(_NAP, ppid=20)
_ROOT_SH = replace(_shell("attach", *_WAIT4, command="/bin/sh -c ./pp"), pid=10, ppid=1)


def test_a_launcher_reading_its_childs_output_is_passed_over_for_its_hung_descendant() -> None:
    # `./pp: hang in read@libc<-main@pp` where ./nap slept: only a wait for a child (wait4)
    # passed a launcher over, not a read of the child's pipe.
    leaf = "clock_nanosleep@libc<-main@nap"
    assert hung_frame(NativeStacks(processes=(_ROOT_SH, _PP, _PP_NAP))) == leaf
    assert hung_process(NativeStacks(processes=(_ROOT_SH, _PP, _PP_NAP))) == _PP_NAP
    # A poll, an epoll loop, a select alike; beside a helper thread that only idles too.
    for wait in ("__GI___poll", "epoll_wait", "__select", "ppoll"):
        polls = replace(_launched("./pp", 20, (f"{wait}@libc.so.6", "main@pp")), ppid=10)
        assert hung_frame(NativeStacks(processes=(polls, _PP_NAP))) == leaf, wait
    heartbeat = ("clock_nanosleep@libc.so.6", "beat@pp")
    beside = replace(_launched("./pp", 20, _PP_MAIN, heartbeat), ppid=10)
    assert hung_frame(NativeStacks(processes=(beside, _PP_NAP))) == leaf
    # Through a shell between them (`pp` runs `sh -c ./nap`, which waits in wait4).
    middle = replace(_shell("attach", *_WAIT4, command="sh -c ./nap"), pid=25, ppid=20)
    deeper = replace(_NAP, ppid=25)
    assert hung_frame(NativeStacks(processes=(_PP, middle, deeper))) == leaf
    # Its own place where nothing below it names one, or its parents were not recorded
    # (stacks written before they were): never another tree's process.
    assert hung_frame(NativeStacks(processes=(_PP,))) == "read@libc<-main@pp"
    unrecorded = (replace(_PP, ppid=None), replace(_NAP, ppid=None))
    assert hung_frame(NativeStacks(processes=unrecorded)) == "read@libc<-main@pp"
    stranger = replace(_NAP, ppid=99)
    assert hung_frame(NativeStacks(processes=(_PP, stranger))) == "read@libc<-main@pp"
    assert hung_process(NativeStacks(processes=(_PP, stranger))) == _PP


def test_the_hung_descendant_is_named_where_a_process_of_the_program_s_ran_it() -> None:
    # The run's line said `hang in clock_nanosleep@libc<-main@nap` of ./pp reading ./nap's
    # pipe, as if pp slept: the outcome names ./nap (`Outcome.hung_process`).
    assert hung_descendant(NativeStacks(processes=(_ROOT_SH, _PP, _PP_NAP))) == "./nap"
    # Not the spec's command itself under the runner's `/bin/sh -c ./nap`, nor one with
    # no parent recorded, nor a parent's own place.
    own = replace(_shell("attach", *_WAIT4, command="/bin/sh -c ./nap"), pid=20, ppid=1)
    assert hung_descendant(NativeStacks(processes=(own, _PP_NAP))) is None
    # Whatever the `-c` text says of it (`./nap 'x y'` runs argv `./nap x y`; `FOO=1 ./nap`,
    # `./nap > /dev/null` run `./nap`): it was `a process it ran (nap x y)`.
    for text in ("./nap 'x y'", "FOO=1 ./nap", "./nap > /dev/null"):
        quoted = replace(own, command=f"/bin/sh -c {text}")
        spaced = replace(_PP_NAP, command="./nap x y")
        assert hung_descendant(NativeStacks(processes=(quoted, spaced))) is None, text
    assert hung_descendant(NativeStacks(processes=(replace(_NAP, ppid=None),))) is None
    lock = ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "stuck@pp", "main@pp")
    deadlocked = replace(_launched("./pp", 20, lock), ppid=10)
    assert hung_descendant(NativeStacks(processes=(_ROOT_SH, deadlocked, _PP_NAP))) is None
    # A shell of the program's own (make's recipe shell) that ran it: still a process it ran.
    middle = replace(_shell("attach", *_WAIT4, command="/bin/sh -c ./nap"), pid=25, ppid=20)
    assert hung_descendant(NativeStacks(processes=(_PP, middle, replace(_NAP, ppid=25)))) == (
        "./nap"
    )


def test_a_parent_that_hangs_by_itself_beside_an_idle_child_is_still_the_place() -> None:
    # Leaf first only past a process that waits on a descriptor and nothing else: a parent
    # deadlocked on a mutex, or one whose reader thread sits beside a deadlocked one, or a
    # busy one, hangs there while its child only sleeps.
    lock = ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "stuck@pp", "main@pp")
    deadlocked = replace(_launched("./pp", 20, lock), ppid=10)
    stacks = NativeStacks(processes=(deadlocked, _PP_NAP))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-stuck@pp"
    assert hung_process(stacks) == deadlocked
    worker = ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "work@pp")
    reader_and_deadlock = replace(_launched("./pp", 20, _PP_MAIN, worker), ppid=10)
    stacks = NativeStacks(processes=(reader_and_deadlock, _PP_NAP))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-work@pp"
    busy = replace(_launched("./pp", 20, _PP_MAIN, ("alpha@pp", "spin@pp")), ppid=10)
    assert hung_frame(NativeStacks(processes=(busy, _PP_NAP))) == "alpha@pp"
    # A parent asleep (no descriptor's wait) keeps its own place, as before.
    asleep = replace(_NAP, pid=20, command="./sup", ppid=10)
    assert hung_frame(NativeStacks(processes=(asleep, _PP_NAP))) == "clock_nanosleep@libc<-main@nap"
    assert hung_process(NativeStacks(processes=(asleep, _PP_NAP))) == asleep
    # A reading child of a reader is no leaf: the one below it that hangs by itself is.
    reads_too = replace(_launched("./mid", 30, _PP_MAIN), ppid=20)
    stuck = ("lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "stuck@leaf")
    leaf = replace(_launched("./leaf", 40, stuck), ppid=30)
    stacks = NativeStacks(processes=(_PP, reads_too, leaf))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-stuck@leaf"


def test_a_process_whose_stacks_name_no_frame_passes_the_place_to_the_next() -> None:
    # The first process read returned its thread's None though the next one named its place.
    unnamed = ProcessStacks(5, "attach", threads=(Thread("1", 5, None, ()),))
    assert hung_frame(NativeStacks(processes=(unnamed, _NAP))) == "clock_nanosleep@libc<-main@nap"


def test_a_stripped_programs_unnamed_caller_is_left_out_of_a_hangs_place_not_a_signature() -> None:
    # `capture -- sleep 100` was titled `sleep: hang in clock_nanosleep@libc<-??@sleep`.
    frames = ("clock_nanosleep@libc.so.6", "@sleep", "__libc_start_main@libc.so.6", "@sleep")
    asleep = _launched("sleep 100", 40, frames)
    assert hung_frame(NativeStacks(processes=(asleep,))) == "clock_nanosleep@libc"
    # A crash there keeps its signature's rule: `??@sleep` is what its signature matches.
    thread = asleep.threads[0]
    crashed = ProcessStacks(40, "core", signal="SIGSEGV", crashed_lwp=thread.lwp, threads=(thread,))
    assert signature_frame(NativeStacks(processes=(crashed,))) == "clock_nanosleep@libc<-??@sleep"


def test_a_native_place_runs_the_programs_code_where_its_innermost_frame_is_the_programs() -> None:
    # minimize compares a C program's hangs by their native places: a busy one (alpha@busy
    # at one look, beta@busy at the next) sits wherever it runs, a wait in libc does not.
    assert runs_own_code("alpha@busy")
    assert runs_own_code("Cache<int, int>::get@prog")
    assert not runs_own_code("lll_lock_wait@libc<-stuck@reap")  # a caller: after the runtime
    assert not runs_own_code("clock_nanosleep@libc")  # a stripped program's, no caller named
    assert not runs_own_code("_PyEval_EvalFrameDefault@libpython3.11")  # the interpreter's
    assert not runs_own_code("stuck")  # no library: unknown, compared whole
    # A shared library's own wait, spun inline (libgomp's barrier), is not the program's.
    assert not runs_own_code("gomp_barrier_wait_end@libgomp")
    assert not runs_own_code("do_wait@libgomp")


def test_a_server_waiting_for_a_client_beside_its_idle_child_is_the_place() -> None:
    # A server forks an idle worker (./nap) and waits in `accept`: it was placed in the
    # worker's sleep, as if it read that child's output (review). A wait for a client, or a
    # socket's `recv`, is its own place; a pipe's `read` still gives way (the tests above).
    for wait in ("accept", "__libc_accept", "accept4", "__libc_recv", "recvfrom", "recvmsg"):
        server = replace(_launched("./server", 20, (f"{wait}@libc.so.6", "main@server")), ppid=10)
        stacks = NativeStacks(processes=(_ROOT_SH, server, _PP_NAP))
        assert hung_frame(stacks) == f"{wait.removeprefix('__libc_')}@libc<-main@server", wait
        assert hung_process(stacks) == server


_DL = ("__lll_lock_wait@libc.so.6", "pthread_mutex_lock@libc.so.6", "stuck@dl", "main@dl")


def test_a_reader_of_several_children_is_placed_in_the_one_that_hangs_most_surely() -> None:
    # ./multi reads ./nap's pipe, ./dl deadlocks beside it: the first child listed won, and
    # the hang was placed in ./nap's sleep (review). A lock before code that runs, before an
    # idle wait, before a sleep (`hang_rank`); the listing's order between equals.
    sleeps = replace(_NAP, pid=30, ppid=20)
    deadlocked = replace(_launched("./dl", 40, _DL), ppid=20)
    stacks = NativeStacks(processes=(_ROOT_SH, _PP, sleeps, deadlocked))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-stuck@dl"
    assert hung_process(stacks) == deadlocked
    busy = replace(_launched("./busy", 40, ("alpha@busy", "main@busy")), ppid=20)
    assert hung_frame(NativeStacks(processes=(_PP, sleeps, busy))) == "alpha@busy"
    timed = ("__futex_abstimed_wait_common@libc.so.6", "pthread_cond_timedwait@libc.so.6")
    waits = replace(_launched("./waits", 40, (*timed, "main@waits")), ppid=20)
    assert hung_frame(NativeStacks(processes=(_PP, waits, busy))) == "alpha@busy"
    assert hung_process(NativeStacks(processes=(_PP, sleeps, waits))) == waits
    other = replace(_NAP, pid=35, command="./other", ppid=20)
    assert hung_process(NativeStacks(processes=(_PP, sleeps, other))) == sleeps
    assert hung_process(NativeStacks(processes=(_PP, other, sleeps))) == other


def test_a_reader_listed_after_its_child_still_gives_way_to_its_surest_child() -> None:
    # The listing is by pid after the root's: a pid that wrapped lists ./pp's sleeping child
    # first, whose sleep was taken though its sibling deadlocked. The reader above it ranks.
    sleeps = replace(_NAP, pid=5, ppid=20)
    deadlocked = replace(_launched("./dl", 6, _DL), ppid=20)
    stacks = NativeStacks(processes=(_ROOT_SH, sleeps, deadlocked, _PP))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-stuck@dl"
    # A process that hangs by itself listed first, below no reader, keeps its place.
    alone = replace(deadlocked, ppid=10)
    assert hung_process(NativeStacks(processes=(_ROOT_SH, alone, _PP, sleeps))) == alone


def _handled(process: ProcessStacks, *handler: str) -> ProcessStacks:
    """`process` with its main thread stopped inside a signal handler: the handler's frames
    (`function@library`), `<signal handler called>`, then where the signal found it."""
    (thread, *others) = process.threads
    above = tuple(
        Frame(k, name or None, lib)
        for k, (name, _, lib) in enumerate(part.partition("@") for part in handler)
    )
    mark = Frame(len(above), None, None, signal_handler=True)
    below = tuple(replace(f, number=f.number + len(above) + 1) for f in thread.frames)
    return replace(process, threads=(replace(thread, frames=(*above, mark, *below)), *others))


def test_a_handler_the_hang_s_stop_ran_is_no_place_of_a_live_process() -> None:
    # The runner's SIGSTOP of a child ran its parent's SIGCHLD handler: `chld@sl` (a self-pipe
    # writer) or make's `child_handler` became the place in some attempts of one hang, the
    # child's sleep in the others: two signatures of one run. Where the thread was is read.
    polls = replace(_launched("./sl", 20, ("__GI___poll@libc.so.6", "main@sl")), ppid=10)
    in_handler = _handled(polls, "write@libc.so.6", "chld@sl")
    assert hung_frame(NativeStacks(processes=(in_handler,))) == "poll@libc<-main@sl"
    assert hung_frame(NativeStacks(processes=(in_handler, _PP_NAP))) == hung_frame(
        NativeStacks(processes=(polls, _PP_NAP))
    )
    # Handlers that chain: the last mark's frames below. A shell in its handler still only
    # waits for its child (dash's `?? (dash)` above `wait4`).
    twice = _handled(in_handler, "chld@sl")
    assert hung_frame(NativeStacks(processes=(twice,))) == "poll@libc<-main@sl"
    dash = _handled(
        _shell("attach", *_WAIT4, command="/bin/sh -c ./sl"), "write@libc.so.6", "@dash"
    )
    assert shell_waiting(dash) is not None
    assert hung_process(NativeStacks(processes=(replace(dash, pid=10, ppid=1), polls))) == polls


def test_a_reader_of_a_pipe_of_its_own_gives_way_to_its_own_deadlocked_child() -> None:
    # ./lonely waits on a pipe nobody writes beside its child ./dl, deadlocked: the reader's
    # idle read won over its own descendant (review: cases/lonedl). Ranked with every placed
    # process, itself first between equals: beside a child that only sleeps it stays.
    lonely = replace(_PP, command="./lonely", pipes=Pipes(reads=(7,), writes=()))
    deadlocked = replace(_launched("./dl", 30, _DL), ppid=20, pipes=Pipes(reads=(), writes=()))
    stacks = NativeStacks(processes=(_ROOT_SH, lonely, deadlocked))
    assert hung_frame(stacks) == "lll_lock_wait@libc<-stuck@dl"
    sleeps = replace(_PP_NAP, pipes=Pipes(reads=(), writes=()))
    assert hung_process(NativeStacks(processes=(_ROOT_SH, lonely, sleeps))) == lonely
    # Its child writes what it reads (a write end at any descriptor): the child's place.
    fed = replace(sleeps, pipes=Pipes(reads=(), writes=(7,)))
    assert hung_process(NativeStacks(processes=(_ROOT_SH, lonely, fed))) == fed
    # Not known (a SIGCHLD handler, a pidfd: no pipes kept): the child's, as before.
    unknown = replace(lonely, pipes=None)
    assert hung_process(NativeStacks(processes=(_ROOT_SH, unknown, sleeps))) == sleeps


@pytest.mark.parametrize(
    "text",
    [
        "./nap ${HOME}",
        "./nap ${X:-a;b}",
        "./nap ${X:-${Y};b}",
        "./nap x{1,2}",
        "./nap {}",
        "./nap # why; not a list",
        "./nap >| out",
        "./nap 'a; b' 2>&1",
        "FOO=1 ./nap > /dev/null",
    ],
)
def test_one_simple_command_with_an_operator_s_character_runs_the_spec_s_own_program(
    text: str,
) -> None:
    # `./nap ${HOME}` read as a list: the spec's own program was `a process it ran (nap
    # /root)`. An expansion, a brace word, a comment and `>|` are parts of one command.
    own = replace(_shell("attach", *_WAIT4, command=f"/bin/sh -c {text}"), pid=20, ppid=1)
    assert hung_descendant(NativeStacks(processes=(own, _PP_NAP))) is None


@pytest.mark.parametrize(
    "text",
    [
        "./nap; echo done",
        "cd sub && ./nap",
        "./nap || true",
        "./nap | cat",
        "./nap &",
        "(./nap)",
        "{ ./nap; }",
        "{ ./nap\n}",
        "./nap\necho done",
        "./nap # why\necho done",
        "./nap $(echo x)",
        "./nap ${X:-${Y} #a}; ./nap",
    ],
)
def test_a_list_s_process_is_one_it_ran(text: str) -> None:
    own = replace(_shell("attach", *_WAIT4, command=f"/bin/sh -c {text}"), pid=20, ppid=1)
    assert hung_descendant(NativeStacks(processes=(own, _PP_NAP))) == "./nap", text
