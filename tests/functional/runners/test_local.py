"""The local runner against real child processes: exits, signals, hangs, orphans, output."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

from reprospec.core.inputs import AttemptPlan, Expectation, Marker
from reprospec.outcome.evidence import Evidence
from reprospec.outcome.hangsource import on_disk
from reprospec.outcome.hungstacks import hung_frame
from reprospec.pipeline.attempt import attempt_result
from reprospec.process.tree import TOKEN_VAR
from reprospec.runners import local
from reprospec.runners.local import LocalRunner
from tests.support.cli import Cli
from tests.support.deadline import until_reached
from tests.support.local import child, make_plan
from tests.support.paths import CHILDREN, ROOT
from tests.support.plans import attempt_plan

PY = sys.executable


def wait_for(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def token_holders(token: str) -> list[int]:
    """Pids of the processes that carry this attempt token."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def gone(pid: int) -> bool:
    """Dead and reaped: a zombie left behind counts as a survivor."""
    return not psutil.pid_exists(pid)


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    r = LocalRunner()
    r.prepare([])
    return r


def test_pass(runner: LocalRunner, tmp_path: Path) -> None:
    ex = runner.run(make_plan([PY, "-c", "print('hello')"]), tmp_path)
    assert ex.returncode == 0
    assert not ex.timed_out
    assert ex.infra_error is None
    assert ex.stdout_path.read_text() == "hello\n"
    assert ex.events_path.exists()  # a child may append to it without creating it
    # A command's logs are made at their first byte: nothing was written to stderr (the
    # pipeline makes it, empty, for an attempt that ran and did not pass).
    assert not ex.stderr_path.exists()
    assert ex.stack_path is None
    assert ex.started.endswith("+00:00")
    assert ex.started <= ex.finished
    assert ex.duration_s > 0
    assert ex.warnings == ()


def test_exit_code_and_child_events(runner: LocalRunner, tmp_path: Path) -> None:
    ex = runner.run(make_plan(child("events.py")), tmp_path)
    assert ex.returncode == 3
    events = [json.loads(line) for line in ex.events_path.read_text().splitlines()]
    assert [e["step"] for e in events] == [0, 1, 2]


def test_segfault_is_a_real_signal(runner: LocalRunner, tmp_path: Path) -> None:
    ex = runner.run(make_plan(child("crash.py")), tmp_path)
    assert ex.returncode == -11
    assert "about to crash" in ex.stdout_path.read_text()
    # The engine's sitecustomize armed faulthandler: the crash prints the crashing thread's
    # Python stack, and only that thread's.
    stderr = ex.stderr_path.read_text()
    assert "Fatal Python error: Segmentation fault" in stderr
    assert "Stack (most recent call first):" in stderr
    assert "Current thread 0x" not in stderr


def test_a_spec_that_sets_pythonfaulthandler_gets_every_thread(
    runner: LocalRunner, tmp_path: Path
) -> None:
    ex = runner.run(make_plan(child("crash.py"), env={"PYTHONFAULTHANDLER": "1"}), tmp_path)
    assert ex.returncode == -11
    assert "Current thread 0x" in ex.stderr_path.read_text()


def test_a_fatal_signal_is_the_one_the_process_took(cli: Cli, tmp_path: Path) -> None:
    """A SIGBUS while other threads run Python is a SIGBUS in every attempt.

    faulthandler's dump of every thread (PYTHONFAULTHANDLER=1) reads the running threads'
    frames and faulted itself in about 1 of these deaths in 7: the process died of SIGSEGV
    and the verdict named a signal the program never took.
    """
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: sigbus-busy-threads\n"
        f"command: [{PY}, {CHILDREN / 'sigbus_busy_threads.py'}]\n"
        "expect: {outcome: crash, signal: SIGBUS}\n"
    )
    done = cli("run", str(spec), "--repeat", "40", "-j", "2")
    assert done.code == 0, done.stderr[-3000:]
    (cell,) = done.results()["cells"]
    signals = [a["outcome"]["signal"] for a in cell["attempts"]]
    assert signals == ["SIGBUS"] * 40, signals


def test_abort(runner: LocalRunner, tmp_path: Path) -> None:
    assert runner.run(make_plan(child("crash.py", "abort")), tmp_path).returncode == -6


def test_shell_wrapper(runner: LocalRunner, tmp_path: Path) -> None:
    # sh may exec its last command (then the signal shows through) or report 128+N.
    ex = runner.run(make_plan(f"python {CHILDREN / 'crash.py'}"), tmp_path / "a")
    assert ex.returncode in (-11, 139)
    ex = runner.run(make_plan(f"python {CHILDREN / 'crash.py'}; exit $?"), tmp_path / "b")
    assert ex.returncode == 139


def test_string_and_list_commands_env_and_workdir(runner: LocalRunner, tmp_path: Path) -> None:
    plan = make_plan(
        'echo "$GREETING" "$PWD" > out.txt', workdir=tmp_path, env={"GREETING": "hi there"}
    )
    assert runner.run(plan, tmp_path / "logs").returncode == 0
    assert (tmp_path / "out.txt").read_text() == f"hi there {tmp_path}\n"
    plan = make_plan(["/bin/echo", "$GREETING", "a b"], env={"GREETING": "x"})
    ex = runner.run(plan, tmp_path / "logs2")
    assert ex.stdout_path.read_text() == "$GREETING a b\n"


def test_child_protocol_environment(tmp_path: Path) -> None:
    runner = LocalRunner()
    plan = make_plan(child("show_env.py"), env={"PYTHONPATH": "/user/path", "MINE": "1"})
    ex = runner.run(plan, tmp_path, gpu_slot=("2", "3"))
    seen = json.loads(ex.stdout_path.read_text())
    env = seen["env"]
    assert env["MINE"] == "1"
    assert env["REPROSPEC_EVENTS"] == str(tmp_path / "events.jsonl")
    assert env["REPROSPEC_ENV_JSON"] == str(tmp_path / "env.json")
    assert env["REPROSPEC_STACK_DIR"]
    assert len(env[TOKEN_VAR]) == 32
    # Not set: it would dump every thread (see test_a_fatal_signal_is_the_one_the_process_took).
    assert "PYTHONFAULTHANDLER" not in env
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    parts = env["PYTHONPATH"].split(os.pathsep)
    assert parts[0].endswith("stackdump")
    assert parts[-1] == "/user/path"
    assert "REPROSPEC_CELL" not in env


def test_python_in_command_is_the_chosen_interpreter(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "python3.11-fake"
    fake.parent.mkdir()
    fake.symlink_to(sys.executable)
    runner = LocalRunner(python=str(fake))
    runner.prepare([])
    for command in ("python", "python3"):
        plan = make_plan(f"{command} -c 'import sys; print(sys.executable)'")
        ex = runner.run(plan, tmp_path / command)
        assert ex.stdout_path.read_text().strip() == str(fake)


def test_workload_runs_the_harness_with_cell_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = tmp_path / "harness" / "reprospec_harness"
    harness.mkdir(parents=True)
    (harness / "__init__.py").write_text("")
    (harness / "__main__.py").write_text(
        "import json, os, sys\n"
        "cell = json.load(open(os.environ['REPROSPEC_CELL']))\n"
        "open(os.environ['REPROSPEC_ENV_JSON'], 'w').write(json.dumps({'python': '3'}))\n"
        "print(json.dumps({'cell': cell, 'argv0': sys.argv[0]}))\n"
    )
    monkeypatch.setattr(local, "HARNESS_DIR", tmp_path / "harness")
    plan = make_plan(None, workload={"seed": 0, "phases": [{"name": "train", "steps": 2}]})
    ex = LocalRunner().run(plan, tmp_path / "logs")
    assert ex.returncode == 0, ex.stderr_path.read_text()
    cell = json.loads(ex.stdout_path.read_text())["cell"]
    assert cell == {
        "spec": "test-spec",
        "cell_id": "a=1",
        "matrix": {"a": 1},
        "attempt": 1,
        "workload": {"seed": 0, "phases": [{"name": "train", "steps": 2}]},
        "environment": plan.environment.to_json(),
    }
    assert json.loads((tmp_path / "logs" / "env.json").read_text()) == {"python": "3"}


def test_a_commands_env_json_is_its_own(runner: LocalRunner, tmp_path: Path) -> None:
    # A command that writes a file at REPROSPEC_ENV_JSON writes its own: the engine reads
    # no env.json of an attempt (Execution.env_path, which no one read, is gone: review).
    code = "import os; open(os.environ['REPROSPEC_ENV_JSON'], 'w').write('{}')"
    ex = runner.run(make_plan([PY, "-c", code]), tmp_path)
    assert ex.returncode == 0
    assert (tmp_path / "env.json").read_text() == "{}"


@pytest.mark.parametrize(
    "argv",
    [
        ["true"],
        [PY, "-c", "raise ValueError('boom')"],
        [PY, "-c", "import sys; sys.stderr.write('said'); print('out')"],
        ["sh", "-c", f"{PY} -c 'raise KeyError(1)'; echo $?"],
    ],
)
def test_the_runners_listing_is_what_the_attempt_left(
    runner: LocalRunner, tmp_path: Path, argv: list[str]
) -> None:
    # Evidence.read takes the runner's listing of the folder for its own (one listing an
    # attempt): it must name every file there once the runner is done, the program's kept
    # record (raised.txt) among them and no dump it removed, and read as a fresh listing does.
    # An earlier attempt's raised.txt in the folder is removed, and not listed.
    (tmp_path / "raised.txt").write_text("1\n")
    ex = runner.run(make_plan(argv), tmp_path)
    assert ex.names == frozenset(p.name for p in tmp_path.iterdir())
    assert Evidence.read(ex) == Evidence.read(replace(ex, names=None))


def test_the_listing_leaves_out_the_io_load_files_removed_after_it(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # perturb.io_load's writers fill `io-load-*.bin` in the attempt's folder, removed once
    # the attempt is over, after the listing: the names still held them (review).
    plan = attempt_plan(
        [PY, "-c", "import time; time.sleep(1)"],
        CHILDREN,
        environment={"device": "cpu", "perturb": {"io_load": 1}},
    )
    ex = runner.run(plan, tmp_path)
    assert ex.returncode == 0, ex.stderr_path.read_text()
    assert ex.names == frozenset(p.name for p in tmp_path.iterdir())


def test_markers_from_output(runner: LocalRunner, tmp_path: Path) -> None:
    markers = (
        Marker(pattern=r"\[PreSegmenter\] Running (?P<phase>\w+)"),
        Marker(pattern=r"^Validation step (?P<step>\d+)", phase="validation"),
    )
    ex = runner.run(make_plan(child("progress.py"), markers=markers), tmp_path)
    events = [json.loads(line) for line in ex.events_path.read_text().splitlines()]
    got = sorted((e["phase"], e["step"]) for e in events)
    assert got == sorted(
        [("train", None), ("validation", 7), ("validation", 8), ("validation", 9), ("eval", None)]
    )
    assert all(e["event"] == "marker" and e["t"] > 0 for e in events)
    assert {e["line"] for e in events if e["step"] == 7} == {"Validation step 7"}


def test_output_flood_is_capped(runner: LocalRunner, tmp_path: Path) -> None:
    me = psutil.Process()
    before = me.memory_info().rss
    ex = runner.run(make_plan(child("flood.py", "300")), tmp_path)
    assert ex.returncode == 0
    size = ex.stdout_path.stat().st_size
    assert size < 2 * (1 << 20) + 200
    data = ex.stdout_path.read_bytes()
    assert data.startswith(b"HEAD-START\n")
    assert data.endswith(b"TAIL-END\n")
    assert b"bytes omitted ...]" in data
    assert me.memory_info().rss - before < 64 << 20


def test_hang_dumps_every_thread_then_kills(runner: LocalRunner, tmp_path: Path) -> None:
    # 1.5 s to reach deep_hang, doubled while a loaded machine kept the child from it.
    last = until_reached(
        lambda timeout_s, folder: runner.run(
            make_plan(child("hang.py", str(folder / "ready")), timeout_s=timeout_s),
            folder / "logs",
        ),
        lambda folder: (folder / "ready").exists(),
        1.5,
        tmp_path,
    )
    ex, ready = last.result, last.folder / "ready"
    assert ex.timed_out
    assert ex.returncode == -9
    assert ex.duration_s < last.timeout_s + 10  # killed at the timeout; the speed is a benchmark
    assert ready.exists()
    assert ex.stack_path == last.folder / "logs" / "stack.txt"
    stack = ex.stack_path.read_text()
    assert f"--- pid {ready.read_text()} (" in stack
    assert "hang.py" in stack
    assert "deep_hang" in stack
    assert "other_thread_wait" in stack
    assert not list((last.folder / "logs").glob("stack-*.txt"))
    assert ex.names == frozenset(p.name for p in (last.folder / "logs").iterdir())
    assert not psutil.pid_exists(int(ready.read_text()))


def test_forked_multiprocessing_worker_gets_its_own_stack(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # 2 s for both to reach their hang (the parent's pid is written last), doubled while a
    # loaded machine kept them from it.
    last = until_reached(
        lambda timeout_s, folder: runner.run(
            make_plan(child("mp_hang.py", str(folder)), timeout_s=timeout_s), folder / "logs"
        ),
        lambda folder: (folder / "parent.pid").exists(),
        2.0,
        tmp_path,
    )
    ex = last.result
    assert ex.timed_out
    assert ex.stack_path is not None
    stack = ex.stack_path.read_text()
    parent, worker = ((last.folder / n).read_text() for n in ("parent.pid", "worker.pid"))
    assert f"--- pid {parent} (" in stack
    assert f"--- pid {worker} (" in stack
    worker_part = stack.split(f"--- pid {worker} (")[1]
    assert "worker_hang" in worker_part
    assert "parent_hang" not in worker_part
    assert "parent_hang" in stack.split(f"--- pid {parent} (")[1].split("--- pid")[0]


# Kills itself with a user signal and prints if it lived on (SIGUSR1 left to the program).
KILLS_ITSELF = (
    "import os, signal, sys, time; os.kill(os.getpid(), getattr(signal, sys.argv[1]));"
    " time.sleep(0.2); print('still alive')"
)


@pytest.mark.parametrize("name", ["SIGUSR1", "SIGUSR2"])
def test_a_program_that_kills_itself_with_a_user_signal_dies_of_it(
    runner: LocalRunner, tmp_path: Path, name: str
) -> None:
    """The stack dump's signal was SIGUSR1, registered in every Python process of an
    attempt: a program that dies of SIGUSR1 outside reprospec (status 138) lived on, and
    `expect: {outcome: crash, signal: SIGUSR1}` read `pass`. SIGUSR2 never was."""
    plan = replace(
        make_plan([PY, "-c", KILLS_ITSELF, name], workdir=tmp_path),
        expectation=Expectation("crash", signal=name),
    )
    ex = runner.run(plan, tmp_path / "logs")
    # An empty log is not kept.
    printed = ex.stdout_path.read_text() if ex.stdout_path.exists() else ""
    assert "still alive" not in printed
    assert ex.returncode == -getattr(signal, name)
    result = attempt_result(plan, ex, Evidence.read(ex))
    assert result.ran is not None
    assert (result.ran.kind, result.ran.signal) == ("crash", name), result.ran
    assert result.matched, result.mismatches


# A hang whose program handles SIGUSR1 itself (a training loop's "save a checkpoint").
HANDLES_SIGUSR1 = """
import pathlib, signal, sys, time
folder = pathlib.Path(sys.argv[1])
signal.signal(signal.SIGUSR1, lambda *_: (folder / "usr1").touch())
def waits_here():
    (folder / "ready").touch()
    time.sleep(60)
waits_here()
"""


def test_a_hang_s_stacks_are_asked_for_without_the_program_s_own_sigusr1_handler(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """The engine asked for a hang's Python stacks with SIGUSR1: a program's own handler of
    it ran (its "save a checkpoint" at every timeout), and its stack was py-spy's or none.
    The asking signal is SIGURG, ignored by default: the stack is faulthandler's,
    the program's handler never runs."""
    last = until_reached(
        lambda timeout_s, folder: runner.run(
            make_plan([PY, "-c", HANDLES_SIGUSR1, str(folder)], timeout_s=timeout_s),
            folder / "logs",
        ),
        lambda folder: (folder / "ready").exists(),
        1.5,
        tmp_path,
    )
    ex = last.result
    assert ex.timed_out
    assert ex.stack_path is not None
    stack = ex.stack_path.read_text()
    assert "in waits_here" in stack, stack
    assert "[py-spy]" not in stack, stack  # the process answered itself
    assert not (last.folder / "usr1").exists()


# A hang in a process that ignores the asking signal: only py-spy can read its stack.
IGNORES_THE_ASK = """
import pathlib, signal, sys, threading
signal.signal(signal.SIGURG, signal.SIG_IGN)
def deaf_here():
    (pathlib.Path(sys.argv[1]) / "ready").touch()
    threading.Event().wait(60)
deaf_here()
"""


@pytest.mark.skipif(
    not os.access(Path(sys.executable).parent / "py-spy", os.X_OK),
    reason="needs py-spy installed beside the interpreter (the torch or dev extra)",
)
def test_a_hang_that_does_not_answer_is_read_by_the_py_spy_beside_the_interpreter(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.venv/bin/reprospec` run without the venv activated: py-spy is in .venv/bin, not on
    PATH, and the stacks were looked for on PATH alone: a process that did not
    answer had no stack. It is looked for beside the engine's interpreter first."""
    monkeypatch.setenv("PATH", os.defpath)
    assert shutil.which("py-spy") is None
    last = until_reached(
        lambda timeout_s, folder: runner.run(
            make_plan([PY, "-c", IGNORES_THE_ASK, str(folder)], timeout_s=timeout_s),
            folder / "logs",
        ),
        lambda folder: (folder / "ready").exists(),
        1.5,
        tmp_path,
    )
    ex = last.result
    assert ex.timed_out
    assert ex.stack_path is not None
    stack = ex.stack_path.read_text()
    assert "[py-spy] ---" in stack, stack
    assert "deaf_here" in stack, stack
    # Where it hangs is the user's frame that waits, as faulthandler's stack places it, not
    # threading's: py-spy named its files by their package part (`threading.py:327`), which
    # no rule could tell from the user's own files.
    frame = hung_frame(stack, source=on_disk)
    assert frame is not None
    assert frame.function == "deaf_here", stack


@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_no_orphans_survive(runner: LocalRunner, tmp_path: Path, mode: str) -> None:
    # The hang is killed at its timeout once its children are out (main.pid is written
    # last): 3 s, doubled while a loaded machine kept it from there. The exit never waits
    # for its timeout: a long one costs nothing.
    last = until_reached(
        lambda timeout_s, folder: runner.run(
            make_plan(child("escape.py", str(folder), mode), timeout_s=timeout_s),
            folder / "logs",
        ),
        lambda folder: mode == "exit" or (folder / "main.pid").exists(),
        3.0 if mode == "hang" else 120.0,
        tmp_path,
    )
    ex, folder = last.result, last.folder
    pids = {p.stem: int(p.read_text()) for p in folder.glob("*.pid")}
    assert {"setsid", "daemon", "noenv"} <= set(pids)
    for name, pid in pids.items():
        assert gone(pid), f"{name} ({pid}) survived"
    assert token_holders((folder / "token").read_text()) == []
    if mode == "exit":
        assert ex.returncode == 0
        assert not ex.timed_out
        assert any("left behind" in w for w in ex.warnings), ex.warnings
    else:
        assert ex.timed_out
        assert ex.duration_s < last.timeout_s + 10


def test_cancel_stops_a_running_attempt(runner: LocalRunner, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    cancel = threading.Event()

    def cancel_when_ready() -> None:
        wait_for(ready)
        cancel.set()

    helper = threading.Thread(target=cancel_when_ready)
    helper.start()
    begin = time.monotonic()
    ex = runner.run(
        make_plan(child("wait_cancel.py", str(ready)), timeout_s=60), tmp_path / "l", cancel=cancel
    )
    helper.join()
    assert ex.interrupted
    assert not ex.timed_out
    assert time.monotonic() - begin < 50  # the cancel stopped it, not its 60 s timeout
    assert ex.returncode == -9


def test_concurrent_attempts(runner: LocalRunner, tmp_path: Path) -> None:
    results: dict[int, int | None] = {}

    def one(i: int) -> None:
        plan = make_plan([PY, "-c", f"import sys; sys.exit({i})"])
        results[i] = runner.run(plan, tmp_path / str(i)).returncode

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: 0, 1: 1, 2: 2, 3: 3}


def test_missing_workdir_is_an_infra_error(runner: LocalRunner, tmp_path: Path) -> None:
    ex = runner.run(make_plan(["true"], workdir=tmp_path / "nope"), tmp_path / "logs")
    assert ex.infra_error == f"workdir not found: {tmp_path / 'nope'}"
    assert ex.returncode is None


def test_unstartable_program_is_an_infra_error(runner: LocalRunner, tmp_path: Path) -> None:
    ex = runner.run(make_plan([str(tmp_path / "no-such-program")]), tmp_path / "logs")
    assert ex.infra_error is not None
    assert "cannot start" in ex.infra_error


def test_capture_environment_never_crashes(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "HARNESS_DIR", tmp_path / "no-harness")
    env = runner.capture_environment(make_plan(["true"]), tmp_path / "env")
    assert env["python"] == ".".join(map(str, sys.version_info[:3]))
    assert "reprospec_harness" in str(env["error"])


def test_a_spec_that_never_uses_torch_is_captured_without_importing_it(
    runner: LocalRunner, tmp_path: Path
) -> None:
    plan = make_plan(["true"])
    assert not plan.uses_torch
    env = runner.capture_environment(plan, tmp_path / "env")
    assert env["torch"] == {"captured": False}
    # Its version still shows, from the package metadata.
    packages = env["packages"]
    assert isinstance(packages, dict)
    assert "torch" in packages
    for says in (
        replace(plan, preload=("torch",)),
        make_plan(None, workload={"model": {"builtin": "mlp"}}),
        attempt_plan(["true"], CHILDREN, environment={"packages": ["torch==2.13.0"]}),
        attempt_plan(["true"], CHILDREN, environment={"device": "cuda"}),
    ):
        assert says.uses_torch


def test_capture_environment_parses_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "harness" / "reprospec_harness"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "envinfo.py").write_text(
        "import json, sys\nprint(json.dumps({'python': sys.version}))\n"
    )
    monkeypatch.setattr(local, "HARNESS_DIR", tmp_path / "harness")
    env = LocalRunner().capture_environment(make_plan(["true"]), tmp_path / "env")
    assert env == {"python": sys.version}


# -- private temporary places (scratch.py) ------------------------------------------


def scratch_plan(argv: list[str], attempt: int, **environment: object) -> AttemptPlan:
    return attempt_plan(
        argv, CHILDREN, environment={"device": "cpu", **environment}, attempt=attempt
    )


def test_a_torn_file_in_tmpdir_does_not_reach_the_next_attempt(runner: LocalRunner) -> None:
    name = f"reprospec-torn-{uuid.uuid4().hex}.json"
    argv = child("torn_tmp.py", name)
    runs = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))
    try:
        first = runner.run(scratch_plan(argv, 1), runs / "1")
        assert first.returncode == 0, first.stderr_path.read_text()
        cache = Path(first.stdout_path.read_text().removeprefix("cache: ").strip())
        assert cache.parent.name == "tmp"
        assert cache.parent.parent.parent.name.startswith("reprospec-tmp-")
        # Gone with what it held, and recorded.
        assert not cache.parent.exists()
        assert not (Path(tempfile.gettempdir()) / name).exists()
        assert first.warnings == (
            f"removed what the attempt left in its private TMPDIR: 1 file, 19 B ({name})",
        )
        second = runner.run(scratch_plan(argv, 2), runs / "2")
        assert second.returncode == 0, second.stderr_path.read_text()
    finally:
        shutil.rmtree(runs)


def test_an_attempt_gets_the_engines_pair_wherever_its_folder_is(
    runner: LocalRunner, tmp_path: Path
) -> None:
    """A run folder near the root (`--out /o`) made `ATTEMPT/tmp` and `ATTEMPT/cache` and
    removed them after each attempt, 0.15 ms of the engine's CPU an attempt: an attempt gets
    the engine's pair wherever its folder is, short or deep, and the next one takes the pair
    it left empty; one it left a file in is removed. Under a deep run folder multiprocessing
    (a DataLoader with workers) still listens on TMPDIR/pymp-*/listener-*, a path short
    enough for a Unix socket. (One test: the deep folder's own took the same path, review.)"""
    code = (
        "import os, sys\n"
        "from multiprocessing.connection import Listener\n"
        "with Listener(family='AF_UNIX') as listener:\n"
        "    print(listener.address)\n"
        "print(os.environ['TMPDIR'], os.environ['XDG_CACHE_HOME'])\n"
        "if sys.argv[1] == 'keep':\n"
        "    open(os.path.join(os.environ['XDG_CACHE_HOME'], 'kept'), 'w').close()\n"
    )
    runs = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))
    deep = tmp_path / ("run-" + "d" * 80) / "cells" / "c" / "1"
    try:
        used = []
        for attempt, folder, left in ((1, runs / "1", "none"), (2, deep, "keep")):
            ex = runner.run(scratch_plan([PY, "-c", code, left], attempt), folder)
            assert ex.returncode == 0, ex.stderr_path.read_text()
            address, tmp, cache = map(Path, ex.stdout_path.read_text().split())
            assert address.parent.parent == tmp
            assert (tmp.name, cache.name, tmp.parent) == ("tmp", "cache", cache.parent)
            assert tmp.parent.parent.name.startswith("reprospec-tmp-")
            assert not (folder / "tmp").exists()
            assert not (folder / "cache").exists()
            used.append(tmp)
            if left == "none":
                assert ex.warnings == ()
        assert used[0] == used[1]
        # The second left a file in its XDG_CACHE_HOME: the pair is removed, not handed on.
        assert not used[1].parent.exists()
        assert ex.warnings == (
            "removed what the attempt left in its private XDG_CACHE_HOME: 1 file, 0 B (kept)",
        )
    finally:
        shutil.rmtree(runs)


def test_an_engine_keeps_one_short_folder_and_removes_it_when_it_exits(tmp_path: Path) -> None:
    """Deep attempt folders get their TMPDIR and XDG_CACHE_HOME in one folder of the
    engine's, made once. A pair its attempt left empty goes to the next attempt; one it
    left a file in is removed, and the next attempt gets a new one. The engine's folder
    goes when the engine exits."""
    base = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))  # short: used as it is
    try:
        spec = tmp_path / "s.yaml"
        spec.write_text(
            "reprospec: 1\nname: short\nmatrix:\n  n: [1, 2, 3, 4]\n"
            'command: [python, -c, \'import os, sys; t = os.environ["TMPDIR"]; print(t);'
            ' sys.argv[1] == "2" and open(os.path.join(t, "left"), "w").close()\','
            " '${{ matrix.n }}']\n"
            "expect: {outcome: pass}\n"
        )
        out = tmp_path / ("deep-" + "d" * 60)
        done = subprocess.run(
            [PY, "-m", "reprospec", "run", str(spec), "--out", str(out), "-j", "1"],
            env={**os.environ, "TMPDIR": str(base), "NO_COLOR": "1"},
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        used = {
            p.parent.parent.name: Path(p.read_text().strip())
            for p in out.glob("runs/*/cells/*/1/stdout.log")
        }
        assert sorted(used) == ["n=1", "n=2", "n=3", "n=4"]
        (engine_folder,) = {path.parent.parent for path in used.values()}
        assert engine_folder.parent == base
        assert engine_folder.name.startswith("reprospec-tmp-")
        assert {path.name for path in used.values()} == {"tmp"}
        # One after the other: n=2 took what n=1 left empty, and left a file in it.
        assert used["n=1"] == used["n=2"]
        assert used["n=3"] != used["n=2"]
        assert used["n=4"] == used["n=3"]
        (results,) = out.glob("runs/*/results.json")
        warnings = {
            c["id"]: [w for a in c["attempts"] for w in a.get("warnings", [])]
            for c in json.loads(results.read_text())["cells"]
        }
        assert any("TMPDIR: 1 file, 0 B (left)" in w for w in warnings["n=2"]), warnings
        assert not warnings["n=1"]
        assert not warnings["n=3"]
        # Every one removed, the engine's folder too (jinja2 may keep its cache there).
        assert [p for p in base.iterdir() if p.name.startswith("reprospec-tmp-")] == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_pair_is_handed_on_only_as_it_was_made(tmp_path: Path) -> None:
    """An empty TMPDIR the attempt chmod'ed, or replaced by a link, is not handed on; the
    link is removed, never what it points to."""
    from reprospec.process import scratch

    deep = tmp_path / ("d" * 70)
    first = scratch.prepare(deep)
    assert first.mode is not None
    first.tmp.chmod(0o500)
    assert scratch.clean(first) == ()
    assert not first.tmp.parent.exists()
    second = scratch.prepare(deep)
    assert second.tmp != first.tmp
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious").write_text("x")
    second.tmp.rmdir()
    second.tmp.symlink_to(keep)
    assert scratch.clean(second) == (
        "removed what the attempt left in its private TMPDIR: replaced by a symbolic link",
    )
    assert (keep / "precious").read_text() == "x"
    assert not second.tmp.parent.exists()
    third = scratch.prepare(deep)
    assert scratch.clean(third) == ()
    assert scratch.prepare(deep) == third  # left as made: handed on


def test_short_tmpdirs_of_a_killed_engine_are_swept(tmp_path: Path) -> None:
    from reprospec.process import scratch

    gone = subprocess.Popen([PY, "-c", "pass"])
    gone.wait()
    alive = subprocess.Popen([PY, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        orphan = tmp_path / f"reprospec-tmp-{gone.pid}-abc"
        in_use = tmp_path / f"reprospec-tmp-{alive.pid}-def"
        for folder in (orphan, in_use):
            (folder / "pymp-x").mkdir(parents=True)
        (tmp_path / "reprospec-tmp-notapid").mkdir()
        scratch.sweep_orphans(str(tmp_path))
        assert not orphan.exists()
        assert in_use.is_dir()
        assert (tmp_path / "reprospec-tmp-notapid").is_dir()
    finally:
        assert alive.stdin is not None
        alive.stdin.close()
        alive.wait()


def test_shared_tmp_opts_back_in(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("TMPDIR", str(shared))
    argv = child("torn_tmp.py", "cache.json")
    first = runner.run(scratch_plan(argv, 1, shared_tmp=True), tmp_path / "1")
    assert first.returncode == 0
    assert first.warnings == ()
    assert (shared / "cache.json").is_file()
    assert not (tmp_path / "1" / "tmp").exists()
    # The incident as it was: the second attempt dies on the first one's torn file.
    second = runner.run(scratch_plan(argv, 2, shared_tmp=True), tmp_path / "2")
    assert second.returncode == 1
    assert "JSONDecodeError" in second.stderr_path.read_text()


# Run in a private /dev/shm (launch.py's mount namespace) where this machine allows it: other
# engines on the machine would otherwise remove (and count) the test's leak as theirs.
SHM_DRIVER = """
import json, sys, threading, uuid
from pathlib import Path
import _multiprocessing
from reprospec.runners.local import LocalRunner
from tests.support.local import child, make_plan
from tests.support.plans import attempt_plan

folder, shared = Path(sys.argv[1]), sys.argv[2] == "shared"
children = Path("tests/data/children").resolve()
tag = uuid.uuid4().hex[:12]
leaked = Path(f"/dev/shm/sem.mp-leak-{tag}")
go = folder / "go"
argv = [sys.executable, str(children / "shm_leak.py"), f"leak-{tag}", str(go)]
plan = attempt_plan(argv, children, environment={"device": "cpu", "shared_tmp": shared})
runner = LocalRunner()
runner.prepare([])
done = []
thread = threading.Thread(target=lambda: done.append(runner.run(plan, folder / "a")))
thread.start()
ready = folder / "go.ready"
while not ready.exists() and thread.is_alive():
    thread.join(0.01)
assert ready.exists(), (folder / "a" / "stderr.log").read_text()
# Made while the attempt runs by a process still alive (as another attempt running beside
# it with -j 2 would be): it must be left alone.
held_name = f"/mp-held-{tag}"
held = _multiprocessing.SemLock(1, 1, 1, held_name, False)
go.touch()
thread.join()
(ex,) = done
print(json.dumps({
    "returncode": ex.returncode, "warnings": list(ex.warnings), "leak": leaked.name,
    "leaked_exists": leaked.exists(), "held_exists": Path(f"/dev/shm/sem.{held_name[1:]}").exists(),
}))
leaked.unlink(missing_ok=True)
_multiprocessing.sem_unlink(held_name)
"""


def leak_in_private_shm(tmp_path: Path, mode: str) -> dict[str, Any]:
    from reprospec.process import rlimits

    argv = [PY, "-c", SHM_DRIVER, str(tmp_path), mode]
    if rlimits.namespaces_permitted() is None:
        argv = [PY, str(rlimits.LAUNCH), "--shm-size", str(64 << 20), "--", *argv]
    root = ROOT
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_a_leaked_dev_shm_semaphore_is_removed_and_counted(tmp_path: Path) -> None:
    seen = leak_in_private_shm(tmp_path, "remove")
    assert seen["returncode"] == 0
    assert seen["warnings"] == [f"removed 1 leaked /dev/shm file: {seen['leak']}"]
    assert not seen["leaked_exists"]
    assert seen["held_exists"]


def test_shared_tmp_counts_dev_shm_leaks_but_leaves_them(tmp_path: Path) -> None:
    seen = leak_in_private_shm(tmp_path, "shared")
    assert seen["returncode"] == 0
    assert seen["warnings"] == [
        f"1 leaked /dev/shm file left in place (environment.shared_tmp): {seen['leak']}"
    ]
    assert seen["leaked_exists"]
    assert seen["held_exists"]


SHM_FILES_DRIVER = """
import json, sys, uuid
from pathlib import Path
from reprospec.runners.local import LocalRunner
from tests.support.plans import attempt_plan

folder = Path(sys.argv[1])
children = Path("tests/data/children").resolve()
tag = uuid.uuid4().hex[:12]
names = [f"psm_{tag}", f"__KMP_REGISTERED_LIB_{tag}_0", f"myapp-segment-{tag}"]
argv = [sys.executable, str(children / "shm_files.py"), *names]
runner = LocalRunner()
runner.prepare([])
ex = runner.run(attempt_plan(argv, children, environment={"device": "cpu"}), folder / "a")
left = [name for name in names if Path("/dev/shm", name).exists()]
print(json.dumps({"returncode": ex.returncode, "warnings": list(ex.warnings), "names": names,
                  "left": left}))
for name in left:
    Path("/dev/shm", name).unlink()
"""


def test_known_leakers_are_removed_and_a_file_of_another_name_is_reported(
    tmp_path: Path,
) -> None:
    from reprospec.process import rlimits

    # In a private /dev/shm of its own (as leak_in_private_shm): no other engine sees them.
    argv = [PY, "-c", SHM_FILES_DRIVER, str(tmp_path)]
    if rlimits.namespaces_permitted() is None:
        argv = [PY, str(rlimits.LAUNCH), "--shm-size", str(64 << 20), "--", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    psm, kmp, own = seen["names"]
    assert seen["returncode"] == 0
    assert seen["left"] == [own]  # the application's own name is never guessed at
    removed, reported = seen["warnings"]
    assert removed.startswith("removed 2 leaked /dev/shm files: ")
    assert psm in removed
    assert kmp in removed
    assert reported.startswith("1 new /dev/shm file not removed (not a name reprospec")
    assert own in reported
    assert "environment.shm_size" in reported


def test_shm_leaks_held_by_the_engines_own_processes_need_no_scan_of_proc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reprospec.process import scratch, tree

    tree.become_subreaper()
    shm = tmp_path / "shm"  # a stand-in for /dev/shm: every new file in it counts
    shm.mkdir()
    before = scratch.shm_snapshot(shm)
    held, loose = shm / "torch_1_held", shm / "torch_2_loose"
    ready = tmp_path / "ready"
    # Another attempt of this engine, running now, holds one of the new files open.
    holder = subprocess.Popen(
        [
            PY,
            "-c",
            "import sys, time; f = open(sys.argv[1], 'w'); open(sys.argv[2], 'w'); time.sleep(600)",
            str(held),
            str(ready),
        ],
        start_new_session=True,
    )
    try:
        wait_for(ready)
        scans: list[int] = []
        real_pids = scratch._pids

        def counted(proc: Path) -> Iterable[str]:
            scans.append(1)
            return real_pids(proc)

        monkeypatch.setattr(scratch, "_pids", counted)
        assert scratch.shm_leaks(before) == []
        assert scans == []  # found in the engine's own tree: /proc as a whole was not read
        loose.write_text("")
        assert scratch.shm_leaks(before) == [loose]
        assert scans == [1]  # held by no process of ours: only then all of /proc
    finally:
        holder.kill()
        holder.wait()


def test_a_user_script_of_another_python_is_refused_as_another_environments(
    cli: Cli, tmp_path: Path
) -> None:
    """A console script in ~/.local/bin (pip install --user) runs the Python its `#!` line
    names, with that Python's user site, not the cell's: it ran, and the cell was judged
    on the wrong packages. Refused now as an environment's program is, unless the line
    names the cell's own interpreter. HOME is a temporary one (the real ~/.local is never
    touched): the engine's HOME, which the attempts inherit."""
    home = tmp_path / "home"
    user_bin = home / ".local" / "bin"
    user_bin.mkdir(parents=True)
    # Another Python than the cell's (the test's venv's): the base installation's, say.
    own = Path(PY).parent.resolve()
    candidates = (os.path.realpath(PY), getattr(sys, "_base_executable", ""), "/usr/bin/python3")
    other = next((c for c in candidates if c and Path(c).parent.resolve() != own), None)
    if other is None or not Path(other).is_file():
        pytest.skip("skipped: no Python here but the cell's")
    for name, interpreter in (("usertool", other), ("owntool", PY)):
        script = user_bin / name
        ran = tmp_path / f"ran-{name}"
        script.write_text(f"#!{interpreter}\nimport pathlib\npathlib.Path({str(ran)!r}).touch()\n")
        script.chmod(0o755)
    spec = tmp_path / "user.yaml"
    spec.write_text(
        "reprospec: 1\nname: user-scripts\n"
        "environment: {packages: [pyyaml]}\n"  # a cell that claims its packages is held
        "matrix:\n  how: [direct, line, own]\n  include:\n"
        "    - {how: direct, run: usertool}\n"
        "    - {how: line, run: cd . && usertool}\n"
        "    - {how: own, run: owntool}\n"
        "command: ${{ matrix.run }}\nexpect: {outcome: pass}\n"
    )
    env = {"HOME": str(home), "PATH": f"{user_bin}{os.pathsep}{os.environ['PATH']}"}
    done = cli("run", str(spec), "--python", PY, env=env)
    assert done.code == 3, done.stderr
    cells = {c["matrix"]["how"]: c for c in done.results()["cells"]}
    for how in ("direct", "line"):
        assert cells[how]["verdict"] == "infra-error", cells[how]
        reason = cells[how]["attempts"][0]["infra_error"]
        assert reason == (
            f"usertool is not installed in the cell's environment (found {user_bin / 'usertool'}"
            f", the user's scripts (pip install --user, pipx): it runs {other} with its user "
            "site-packages): add it to environment.packages"
        ), reason
    assert not (tmp_path / "ran-usertool").exists()
    # A user script of the cell's own Python runs.
    assert cells["own"]["verdict"] == "reproduced", cells["own"]
    assert (tmp_path / "ran-owntool").exists()


def test_a_workload_on_a_python_older_than_the_harness_is_infra_error(tmp_path: Path) -> None:
    # The harness failed to import there (`ImportError: cannot import name 'TypeAlias'`):
    # an exit 1 judged `error ImportError`, as if the workload had raised it.
    from tests.functional.environment.test_probe import _older_python

    python = _older_python()
    if python is None:
        pytest.skip("no Python older than 3.10 here")
    plan = make_plan(None, workload={"phases": [{"name": "train", "steps": 1}]})
    execution = LocalRunner(python=python).run(plan, tmp_path)
    assert execution.infra_error is not None, execution
    assert execution.infra_error.startswith(
        "a workload runs reprospec's harness, which needs Python 3.10 or later; "
    ), execution.infra_error
    assert execution.infra_error.endswith("give --python an interpreter that new")


def test_the_package_lines_are_the_checked_attempts_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyed by cell, the attempt whose check ended last gave every attempt of the cell its
    lines (the check's key holds each attempt's site variables: PYTHONPATH perturbed, a
    `${{ attempt }}` value; -j decides the order): the capture's attempt read another's."""
    from reprospec.environment.packages import PackageCheck
    from tests.support.plans import attempt_plan

    found = iter([("a lacks x",), ("b lacks y",)])

    def checked(*_args: object, **_kwargs: object) -> tuple[str, tuple[str, ...]]:
        lines = next(found)
        return "refused: " + lines[0], lines  # refused: no process starts

    monkeypatch.setattr(PackageCheck, "checked", checked)
    runner = LocalRunner()
    first = attempt_plan(
        ["true"], tmp_path, environment={"device": "cpu", "packages": ["shop[fast]"]}
    )
    second = replace(first, attempt=2)
    runner.keep_package_lines(first)
    runner.keep_package_lines(second)
    assert runner.package_lines(first) is None
    refused = runner.run(first, tmp_path / "1").infra_error
    assert str(refused).startswith("refused: a lacks x")
    refused = runner.run(second, tmp_path / "2").infra_error
    assert str(refused).startswith("refused: b lacks y")
    assert runner.package_lines(first) == ("a lacks x",)
    assert runner.package_lines(second) == ("b lacks y",)


def test_only_the_captured_attempts_package_lines_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One entry per attempt grew for the whole run (-j with a large repeat: tens of MB),
    where only the environment capture's attempt is read: only those asked for are kept."""
    from reprospec.environment.packages import PackageCheck
    from tests.support.plans import attempt_plan

    def checked(*_args: object, **_kwargs: object) -> tuple[str, tuple[str, ...]]:
        return "refused: lacks x", ("lacks x",)  # refused: no process starts

    monkeypatch.setattr(PackageCheck, "checked", checked)
    runner = LocalRunner()
    first = attempt_plan(
        ["true"], tmp_path, environment={"device": "cpu", "packages": ["shop[fast]"]}
    )
    runner.keep_package_lines(first)
    for attempt in range(1, 6):
        runner.run(replace(first, attempt=attempt), tmp_path / str(attempt))
    assert runner.package_lines(first) == ("lacks x",)
    assert runner.package_lines(replace(first, attempt=2)) is None
    assert len(runner._package_lines) == 1
