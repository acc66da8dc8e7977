"""Preloaded fork servers (run.preload) against real processes: forked attempts are normal
attempts, and every hazard of forking falls back to a fresh process and says why."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import Execution
from reprospec.process import forkserver, pidlimit
from reprospec.runners.local import LocalRunner
from tests.support.cli import torch_captures_shared
from tests.support.paths import ROOT
from tests.support.plans import PRELOAD, preload_plan

PY = sys.executable


HAS_TORCH = importlib.util.find_spec("torch") is not None


needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")


def facts_plan(
    out: Path,
    *args: str,
    preload: tuple[str, ...] = ("marked",),
    env: dict[str, str] | None = None,
    attempt: int = 1,
) -> AttemptPlan:
    argv = ["python", "facts.py", str(out), *args]
    return preload_plan(argv, preload=preload, env=env, attempt=attempt)


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    local = LocalRunner(python=PY, native_stacks=False)
    yield local
    local.close()


def run(runner: LocalRunner, plan: AttemptPlan, folder: Path) -> Execution:
    return runner.run(plan, folder / f"attempt-{plan.attempt}")


def servers(of: int | None = None) -> list[psutil.Process]:
    """The preload servers of this engine (or of process `of`): children running the script."""
    found = []
    for child in psutil.Process(of).children():
        try:
            if any("reprospec_forkserver" in part for part in child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def gone(pid: int) -> bool:
    """Exited; a zombie of ours (a server re-parented to us, the subreaper) is reaped."""
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return False
    except psutil.NoSuchProcess:
        return True
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return True


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


# -- a forked attempt is a normal attempt -------------------------------------------------


def test_a_forked_attempt_is_the_attempt_a_fresh_process_would_be(
    runner: LocalRunner, tmp_path: Path
) -> None:
    out = tmp_path / "facts.json"
    plan = facts_plan(out, "0", env={"SPEC_VAR": "from the spec", "PRELOAD_MARK": "m1"})
    execution = run(runner, plan, tmp_path)
    assert execution.launch == "forked", execution.launch_note
    assert execution.returncode == 0
    assert execution.launch_note
    assert "preloaded marked" in execution.launch_note
    facts = json.loads(out.read_text())
    # Its own session and process group, a child of the server (which reaps it).
    (server,) = servers()
    assert facts["sid"] == facts["pgid"] == facts["pid"]
    assert facts["ppid"] == server.pid
    # What `python facts.py OUT 0` sees in PRELOAD.
    assert facts["cwd"] == str(PRELOAD)
    assert facts["argv"] == ["facts.py", str(out), "0"]
    assert facts["path0"] == str(PRELOAD)
    assert facts["file"] == str(PRELOAD / "facts.py")
    assert facts["name"] == "__main__"
    assert facts["stdin"] == ""
    log_dir = tmp_path / "attempt-1"
    assert facts["env"]["SPEC_VAR"] == "from the spec"
    assert facts["env"]["REPROSPEC_EVENTS"] == str(log_dir / "events.jsonl")
    assert facts["env"]["TMPDIR"] not in (None, os.environ.get("TMPDIR"))
    assert facts["mark"] == "m1"  # read at import, in the server, from the attempt's variables
    assert (log_dir / "stdout.log").read_text() == "facts written\n"
    # The next attempt is another fork of the same server.
    second = run(runner, replace(plan, attempt=2), tmp_path)
    assert second.launch == "forked"
    assert second.returncode == 0
    again = json.loads(out.read_text())
    assert again["pid"] != facts["pid"]
    assert servers() == [server]


def test_a_forked_attempt_is_inside_its_process_limit(runner: LocalRunner, tmp_path: Path) -> None:
    """As a fresh attempt's root, a fork joins its attempt's pids cgroup before it runs: a
    fork bomb forked from a server fills its own limit (tests/functional/process/
    test_fork_bomb.py runs one fresh)."""
    pidlimit._root_cache.clear()
    if pidlimit._own_pids_root() is None:
        pytest.skip("no writable cgroup v1 pids hierarchy")
    out = tmp_path / "cgroup.txt"
    code = "import sys; open(sys.argv[1], 'w').write(open('/proc/self/cgroup').read())"
    execution = run(runner, preload_plan(["python", "-c", code, str(out)]), tmp_path)
    assert execution.launch == "forked", execution.launch_note
    (line,) = [ln for ln in out.read_text().splitlines() if "pids" in ln.split(":")[1].split(",")]
    group = line.split(":", 2)[2]
    assert f"/reprospec-{os.getpid()}-" in group
    root = pidlimit._own_pids_root()
    assert root is not None
    limit = (root / group.rsplit("/", 1)[1] / "pids.max").read_text().strip()
    assert limit == str(pidlimit.max_processes())


def test_exit_status_exceptions_and_signals_are_a_fresh_interpreters(
    runner: LocalRunner, tmp_path: Path
) -> None:
    cases = {
        "import sys; sys.exit(3)": 3,
        "import sys; sys.exit('bye')": 1,
        "raise ValueError('boom')": 1,
        "import ctypes; ctypes.string_at(0)": -signal.SIGSEGV,
        "import atexit; atexit.register(print, 'atexit ran'); print('end')": 0,
    }
    for number, (code, status) in enumerate(cases.items(), 1):
        plan = preload_plan(["python", "-c", code], attempt=number)
        execution = run(runner, plan, tmp_path)
        assert execution.launch == "forked", execution.launch_note
        assert execution.returncode == status, code
    stderr = (tmp_path / "attempt-2" / "stderr.log").read_text()
    assert stderr == "bye\n"
    stderr = (tmp_path / "attempt-3" / "stderr.log").read_text()
    assert stderr.startswith("Traceback (most recent call last):\n")
    assert stderr.endswith("ValueError: boom\n")
    assert "reprospec_forkserver" not in stderr  # the server's frames are not the attempt's
    stderr = (tmp_path / "attempt-4" / "stderr.log").read_text()
    assert "Fatal Python error: Segmentation fault" in stderr  # faulthandler armed
    stdout = (tmp_path / "attempt-5" / "stdout.log").read_text()
    assert stdout == "end\natexit ran\n"


def test_the_preloaded_modules_finalizers_stay_out_of_the_attempts_exit(
    runner: LocalRunner, tmp_path: Path
) -> None:
    server_file, own_file = tmp_path / "server-finalizer", tmp_path / "own-finalizer"
    code = (
        "import sys, weakref\n"
        "class Holder: pass\n"
        "holder = Holder()\n"
        "weakref.finalize(holder, lambda: open(sys.argv[1], 'w').write('own'))\n"
    )
    plan = preload_plan(
        ["python", "-c", code, str(own_file)],
        preload=("finalizer_at_import",),
        env={"PRELOAD_FINALIZER_FILE": str(server_file)},
    )
    execution = run(runner, plan, tmp_path)
    assert execution.launch == "forked", execution.launch_note
    assert execution.returncode == 0
    assert own_file.read_text() == "own"  # the attempt's own finalizer ran at exit
    assert not server_file.exists()  # the import's teardown did not (spec-format.md)


def test_a_hang_gets_its_stacks_and_its_whole_tree_is_killed(
    runner: LocalRunner, tmp_path: Path
) -> None:
    code = textwrap.dedent(
        """
        import os, threading
        if os.fork() == 0:
            os.setsid()
            if os.fork():
                os._exit(0)
        lock = threading.Lock(); lock.acquire(); lock.acquire()
        """
    )
    execution = run(runner, preload_plan(["python", "-c", code], timeout_s=3), tmp_path)
    assert execution.launch == "forked", execution.launch_note
    assert execution.timed_out
    assert execution.stack_path is not None
    stacks = execution.stack_path.read_text()
    # Both processes (the escaped one too) dumped their own stacks, each under its own
    # command line (written over the server's), at the line that hangs.
    assert stacks.count("--- pid ") == 2
    # (A program's newlines written as \\n: a header is one line.) A bare `python` is the
    # interpreter the runner's shim execs, by its path, as in a fresh attempt's.
    assert stacks.count(f"({runner.python} -c \\nimport os, threading") == 2
    assert stacks.count('File "<string>", line 7 in <module>') == 2


def test_an_escaped_descendant_is_found_by_the_token_it_carries(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # A daemon: setsid'd and double-forked, no exec. Its environment block carries the
    # token the attempt wrote over the server's placeholder.
    pid_file = tmp_path / "daemon.pid"
    code = textwrap.dedent(
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pid_file)!r}, "w").write(str(os.getpid()))
                time.sleep(600)
            os._exit(0)
        os.wait()
        while not os.path.exists({str(pid_file)!r}):
            time.sleep(0.01)
        """
    )
    execution = run(runner, preload_plan(["python", "-c", code]), tmp_path)
    assert execution.launch == "forked", execution.launch_note
    assert execution.returncode == 0
    daemon = int(pid_file.read_text())
    assert gone(daemon)
    assert any("killed 1 process left behind" in w for w in execution.warnings)


# -- the guards -----------------------------------------------------------------------------


def test_a_server_with_a_thread_is_never_forked(runner: LocalRunner, tmp_path: Path) -> None:
    out = tmp_path / "facts.json"
    for number in (1, 2):
        plan = facts_plan(out, preload=("thread_at_import",), attempt=number)
        execution = run(runner, plan, tmp_path)
        assert execution.launch == "fresh"
        assert execution.returncode == 0
        assert execution.launch_note is not None
        assert re.search(r"ran fresh: the preload server has 2 threads", execution.launch_note)
    assert servers() == []  # given up at once


def test_a_server_that_starts_a_thread_later_refuses_from_then_on(
    runner: LocalRunner, tmp_path: Path
) -> None:
    out = tmp_path / "facts.json"
    plan = facts_plan(out, preload=("thread_on_signal",))
    assert run(runner, plan, tmp_path).launch == "forked"
    (server,) = servers()
    server.send_signal(signal.SIGUSR2)
    wait_until(lambda: server.num_threads() == 2, "the server's second thread")
    for number in (2, 3):
        execution = run(runner, replace(plan, attempt=number), tmp_path)
        assert execution.launch == "fresh"
        assert execution.returncode == 0
        assert execution.launch_note is not None
        assert "ran fresh: the preload server has 2 threads" in execution.launch_note
    assert gone(server.pid)


# -- through the whole pipeline -------------------------------------------------------------


@needs_torch
@pytest.mark.torch
def test_a_parallel_op_in_the_server_falls_back_with_zero_hangs(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # After one parallel op in the parent, forked children hang in their own first one
    # (the OpenMP pool's threads are not copied, its state is). The guard sees the pool.
    code = "import torch; print((torch.ones(256, 256) @ torch.ones(256, 256)).sum().item())"
    # The first attempt finds the server unsafe, the second runs fresh by what was
    # remembered: each a fresh `import torch`, so no third one.
    for number in (1, 2):
        plan = preload_plan(
            ["python", "-c", code],
            preload=("parallel_at_import",),
            env={"OMP_NUM_THREADS": "2"},
            attempt=number,
            timeout_s=300,
        )
        execution = run(runner, plan, tmp_path)
        assert not execution.timed_out
        assert execution.returncode == 0
        assert execution.launch == "fresh"
        assert "threads after importing parallel_at_import" in (execution.launch_note or "")
        assert (tmp_path / f"attempt-{number}" / "stdout.log").read_text() == "16777216.0\n"


@needs_torch
@pytest.mark.torch
def test_import_time_variables_are_the_attempts_own(runner: LocalRunner, tmp_path: Path) -> None:
    # OMP_NUM_THREADS set after the fork would be ignored: a toggle is another server.
    seen = {}
    for threads in ("1", "2"):
        out = tmp_path / f"facts-{threads}.json"
        plan = facts_plan(out, "0", "torch", preload=("torch",), env={"OMP_NUM_THREADS": threads})
        execution = run(runner, plan, tmp_path / threads)
        assert execution.launch == "forked", execution.launch_note
        seen[threads] = json.loads(out.read_text())["torch_threads"]
    assert seen == {"1": 1, "2": 2}
    assert len(servers()) == 2


def test_a_variable_read_at_import_is_the_attempts_own(runner: LocalRunner, tmp_path: Path) -> None:
    marks = {}
    for mark in ("a", "b", "a"):
        out = tmp_path / f"{mark}.json"
        execution = run(runner, facts_plan(out, env={"PRELOAD_MARK": mark}), tmp_path / mark)
        assert execution.launch == "forked"
        marks[mark] = json.loads(out.read_text())["mark"]
    assert marks == {"a": "a", "b": "b"}
    assert len(servers()) == 2


@needs_torch
@pytest.mark.torch
def test_random_numpy_and_torch_are_reseeded_per_attempt(
    runner: LocalRunner, tmp_path: Path
) -> None:
    draws = []
    for number in (1, 2, 3):
        out = tmp_path / f"{number}.json"
        plan = facts_plan(out, "0", "torch", preload=("torch",), attempt=number)
        execution = run(runner, plan, tmp_path)
        assert execution.launch == "forked", execution.launch_note
        seed = int(re.search(r"seeded with (\d+)", execution.launch_note or "")[1])  # type: ignore[index]
        facts = json.loads(out.read_text())
        assert facts["random"] == random.Random(seed).random()
        draws.append((facts["random"], facts["torch_rand"]))
    assert len({r for r, _ in draws}) == 3
    assert len({t for _, t in draws}) == 3  # not the server's one generator state, cloned


@needs_torch
@pytest.mark.torch
def test_cuda_initialised_in_the_server_is_never_forked(
    runner: LocalRunner, tmp_path: Path
) -> None:
    plan = preload_plan(["python", "-c", "print('ran')"], preload=("cuda_initialized",))
    for number in (1, 2):
        execution = run(runner, replace(plan, attempt=number), tmp_path)
        assert execution.launch == "fresh"
        assert execution.returncode == 0
        assert "CUDA is initialised in the preload server" in (execution.launch_note or "")
    assert servers() == []


def test_an_attempt_that_imports_much_more_is_told_what_to_preload(tmp_path: Path) -> None:
    from reprospec.pipeline.attempt import AttemptExecutor
    from reprospec.store.runfolder import RunFolder

    code = (
        "import asyncio, unittest, email.mime.multipart, http.server, xml.dom.minidom, "
        "logging.handlers, concurrent.futures, decimal, csv, sqlite3, argparse"
    )
    runner = LocalRunner(python=PY, native_stacks=False)
    try:
        folder = RunFolder.of(tmp_path, "run").create()
        result = AttemptExecutor(runner, folder)(
            preload_plan(["python", "-c", code]), (), threading.Event()
        )
    finally:
        runner.close()
    assert result is not None
    assert result.launch == "forked"
    (hint,) = [w for w in result.warnings if "preload server had not" in w]
    assert re.search(r"imported \d+ modules its preload server had not \(", hint)
    assert "asyncio" in hint or "email" in hint or "xml" in hint


def test_a_variable_the_preload_read_set_by_the_program_is_a_warning(tmp_path: Path) -> None:
    # The program sets PRELOAD_MARK, then imports `marked`, which reads it at import: fresh,
    # MARK is "mine"; forked, `marked` is the server's, imported before the program ran
    # (MARK unset). The attempt must say so, naming the variable, and not for a variable no
    # preloaded module read (SOME_SETTING), nor for the same value set again (PYTHONPATH).
    from reprospec.pipeline.attempt import AttemptExecutor
    from reprospec.store.runfolder import RunFolder

    code = (
        "import os; os.environ['PRELOAD_MARK'] = 'mine'; os.environ['SOME_SETTING'] = '1'; "
        "os.environ['PYTHONPATH'] = os.environ['PYTHONPATH']; "
        "import marked; print('mark', marked.MARK)"
    )
    runner = LocalRunner(python=PY, native_stacks=False)
    try:
        folder = RunFolder.of(tmp_path, "run").create()
        forked = AttemptExecutor(runner, folder)(
            preload_plan(["python", "-c", code]), (), threading.Event()
        )
        fresh = AttemptExecutor(runner, folder)(
            preload_plan(["python", "-c", code], preload=(), attempt=2), (), threading.Event()
        )
    finally:
        runner.close()
    assert forked is not None
    assert fresh is not None
    assert (forked.launch, fresh.launch) == ("forked", "fresh")
    outputs = [(folder.path / r.logs / "stdout.log").read_text() for r in (forked, fresh)]
    assert outputs == ["mark None\n", "mark mine\n"]  # what the warning is about
    (said,) = [w for w in forked.warnings if "preload server imported them" in w]
    assert said.startswith("forked, then set PRELOAD_MARK, which the preloaded modules")
    assert "SOME_SETTING" not in said
    assert "PYTHONPATH" not in said
    assert "--preload none" in said
    assert not [w for w in fresh.warnings if "preload" in w]


def test_a_shadowed_preload_runs_fresh(runner: LocalRunner, tmp_path: Path) -> None:
    (tmp_path / "marked.py").write_text("MARK = 'the script folder own'\n")
    (tmp_path / "show.py").write_text("import marked\nprint(marked.MARK)\n")
    execution = run(runner, preload_plan("python show.py", workdir=tmp_path), tmp_path)
    assert execution.launch == "fresh"
    assert f"{tmp_path} has its own marked" in (execution.launch_note or "")
    stdout = tmp_path / "attempt-1" / "stdout.log"
    assert stdout.read_text() == "the script folder own\n"
    # The same file as the server's is no other copy: forked.
    (tmp_path / "marked.py").unlink()
    (tmp_path / "marked.py").symlink_to(PRELOAD / "marked.py")
    execution = run(runner, preload_plan("python show.py", workdir=tmp_path, attempt=2), tmp_path)
    assert execution.launch == "forked", execution.launch_note


def test_an_import_that_fails_in_the_server_runs_fresh(runner: LocalRunner, tmp_path: Path) -> None:
    plan = preload_plan(["python", "-c", "print('ran')"], preload=("no_such_module_here",))
    execution = run(runner, plan, tmp_path)
    assert execution.launch == "fresh"
    assert execution.returncode == 0
    assert "import no_such_module_here failed: ModuleNotFoundError" in (execution.launch_note or "")


def test_a_workdir_module_the_server_cannot_import_says_why(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # `python prog.py` imports mine.py beside it; the server, which has no script, does not
    # see the workdir: the note must say so, not leave a bare "No module named 'mine'".
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.py").write_text("VALUE = 1\n")
    (work / "prog.py").write_text("import mine; print(mine.VALUE)\n")
    plan = preload_plan(["python", "prog.py"], preload=("mine",), workdir=work)
    execution = run(runner, plan, tmp_path)
    assert execution.launch == "fresh"
    assert execution.returncode == 0
    note = execution.launch_note or ""
    assert "import mine failed: ModuleNotFoundError" in note
    assert f"{work / 'mine.py'} is in the workdir, which is not on the preload server" in note
    assert "PYTHONPATH in environment.env" in note


# -- the servers' lifetime ------------------------------------------------------------------


def test_close_stops_every_server(tmp_path: Path) -> None:
    runner = LocalRunner(python=PY, native_stacks=False)
    for mark in ("x", "y"):
        plan = facts_plan(tmp_path / "f.json", env={"PRELOAD_MARK": mark})
        assert run(runner, plan, tmp_path / mark).launch == "forked"
    pids = [server.pid for server in servers()]
    assert len(pids) == 2
    runner.close()
    assert all(gone(pid) for pid in pids)
    assert servers() == []


ENGINE = textwrap.dedent(
    """
    import sys, time
    from dataclasses import replace
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from reprospec.runners.local import LocalRunner
    from tests.support.plans import attempt_plan

    folder = Path({folder!r})
    plan = attempt_plan(["python", "-c", "pass"], folder, env={{"PYTHONPATH": {preload!r}}})
    runner = LocalRunner(python=sys.executable, native_stacks=False)
    execution = runner.run(replace(plan, preload=("marked",)), folder / "attempt")
    # Whole or not at all: the test reads it once it exists (it read '' mid-write).
    (folder / "launched.tmp").write_text(execution.launch)
    (folder / "launched.tmp").replace(folder / "launched")
    time.sleep(600)
    """
)


def test_the_server_dies_with_its_engine(tmp_path: Path) -> None:
    root = ROOT
    code = ENGINE.format(root=str(root), folder=str(tmp_path), preload=str(PRELOAD))
    engine = subprocess.Popen([PY, "-c", code], start_new_session=True)
    try:
        launched = tmp_path / "launched"
        wait_until(lambda: launched.exists() or engine.poll() is not None, "the engine's attempt")
        assert launched.read_text() == "forked"
        (server,) = servers(of=engine.pid)
        engine.kill()  # SIGKILL: no cleanup runs in the engine
        engine.wait()
        wait_until(lambda: gone(server.pid), "the server's exit")
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()


@needs_torch
@pytest.mark.torch
@pytest.mark.slow
def test_a_preloaded_workload_run_records_and_reports_it(tmp_path: Path) -> None:
    import reprospec
    from reprospec.store.db import Store
    from reprospec.store.resultsjson import load_run

    spec = tmp_path / "w.yaml"
    # torch._dynamo too: the optimizer's first step imports it (and sympy), which the forked
    # attempts would each import again (what a run's preload hint says to add).
    spec.write_text(
        textwrap.dedent(
            """
            reprospec: 1
            name: preloaded-workload
            workload:
              model: {builtin: mlp}
              data:
                dataset: {builtin: synthetic, size: 16, shape: [4], classes: 2}
                loader: {batch_size: 4}
              phases: [{name: train, steps: 2}]
            run: {repeat: 2, preload: [torch, torch._dynamo]}
            expect: {outcome: pass}
            """
        )
    )
    out = tmp_path / "out"
    with torch_captures_shared(out):  # the environment's torch, captured once
        result = reprospec.run(reprospec.load_spec(spec), reprospec.RunOptions(out=out))
    (cell,) = result.cells
    assert cell.verdict == "reproduced"
    assert [a.launch for a in cell.attempts] == ["forked", "forked"]
    folder = out / "runs" / result.run_id
    stored = load_run(folder)
    assert [a.launch for a in stored.cells[0].attempts] == ["forked", "forked"]
    report = (folder / "report.md").read_text()
    assert "Preload: 2 of 2 attempts were forked from a server" in report
    with Store(out) as store:
        resumed = store.finished_attempts(result.run_id)
    assert {a.launch for a in resumed.values()} == {"forked"}
    # No server outlives the run.
    assert servers() == []
    # --preload none turns it off.
    fresh = reprospec.run(
        reprospec.load_spec(spec), reprospec.RunOptions(out=out, repeat=1, preload=())
    )
    assert [a.launch for a in fresh.cells[0].attempts] == ["fresh"]
    assert "Preload:" not in (out / "runs" / fresh.run_id / "report.md").read_text()


def test_the_least_recently_used_server_goes_first(runner: LocalRunner, tmp_path: Path) -> None:
    started = []
    for mark in "abcdef":
        plan = facts_plan(tmp_path / "f.json", env={"PRELOAD_MARK": mark})
        assert run(runner, plan, tmp_path / mark).launch == "forked"
        started.append({server.pid for server in servers()})
    assert len(started[-1]) == forkserver.MAX_SERVERS
    first = next(iter(started[0]))
    assert gone(first)


# A forked attempt that signals it started (argv[1]) and runs until its gate (argv[2]) opens.
GATED = """\
import pathlib, sys, time
pathlib.Path(sys.argv[1]).touch()
while not pathlib.Path(sys.argv[2]).exists():
    time.sleep(0.02)
"""


def gated_plan(
    folder: Path, mark: str, gate: Path, preload: tuple[str, ...] = ("marked",)
) -> AttemptPlan:
    """An attempt of its own key (PRELOAD_MARK is read at import) held until `gate` exists."""
    argv = ["python", "-c", GATED, str(folder / f"started-{mark}"), str(gate)]
    return preload_plan(argv, env={"PRELOAD_MARK": mark}, preload=preload)


def test_a_server_with_an_attempt_running_is_never_stopped(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # A forked attempt dies with its server: a fifth key while four servers each have an
    # attempt in flight runs fresh, and stops none of them (it stopped the oldest: its
    # attempt came out crash SIGKILL, a passing program).
    gate = tmp_path / "gate"
    held = "abcd"[: forkserver.MAX_SERVERS]
    ran: dict[str, Execution] = {}

    def attempt(mark: str) -> None:
        ran[mark] = run(runner, gated_plan(tmp_path, mark, gate), tmp_path / mark)

    threads = [threading.Thread(target=attempt, args=(mark,)) for mark in held]
    for thread in threads:
        thread.start()
    try:
        wait_until(
            lambda: all((tmp_path / f"started-{m}").exists() for m in held), "the held attempts"
        )
        pids = {server.pid for server in servers()}
        assert len(pids) == forkserver.MAX_SERVERS
        opened = tmp_path / "opened"
        opened.touch()
        fifth = run(runner, gated_plan(tmp_path, "e", opened), tmp_path / "e")
        assert fifth.returncode == 0
        assert fifth.launch == "fresh"
        assert fifth.launch_note == f"ran fresh: {forkserver.BUSY}"
        assert {server.pid for server in servers()} == pids
    finally:
        gate.touch()
        for thread in threads:
            thread.join()
    for mark in held:
        assert ran[mark].infra_error is None
        assert (ran[mark].launch, ran[mark].returncode) == ("forked", 0), mark
    # Idle now: a new key's server takes the place of the least recently used one.
    sixth = run(runner, gated_plan(tmp_path, "f", gate), tmp_path / "f")
    assert (sixth.launch, sixth.returncode) == ("forked", 0)
    assert len(servers()) == forkserver.MAX_SERVERS


def test_an_attempt_whose_server_dies_under_it_is_an_infra_error(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # Its SIGKILL is the server's end (PR_SET_PDEATHSIG), not the program's: no verdict.
    gate = tmp_path / "gate"
    ran: list[Execution] = []
    thread = threading.Thread(
        target=lambda: ran.append(run(runner, gated_plan(tmp_path, "a", gate), tmp_path))
    )
    thread.start()
    try:
        wait_until(lambda: (tmp_path / "started-a").exists(), "the attempt's start")
        time.sleep(0.3)
        (server,) = servers()
        server.kill()
    finally:
        thread.join(timeout=60)
        gate.touch()
        thread.join()
    (execution,) = ran
    assert execution.returncode is None
    assert execution.launch == "forked"
    assert execution.infra_error is not None
    assert execution.infra_error.startswith(
        "its preload server was killed by SIGKILL while the attempt ran"
    )
    # It ran until the kill: its duration is that, where it read 0.00s.
    assert execution.duration_s >= 0.3


def test_a_server_that_died_is_started_again_a_few_times(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # One death of the server (killed, out of memory) ran every later attempt of the run
    # fresh ("the preload server is gone (Broken pipe; exit status -9)"): hundreds of
    # attempts paid the import again. A program that kills it each time is not restarted
    # forever.
    plan = preload_plan(["python", "-c", "pass"])
    tries = iter(range(100))

    def attempt() -> Execution:
        return run(runner, replace(plan, attempt=next(tries) + 1), tmp_path)

    def dead(process: psutil.Process) -> bool:
        with contextlib.suppress(psutil.NoSuchProcess):
            return process.status() == psutil.STATUS_ZOMBIE
        return True

    killed: list[int] = []
    for _ in range(forkserver.MAX_RESTARTS + 1):
        # The attempt after a death forks from a new server; the one at the death's moment
        # (the reader not told yet) runs fresh, saying so.
        ran = [attempt() for _ in range(2)]
        assert ran[-1].launch == "forked", [e.launch_note for e in ran]
        # Its note names the server, and the one that died before it: the report's Preload
        # line said "a server that imported run.preload once" after restarts.
        number = len(killed) + 1
        again = f" (started again after server {number - 1} died)" if killed else ""
        assert (ran[-1].launch_note or "").startswith(
            f"forked from preload server {number}{again}, which preloaded marked; "
        )
        if ran[0].launch == "fresh":
            assert "its preload server was killed by SIGKILL" in (ran[0].launch_note or "")
        (server,) = servers()
        assert server.pid not in killed
        killed.append(server.pid)
        server.kill()
        wait_until(lambda: dead(server), "the server's end")  # noqa: B023 (called at once)
    last = [attempt() for _ in range(2)][-1]
    assert last.launch == "fresh"
    assert "had been started again 3 times in this run" in (last.launch_note or "")


def test_more_keys_than_servers_in_parallel_all_pass(tmp_path: Path) -> None:
    # Six values of a variable are six servers' keys; with -j 6 all six attempts
    # are in flight at once, past MAX_SERVERS (2 of 6 passing cells were crash SIGKILL).
    import reprospec

    (tmp_path / "sl.py").write_text("import os, time\ntime.sleep(2)\nprint(os.environ['K'])\n")
    spec = tmp_path / "ev.yaml"
    spec.write_text(
        textwrap.dedent(
            """
            reprospec: 1
            name: ev
            command: [python3, sl.py]
            matrix:
              k: ["1", "2", "3", "4", "5", "6"]
            environment:
              env: {K: "${{ matrix.k }}"}
            run: {timeout: 60s, preload: [json]}
            expect: {outcome: pass}
            """
        )
    )
    result = reprospec.run(
        reprospec.load_spec(spec), reprospec.RunOptions(out=tmp_path / "out", jobs=6)
    )
    assert len(result.cells) == 6
    launches = []
    for cell in result.cells:
        (attempt,) = cell.attempts
        assert attempt.ran is not None, attempt.infra_error
        assert (attempt.ran.kind, cell.verdict) == ("pass", "reproduced"), cell.cell.id
        launches.append(attempt.launch)
        if attempt.launch == "fresh":
            assert attempt.launch_note == f"ran fresh: {forkserver.BUSY}"
    assert "forked" in launches
    assert servers() == []


def test_a_refusing_server_stops_only_after_its_attempts_in_flight(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # The key's next attempt is refused (the server started a thread) and runs fresh; the
    # attempt it forked before must run on to its own end (it died with the server).
    gate = tmp_path / "gate"
    plan = gated_plan(tmp_path, "a", gate, preload=("thread_on_signal",))
    ran: list[Execution] = []
    thread = threading.Thread(target=lambda: ran.append(run(runner, plan, tmp_path / "1")))
    thread.start()
    try:
        wait_until(lambda: (tmp_path / "started-a").exists(), "the attempt's start")
        (server,) = servers()
        server.send_signal(signal.SIGUSR2)
        wait_until(lambda: server.num_threads() == 2, "the server's second thread")
        opened = tmp_path / "opened"
        opened.touch()
        later = replace(gated_plan(tmp_path, "a", opened, ("thread_on_signal",)), attempt=2)
        refused = run(runner, later, tmp_path / "2")
        assert (refused.launch, refused.returncode) == ("fresh", 0)
        assert "ran fresh: the preload server has 2 threads" in (refused.launch_note or "")
        assert server.is_running()
        assert server.status() != psutil.STATUS_ZOMBIE
    finally:
        gate.touch()
        thread.join()
    (first,) = ran
    assert first.infra_error is None
    assert (first.launch, first.returncode) == ("forked", 0)
    wait_until(lambda: gone(server.pid), "the server's stop at its last attempt's end")
