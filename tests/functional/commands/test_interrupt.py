"""The stop handlers of a verb that drives runs (reprospec/commands/interrupt.py) and the
command line's first handler (reprospec/__main__.py, core/safepoint.py), in real processes
that really receive SIGINT."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD, interrupt_when

ROOT = Path(__file__).resolve().parents[3]


def stored_attempts(out: Path) -> int:
    """How many attempts the store under `out` holds (0 before it is made)."""
    import sqlite3

    if not (out / "results.db").is_file():
        return 0
    with contextlib.closing(sqlite3.connect(out / "results.db", timeout=10)) as db:
        try:
            return int(db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        except sqlite3.OperationalError:
            return 0  # its tables not made yet


def stored_status(out: Path, run_id: str) -> str:
    """The store's status of a run the command made (`running` is history's `killed`)."""
    from reprospec.store.db import Store

    info = Store(out).run_info(run_id)
    assert info is not None, run_id
    return info.status


# The signal arrives while a weakref callback runs: Python cannot raise there, dropped the
# KeyboardInterrupt and printed it with its traceback through interrupt.py (the full suite's
# Ctrl-C sweep, once). The stop is raised again after the callback.
IN_A_CALLBACK = """
import os, signal, threading, time, weakref
from reprospec.commands.interrupt import install_stop_handlers

cancel = threading.Event()
install_stop_handlers(cancel)

class Thing:
    pass

def callback(_ref):
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):  # the handler runs at the next bytecode boundary, in here
        time.sleep(0.001)

thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    time.sleep(5)
    print("running on", flush=True)
except KeyboardInterrupt:
    print("stopped after it;", "cancelled" if cancel.is_set() else "not cancelled", flush=True)
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def test_a_stop_python_cannot_raise_in_a_weakref_callback_is_raised_after_it() -> None:
    done = _python(IN_A_CALLBACK)
    assert done.returncode == 0, done.stderr
    # Raised in the callback, it was dropped there; the verb was stopped right after it.
    assert done.stdout.strip() == "stopped after it; cancelled"
    assert "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert "writing what finished first" not in done.stderr  # one signal, told as one


# Code that runs as importlib's module locks do (compiled under their file name): a signal
# arriving in there waits until the machinery has returned.
IN_THE_IMPORT_MACHINERY = """
import os, signal, threading, time
from reprospec.core import safepoint

{install}

MACHINERY = compile(
    "os.kill(os.getpid(), signal.SIGINT)\\n"
    "for _ in range(1000):\\n"  # backward jumps: the handler runs again and again in here
    "    pass\\n"
    "ran.append('to its end')\\n",
    safepoint.IMPORT_MACHINERY,
    "exec",
)
ran = []
try:
    exec(MACHINERY)
    time.sleep(5)
    print("running on", flush=True)
except KeyboardInterrupt:
    print("raised after the machinery ran", *ran, flush=True)
"""

_FIRST_HANDLER = "signal.signal(signal.SIGINT, safepoint.on_sigint)"
_STOP_HANDLERS = (
    "from reprospec.commands.interrupt import install_stop_handlers\n"
    "install_stop_handlers(threading.Event())"
)


@pytest.mark.parametrize("install", [_FIRST_HANDLER, _STOP_HANDLERS], ids=["first", "stop"])
def test_a_ctrl_c_in_the_import_machinery_is_raised_once_it_has_returned(install: str) -> None:
    done = _python(IN_THE_IMPORT_MACHINERY.format(install=install))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raised after the machinery ran to its end"
    assert done.stderr == ""


# The command line run with a tracer that stands for a Ctrl-C arriving at one instant: in a
# module lock's callback, just after it took the global import lock and before its `try`
# (where CI's Ctrl-C sweep once landed), in the first one that runs while `reprospec run`
# loads or, for `running`, once the verb has installed its stop handlers. The tracer is
# compiled under the machinery's file name: it is the moment inside it, not code of its own
# that could take the signal.
CLI_WITH_A_CTRL_C_IN_A_MODULE_LOCK = """
import os, signal, sys
from reprospec.__main__ import main
from reprospec.core import safepoint

TRACER = '''
def tracer(frame, event, arg):
    if frame.f_code.co_name != "cb" or frame.f_code.co_filename != IMPORT_MACHINERY:
        return None
    if RUNNING and signal.getsignal(signal.SIGINT) is safepoint.on_sigint:
        return None  # the verb's handlers are not installed yet
    lines = []
    def at_line(frame, event, arg):
        if event == "line":
            lines.append(frame.f_lineno)
            if len(lines) == 2:  # the `try` after `_imp.acquire_lock()`
                sys.settrace(None)
                os.kill(os.getpid(), signal.SIGINT)
                return None
        return at_line
    return at_line
'''
scope = {
    "sys": sys, "os": os, "signal": signal, "safepoint": safepoint,
    "IMPORT_MACHINERY": safepoint.IMPORT_MACHINERY, "RUNNING": sys.argv[1] == "running",
}
exec(compile(TRACER, safepoint.IMPORT_MACHINERY, "exec"), scope)
sys.argv = ["reprospec", *sys.argv[2:]]
sys.settrace(scope["tracer"])
sys.exit(main())
"""


@pytest.mark.parametrize("phase", ["loading", "running"])
def test_a_ctrl_c_while_an_import_holds_the_import_lock_stops_the_run(
    phase: str, tmp_path: Path
) -> None:
    # Raised there, the KeyboardInterrupt left the global import lock held and was dropped
    # (a weakref callback): `reprospec run` went on, and hung at its first import on another
    # thread, past the Ctrl-C sweep's 60 s.
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        'reprospec: 1\nname: slow\ncommand: python -c "import time; time.sleep(30)"\n'
        "expect: {outcome: pass}\n"
    )
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CLI_WITH_A_CTRL_C_IN_A_MODULE_LOCK, phase, "run", str(spec)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("reprospec: interrupted"), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert time.monotonic() - began < 30  # stopped, not run to the attempt's end


# What a Ctrl-C that Python's own handler raised in an import's lock callback, before the
# command line's first line (Python's start-up, the package's first imports), leaves: the
# global import lock held by the main thread, the KeyboardInterrupt dropped.
CLI_AFTER_A_CTRL_C_DROPPED_IN_THE_START_UP = """
import _imp, runpy, sys
_imp.acquire_lock()
sys.argv = ["reprospec", *sys.argv[1:]]
runpy.run_module("reprospec", run_name="__main__", alter_sys=True)
"""


def test_a_ctrl_c_python_dropped_with_the_import_lock_held_stops_the_command(
    tmp_path: Path,
) -> None:
    # The Ctrl-C sweep's residual window, before core/safepoint.py's handler: the run went
    # on, and hung at the first import of its environment capture's and its job's threads;
    # SIGTERM did not end it either (its threads could not end).
    spec = tmp_path / "spec.yaml"
    spec.write_text("reprospec: 1\nname: quick\ncommand: 'true'\nexpect: {outcome: pass}\n")
    done = subprocess.run(
        [sys.executable, "-c", CLI_AFTER_A_CTRL_C_DROPPED_IN_THE_START_UP, "run", str(spec)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "reprospec: interrupted", done.stderr
    assert not (tmp_path / ".reprospec").exists()  # nothing ran, nothing was written


# `reprospec run` with a Ctrl-C (a real SIGINT to itself) at one instant after its last
# attempt has ended: os.kill returns once the handler has run, at the next bytecode, so the
# stop lands inside the phase named.
CLI_WITH_A_CTRL_C_AFTER_THE_LAST_ATTEMPT = """
import os, signal, sys
import reprospec.outcome.judgedcells as judgedcells
import reprospec.pipeline.stages as stages
import reprospec.report.progress as progress
import reprospec.store.db as db
from reprospec.__main__ import main

PHASE = sys.argv[1]
# The call of "last attempt"'s function that stores the run's last attempt (of a search, the
# first probe run's): the attempts that run before it.
LAST = int(os.environ.get("LAST_ATTEMPT", "2"))
# The phase's function: the stop comes as it is called, on its last call where it has many.
WHERE = {
    # Its job's last attempt stored, before [2/2]: a Ctrl-C never reached the attempt (it
    # runs in a session of its own), so it is kept, where a SIGTERM's would be set aside.
    "last attempt": (stages._Keeper, "record"),
    "judge": (judgedcells.JudgedCells, "all"),
    "results.json": (stages, "write_outputs"),
    "store": (db.Store, "finish_run"),
    "table": (progress, "print_outcome"),
}
owner, name = WHERE[PHASE]
original = getattr(owner, name)
calls = []

def stopped_here(*args, **kwargs):
    calls.append(1)
    if PHASE != "last attempt" or len(calls) == LAST:
        os.kill(os.getpid(), signal.SIGINT)
    return original(*args, **kwargs)

setattr(owner, name, stopped_here)
sys.argv = ["reprospec", *sys.argv[2:]]
sys.exit(main())
"""


@pytest.mark.parametrize("phase", ["last attempt", "judge", "results.json", "store", "table"])
def test_a_ctrl_c_after_the_last_attempt_ends_the_run_complete_and_written(
    phase: str, tmp_path: Path
) -> None:
    # Raised where it landed, the stop fell through to the command line's last handler:
    # exit 130 with `reprospec: interrupted` alone, and no report and a run `killed`
    # (judge), results.json saying finished and the store `killed` (store), or no table
    # (table); after the last attempt's end, the run `interrupted` with nothing to resume.

    spec = tmp_path / "m.yaml"
    spec.write_text(
        "reprospec: 1\nname: m\ncommand: 'true'\nmatrix: {x: [1, 2]}\nexpect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    driver = [sys.executable, "-c", CLI_WITH_A_CTRL_C_AFTER_THE_LAST_ATTEMPT, phase]
    done = subprocess.run(
        [*driver, "run", str(spec), "--out", str(out), "-j", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "reprospec: interrupted after the last attempt had ended: the run is complete "
        "(nothing to resume)"
    ), done.stderr
    assert "--resume" not in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "2/2 cells reproduced" in done.stdout  # the table, printed whole
    (folder,) = (out / "runs").iterdir()
    results = json.loads((folder / "results.json").read_text())
    assert results["interrupted"] is False
    assert [cell["verdict"] for cell in results["cells"]] == ["reproduced", "reproduced"]
    assert (folder / "report.md").is_file()
    assert stored_status(out, folder.name) == "finished"


def test_a_ctrl_c_after_the_last_attempt_of_a_bundle_verify_stops_the_verify(
    tmp_path: Path,
) -> None:
    # Not raised once the verify's run is stored, the stop must still end the
    # verify: it exited 0, as if no Ctrl-C had come.
    spec = tmp_path / "m.yaml"
    spec.write_text(
        "reprospec: 1\nname: m\ncommand: 'true'\nmatrix: {x: [1, 2]}\nexpect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp_path)}
    ran = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    driver = [sys.executable, "-c", CLI_WITH_A_CTRL_C_AFTER_THE_LAST_ATTEMPT, "results.json"]
    bundle = ["bundle", "latest", "-o", str(tmp_path / "m.tgz"), "--out", str(out), "--verify"]
    done = subprocess.run(
        [*driver, *bundle],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == "reprospec: interrupted", done.stderr


def test_a_ctrl_c_after_the_last_attempt_of_captures_run_leaves_the_run_stored_whole(
    tmp_path: Path,
) -> None:
    # capture's run, stopped as the store was told it finished: the run stayed `running`
    # (history: killed) with no report, and capture said it was interrupted. Now
    # the run is stored and written whole, and capture still stops, writing no spec.

    out = tmp_path / "out"
    driver = [sys.executable, "-c", CLI_WITH_A_CTRL_C_AFTER_THE_LAST_ATTEMPT, "store"]
    capture = ["capture", "--out", str(out), "-o", str(tmp_path / "cap.yaml"), "--", "false"]
    done = subprocess.run(
        [*driver, *capture],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("reprospec: interrupted"), done.stderr
    (folder,) = (out / "runs").iterdir()
    assert (folder / "report.md").is_file()
    assert stored_status(out, folder.name) == "finished"


# Specs whose search's first run is on the command's main thread, where a stop is raised:
# isolate's run of the matrix once (no cell is expected to pass, so which one fails is seen
# in it), amplify's first probe (its base rate). Each attempt takes no time.
SEARCHES = {
    "isolate": (
        "reprospec: 1\nname: s\nmatrix: {a: [0, 1]}\n"
        "command: \"sh -c 'test ${{ matrix.a }} = 1 && exit 3; exit 0'\"\n"
        "expect: {outcome: error, exit_code: 3}\n",
        ("--min-rate", "0.9"),
    ),
    "amplify": (
        "reprospec: 1\nname: s\ncommand: \"sh -c 'exit 3'\"\n"
        "expect: {outcome: error, exit_code: 3}\n",
        ("-j", "1"),
    ),
}


@pytest.mark.parametrize("phase", ["last attempt", "judge", "results.json", "store"])
@pytest.mark.parametrize("verb", sorted(SEARCHES))
def test_a_ctrl_c_in_a_search_leaves_its_runs_written_whole(
    verb: str, phase: str, tmp_path: Path
) -> None:
    # The search verbs deferred no stop: raised while a probe's run was judged or written,
    # it left that run `killed` in history with no results.json or report.md (as
    # `run`'s). Now each run is finished or interrupted, written whole, and the search
    # still stops at its next probe, says how to resume, exits 130, and the same command
    # resumes.
    from reprospec.store.db import Store

    text, more = SEARCHES[verb]
    spec = tmp_path / "s.yaml"
    spec.write_text(text)
    out = tmp_path / "out"
    command = [verb, str(spec), "--out", str(out), *more]
    # The first probe run's attempts: amplify's base rate runs 4.
    env = {**os.environ, "NO_COLOR": "1", "LAST_ATTEMPT": "4" if verb == "amplify" else "2"}
    driver = [sys.executable, "-c", CLI_WITH_A_CTRL_C_AFTER_THE_LAST_ATTEMPT, phase]
    done = subprocess.run(
        [*driver, *command], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "reprospec: interrupted; run the same command again to resume"
    ), done.stderr
    runs = sorted(Store(out).run_ids())
    assert runs
    for run in runs:
        assert stored_status(out, run) in ("finished", "interrupted"), run  # history: killed
        assert (out / "runs" / run / "results.json").is_file(), run
        assert (out / "runs" / run / "report.md").is_file(), run
    assert "report: " in done.stdout  # its partial answer, printed
    again = subprocess.run(
        [sys.executable, "-m", "reprospec", *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    assert again.returncode in (0, 1), again.stdout + again.stderr  # the answer, whole
    assert "interrupted" not in again.stderr, again.stderr
    if verb == "amplify":  # its probes before the stop replayed, not run again
        assert "continuing amplification" in again.stderr, again.stderr


def test_a_ctrl_c_while_isolate_runs_the_matrix_once_stops_that_run(tmp_path: Path) -> None:
    # Its run of the matrix once took the CLI's deferral but not its cancel event: once the
    # run was stored a stop only set that event, and the run went on to its end, a Slurm
    # SIGKILL after it leaving the run `killed`.
    from reprospec.store.db import Store

    started, go = tmp_path / "started", tmp_path / "go"
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nmatrix: {a: [0, 1]}\n"
        f"command: \"sh -c 'test ${{{{ matrix.a }}}} = 1 && exit 3; touch {started}; "
        f"test -e {go} || sleep 60'\"\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    out = tmp_path / "out"
    began = time.monotonic()
    argv = [sys.executable, "-m", "reprospec", "isolate", str(spec), "--out", str(out), "-j", "2"]
    done = interrupt_when(argv, lambda: started.exists() and stored_attempts(out) == 1, wait_s=60)
    assert done.code == 130, done.stdout + done.stderr
    assert time.monotonic() - began < 50, "the run went on to its sleeping cell's end"
    (run,) = Store(out).run_ids()
    assert stored_status(out, run) == "interrupted"
    # The same command again continues that run, its a=1 attempt kept: "run the same
    # command again to resume" ran every cell again, where each probe after it resumed.
    go.touch()
    again = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        f"continuing the matrix run {run} (2 cells) an earlier isolate began: 1 attempt kept"
        in (again.stderr)
    ), again.stderr
    assert "running the matrix once" not in again.stderr
    assert stored_status(out, run) == "finished"
    matrix_runs = [r for r in Store(out).runs(searches=True) if r["probe"] == "the matrix once"]
    assert [r["run_id"] for r in matrix_runs] == [run]
    assert matrix_runs[0]["attempts"] == 2


def test_an_isolate_stopped_before_any_attempt_ended_claims_no_guess(tmp_path: Path) -> None:
    # stopped while its first attempts hung, isolate said `best guess: ... (99%)` and
    # `confidence 0.990 in the best guess` beside a table of 0 attempts: the prior's
    # probability of its one difference, said as a finding.
    started = tmp_path / "started"
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nenvironment: {env: {THREADS: '1'}}\n"
        f"command: \"sh -c 'touch {started}; sleep 60'\"\n"
        "run: {timeout: 50s}\nexpect: {outcome: hang}\n"
    )
    argv = [sys.executable, "-m", "reprospec", "isolate", str(spec), "--out", str(tmp_path / "o")]
    argv += ["--passing-set", "environment.env.THREADS=4", "-j", "2"]
    done = interrupt_when(argv, started.exists)
    assert done.code == 130, done.stdout + done.stderr
    assert "no attempt ended before the stop: no evidence yet" in done.stdout, done.stdout
    assert "best guess" not in done.stdout, done.stdout
    assert "(99%)" not in done.stdout, done.stdout


def test_a_ctrl_c_another_thread_got_stops_a_search_mid_probe(tmp_path: Path) -> None:
    # The search's main thread waited for its probes with a plain `future.result()`, which
    # the signal, handed to another thread, did not wake: an isolate stopped 0.9 s into a
    # probe of two hangs ran both to their 50 s timeout first, and named a best guess from
    # them (seen once in 8 under load; here every time).
    started = tmp_path / "started"
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\nenvironment: {env: {THREADS: '1'}}\n"
        f"command: \"sh -c 'touch {started}; sleep 300'\"\n"
        "run: {timeout: 250s}\nexpect: {outcome: hang}\n"
    )
    driver = [sys.executable, "-c", CLI_WITH_A_CTRL_C_TO_ANOTHER_THREAD, str(started)]
    command = ["isolate", str(spec), "--out", str(tmp_path / "o")]
    command += ["--passing-set", "environment.env.THREADS=4", "-j", "2"]
    # Under the hang's timeout: a stop held until the probe's end fails here.
    done = subprocess.run(
        [*driver, *command], capture_output=True, text=True, cwd=tmp_path, timeout=150,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 130, done.stdout + done.stderr
    assert "no attempt ended before the stop: no evidence yet" in done.stdout, done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        "reprospec: interrupted; run the same command again to resume"
    ), done.stderr


def test_a_ctrl_c_in_a_searchs_last_probe_gives_its_whole_answer_and_exit_130(
    tmp_path: Path,
) -> None:
    # Deferred in the writing of the search's last probe (its budget of 4 spent by it), the
    # stop stops nothing that is left: the answer is whole, and the stop still obeyed, as
    # `run` obeys one after its last attempt.
    from reprospec.store.db import Store

    spec = tmp_path / "s.yaml"
    spec.write_text(SEARCHES["amplify"][0])
    out = tmp_path / "out"
    driver = [sys.executable, "-c", CLI_WITH_A_CTRL_C_AFTER_THE_LAST_ATTEMPT, "store"]
    done = subprocess.run(
        [*driver, "amplify", str(spec), "--out", str(out), "-j", "1", "--budget", "4"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "reprospec: interrupted after the search's last probe had ended: its answer is "
        "complete (nothing to resume)"
    ), done.stderr
    assert "4 attempts of a budget of 4" in done.stdout
    (run,) = Store(out).run_ids()
    assert stored_status(out, run) == "finished"


# `reprospec run` whose SIGTERM handler runs late, as on a loaded machine the main thread
# (where Python runs signal handlers) is not given the CPU for a while: the handler the
# command installs waits LATE_S before it runs.
CLI_WHOSE_HANDLER_RUNS_LATE = """
import os, signal, sys, time
import reprospec.commands.interrupt as interrupt
from reprospec.__main__ import main

LATE_S = 2.0
install = interrupt.install_stop_handlers

def install_late(*args, **kwargs):
    install(*args, **kwargs)
    handler = signal.getsignal(signal.SIGTERM)

    def late(signum, frame):
        time.sleep(LATE_S)
        handler(signum, frame)

    signal.signal(signal.SIGTERM, late)

interrupt.install_stop_handlers = install_late
os.environ["ENGINE_PID"] = str(os.getpid())
sys.argv = ["reprospec", *sys.argv[1:]]
sys.exit(main())
"""


def test_an_attempt_killed_with_its_engine_is_the_stops_though_the_handler_ran_late(
    tmp_path: Path,
) -> None:
    # A Slurm time limit signals every process of the job at once: the attempt died of its
    # SIGTERM and the engine's handler, late on a loaded CI machine, had not run within
    # STOP_GRACE_S. The attempt was kept as `crash SIGTERM` and the run read complete, so
    # its shard read `done` and was never resumed (CI, stop 62).
    spec = tmp_path / "stopped.yaml"
    spec.write_text(
        "reprospec: 1\nname: stopped\n"
        "command: 'kill -TERM \"$ENGINE_PID\"; kill -TERM $$; sleep 5'\n"
        "expect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", CLI_WHOSE_HANDLER_RUNS_LATE, "run", str(spec), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 130, done.stderr
    assert "reprospec: interrupted; finish the run with: reprospec run --resume" in done.stderr
    (folder,) = (out / "runs").iterdir()
    results = json.loads((folder / "results.json").read_text())
    assert results["interrupted"] is True
    assert [(c["verdict"], c["attempts"]) for c in results["cells"]] == [("not-run", [])]


def _children(pid: int) -> list[int]:
    """The processes `pid` started (each thread's children), or none once it is gone."""
    kids: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return kids
    for task in tasks:
        with contextlib.suppress(OSError):
            kids += [int(kid) for kid in (task / "children").read_text().split()]
    return kids


def _tree(pid: int) -> list[int]:
    """`pid`'s descendants, each before its own."""
    found: list[int] = []
    for kid in _children(pid):
        found += [kid, *_tree(kid)]
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def control_group_kill(engine: subprocess.Popen[str], out: Path, first: int) -> None:
    """A control-group kill (systemd's, Slurm's) of a `reprospec run` storing in `out` whose
    one attempt is running: SIGTERM to `first`, the attempt's program, then to the rest of
    the engine's tree, deepest first, and the engine, once the engine has stored the
    attempt's end (it stores an end as it reads it, where the attempt ran HELD_UNDER_S or
    longer: a shorter one is held until its line is said, after the slack). So the engine's
    stop comes after an end that it caused, as a real one does, within the slack that sets
    such an end aside.

    A fixed 50 ms between the two was too short on a loaded machine: the engine's stop could
    come before it had read the end it should follow (resume[python-prompt] failed once in
    about 11 runs).
    """
    from reprospec.pipeline.stages import HELD_UNDER_S
    from reprospec.store.db import Store

    (run_id,) = (store := Store(out, reader=True)).run_ids()
    others = [p for p in _tree(engine.pid) if p != first]
    # The attempt began before `first` was found: past HELD_UNDER_S from now, it is older.
    time.sleep(HELD_UNDER_S * 1.5)
    os.kill(first, signal.SIGTERM)
    began = time.monotonic()
    while not store.finished_attempts(run_id):
        assert engine.poll() is None, engine.communicate()
        assert time.monotonic() - began < END_STORED_S, "the attempt's end was never stored"
        time.sleep(0.01)
    for pid in (*reversed(others), engine.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


# How long control_group_kill waits for the end of an attempt whose program it stopped.
END_STORED_S = 60.0


# The attempts a control-group kill cuts short: a shell whose `sleep` the stop kills goes on
# to exit 0, and a Python that ignores SIGTERM exits 0 as its child dies of it. Each runs
# again on resume, where the marker file makes it pass at once, saying so.
CUT_SHORT = {
    "shell": "sh -c 'test -e {marker} && echo again && exit 0; touch {marker}; sleep 30; "
    "echo finished'",
    "python": 'python -c "import os, signal, subprocess, sys; '
    "os.path.exists('{marker}') and sys.exit(print('again')); open('{marker}', 'w').close(); "
    "child = subprocess.Popen(['sleep', '30']); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "child.wait(); print('finished')\"",
}


@pytest.mark.parametrize("handler", ["prompt", "late"])
@pytest.mark.parametrize("program", sorted(CUT_SHORT))
def test_an_attempt_that_ended_as_a_stop_reached_every_process_runs_again_on_resume(
    program: str, handler: str, tmp_path: Path
) -> None:
    # systemd's control-group kill, Slurm: SIGTERM to every process about at once, deepest
    # first. The attempt's `sleep` died of it, its parent went on to exit 0, and the engine's
    # own SIGTERM came after it had stored that end: the attempt read `pass` and the run
    # "interrupted after the last attempt had ended: the run is complete", never resumed.
    # `late`: the engine's handler runs 2 s after the signal came (a loaded machine), and
    # the attempt's end is still read against the signal's arrival, not the handler's run.
    from reprospec.store.db import Store

    marker = tmp_path / "started"
    spec = tmp_path / "cut.yaml"
    command = CUT_SHORT[program].format(marker=marker)
    spec.write_text(
        "reprospec: 1\nname: cut\ncommand: " + json.dumps(command) + "\nexpect: {outcome: pass}\n"
    )
    out = tmp_path / "out"
    env = {**os.environ, "NO_COLOR": "1"}
    driver = ["-c", CLI_WHOSE_HANDLER_RUNS_LATE] if handler == "late" else ["-m", "reprospec"]
    engine = subprocess.Popen(
        [sys.executable, *driver, "run", str(spec), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        began = time.monotonic()
        while not (sleeping := [p for p in _tree(engine.pid) if _command(p) == "sleep"]):
            assert engine.poll() is None, engine.communicate()
            assert time.monotonic() - began < 60, "the attempt's sleep never started"
            time.sleep(0.05)
        (deepest,) = sleeping
        control_group_kill(engine, out, deepest)
        stdout, stderr = engine.communicate(timeout=60)
    finally:
        engine.kill()
    assert engine.returncode == 130, stdout + stderr
    assert "default #1 (pass): ended as the engine was stopped: run again on resume" in stderr
    assert "the run is complete" not in stderr, stderr
    assert "reprospec: interrupted; finish the run with: reprospec run --resume" in stderr
    (folder,) = (out / "runs").iterdir()
    assert stored_status(out, folder.name) == "interrupted"
    assert Store(out).finished_attempts(folder.name) == {}
    results = json.loads((folder / "results.json").read_text())
    assert results["interrupted"] is True
    assert [(c["verdict"], c["attempts"]) for c in results["cells"]] == [("not-run", [])]
    assert "ended as the engine was stopped" in (folder / "report.md").read_text()

    again = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "--resume", folder.name, "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1/1 cell reproduced" in again.stdout
    assert "0 attempts carried over" in again.stdout, again.stdout
    (rerun,) = Store(out).finished_attempts(folder.name).values()
    assert rerun.ran is not None
    assert rerun.ran.kind == "pass"
    cell = folder / "cells" / "default"
    assert (cell / "1" / "stdout.log").read_text() == "again\n"
    # The attempt set aside keeps its files, apart: what it printed as the stop came.
    assert (cell / "1.interrupted" / "stdout.log").read_text() == "finished\n"


# Programs that handle SIGTERM by exiting 0 (saying `ready` once they do), each with what its
# handling process's command line holds: cut short by a stop sent to every process, each
# reads `pass` as the engine hears of the stop a moment later. (The shell's `sleep` writes
# nowhere: the shell gone, it would hold the attempt's output open until the stop kills it.)
HANDLES_SIGTERM = {
    "python": (
        'python -c "import signal, sys, time; '
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); print('ready', flush=True); "
        'time.sleep(30)"',
        "time.sleep(30)",
    ),
    "shell": (
        "sh -c 'trap \"exit 0\" TERM; echo ready; sleep 30 >/dev/null 2>&1 & wait'",
        "trap",
    ),
}


@pytest.mark.parametrize("program", sorted(HANDLES_SIGTERM))
def test_an_attempt_set_aside_never_shows_a_verdict_on_its_progress_line(
    program: str, tmp_path: Path
) -> None:
    # The attempt's end was said as it was read (`[1/1] default #1: pass (match, ...)`), and
    # the warning that it was set aside came only at the end: a user who read the first line
    # took the program to have passed. Its line is said once its end is older than the
    # slack, so an attempt set aside has none; the warning says what became of it.
    out = tmp_path / "out"
    spec = tmp_path / "handles.yaml"
    command, marker = HANDLES_SIGTERM[program]
    spec.write_text(
        "reprospec: 1\nname: handles\ncommand: " + json.dumps(command) + "\n"
        "run: {repeat: 1}\nexpect: {outcome: pass}\n"
    )
    engine = subprocess.Popen(
        [sys.executable, "-m", "reprospec", "run", str(spec), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        began = time.monotonic()
        # Its SIGTERM handler in place (the trap, Python's): it said so in its log.
        while not any(
            log.read_text() == "ready\n" for log in out.glob("runs/*/cells/default/1/stdout.log")
        ):
            assert engine.poll() is None, engine.communicate()
            assert time.monotonic() - began < 60, "the attempt's program never got ready"
            time.sleep(0.02)
        # The process that handles it, the deepest whose command line says so (the shell
        # that runs the command holds it too).
        handler = [p for p in _tree(engine.pid) if marker in _arguments(p)][-1]
        control_group_kill(engine, out, handler)
        stdout, stderr = engine.communicate(timeout=60)
    finally:
        engine.kill()
    assert engine.returncode == 130, stdout + stderr
    assert "default #1 (pass): ended as the engine was stopped: run again on resume" in stderr
    said = [line for line in stderr.splitlines() if "default #1:" in line]
    assert said == [], stderr
    assert "reprospec: interrupted; finish the run with: reprospec run --resume" in stderr


def _arguments(pid: int) -> str:
    """`pid`'s command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_amplify_stopped_before_any_attempt_ended_says_its_arms_are_not_tried_yet(
    tmp_path: Path,
) -> None:
    # Stopped in its first round, every arm read `not tried (the search ended before it)`
    # beside `interrupted; run the same command again to resume`: the search had not
    # ended, and the rerun tries them.
    started = tmp_path / "started"
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "reprospec: 1\nname: s\n"
        f"command: \"sh -c 'touch {started}; sleep 60; exit 3'\"\n"
        "expect: {outcome: error, exit_code: 3}\n"
    )
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "reprospec", "amplify", str(spec), "--out", str(out)]
    done = interrupt_when(argv, started.exists, wait_s=60)
    assert done.code == 130, done.stdout + done.stderr
    arms = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    assert arms, done.stdout
    assert "the search ended before it" not in done.stdout
    for line in arms:
        assert line.endswith(": not tried yet (the search was interrupted before it)"), line
    report = next((out / "amplify").glob("*/amplify.md")).read_text()
    assert "| base | not tried yet (the search was interrupted before it) |" in report
