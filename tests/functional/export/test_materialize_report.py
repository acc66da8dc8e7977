"""run.sh's `report` on what real DataLoader worker deaths leave in a cell's results folder.

A worker's death is no exit status of the main process (torch raises, Python exits 1): run.sh
said `exit 1` of a worker's SIGSEGV that `reprospec run` calls `crash SIGSEGV (worker)`, and by
the README's rule (a crash is exit status 128 + the signal) the cell was not reproduced
. Here `reprospec run` makes the deaths for real; their events.jsonl and output go
where run.sh's containers write them, and the bundle's own `report` reads them. Docker is not
needed for that: tests/real/docker/test_materialize.py runs a whole bundle.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec.core.runoptions import RunOptions
from reprospec.export.materialize import write_bundle
from reprospec.harness import HARNESS_ROOT
from reprospec.plan.run import plan_run
from reprospec.spec.load import load_spec

SPEC = """\
reprospec: 1
name: workerdeath
matrix:
  f: [seg, exit]
workload:
  model: {builtin: mlp}
  data:
    dataset: {builtin: synthetic, size: 32, shape: [4], classes: 2}
    loader: {batch_size: 8, num_workers: 2, multiprocessing_context: fork}
  phases: [{name: train, steps: 4}]
  faults:
    - {kind: segfault, where: worker, at: {phase: train, step: 2}, when: "${{ matrix.f == 'seg' }}"}
    - kind: exit
      code: 3
      where: worker
      at: {phase: train, step: 2}
      when: "${{ matrix.f == 'exit' }}"
run: {timeout: 2m}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {f: exit}
      outcome: error
      exception: RuntimeError
"""


def _report(
    bundle: Path, cell: int, status: int, expect: str = "crash SIGSEGV ''", pid: int | None = None
) -> str:
    """What the bundle's run.sh prints of cell `cell` ended with `status`: its functions (the
    script up to its first cell), then `report` as a cell's function calls it, expecting
    `expect` (outcome, signals, exit code), then the verdicts run.sh's exit status reads
    (NOT_JUDGED where it is set). `pid`: the command's pid the init recorded
    (run_container's PROGRAM_PID), none by default."""
    script = (bundle / "run.sh").read_text()
    head = script[: script.index("\n# cell 1:")]
    program = f"PROGRAM_PID={pid}\n" if pid is not None else ""
    (bundle / "report.sh").write_text(
        f"{head}\n{program}"
        f"report {cell} {status} {shlex.quote(f'cell{cell}')} expected {expect}\n"
        'echo "MISSED=$MISSED NOT_RUN=$NOT_RUN'
        '$([ "${NOT_JUDGED:-0}" = 0 ] || echo " NOT_JUDGED=1")"\n'
    )
    done = subprocess.run(
        ["bash", str(bundle / "report.sh")], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def _run_and_bundle(
    root: Path, *, events: bool
) -> tuple[Path, list[tuple[str, dict[str, object]]]]:
    """`reprospec run` of root/spec.yaml, its bundle written in root/bundle, and each cell's
    attempt 1 left in the bundle's results/N as run.sh's container leaves it (its output as
    one stream; its events.jsonl with `events`); each cell's id and the run's outcome of it,
    in the bundle's order."""
    done = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", "spec.yaml", "-j", "2", "--out", "store"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = (root / "store" / "runs").iterdir()
    spec = load_spec(root / "spec.yaml")
    plans = [plan for plan in plan_run(spec, RunOptions()).attempts if plan.attempt == 1]
    bundle = root / "bundle"
    write_bundle(spec, plans, bundle)
    ran = {
        c["id"]: c["attempts"][0]["outcome"]
        for c in json.loads((run / "results.json").read_text())["cells"]
    }
    for number, plan in enumerate(plans, start=1):
        attempt = run / "cells" / plan.cell.id / "1"
        results = bundle / "results" / str(number)
        results.mkdir(parents=True)
        if events:
            shutil.copy(attempt / "events.jsonl", results / "events.jsonl")
        # A container's output is one stream (run.sh: 2>&1 | tee output.log).
        output = (attempt / "stdout.log").read_text() + (attempt / "stderr.log").read_text()
        (results / "output.log").write_text(output)
    return bundle, [(plan.cell.id, ran[plan.cell.id]) for plan in plans]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, object]]]:
    """The bundle of SPEC, with each cell's results as `reprospec run` left them, and what
    `reprospec run` called each cell."""
    root = tmp_path_factory.mktemp("workerdeath")
    (root / "spec.yaml").write_text(SPEC)
    bundle, cells = _run_and_bundle(root, events=True)
    return bundle, dict(cells)


def test_a_worker_segfault_is_a_crash_in_a_worker_not_exit_1(
    ran: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    bundle, outcomes = ran
    seg = outcomes["f=seg"]
    assert (seg["kind"], seg["signal"], seg["where"]) == ("crash", "SIGSEGV", "worker")
    assert str(seg["detail"]).endswith("the main process exited 1")
    said = _report(bundle, 1, 1)
    assert said.startswith("== cell 1 [cell1]: crash SIGSEGV (worker): DataLoader worker "), said
    assert (
        "died of SIGSEGV, says events.jsonl; the main process exited 1; expected: expected; "
        "reproduced\nMISSED=0 NOT_RUN=0\n" in said
    )
    # Without the harness's events (a command's DataLoader): torch's own words in output.log.
    # They race: torch's SIGCHLD handler says "is killed by signal: Segmentation fault",
    # unless the main process's read of a batch the worker had sent fails first (a
    # ConnectionResetError or EOFError, 1 time in 50 on a loaded machine), which names no
    # signal. The worker's own handler line is there either way, and is run.sh's second
    # reading; with torch's line cut out, that is what it quotes.
    (bundle / "results" / "1" / "events.jsonl").unlink()
    log = bundle / "results" / "1" / "output.log"
    output = log.read_text()
    handler = (
        '== cell 1 [cell1]: crash SIGSEGV (worker): output.log says "ERROR: Unexpected '
        'segmentation fault encountered in worker"; the main process exited 1;'
    )
    said = _report(bundle, 1, 1)
    if "is killed by signal" in output:
        assert said.startswith(
            '== cell 1 [cell1]: crash SIGSEGV (worker): output.log says "DataLoader worker (pid '
        ), said
        assert 'is killed by signal: Segmentation fault"; the main process exited 1;' in said
        log.write_text(
            "".join(
                line
                for line in output.splitlines(keepends=True)
                if "is killed by signal" not in line
            )
        )
        said = _report(bundle, 1, 1)
    assert said.startswith(handler), said
    # A 128+N status is still the main process's own death; 0 is a pass whatever the output.
    assert _report(bundle, 1, 139).startswith("== cell 1 [cell1]: killed by SIGSEGV;")
    assert _report(bundle, 1, 0).startswith("== cell 1 [cell1]: exit 0;")


def test_run_sh_judges_what_a_cell_did_against_its_expectation(
    ran: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    # run.sh printed `exit 0; expected: crash ...` and exited 0 whatever the
    # cells did. Now each cell's line ends with its verdict, which run.sh's exit status sums.
    bundle, _ = ran
    cases = [
        (1, 1, "crash SIGSEGV ''", "reproduced\nMISSED=0 NOT_RUN=0"),  # the worker's SIGSEGV
        (1, 1, "crash 'SIGBUS SIGSEGV' ''", "reproduced\nMISSED=0 NOT_RUN=0"),
        (1, 1, "crash SIGBUS ''", "NOT reproduced\nMISSED=1 NOT_RUN=0"),
        (1, 1, "fail '' ''", "reproduced\nMISSED=0 NOT_RUN=0"),
        (1, 1, "error '' ''", "NOT reproduced\nMISSED=1 NOT_RUN=0"),
        (1, 0, "crash SIGSEGV ''", "NOT reproduced\nMISSED=1 NOT_RUN=0"),
        (1, 0, "pass '' ''", "reproduced\nMISSED=0 NOT_RUN=0"),
        (1, 0, "any '' ''", "reproduced\nMISSED=0 NOT_RUN=0"),
        (1, 124, "hang '' ''", "reproduced\nMISSED=0 NOT_RUN=0"),
        (1, 139, "crash SIGSEGV ''", "reproduced\nMISSED=0 NOT_RUN=0"),
        (1, 134, "crash SIGSEGV ''", "NOT reproduced\nMISSED=1 NOT_RUN=0"),
        (1, 125, "crash SIGSEGV ''", "not run\nMISSED=0 NOT_RUN=1"),
        (2, 1, "error '' 1", "reproduced\nMISSED=0 NOT_RUN=0"),  # the worker's exit 3
        (2, 1, "error '' 2", "NOT reproduced\nMISSED=1 NOT_RUN=0"),
        (2, 1, "crash '' ''", "NOT reproduced\nMISSED=1 NOT_RUN=0"),
    ]
    for cell, status, expect, verdict in cases:
        said = _report(bundle, cell, status, expect)
        assert said.endswith(f"; expected: expected; {verdict}\n"), (status, expect, said)


def test_a_worker_that_exited_with_a_code_is_an_error_in_a_worker(
    ran: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    bundle, outcomes = ran
    exited = outcomes["f=exit"]
    assert (exited["kind"], exited["where"]) == ("error", "worker")
    said = _report(bundle, 2, 1)
    assert said.startswith("== cell 2 [cell2]: error (worker): DataLoader worker "), said
    assert "exited with code 3, says events.jsonl; the main process exited 1;" in said


def test_a_worker_the_harness_killed_itself_is_no_crash(tmp_path: Path) -> None:
    # A distributed run's supervisor SIGKILLs the other ranks' workers once one rank failed,
    # saying so first in a teardown event: the job ends as that rank did (classify's rule).
    bundle = tmp_path / "bundle"
    (tmp_path / "spec.yaml").write_text(SPEC)
    spec = load_spec(tmp_path / "spec.yaml")
    write_bundle(spec, [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1], bundle)
    results = bundle / "results" / "1"
    results.mkdir(parents=True)
    _emit(
        results / "events.jsonl",
        "events.emit('teardown', pids=[4241, 4242])",
        "events.emit('worker_exit', worker=0, pid=4242, signal='SIGKILL')",
    )
    assert _report(bundle, 1, 1).startswith("== cell 1 [cell1]: exit 1;")
    # One it did not kill is a worker's crash.
    _emit(
        results / "events.jsonl", "events.emit('worker_exit', worker=1, pid=4300, signal='SIGKILL')"
    )
    said = _report(bundle, 1, 1)
    assert said.startswith(
        "== cell 1 [cell1]: crash SIGKILL (worker): DataLoader worker 1 (pid 4300)"
    )


def test_a_child_its_parent_reaped_dead_is_read_from_the_events(tmp_path: Path) -> None:
    """A command's child dead of a signal its Python parent reaped: the image's sitecustomize
    writes a `child_exit` event (stackdump/sitecustomize.py), which run.sh reads as reprospec
    run does, for a DataLoader worker as the worker's crash, else as a child's; a SIGTERM (a
    parent stopping its child) is no death, nor a SIGKILL the harness's teardown sent."""
    bundle = tmp_path / "bundle"
    (tmp_path / "spec.yaml").write_text(SPEC)
    spec = load_spec(tmp_path / "spec.yaml")
    write_bundle(spec, [p for p in plan_run(spec, RunOptions()).attempts if p.attempt == 1], bundle)
    results = bundle / "results" / "1"
    results.mkdir(parents=True)
    events = results / "events.jsonl"

    def reaped(pid: int, signal: str, dataloader: bool) -> str:
        event = {"t": 1.0, "event": "child_exit", "pid": pid, "signal": signal}
        return json.dumps({**event, "name": "Process-2", "dataloader": dataloader, "parent": 9})

    events.write_text(reaped(4299, "SIGTERM", True) + "\n")
    assert _report(bundle, 1, 1).startswith("== cell 1 [cell1]: exit 1;")
    teardown = json.dumps({"t": 1.0, "event": "teardown", "pids": [4300]})
    events.write_text(f"{teardown}\n{reaped(4300, 'SIGKILL', True)}\n")
    assert _report(bundle, 1, 1).startswith("== cell 1 [cell1]: exit 1;")
    events.write_text(f"{reaped(4299, 'SIGTERM', True)}\n{reaped(4301, 'SIGKILL', True)}\n")
    assert _report(bundle, 1, 1, "crash SIGKILL ''").startswith(
        "== cell 1 [cell1]: crash SIGKILL (worker): DataLoader worker (pid 4301) died of "
        "SIGKILL, says events.jsonl; the main process exited 1;"
    )
    events.write_text(reaped(4302, "SIGSEGV", False) + "\n")
    said = _report(bundle, 1, 1)
    assert said.startswith(
        "== cell 1 [cell1]: crash SIGSEGV (child): child pid 4302 died of SIGSEGV, says "
        "events.jsonl; the main process exited 1;"
    ), said
    assert said.endswith("; reproduced\nMISSED=0 NOT_RUN=0\n"), said


def _emit(path: Path, *calls: str) -> None:
    """Events written by the harness's own writer (its format is what run.sh reads)."""
    subprocess.run(
        [sys.executable, "-c", "\n".join(["from reprospec_harness import events", *calls])],
        env={**os.environ, "PYTHONPATH": str(HARNESS_ROOT), "REPROSPEC_EVENTS": str(path)},
        check=True,
        timeout=30,
    )


CHILD_SPEC = """\
reprospec: 1
name: childdeath
matrix:
  prog: [called, shell, pool, exit139, seg]
command: python3 prog.py ${{ matrix.prog }}
files: [seg.py, shell.sh]
run: {timeout: 2m}
expect:
  outcome: crash
  signal: SIGSEGV
  cases:
    - when: {prog: pool}
      signal: SIGABRT
    - when: {prog: exit139}
      outcome: error
      exit_code: 139
"""

# Each a real death (or none): a subprocess's SIGSEGV its parent raises CalledProcessError
# of (exit 1), a shell script's child's (exit 3), a process pool's worker's SIGABRT
# (BrokenProcessPool, exit 1), a program's own sys.exit(139), the main process's SIGSEGV.
PROG = """\
import ctypes, os, subprocess, sys
from concurrent.futures import ProcessPoolExecutor

if sys.argv[1] == "called":
    subprocess.run([sys.executable, "seg.py"], check=True)
elif sys.argv[1] == "shell":
    os.execvp("bash", ["bash", "shell.sh"])
elif sys.argv[1] == "pool":
    with ProcessPoolExecutor(1) as pool:
        pool.submit(os.abort).result()
elif sys.argv[1] == "exit139":
    sys.exit(139)
else:
    ctypes.string_at(0)
"""
SHELL = "python3 seg.py\nexit 3\n"
SEG = "import ctypes\nctypes.string_at(0)\n"
# The exit status each cell's container ends with (a signal's death: 128 + N, as docker says).
STATUS = {"called": 1, "shell": 3, "pool": 1, "exit139": 139, "seg": 139}


@pytest.fixture(scope="module")
def children(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, object]]]:
    """CHILD_SPEC's bundle with each cell's results as `reprospec run` left them, and what
    `reprospec run` called each cell (by the cell's number in the bundle)."""
    root = tmp_path_factory.mktemp("childdeath")
    (root / "spec.yaml").write_text(CHILD_SPEC)
    (root / "prog.py").write_text(PROG)
    (root / "shell.sh").write_text(SHELL)
    (root / "seg.py").write_text(SEG)
    bundle, cells = _run_and_bundle(root, events=False)
    return bundle, {str(number): outcome for number, (_, outcome) in enumerate(cells, start=1)}


def _said(bundle: Path, cell: int, expect: str, pid: int | None = None) -> str:
    prog = ["called", "shell", "pool", "exit139", "seg"][cell - 1]
    return _report(bundle, cell, STATUS[prog], expect, pid)


def test_a_childs_death_is_a_crash_in_a_child_as_reprospec_run_says(
    children: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    # The parent's CalledProcessError (exit 1) of a child's SIGSEGV, which
    # `reprospec run` reproduces, was `exit 1; ...; NOT reproduced` in run.sh.
    bundle, outcomes = children
    for cell, signal in ((1, "SIGSEGV"), (2, "SIGSEGV"), (3, "SIGABRT")):
        outcome = outcomes[str(cell)]
        assert (outcome["kind"], outcome["signal"], outcome["where"]) == (
            "crash",
            signal,
            "child",
        ), outcome
        said = _said(bundle, cell, f"crash {signal} ''")
        assert said.startswith(
            f"== cell {cell} [cell{cell}]: crash {signal} (child): output.log "
        ), said
        assert said.endswith("; expected: expected; reproduced\nMISSED=0 NOT_RUN=0\n"), said
        assert "NOT reproduced" in _said(bundle, cell, "error '' ''")
    assert "died with <Signals.SIGSEGV: 11>" in _said(bundle, 1, "crash SIGSEGV ''")
    assert " Segmentation fault" in _said(bundle, 2, "crash SIGSEGV ''")
    # The pool's worker left its faulthandler report before the pool's "terminated abruptly".
    assert 'says "Fatal Python error: Aborted"' in _said(bundle, 3, "crash SIGABRT ''")
    (bundle / "results" / "3" / "output.log").write_text(
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was "
        "terminated abruptly while the future was running or pending.\n"
    )
    said = _said(bundle, 3, "crash '' ''")
    assert said.startswith('== cell 3 [cell3]: crash (child): output.log says "A process in the')
    assert said.endswith("; reproduced\nMISSED=0 NOT_RUN=0\n")
    # A worker that exited (os._exit(3)) or got a SIGTERM is "terminated abruptly" too: where
    # the pool is the program's own (its record of how it ended, the image's hooks', holds
    # its BrokenProcessPool) and events.jsonl names no death by a crash signal, no crash, as
    # `reprospec run` reads it.
    (bundle / "results" / "3" / "events.jsonl").write_text("")
    raised = bundle / "results" / "3" / "raised-4242.txt"
    raised.write_text(
        "1\nTraceback (most recent call last):\n"
        '  File "/work/prog.py", line 9, in <module>\n'
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was "
        "terminated abruptly while the future was running or pending.\n"
    )
    # The init's pid is the program's (4242), or the root shell's (1) whose one program it is.
    for pid in (4242, 1):
        said = _said(bundle, 3, "error '' ''", pid)
        assert said.startswith(
            '== cell 3 [cell3]: no crash: output.log says "A process in the process pool was '
            'terminated abruptly", but no worker died of a crash signal (events.jsonl names '
            "none); the main process exited 1; expected: expected; reproduced\n"
        ), said
        assert "NOT reproduced" in _said(bundle, 3, "crash '' ''", pid)
    # A record that is not the program's (no pid recorded, or another's: a worker's, a child
    # Python's), or the program's of another exception (the CalledProcessError of a child
    # Python run without the hooks, whose pool it was, its worker's SIGSEGV unwritten),
    # vouches for no pool: any Python process's record did.
    crash = '== cell 3 [cell3]: crash (child): output.log says "A process in the'
    assert _said(bundle, 3, "crash '' ''").startswith(crash)
    assert _said(bundle, 3, "crash '' ''", 77).startswith(crash)
    raised.write_text(
        "1\nsubprocess.CalledProcessError: Command '['python3', '-I', 'inner.py']' returned "
        "non-zero exit status 1.\n"
    )
    assert _said(bundle, 3, "crash '' ''", 4242).startswith(crash)
    raised.unlink()
    (bundle / "results" / "3" / "events.jsonl").unlink()


def test_a_128_plus_n_the_output_reports_no_death_of_is_not_judged(
    children: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    # A user's converse: sys.exit(139), `error exit 139` to reprospec run, was "killed by
    # SIGSEGV". With no report of a death, 139 reads both ways: run.sh says so, and states a
    # verdict only where both readings give it.
    bundle, outcomes = children
    assert (outcomes["4"]["kind"], outcomes["4"]["exit_code"]) == ("error", 139)
    said = _said(bundle, 4, "error '' 139")
    assert said == (
        "== cell 4 [cell4]: exit 139 = 128 + SIGSEGV: killed by SIGSEGV, or the program's own "
        "exit status (output.log reports no death); expected: expected; not judged here: "
        "reprospec run tells them apart\nMISSED=0 NOT_RUN=0 NOT_JUDGED=1\n"
    )
    assert _said(bundle, 4, "crash SIGSEGV ''") == said
    assert _said(bundle, 4, "fail '' ''").endswith("; reproduced\nMISSED=0 NOT_RUN=0\n")
    assert _said(bundle, 4, "pass '' ''").endswith("; NOT reproduced\nMISSED=1 NOT_RUN=0\n")
    assert _said(bundle, 4, "crash SIGBUS ''").endswith("; NOT reproduced\nMISSED=1 NOT_RUN=0\n")
    # The main process's own SIGSEGV: its faulthandler report proves the death.
    assert (outcomes["5"]["kind"], outcomes["5"]["where"]) == ("crash", "main")
    said = _said(bundle, 5, "crash SIGSEGV ''")
    assert said == (
        "== cell 5 [cell5]: killed by SIGSEGV; expected: expected; reproduced\nMISSED=0 NOT_RUN=0\n"
    )
    assert "NOT reproduced" in _said(bundle, 5, "error '' 139")


def test_the_inits_record_says_which_reading_of_a_128_plus_n_is_true(
    children: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    # The container's init (launch.py) recorded how the command ended, as the docker
    # runner reads it: a record of a death (-10) is that death, with or without a report of
    # it in output.log, and where the command exited 128+N itself (cell 4's results report no
    # death), the status is its own unless N is a death reprospec reads with no report.
    bundle, _ = children
    apart = "== cell 4 [cell4]: {}; expected: expected; reproduced\nMISSED=0 NOT_RUN=0\n"
    assert _report(bundle, 4, 138, "crash SIGUSR1 '' -10") == apart.format("killed by SIGUSR1")
    assert _report(bundle, 4, 138, "error '' 138 138") == apart.format("exit 138")
    assert _report(bundle, 4, 138, "crash SIGUSR1 '' 138").endswith(
        "; NOT reproduced\nMISSED=1 NOT_RUN=0\n"
    )
    # Without a record, as before: either reading, not judged.
    assert "not judged here" in _report(bundle, 4, 138, "error '' 138")
    # A shell's 139 for its child's SIGSEGV, or sys.exit(139): the record cannot say which.
    assert _said(bundle, 4, "error '' 139 139") == _said(bundle, 4, "error '' 139")
    # The program's own exit 126 is no container docker could not run.
    assert _report(bundle, 4, 126, "error '' 126 126") == apart.format("exit 126")
    # A record of the child's death is still read where the main process exited 1 itself.
    said = _said(bundle, 1, "crash SIGSEGV '' 1")
    assert said.startswith("== cell 1 [cell1]: crash SIGSEGV (child): ")
    assert said.endswith("; reproduced\nMISSED=0 NOT_RUN=0\n")
