"""Where a hang sits, read from its stack dump: the DataLoader workers told from their parent
(one command line for all), the worker stuck fetching an item, the user's innermost frame."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reprospec.core.logtext import unescaped_name
from reprospec.core.results import Execution, Outcome
from reprospec.core.words import outcome_phrase
from reprospec.outcome.classify import classify
from reprospec.outcome.hangsource import on_disk, source_at, unread
from reprospec.outcome.hungstacks import (
    WORKER_LABEL,
    Frame,
    hung_frame,
    hung_processes,
    label_workers,
    pytest_hung_in,
    readable_frames,
    stuck_child,
    stuck_worker,
    where_stuck,
)
from tests.support.paths import DATA
from tests.support.plans import execution_in

# A real dump (a user's dl2, workers=2, mode=hang: a worker deadlocked on a lock it holds,
# train.py:19), its interpreter and workdir paths renamed: the main process waits in
# torch's queue, worker 6257 waits for an index, worker 6264 is stuck in __getitem__.
DUMP = (DATA / "stacks" / "dataloader-worker-hang.stack.txt").read_text()

# py-spy's way of writing a process that did not answer SIGURG (process/stacks.py).
PY_SPY = """\
--- pid 77 (python train.py) [py-spy] ---
Process 77: python train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 77 (idle): "MainThread"
    __getitem__ (/work/proj/train.py:19)
    <listcomp> (/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py:54)
    fetch (/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py:54)
    _worker_loop (/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py:374)
    run (/usr/lib/python3.11/multiprocessing/process.py:108)
    <module> (/work/proj/train.py:22)
"""


def test_the_workers_are_told_from_their_parent_by_their_stacks() -> None:
    processes = hung_processes(DUMP, source=on_disk)
    assert [(p.pid, p.worker, p.fetching) for p in processes] == [
        (6053, False, False),
        (6257, True, False),  # idle: waiting for an index, torch's fetch not on its stack
        (6264, True, True),
    ]
    assert processes[0].frame == Frame("/work/proj/train.py", 22, "<module>")
    assert processes[2].frame == Frame("/work/proj/train.py", 19, "__getitem__")


def test_the_hang_sits_in_the_worker_fetching_an_item() -> None:
    stuck = where_stuck(DUMP, source=on_disk)
    assert stuck == stuck_worker(DUMP)
    assert stuck is not None
    assert stuck.describe() == (
        "the DataLoader worker pid 6264 was fetching an item, in "
        "/work/proj/train.py:19 in __getitem__"
    )


def test_without_a_stuck_worker_the_hang_sits_in_the_first_process_in_user_code() -> None:
    main_only = DUMP.split("--- pid 6257", 1)[0]
    assert stuck_worker(main_only) is None
    stuck = where_stuck(main_only, source=on_disk)
    assert stuck is not None
    assert stuck.describe() == "pid 6053 was in /work/proj/train.py:22 in <module>"
    assert where_stuck("", source=on_disk) is None


def test_py_spy_dumps_are_read_too() -> None:
    stuck = stuck_worker(PY_SPY)
    assert stuck is not None
    assert (stuck.pid, stuck.frame) == (77, Frame("/work/proj/train.py", 19, "__getitem__"))
    assert "--- pid 77 (python train.py) [py-spy] [DataLoader worker] ---" in label_workers(PY_SPY)


@pytest.mark.parametrize("stdlib", ["/usr/lib/python3.13t", "/opt/pypy/lib/pypy3.10"])
def test_a_free_threaded_or_pypy_standard_library_is_no_user_code(stdlib: str) -> None:
    # hungstacks' own `/lib/python\d[\d.]*/` beside capture's took a free-threaded
    # build's lib/python3.13t/ (and PyPy's lib/pypy3.10/) for the user's code: the hang
    # sat in threading.py's wait, not in the user's train.py that called it.
    dump = (
        "--- pid 77 (python train.py) [py-spy] ---\n"
        'Thread 77 (idle): "MainThread"\n'
        f"    wait ({stdlib}/threading.py:320)\n"
        "    main (/work/proj/train.py:9)\n"
    )
    assert hung_frame(dump, source=on_disk) == Frame("/work/proj/train.py", 9, "main")


def test_only_the_workers_headers_are_labelled() -> None:
    labelled = label_workers(DUMP)
    headers = [line for line in labelled.splitlines() if line.startswith("--- pid")]
    assert [h.endswith(f"{WORKER_LABEL} ---") for h in headers] == [False, True, True]
    assert labelled.replace(f" {WORKER_LABEL}", "") == DUMP
    assert label_workers("no dump") == "no dump"


def test_a_commands_hang_in_a_worker_is_where_worker_its_signature_unchanged(
    tmp_path: Path,
) -> None:
    """No harness wrote events (a command's own DataLoader): the stacks name the worker. The
    signature stays `hang`, so expect, compare and history match it as before
    (`where: main`, no word of the worker)."""
    for log in ("stdout.log", "stderr.log", "events.jsonl"):
        (tmp_path / log).write_text("")
    (tmp_path / "stack.txt").write_text(DUMP)
    hung = dataclasses.replace(
        execution_in(tmp_path, None, timed_out=True), stack_path=tmp_path / "stack.txt"
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.pid, outcome.signature) == (
        "hang",
        "worker",
        6264,
        "hang",
    )
    assert outcome.detail is not None
    assert outcome.detail.endswith(
        "; the DataLoader worker pid 6264 was fetching an item, in "
        "/work/proj/train.py:19 in __getitem__"
    )
    assert outcome_phrase(outcome) == "hang (worker) in __getitem__ (train.py:19)"
    # Stacks with no worker stuck: the main process's hang, as before.
    (tmp_path / "stack.txt").write_text(DUMP.split("--- pid 6257", 1)[0])
    main = classify(hung)
    assert isinstance(main, Outcome)
    assert (main.where, main.pid, main.signature) == ("main", None, "hang")


# pytest's main thread, hung in a test's call, a fixture's setup, a test module's import.
_PYTEST_TAIL = """\
  File "/venv/lib/python3.11/site-packages/_pytest/runner.py", line 178 in pytest_runtest_call
  File "/venv/lib/python3.11/site-packages/_pytest/main.py", line 380 in pytest_cmdline_main
  File "/venv/lib/python3.11/site-packages/pytest/__main__.py", line 9 in <module>
"""
_PYTEST_RUNNING = f"""\
--- pid 41 (python -m pytest -q tests) ---
Thread 0x00007f3a50f276c0 (most recent call first):
  File "/usr/lib/python3.11/socket.py", line 294 in accept
  File "/usr/lib/python3.11/threading.py", line 982 in run

Current thread 0x00007f3a5302bb80 (most recent call first):
  File "/work/proj/tests/test_h.py", line 4 in test_one
  File "/venv/lib/python3.11/site-packages/_pytest/python.py", line 159 in pytest_pyfunc_call
  File "/venv/lib/python3.11/site-packages/pluggy/_callers.py", line 103 in _multicall
{_PYTEST_TAIL}"""
_PYTEST_FIXTURE = f"""\
--- pid 41 (python -m pytest tests) ---
Current thread 0x00007f3a5302bb80 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/work/proj/tests/conftest.py", line 8 in db
  File "/venv/lib/python3.11/site-packages/_pytest/fixtures.py", line 895 in call_fixture_func
{_PYTEST_TAIL}"""
_PYTEST_COLLECTING = """\
--- pid 41 (python -m pytest .) ---
Current thread 0x00007f3a5302bb80 (most recent call first):
  File "/work/proj/slowmod.py", line 2 in <module>
  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed
  File "/work/proj/test_c.py", line 1 in <module>
  File "/venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py", line 185 in exec_module
  File "/usr/lib/python3.11/importlib/__init__.py", line 126 in import_module
  File "/venv/lib/python3.11/site-packages/_pytest/pathlib.py", line 640 in import_path
  File "/venv/lib/python3.11/site-packages/_pytest/python.py", line 528 in importtestmodule
  File "/venv/lib/python3.11/site-packages/_pytest/main.py", line 872 in perform_collect
  File "/venv/lib/python3.11/site-packages/pytest/__main__.py", line 9 in <module>
"""


def test_a_hung_pytest_says_the_test_fixture_or_module_its_stack_shows() -> None:
    # pt40: the first test that hangs prints no ended -v line, a run without -v names no
    # test, and a hang at collection (an import) named nothing of pytest's.
    assert pytest_hung_in(_PYTEST_RUNNING) == "pytest was running test_one (test_h.py:4)"
    assert pytest_hung_in(_PYTEST_FIXTURE) == "pytest was setting up the fixture db (conftest.py:8)"
    assert pytest_hung_in(_PYTEST_COLLECTING) == (
        "pytest was collecting test_c.py (test_c.py:1, importing slowmod.py:2)"
    )
    assert pytest_hung_in(DUMP) is None
    assert pytest_hung_in(None) is None


def test_a_test_the_phase_names_is_not_named_again() -> None:
    # pt42: `-v`'s line named the hung test (the phase), and the detail said its name again.
    said = "the test was at test_h.py:4"
    assert pytest_hung_in(_PYTEST_RUNNING, "test_h.py::test_one") == said
    assert pytest_hung_in(_PYTEST_RUNNING, "test_h.py::TestH::test_one[1-a]") == said
    assert pytest_hung_in(_PYTEST_RUNNING, "tests/test_h.py::test_one") == said
    assert pytest_hung_in(_PYTEST_RUNNING, "test_h.py::test_two") == (
        "pytest was running test_one (test_h.py:4)"
    )
    # A test of the same name in another module: the stack's is named.
    assert pytest_hung_in(_PYTEST_RUNNING, "other/test_h.py::test_one") == (
        "pytest was running test_one (test_h.py:4)"
    )
    assert pytest_hung_in(_PYTEST_RUNNING, "test_x.py::test_one") == (
        "pytest was running test_one (test_h.py:4)"
    )
    assert pytest_hung_in(_PYTEST_FIXTURE, "test_h.py::test_one") == (
        "pytest was setting up the fixture db (conftest.py:8)"
    )


# Recorded (2026-12-02, `reprospec run` of `python -m pytest -p no:cacheprovider -q .`, a test
# module's import hung): the dump's signal was taken by pytest-rerunfailures' server thread,
# in about half of such runs, and the main thread's outermost frames are runpy's.
_PYTEST_SIGNAL_ON_A_PLUGIN_THREAD = """\
--- pid 1535 (/venv/bin/python -m pytest -p no:cacheprovider -q .) ---
Current thread 0x00007f497a7136c0 (most recent call first):
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/socket.py", line 294 in accept
  File "/venv/lib/python3.11/site-packages/pytest_rerunfailures.py", line 921 in run_server
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", line 982 in run
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007f497c63db80 (most recent call first):
  File "/tmp/dbg/work/slowmod.py", line 3 in <module>
  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed
  File "<frozen importlib._bootstrap>", line 1176 in _find_and_load
  File "/tmp/dbg/work/test_c.py", line 1 in <module>
  File "/venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py", line 185 in exec_module
  File "/usr/lib/python3.11/importlib/__init__.py", line 126 in import_module
  File "/venv/lib/python3.11/site-packages/_pytest/pathlib.py", line 640 in import_path
  File "/venv/lib/python3.11/site-packages/_pytest/python.py", line 528 in importtestmodule
  File "/venv/lib/python3.11/site-packages/_pytest/main.py", line 872 in perform_collect
  File "/venv/lib/python3.11/site-packages/_pytest/config/__init__.py", line 286 in _console_main
  File "/venv/lib/python3.11/site-packages/pytest/__main__.py", line 9 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 198 in _run_module_as_main
"""


def test_the_main_thread_is_read_whichever_thread_took_the_dumps_signal() -> None:
    assert pytest_hung_in(_PYTEST_SIGNAL_ON_A_PLUGIN_THREAD) == (
        "pytest was collecting test_c.py (test_c.py:1, importing slowmod.py:3)"
    )
    # Cut off above runpy (a dump holds at most 100 frames a thread): the thread threading
    # did not start.
    cut = _PYTEST_SIGNAL_ON_A_PLUGIN_THREAD.split(
        '  File "/venv/lib/python3.11/site-packages/_pytest/config'
    )[0]
    assert pytest_hung_in(cut) == (
        "pytest was collecting test_c.py (test_c.py:1, importing slowmod.py:3)"
    )


# Real dumps (this machine, paths renamed): a multiprocessing child blocked on a lock it
# holds while the main process joins it, its dump as faulthandler wrote it (the stackdump
# sitecustomize's own frames in it, from an editable install); a subprocess.run child that
# never ends; two threads deadlocked on two locks while the main thread joins them.
CHILD = (DATA / "stacks" / "multiprocessing-child-hang.stack.txt").read_text()
SUBPROCESS = (DATA / "stacks" / "subprocess-child-hang.stack.txt").read_text()
THREADS = (DATA / "stacks" / "thread-deadlock.stack.txt").read_text()


def test_a_hang_sits_in_the_child_the_main_process_only_waits_for() -> None:
    for dump, pid, frame in (
        (CHILD, 26185, Frame("/work/proj/childhang.py", 7, "child")),
        (SUBPROCESS, 27099, Frame("/work/proj/subhang.py", 5, "<module>")),
    ):
        stuck = stuck_child(dump, source=on_disk)
        assert stuck is not None
        assert (stuck.pid, stuck.frame) == (pid, frame)
        assert where_stuck(dump, source=on_disk) == stuck
    # The main process's innermost frame of the user's code is its join, not the
    # sitecustomize's wrapper of multiprocessing's poll (`sitecustomize.py:450 in watched`).
    assert hung_processes(CHILD, source=on_disk)[0].frame == Frame(
        "/work/proj/childhang.py", 12, "<module>"
    )
    # A main process stuck in its own code waits for no child: the hang is its own.
    assert stuck_child(DUMP.split("--- pid 6257", 1)[0], source=on_disk) is None
    assert stuck_child(THREADS, source=on_disk) is None


# Real dumps (`where: main` before): a `python -c` child blocked on an event
# while the main process waits in Popen.wait(), its only frames `<string>`'s; a
# subprocess.run child that runs no Python (`sleep 600`), named `[not Python]`.
STRING = (DATA / "stacks" / "string-child-hang.stack.txt").read_text()
PROGRAM = (DATA / "stacks" / "program-child-hang.stack.txt").read_text()


def test_a_hang_sits_in_a_python_c_child_or_a_child_that_runs_no_python() -> None:
    stuck = stuck_child(STRING, source=on_disk)
    assert stuck is not None
    assert (stuck.pid, stuck.frame) == (18791, Frame("<string>", 2, "<module>"))
    assert stuck.describe() == "pid 18791 was in <string>:2 in <module>"
    stuck = stuck_child(PROGRAM, source=on_disk)
    assert stuck is not None
    assert (stuck.pid, stuck.python, stuck.frame) == (18793, False, None)
    assert stuck.describe() == "pid 18793 (sleep 600, not a Python program)"
    assert where_stuck(PROGRAM, source=on_disk) == stuck
    # The main process is still the first Python one, and what it waits in is its own frame.
    (main, _) = hung_processes(PROGRAM, source=on_disk)
    assert (main.waits_for_a_child, main.frame) == (
        True,
        Frame("/work/proj/child_hang.py", 65, "main"),
    )
    # `<string>` elsewhere is generated code (a dataclass's __init__), no place of the user's.
    generated = (
        "--- pid 5 (python t.py) ---\n"
        "Current thread 0x1 (most recent call first):\n"
        '  File "<string>", line 3 in __init__\n'
        '  File "/work/proj/t.py", line 9 in <module>\n'
    )
    (process,) = hung_processes(generated, source=on_disk)
    assert process.frame == Frame("/work/proj/t.py", 9, "<module>")


def test_a_hang_sits_in_the_first_joined_thread_and_never_in_the_harness() -> None:
    # The frame a hang's outcome keeps (`hung_in`): a deadlock between threads sits
    # in them, not in the main thread's join; a worker's in its __getitem__; an injected
    # hang of the harness has no place of the user's (its phase and step say where).
    assert hung_frame(THREADS, source=on_disk) == Frame("/work/proj/threads.py", 13, "two")
    assert hung_frame(DUMP, source=on_disk) == Frame("/work/proj/train.py", 19, "__getitem__")
    harness = (
        "--- pid 5 (python -m reprospec_harness) ---\n"
        "Current thread 0x1 (most recent call first):\n"
        '  File "/opt/r/harness/reprospec_harness/faults.py", line 40 in hang\n'
    )
    assert hung_frame(harness, source=on_disk) is None
    assert hung_frame(None, source=on_disk) is None


def test_a_thread_deadlock_names_the_threads_the_main_thread_joins() -> None:
    stuck = where_stuck(THREADS, source=on_disk)
    assert stuck is not None
    assert stuck.joined == (
        Frame("/work/proj/threads.py", 13, "two"),
        Frame("/work/proj/threads.py", 7, "one"),
    )
    assert stuck.describe() == (
        "pid 27015's threads were in /work/proj/threads.py:13 in two, "
        "/work/proj/threads.py:7 in one, its main thread joining them in "
        "/work/proj/threads.py:18 in <module>"
    )


def test_a_commands_hang_in_a_child_is_where_child_its_signature_unchanged(
    tmp_path: Path,
) -> None:
    """`expect: where: child` matched no hang: the main process only joined its child
    (nu62b). The signature stays `hang`, as for a worker."""
    for log in ("stdout.log", "stderr.log", "events.jsonl"):
        (tmp_path / log).write_text("")
    (tmp_path / "stack.txt").write_text(CHILD)
    hung = dataclasses.replace(
        execution_in(tmp_path, None, timed_out=True), stack_path=tmp_path / "stack.txt"
    )
    outcome = classify(hung)
    assert isinstance(outcome, Outcome)
    assert (outcome.kind, outcome.where, outcome.pid, outcome.signature) == (
        "hang",
        "child",
        26185,
        "hang",
    )
    assert outcome.detail is not None
    assert outcome.detail.endswith(
        "; child pid 26185 was in /work/proj/childhang.py:7 in child, "
        "where the main process only waits for it"
    )
    assert outcome_phrase(outcome) == "hang (child pid 26185) in child (childhang.py:7)"


def test_a_header_of_a_python_c_program_is_one_line_every_runner_alike() -> None:
    # The docker runner wrote its headers by hand without escaping a `python -c` program's
    # newlines: the header broke across lines, and the block read as no process at all.
    from reprospec.core.words import NOT_PYTHON, stack_header

    program = "python -c 'import time\nwhile True:\n    time.sleep(1)'"
    stack = (
        f"{stack_header(41, program, '[in container]')}\n"
        'Thread 41 (most recent call first):\n  File "<string>", line 3 in <module>\n\n'
        f"{stack_header(42, 'sleep 100', '[in container]', NOT_PYTHON)}\n(no Python stack)\n"
    )
    assert stack.splitlines()[0] == (
        "--- pid 41 (python -c 'import time\\nwhile True:\\n    time.sleep(1)') [in container] ---"
    )
    assert [p.pid for p in hung_processes(stack, source=on_disk)] == [41, 42]


# A real torchrun hang (trimmed): rank 1 sleeps at tr.py:12 while rank 0 waits for it in
# the step's all_reduce (tr.py:13); torchrun's agent waits for both.
TORCHRUN = """\
--- pid 4826 (/venv/bin/python3 /venv/bin/torchrun --nproc_per_node 2 tr.py) ---
Thread 0x00007f89a91c4b80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", \
line 923 in _invoke_run
  File "/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1028 in main
  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/\
__init__.py", line 367 in wrapper
  File "/venv/bin/torchrun", line 8 in <module>

--- pid 5209 (/venv/bin/python3 -u tr.py) ---
Current thread 0x00007ff73f433b80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", \
line 3252 in all_reduce
  File "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "/work/proj/tr.py", line 13 in <module>

--- pid 5210 (/venv/bin/python3 -u tr.py) ---
Thread 0x00007f13f728cb80 (most recent call first):
  File "/work/proj/tr.py", line 12 in <module>
"""


def test_a_launchers_hang_sits_in_the_rank_its_peers_wait_for_in_a_collective() -> None:
    # The first rank was named (`pid 5209 was in tr.py:13`): its all_reduce, which only
    # waits for rank 1, asleep at tr.py:12.
    stuck = stuck_child(TORCHRUN, source=on_disk)
    assert stuck is not None
    assert (stuck.pid, stuck.frame) == (5210, Frame("/work/proj/tr.py", 12, "<module>"))
    assert where_stuck(TORCHRUN, source=on_disk) == stuck
    # Ranks that all wait in collectives (one left one out): the first, as before.
    both = TORCHRUN.replace(
        '  File "/work/proj/tr.py", line 12 in <module>\n',
        '  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
        "line 4900 in barrier\n"
        '  File "/work/proj/tr.py", line 12 in <module>\n',
    )
    stuck = stuck_child(both, source=on_disk)
    assert stuck is not None
    assert stuck.pid == 5209


def test_a_dumps_escapes_of_a_name_read_as_the_report_shows_text() -> None:
    # faulthandler writes what is not ASCII escaped, a byte that was not UTF-8 as a lone
    # surrogate's `\udc80`: the hang's frame (its headline) read `w\udc80x.py` raw.
    stack = (
        "--- pid 42 (python3 main.py) ---\n"
        "Current thread 0x00007f (most recent call first):\n"
        '  File "/w/caf\\xe9/w\\udc80x.py", line 2 in f\\u00e9\n'
        '  File "/w/main.py", line 3 in <module>\n'
    )
    frame = hung_frame(stack, source=on_disk)
    assert frame == Frame("/w/café/w\ufffdx.py", 2, "fé")
    assert frame.short() == "fé (w\ufffdx.py:2)"
    assert readable_frames(stack).split("\n")[2] == '  File "/w/café/w\ufffdx.py", line 2 in fé'
    assert unescaped_name("a\\U0001f600b\\x41") == "a\U0001f600bA"
    assert unescaped_name("no escape") == "no escape"
    # A control character stays escaped: `\x0a` split the one-line `hang in ...` headline,
    # hung_in and a captured spec's title; `\x1b[31m` coloured the terminal.
    assert unescaped_name("a\\x1b[31mred\\x0ab.py") == "a\\x1b[31mred\\x0ab.py"
    assert unescaped_name("\\x00\\x7f\\x85\\u2028") == "\\x00\\x7f\\x85\\u2028"


_AT_EXIT = """--- pid 4200 (python3 t.py) ---
Thread 0x00007effa263d6c0 (most recent call first):
  File "/work/t.py", line 6 in stuck
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007effa3296b80 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 1590 in _shutdown
"""


def test_a_main_thread_waiting_at_exit_for_a_thread_it_never_joined() -> None:
    """The main thread returned and waits in threading's `_shutdown` for a non-daemon
    thread: the hang sits in that thread, as where it joins it (`hung_in` was None)."""
    assert hung_frame(_AT_EXIT, source=on_disk) == Frame("/work/t.py", 6, "stuck")
    found = where_stuck(_AT_EXIT, source=on_disk)
    assert found is not None
    assert found.at_exit
    assert found.describe() == (
        "pid 4200's threads were in /work/t.py:6 in stuck, its main thread waiting at exit "
        "for them, never joined, in /usr/lib/python3.11/threading.py:1590 in _shutdown"
    )


def test_the_report_reads_a_wait_at_exit_as_the_classifier_did() -> None:
    """The report reads the dump again with no file and the thread the classifier named
    (`first`): a wait at exit beside a harness thread read as polling, every other thread
    its own, the harness's `beat` among them (review)."""
    harness = _AT_EXIT.replace(
        "\nCurrent thread",
        "Thread 0x00007effa263d6c1 (most recent call first):\n"
        '  File "/work/reprospec_harness/x.py", line 6 in beat\n'
        '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n\n'
        "Current thread",
    )
    first = hung_frame(harness, source=on_disk)
    assert first == Frame("/work/t.py", 6, "stuck")
    classified, reported = (
        where_stuck(harness, source=on_disk),
        where_stuck(harness, source=unread, first=first),
    )
    assert classified is not None
    assert reported is not None
    assert (reported.joined, reported.at_exit, reported.polled) == ((first,), True, False)
    assert reported.describe() == classified.describe()


def test_a_process_away_from_the_tree_waiting_at_exit_holds_no_hang() -> None:
    """A daemon reparented away from the attempt's tree holds no hang, also where its
    main thread waits at exit for a thread: no frame, no wait, `pid N` alone."""
    from reprospec.core.words import LEFT_THE_TREE
    from reprospec.outcome.hungstacks import hung_processes

    away = _AT_EXIT.replace(" ---\n", f" {LEFT_THE_TREE} ---\n", 1)
    (process,) = hung_processes(away, source=on_disk)
    assert (process.frame, process.joined, process.at_exit) == (None, (), False)
    assert process.describe() == "pid 4200"
    assert hung_frame(away, source=on_disk) is None
    assert where_stuck(away, source=on_disk) is None


# A main thread joining `w`, which waits on a lock held forever, beside a daemon `heartbeat`
# that sleeps in a loop; faulthandler dumps the newest thread first, the heartbeat here.
_JOIN_BESIDE_A_HEARTBEAT = """\
--- pid 88 (python job.py) ---
Thread 0x00007f0000000002 (most recent call first):
  File "{path}", line 6 in beat
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007f0000000001 (most recent call first):
  File "{path}", line 9 in work
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000000 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 1139 in _wait_for_tstate_lock
  File "/usr/lib/python3.11/threading.py", line 1119 in join
  File "{path}", line 13 in <module>
"""

_JOB = """\
import threading, time
lock = threading.Lock()
lock.acquire()
def beat():
    while True:
        time.sleep(0.05)  # with lock: (a comment says nothing)
def work():
    print("#", end="")
    {line}
w = threading.Thread(target=work, name="w")
w.start()
threading.Thread(target=beat, name="heartbeat", daemon=True).start()
w.join()
"""


@pytest.mark.parametrize(
    "line",
    ["with lock:", "lock.acquire()", "lock.acquire()  # sleep()"],
)
def test_a_join_names_the_thread_on_a_lock_not_the_heartbeat_that_sleeps(
    tmp_path: Path, line: str
) -> None:
    """The joined thread waits in C code on its own line, as the heartbeat's sleep does: the
    frames alone look alike, and the dump's first (the heartbeat) titled the hang `hang in
    beat`. The lines tell them apart."""
    job = tmp_path / "job.py"
    job.write_text(_JOB.format(line=line))
    stack = _JOIN_BESIDE_A_HEARTBEAT.format(path=job)
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 9, "work")
    stuck = where_stuck(stack, source=on_disk)
    assert stuck is not None
    assert [f.function for f in stuck.joined] == ["work", "beat"]


@pytest.mark.parametrize("busy", ['s = ", ".join(parts)', "path = os.path.join(root, name)"])
def test_a_join_names_the_thread_on_a_lock_not_a_busy_one_that_calls_join(
    tmp_path: Path, busy: str
) -> None:
    """A thread whose own line calls `join(` with no threading.py frames below it runs:
    a real join waits in threading's frames. `", ".join(parts)` ranked with the lock's
    `with` and, dumped first, titled the hang (review)."""
    job = tmp_path / "job.py"
    job.write_text(
        "import threading\nlock = threading.Lock()\nlock.acquire()\n"
        f"def beat(parts):\n    {busy}\n"
        "def work():\n    pass\n    pass\n    with lock:\n"
    )
    stack = _JOIN_BESIDE_A_HEARTBEAT.format(path=job).replace("line 6 in beat", "line 5 in beat")
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 9, "work")


def _docker_hang(tmp_path: Path, root: str, stack: str) -> tuple[Path, Execution]:
    """A hung docker attempt of `_JOB` (its line `with lock:`) whose container names the
    workdir `root`, its dump `stack`: the workdir and what the runner hands the classifier."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text(_JOB.format(line="with lock:"))
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in ("stdout.log", "stderr.log", "events.jsonl"):
        (logs / log).write_text("")
    (logs / "stack.txt").write_text(stack)
    hung = dataclasses.replace(
        execution_in(logs, None, timed_out=True),
        stack_path=logs / "stack.txt",
        container_workdir=root,
    )
    return work, hung


def test_a_docker_attempts_join_is_ranked_by_its_workdirs_lines(tmp_path: Path) -> None:
    """A docker attempt's dump names the workdir as its container does (`/work` for a
    workdir under /root, /opt, /usr or /var): read on the host, no line was there, and the
    hang read `hang in beat` under docker alone. The classifier reads the workdir's."""
    root = "/no-such-container-root"
    work, hung = _docker_hang(
        tmp_path, root, _JOIN_BESIDE_A_HEARTBEAT.format(path=f"{root}/job.py")
    )
    outcome = classify(hung, workdir=work)
    assert isinstance(outcome, Outcome)
    assert outcome.hung_in == Frame(f"{root}/job.py", 9, "work")
    # A local attempt's path is the host's (no such file): the dump's order stands.
    local = classify(dataclasses.replace(hung, container_workdir=None), workdir=work)
    assert isinstance(local, Outcome)
    assert local.hung_in is not None
    assert local.hung_in.function == "beat"


def test_a_docker_childs_detail_names_its_threads_as_hung_in_does(tmp_path: Path) -> None:
    """A child's threads, said in the detail, are ranked from the workdir's lines as
    `hung_in` is: under docker the detail read this host at the container's `/work` and
    put the heartbeat first, where `hung_in` named `work` (review)."""
    root = "/no-such-container-root"
    child = _JOIN_BESIDE_A_HEARTBEAT.format(path=f"{root}/job.py").replace("pid 88", "pid 11")
    child = child.replace(
        f'  File "{root}/job.py", line 13 in <module>\n',
        f'  File "{root}/job.py", line 13 in main\n'
        f'  File "{_LIB}/multiprocessing/process.py", line 108 in run\n'
        f'  File "{_LIB}/multiprocessing/process.py", line 314 in _bootstrap\n'
        f'  File "{root}/job.py", line 13 in <module>\n',
    )
    parent = (
        "--- pid 10 (python job.py) ---\nCurrent thread 0x0 (most recent call first):\n"
        f'  File "{_LIB}/multiprocessing/popen_fork.py", line 27 in poll\n'
        f'  File "{_LIB}/multiprocessing/process.py", line 149 in join\n'
        f'  File "{root}/job.py", line 13 in <module>\n\n'
    )
    work, hung = _docker_hang(tmp_path, root, parent + child)
    outcome = classify(hung, workdir=work)
    assert isinstance(outcome, Outcome)
    assert outcome.where == "child"
    assert outcome.hung_in == Frame(f"{root}/job.py", 9, "work")
    said = f"threads were in {root}/job.py:9 in work, {root}/job.py:6 in beat"
    assert said in (outcome.detail or "")


def test_a_join_keeps_the_dumps_order_where_no_line_can_be_read(tmp_path: Path) -> None:
    """Where the file is not here to read (a container's path), the dump's order stands."""
    stack = _JOIN_BESIDE_A_HEARTBEAT.format(path=tmp_path / "gone.py")
    frame = hung_frame(stack, source=on_disk)
    assert frame is not None
    assert frame.function == "beat"


def test_a_join_names_the_thread_on_a_queue_not_the_heartbeat_on_a_timed_wait(
    tmp_path: Path,
) -> None:
    """Both wait in threading's Condition.wait, the heartbeat's `stop.wait(0.05)` given a
    timeout: it wakes, as a sleep does; `q.get()` waits for good. The user's lines say
    which, not threading.py's: under docker that is the image's file, none on the host
    (here), or one of another version, whose line at that number says anything (review)."""
    lib = tmp_path / "image" / "lib" / "python3.11" / "threading.py"
    job = tmp_path / "job.py"
    job.write_text(
        "import queue, threading\nq, stop = queue.Queue(), threading.Event()\n"
        "def beat():\n    pass\n    while not stop.wait(0.05):  # q.get()\n"
        "        pass\ndef work():\n    q.get()\n"
    )
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{lib}", line 331 in wait\n'
        f'  File "{lib}", line 629 in wait\n'
        f'  File "{job}", line 5 in beat\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{lib}", line 327 in wait\n'
        '  File "/usr/lib/python3.11/queue.py", line 171 in get\n'
        f'  File "{job}", line 8 in work\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{lib}", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{lib}", line 1119 in join\n'
        f'  File "{job}", line 12 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 8, "work")
    # A threading.py that says every wait had a timeout, read under docker: the image's
    # file, none of this host's (source_at), whatever a host's file at that path says.
    lib.parent.mkdir(parents=True)
    lib.write_text("\n".join(["        waiter.acquire(True, timeout)"] * 400))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "job.py").write_text(job.read_text())
    moved = stack.replace(str(job), str(tmp_path / "work" / "job.py"))
    container = source_at(tmp_path / "work", container=str(tmp_path / "work"))
    assert hung_frame(moved, source=container) == Frame(
        str(tmp_path / "work" / "job.py"), 8, "work"
    )


# threading's Condition.wait, its line given a timeout and not (3.11's).
_CONDITION_WAIT = (
    "    def wait(self, timeout=None):\n" + "\n" * 325 + "                waiter.acquire()\n"
    "                gotit = True\n            else:\n                if timeout > 0:\n"
    "                    gotit = waiter.acquire(True, timeout)\n"
)


@pytest.mark.parametrize(
    ("beat", "below"),
    [
        # A library's helper does the `stop.wait(1)`: its line is the user's last.
        ("hb.run_forever()", '  File "/venv/lib/python3.11/site-packages/hb.py", line 9 in run\n'),
        # A call split over lines: the timeout is on the next.
        ("while not stop.wait(", ""),
    ],
)
def test_a_heartbeats_timeout_not_on_its_line_is_read_from_threadings(
    tmp_path: Path, beat: str, below: str
) -> None:
    """Where the heartbeat's own line shows no timeout, threading.py's line below it says
    whether its wait was given one (`waiter.acquire(True, timeout)`): a local attempt's is
    this host's file. Read from the user's line alone, both heartbeats waited for good,
    level with `w` on the lock, and the dump's order titled the hang `hang in beat`
    (review); under docker threading.py is the image's, not read, and the order stands."""
    lib = tmp_path / "lib" / "python3.11" / "threading.py"
    lib.parent.mkdir(parents=True)
    lib.write_text(_CONDITION_WAIT)
    work = tmp_path / "work"
    work.mkdir()
    job = work / "job.py"
    job.write_text(
        "import threading\nlock = threading.Lock()\ndef beat():\n"
        f"    {beat}\n        timeout=1):\n        pass\ndef work():\n    with lock:\n"
    )
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{lib}", line 331 in wait\n'
        f'  File "{lib}", line 629 in wait\n'
        f"{below}"
        f'  File "{job}", line 4 in beat\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{job}", line 8 in work\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{lib}", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{lib}", line 1119 in join\n'
        f'  File "{job}", line 12 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 8, "work")
    assert hung_frame(stack, source=source_at(work)) == Frame(str(job), 8, "work")
    assert hung_frame(stack, source=source_at(work, container=str(work))) == Frame(
        str(job), 4, "beat"
    )


@pytest.mark.parametrize(
    ("line", "below"),
    [
        ('s = ", ".join(parts); ev.wait()', '  File "{lib}", line 629 in wait\n'),
        ("n = d.get(k, 0); q.get()", '  File "/usr/lib/python3.11/queue.py", line 171 in get\n'),
        # A bracket in a string is none: the get's call read as never closed, to the line's
        # end, its `0` the wait's timeout (review).
        ('n = d.get("(", 0); ev.wait()', '  File "{lib}", line 629 in wait\n'),
        ('n = d.get("[", 0); q.get()', '  File "/usr/lib/python3.11/queue.py", line 171 in get\n'),
    ],
)
def test_a_timeout_is_read_from_the_wait_call_not_another_call_on_its_line(
    tmp_path: Path, line: str, below: str
) -> None:
    """Another call's arguments on the line (`", ".join(parts)`, a dict's `get(k, 0)`) are
    not the wait's: read as its timeout, the thread blocked for good ranked as a sleeper
    or a consumer that polls, after the busy thread dumped before it (review). Its brackets
    are Python's, not a string's."""
    lib = tmp_path / "gone" / "lib" / "python3.11" / "threading.py"  # none to read
    job = tmp_path / "job.py"
    job.write_text(f"import threading\ndef busy():\n    x += 1\ndef stuck():\n    {line}\n")
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{job}", line 3 in busy\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{lib}", line 327 in wait\n'
        + below.format(lib=lib)
        + f'  File "{job}", line 5 in stuck\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{lib}", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{lib}", line 1119 in join\n'
        f'  File "{job}", line 12 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 5, "stuck")


@pytest.mark.parametrize(
    "get",
    [
        "q.get(timeout=0.2)",
        "q.get(True, 0.2)",
        "f.result(timeout=1)",
        # A hand-written consumer on a Condition, no Event's wait (review).
        "cond.wait(0.2)",
        "cond.wait_for(ready, 0.2)",
    ],
)
def test_a_join_names_a_consumer_polling_with_a_timeout_not_the_heartbeat(
    tmp_path: Path, get: str
) -> None:
    """A consumer that polls its queue with a timeout in a loop that never ends wakes, as the
    heartbeat's sleep does, but it is the thread that never ends: below a queue's get (or
    a future's result), or a Condition's own wait, a timed wait ranks above a sleeper (an
    Event's), and the hang names `work` (it read `hang in beat`, review)."""
    lib = "/usr/lib/python3.11"
    below = (
        f'  File "{lib}/queue.py", line 180 in get\n'
        if "get" in get
        else f'  File "{lib}/threading.py", line 376 in wait_for\n'
        if "wait_for" in get
        else ""
        if "cond" in get
        else f'  File "{lib}/concurrent/futures/_base.py", line 451 in result\n'
    )
    job = tmp_path / "job.py"
    job.write_text(
        "import queue, threading, time\nq = queue.Queue()\n"
        "def beat():\n    while True:\n        time.sleep(0.05)\n"
        f"def work():\n    while True:\n        {get}\n"
    )
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{job}", line 5 in beat\n'
        f'  File "{lib}/threading.py", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{lib}/threading.py", line 331 in wait\n'
        f"{below}"
        f'  File "{job}", line 8 in work\n'
        f'  File "{lib}/threading.py", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{lib}/threading.py", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{lib}/threading.py", line 1119 in join\n'
        f'  File "{job}", line 12 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 8, "work")


# An interpreter's library no host has: threading.py's own line is read where the user's
# shows no timeout (`_timed`), and a host's file there would say anything at these lines.
_LIB = "/no-such-prefix/lib/python3.11"
# The library frames a thread waits in below its own line: a queue's `get()`, an Event's
# `wait()` (threading's Condition wait under it).
_QUEUE_GET = (
    f'  File "{_LIB}/threading.py", line 327 in wait\n  File "{_LIB}/queue.py", line 171 in get\n'
)
_EVENT_WAIT = (
    f'  File "{_LIB}/threading.py", line 331 in wait\n'
    f'  File "{_LIB}/threading.py", line 629 in wait\n'
)
_POLLS = "while w.is_alive():\n    time.sleep(0.1)"


@pytest.mark.parametrize(
    ("work", "below", "loop", "named"),
    [
        # `w` waits for good on a lock: the main thread's sleep loop only waits for it.
        ("with lock:", "", _POLLS, "work"),
        ("with lock:", "", "while not f.done(): time.sleep(0.1)", "work"),
        (
            "with lock:",
            "",
            "while True:\n    if not w.is_alive():\n        break\n\n    time.sleep(0.1)",
            "work",
        ),
        # The main thread's sleep an Event's wait given a timeout (threading's frames below
        # its line): it wakes, as a sleep does; with none it waits for good, its own hang.
        (
            "with lock:",
            "",
            "while not stop.wait(0.1):\n    if not w.is_alive():\n        break",
            "work",
        ),
        ("with lock:", "", "while w.is_alive() and not stop.wait(timeout=0.1): pass", "work"),
        ("with lock:", "", "while not stop.wait(0.1):\n    print('tick')", "<module>"),
        ("with lock:", "", "while w.is_alive():\n    stop.wait()", "<module>"),
        # A timed queue get polls as a sleep does (it read `hang in <module>`, review).
        (
            "with lock:",
            "",
            "while w.is_alive():\n    try:\n        r = q.get(timeout=0.1)\n"
            "    except queue.Empty:\n        continue",
            "work",
        ),
        # Loops the indentation walk cut (review): a split header, a sleep or a break past
        # 12 lines, a `for` inside the polling `while`; and the wait for every thread.
        (
            "with lock:",
            "",
            "while (\n    w.is_alive()\n    and q.empty()\n):\n    time.sleep(0.1)",
            "work",
        ),
        (
            "with lock:",
            "",
            "while w.is_alive():\n" + "    x = 1\n" * 14 + "    time.sleep(0.1)",
            "work",
        ),
        (
            "with lock:",
            "",
            "while True:\n    time.sleep(0.1)\n"
            + "    x = 1\n" * 14
            + "    if not w.is_alive():\n        break",
            "work",
        ),
        (
            "with lock:",
            "",
            "while w.is_alive():\n    for t in [w]:\n        t.name; time.sleep(0.1)",
            "work",
        ),
        ("with lock:", "", "while threading.active_count() > 1: time.sleep(0.1)", "work"),
        ("with lock:", "", "while len(threading.enumerate()) > 1:\n    time.sleep(0.1)", "work"),
        # `w` runs (a busy loop): nothing says the hang is there, the main thread's stays.
        ("x += 1", "", _POLLS, "<module>"),
        # A main loop that sleeps between its own work polls no thread: the idle consumer
        # beside it, blocked by design, is no hang (it read `hang in work`, review), nor a
        # watcher's untimed `stop.wait()`.
        (
            "q.get()",
            _QUEUE_GET,
            "while True:\n    if ready(): q.put(1)\n    time.sleep(1)",
            "<module>",
        ),
        ("stop.wait()", _EVENT_WAIT, "while running:\n    step()\n    time.sleep(0.5)", "<module>"),
        ("with lock:", "", "def main():\n    step()\n    time.sleep(0.5)", "main"),
    ],
)
def test_a_main_thread_that_polls_a_blocked_thread_names_it(
    tmp_path: Path, work: str, below: str, loop: str, named: str
) -> None:
    job = tmp_path / "job.py"
    # Python that parses (`with lock: pass`): its loops are read by their syntax.
    body = f"{work} pass" if work.endswith(":") else work
    head = (
        "import queue, threading, time\nlock = threading.Lock()\nlock.acquire()\n"
        "q, stop = queue.Queue(), threading.Event()\n"
        f"def work():\n    {body}\n"
        "w = threading.Thread(target=work)\nw.start()\n"
    )
    job.write_text(head + loop + "\n")
    lines = (head + loop).split("\n")
    line = next(
        i
        for i, text in enumerate(lines, 1)
        if i > head.count("\n") and any(call in text for call in ("sleep(", ".wait(", ".get("))
    )
    function = "main" if loop.startswith("def ") else "<module>"
    # An Event's wait, a queue's get: the library's frames below the main thread's line.
    called = lines[line - 1]
    waits = _EVENT_WAIT if "stop.wait(" in called else _QUEUE_GET if "q.get(" in called else ""
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x1 (most recent call first):\n"
        f"{below}"
        f'  File "{job}", line 6 in work\n'
        f'  File "{_LIB}/threading.py", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f"{waits}"
        f'  File "{job}", line {line} in {function}\n'
        + (f'  File "{job}", line {len(lines) + 1} in <module>\n' if function == "main" else "")
    )
    frame = hung_frame(stack, source=on_disk)
    assert frame is not None
    assert frame.function == named
    stuck = where_stuck(stack, source=on_disk)
    assert stuck is not None
    assert stuck.polled == (named == "work")
    if named == "work":
        assert "its main thread waiting for them in a sleep loop in " in stuck.describe()


def test_labelling_a_dumps_workers_reads_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's Stacks block labels the workers by their frames: it read the program's
    file for each thread (the report reads none, review), as does a stuck worker's find."""
    job = tmp_path / "job.py"
    job.write_text("import time\ndef beat():\n    while True:\n        time.sleep(1)\n")
    stack = (
        "--- pid 88 (python job.py) ---\nThread 0x1 (most recent call first):\n"
        f'  File "{job}", line 4 in beat\n  File "{_LIB}/threading.py", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{_LIB}/threading.py", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{_LIB}/threading.py", line 1119 in join\n'
        f'  File "{job}", line 6 in <module>\n'
    )
    read: list[Path] = []
    text = Path.read_text

    def spy(path: Path, *args: str, **kwargs: str) -> str:
        read.append(path)
        return text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", spy)
    assert label_workers(stack) == stack
    assert stuck_worker(stack) is None
    assert read == []


def test_a_hangs_files_are_read_once_per_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The classifier reads a dump several times over (its processes, each thread's rank
    as a sort's key, the main thread's sleep) and read the program's file for each line,
    three times a thread and more (review): each file once per attempt."""
    work = tmp_path / "work"
    work.mkdir()
    job = work / "job.py"
    job.write_text(_JOB.format(line="with lock:"))
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in ("stdout.log", "stderr.log", "events.jsonl"):
        (logs / log).write_text("")
    (logs / "stack.txt").write_text(_JOIN_BESIDE_A_HEARTBEAT.format(path=job))
    hung = dataclasses.replace(
        execution_in(logs, None, timed_out=True), stack_path=logs / "stack.txt"
    )
    read: list[Path] = []
    text = Path.read_text

    def spy(path: Path, *args: str, **kwargs: str) -> str:
        read.append(path)
        return text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", spy)
    for workdir in (work, None):
        read.clear()
        outcome = classify(hung, workdir=workdir)
        assert isinstance(outcome, Outcome)
        assert outcome.hung_in == Frame(str(job), 9, "work")
        assert read.count(job) == 1, read
    # A container's dump with no workdir to map it back: its paths are no file of this
    # host's, which it read as the container's (review).
    read.clear()
    outcome = classify(dataclasses.replace(hung, container_workdir=str(job.parent)), workdir=None)
    assert isinstance(outcome, Outcome)
    assert job not in read, read


def test_a_busy_thread_caught_in_threadings_own_code_is_no_wait(tmp_path: Path) -> None:
    """A monitor polling `threading.enumerate()` in a busy loop, caught inside it, is in
    threading.py but waits for nothing: the ranking read the thread waits from a second
    table of files alone (any frame of threading.py a wait), beside hangsource's
    `BLOCKING`, so the monitor ranked as blocked for good and, dumped first, titled the hang
    where `w` sat on a held lock. One table now: threading's waits by their functions."""
    lib = "/usr/lib/python3.11/threading.py"
    job = tmp_path / "job.py"
    job.write_text(
        "import threading\nlock = threading.Lock()\ndef monitor():\n"
        "    while True:\n        n = len(threading.enumerate())\n"
        "def work():\n    with lock:\n        pass\n"
    )
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{lib}", line 1501 in enumerate\n'
        f'  File "{job}", line 5 in monitor\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{job}", line 7 in work\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{lib}", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{lib}", line 1119 in join\n'
        f'  File "{job}", line 12 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 7, "work")


def test_a_thread_in_a_conditions_with_waits_for_a_thread(tmp_path: Path) -> None:
    """`with cond:` on a held Condition sits in threading.py's own `__enter__` (a Python
    frame, `return self._lock.__enter__()`), a wait for another thread: BLOCKING named no
    `__enter__` of threading's, so it ranked as a busy thread's frame and a busy loop dumped
    before it titled the hang (review)."""
    lib = "/usr/lib/python3.11/threading.py"
    job = tmp_path / "job.py"
    job.write_text(
        "import threading\ncond = threading.Condition()\ndef spin():\n"
        "    while True:\n        n = 1 + 1\n"
        "def work():\n    with cond:\n        pass\n"
    )
    stack = (
        "--- pid 88 (python job.py) ---\n"
        "Thread 0x2 (most recent call first):\n"
        f'  File "{job}", line 5 in spin\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Thread 0x1 (most recent call first):\n"
        f'  File "{lib}", line 277 in __enter__\n'
        f'  File "{job}", line 7 in work\n'
        f'  File "{lib}", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{lib}", line 1139 in _wait_for_tstate_lock\n'
        f'  File "{lib}", line 1119 in join\n'
        f'  File "{job}", line 12 in <module>\n'
    )
    assert hung_frame(stack, source=on_disk) == Frame(str(job), 7, "work")
