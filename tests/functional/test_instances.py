"""`run.instances`: N copies of an attempt released from one start barrier (real children).

The example spec's program crashes only when copies run at once: rank 0 builds a
kernel file in the shared cache in place, the other ranks load it half-written and
die of a real SIGSEGV (ctypes, strlen(NULL)). Starting together is proved from the
barrier's own records, not from the machine's speed: every instance reached the
barrier before any was released, and each program began after that.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

import reprospec
from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import AttemptResult, RunResult
from reprospec.pipeline.attempt import AttemptExecutor
from reprospec.report import render
from reprospec.runners.local import LocalRunner
from reprospec.store.db import Store
from reprospec.store.resultsjson import load_run
from reprospec.store.runfolder import RunFolder
from tests.support.cli import SPECS, Cli
from tests.support.deadline import until_reached
from tests.support.plans import attempt_plan
from tests.support.ports import port_taker

EXAMPLE = SPECS / "instances-shared-cache.yaml"


@dataclass(frozen=True)
class Ran:
    result: RunResult
    out: Path

    @property
    def folder(self) -> Path:
        return self.out / "runs" / self.result.run_id

    def attempt(self, cell_id: str) -> AttemptResult:
        (attempt,) = next(c for c in self.result.cells if c.cell.id == cell_id).attempts
        return attempt


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    out = tmp_path_factory.mktemp("instances-example")
    spec = reprospec.load_spec(EXAMPLE)
    return Ran(reprospec.run(spec, reprospec.RunOptions(out=out)), out)


def _events(folder: Path) -> list[dict[str, object]]:
    lines = (folder / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_one_instance_passes_four_crash_on_instances_1_to_3(example: Ran) -> None:
    verdicts = {c.cell.id: (c.verdict, c.reason) for c in example.result.cells}
    assert {k: v for k, (v, _) in verdicts.items()} == {
        "instances=1": "reproduced",
        "instances=4": "reproduced",
    }, verdicts
    alone = example.attempt("instances=1")
    assert alone.ran is not None
    assert alone.ran.kind == "pass"
    assert [i.instance for i in alone.instances] == [0]

    together = example.attempt("instances=4")
    kinds = {i.instance: (i.ran.kind, i.ran.signal) for i in together.instances if i.ran}
    assert kinds == {
        0: ("pass", None),
        1: ("crash", "SIGSEGV"),
        2: ("crash", "SIGSEGV"),
        3: ("crash", "SIGSEGV"),
    }
    # The attempt's outcome is the first failure by time, and says which it was.
    failed = [i for i in together.instances if i.failed]
    first = min(failed, key=lambda i: (i.end_s, i.instance))
    assert together.instance == first.instance
    assert together.ran is not None
    assert together.ran.kind == "crash"
    detail = together.ran.detail or ""
    assert f"instance {first.instance} of 4 crashed first" in detail
    assert "instances 1-3 crashed, instance 0 passed" in detail
    assert together.logs.endswith(f"/instance-{first.instance}/")
    # Each instance its own folder, with its own logs.
    for instance in together.instances:
        assert (example.folder / instance.logs / "stdout.log").is_file()
    assert len({i.logs for i in together.instances}) == 4


def test_the_instances_really_started_together(example: Ran) -> None:
    together = example.attempt("instances=4")
    instances = together.instances
    ready = [i.ready_s for i in instances]
    start = [i.start_s for i in instances]
    assert None not in ready
    assert None not in start
    # As each instance recorded it: every one reached the barrier before the first was
    # released (time 0), so no copy ran its command before all four existed and waited.
    assert max(r for r in ready if r is not None) <= 0.0 <= min(s for s in start if s is not None)
    spread = max(s for s in start if s is not None) - min(s for s in start if s is not None)
    assert together.start_spread_s == pytest.approx(spread, abs=1e-5)
    # The programs' own clocks agree: each began after every instance waited at the barrier.
    ready_ns, program_ns = [], []
    for instance in instances:
        folder = example.folder / instance.logs
        (record,) = [e for e in _events(folder) if e.get("event") == "instance_start"]
        assert record["instance"] == instance.instance
        ready_ns.append(int(str(record["ready_ns"])))
        found = re.search(r"program start (\d+)", (folder / "stdout.log").read_text())
        assert found is not None
        program_ns.append(int(found[1]))
    assert min(program_ns) > max(ready_ns)


def test_every_instance_is_stored_and_reported(example: Ran) -> None:
    together = example.attempt("instances=4")
    # results.json and the store keep every instance, and give back the same attempt.
    loaded = load_run(example.folder)
    assert loaded.cells == example.result.cells
    raw = json.loads((example.folder / "results.json").read_text())
    cell = next(c for c in raw["cells"] if c["id"] == "instances=4")
    (attempt,) = cell["attempts"]
    assert attempt["instance"] == together.instance
    assert [i["outcome"]["kind"] for i in attempt["instances"]] == ["pass"] + ["crash"] * 3
    with Store(example.out) as store:
        stored = store.finished_attempts(example.result.run_id)
    assert stored[("instances=4", 1)] == together
    # The report: the per-instance crash rate, worded as the GPU slot's is, and the table.
    report = (example.folder / "report.md").read_text()
    assert "- crashes on instances 1-3 (3 of 3 runs), never on instance 0 (0 of 1 run)" in report
    assert "### By instance" in report
    assert "released from it together, at most" in report
    assert "| 0 | 1 | 0 | `1× pass` |" in report
    assert "| 3 | 1 | 1 | `1× crash SIGSEGV` |" in report
    assert render(loaded, "md") == report


def _slots_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "slots.yaml"
    spec.write_text(
        """\
reprospec: 1
name: instance-slots
environment:
  gpus: 1
command: >-
  python -c "import os, ctypes;
  names = ('REPROSPEC_INSTANCE', 'REPROSPEC_INSTANCES', 'RANK', 'LOCAL_RANK', 'WORLD_SIZE',
  'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'CUDA_VISIBLE_DEVICES');
  print(' '.join(n + '=' + os.environ.get(n, '-') for n in names), flush=True);
  os.environ['CUDA_VISIBLE_DEVICES'] != '4' or ctypes.string_at(0)"
run:
  timeout: 60s
  instances: 3
expect:
  outcome: crash
  signal: SIGSEGV
"""
    )
    return spec


def test_each_instance_gets_its_own_gpu_slot_and_rank_variables(cli: Cli, tmp_path: Path) -> None:
    # GPU ids are only strings to the engine: the outer CUDA_VISIBLE_DEVICES hands them out.
    result = cli("run", str(_slots_spec(tmp_path)), env={"CUDA_VISIBLE_DEVICES": "3,4,5,6"})
    assert result.code == 0, result.stdout + result.stderr
    (cell,) = result.results()["cells"]
    (attempt,) = cell["attempts"]
    run_dir = result.latest_run()
    said = {}
    for instance in attempt["instances"]:
        text = (run_dir / instance["logs"] / "stdout.log").read_text()
        said[instance["instance"]] = dict(part.split("=", 1) for part in text.split())
        assert said[instance["instance"]]["CUDA_VISIBLE_DEVICES"] == ",".join(instance["gpu_slot"])
    assert [said[n]["CUDA_VISIBLE_DEVICES"] for n in range(3)] == ["3", "4", "5"]
    for number, variables in said.items():
        assert variables["REPROSPEC_INSTANCE"] == variables["RANK"] == str(number)
        assert variables["LOCAL_RANK"] == str(number)
        assert variables["WORLD_SIZE"] == variables["LOCAL_WORLD_SIZE"] == "3"
        assert variables["REPROSPEC_INSTANCES"] == "3"
        assert variables["MASTER_ADDR"] == "127.0.0.1"
    ports = {variables["MASTER_PORT"] for variables in said.values()}
    assert len(ports) == 1
    assert 0 < int(ports.pop()) < 65536
    # Only the instance on GPU 4 crashed: the slot and the instance both separate it.
    assert attempt["gpu_slot"] == ["3", "4", "5"]
    assert [i["outcome"]["kind"] for i in attempt["instances"]] == ["pass", "crash", "pass"]
    report = (run_dir / "report.md").read_text()
    assert "fails on GPU slot 4 (1 of 1 instance), never on slots 3, 5 (0 of 2 instances)" in report
    assert "crashes on instance 1 (1 of 1 run), never on instances 0, 2 (0 of 2 runs)" in report
    assert "| GPU | instances | failed | as expected |" in report


def test_too_few_gpus_for_every_instance_is_said(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", str(_slots_spec(tmp_path)), env={"CUDA_VISIBLE_DEVICES": "3,4"})
    (cell,) = result.results()["cells"]
    assert cell["verdict"] == "infra-error"
    (attempt,) = cell["attempts"]
    assert attempt["infra_error"] == (
        "skipped: needs 3 GPUs (1 for each of 3 instances), 2 visible to this run"
    )


def _plan(
    tmp_path: Path, argv: str | list[str], count: int, timeout_s: float = 30.0
) -> AttemptPlan:
    return replace(attempt_plan(argv, tmp_path, timeout_s=timeout_s), instances=count)


def _leftovers(marker: str) -> list[str]:
    """The command lines on this machine that name `marker` (this test's run folder).
    Every process's is read, and need not be UTF-8 (another's `exec -a $'sleep\\x80'`):
    read with undecodable bytes replaced, as a strict decode failed the test on it."""
    found = []
    for pid in (entry.name for entry in Path("/proc").iterdir() if entry.name.isdigit()):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        cmdline = raw.replace(b"\0", b" ").decode(errors="replace")
        if marker in cmdline:
            found.append(cmdline)
    return found


def test_a_command_that_cannot_start_releases_no_instance(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").create()
    plan = _plan(tmp_path, ["no-such-program-for-instances", "--flag"], 3)
    result = AttemptExecutor(LocalRunner(), folder)(plan, (), threading.Event())
    assert result is not None
    assert result.infra_error == (
        "the 3 instances were not started: "
        "cannot start no-such-program-for-instances: No such file or directory"
    )
    assert not (folder.attempt_dir(plan.cell.id, 1) / "barrier").exists()
    assert _leftovers(str(folder.path)) == []


def test_one_instance_that_cannot_start_is_said_as_one(tmp_path: Path) -> None:
    # `instances: ${{ matrix.n }}` over [1, 4]: its one-instance cell said "the 1 instances
    # were not started".
    folder = RunFolder(tmp_path / "run").create()
    plan = _plan(tmp_path, ["no-such-program-for-instances"], 1)
    result = AttemptExecutor(LocalRunner(), folder)(plan, (), threading.Event())
    assert result is not None
    assert result.infra_error == (
        "the instance was not started: "
        "cannot start no-such-program-for-instances: No such file or directory"
    )


def test_the_first_failure_by_time_wins_over_a_later_hang(tmp_path: Path) -> None:
    # Instance 0 hangs until the timeout; instance 1 dies of SIGSEGV right away (it says
    # so in a file first). 2 s for it to get there, doubled while a loaded machine kept it
    # from there (a crash after the timeout is no crash).
    command = (
        'python -c "import os, time, ctypes; '
        "time.sleep(60) if os.environ['REPROSPEC_INSTANCE'] == '0' else "
        "(open('crashing', 'w').close(), ctypes.string_at(0))\""
    )

    def attempt(timeout_s: float, here: Path) -> tuple[AttemptResult | None, RunFolder]:
        folder = RunFolder(here / "run").create()
        plan = _plan(here, command, 2, timeout_s=timeout_s)
        executor = AttemptExecutor(LocalRunner(native_stacks=False), folder)
        return executor(plan, (), threading.Event()), folder

    last = until_reached(attempt, lambda here: (here / "crashing").exists(), 2.0, tmp_path)
    result, folder = last.result
    assert result is not None
    assert result.ran is not None
    assert [i.ran.kind for i in result.instances if i.ran] == ["hang", "crash"]
    assert (result.instance, result.ran.kind, result.ran.signal) == (1, "crash", "SIGSEGV")
    assert "instance 1 of 2 crashed first" in (result.ran.detail or "")
    assert _leftovers(str(folder.path)) == []


def test_an_instance_that_exited_0_under_its_peers_is_said_with_when(tmp_path: Path) -> None:
    # Instance 1 exits 0 at once; instance 0 fails once it is gone (a lost peer). The
    # detail said `instance 1 passed`, as if it had run along to the end.
    command = (
        'python -c "import os, sys, time; '
        "sys.exit(0) if os.environ['REPROSPEC_INSTANCE'] == '1' else "
        '(time.sleep(0.5), sys.exit(3))"'
    )
    folder = RunFolder(tmp_path / "run").create()
    plan = _plan(tmp_path, command, 2)
    result = AttemptExecutor(LocalRunner(native_stacks=False), folder)(plan, (), threading.Event())
    assert result is not None
    assert result.ran is not None
    assert (result.instance, result.ran.kind, result.ran.exit_code) == (0, "error", 3)
    detail = result.ran.detail or ""
    said = "instance 0 of 2 failed with an error first; instance 1 passed but ended before "
    assert f"{said}instance 0 (" in detail
    assert re.search(r"instance 1 exited with code 0 at \d+\.\d\ds; instance 0 at \d", detail)


# Instance 0 says its MASTER_PORT (a file), waits until `go` is there, and binds the port
# as a rank's store does; instance 1 passes. With `twice`, both bind it (the program's own
# bug: two ranks as the store's server), instance 1 once instance 0 holds it.
_BINDS = (
    "import os, socket, sys, time\n"
    "port = int(os.environ['MASTER_PORT'])\n"
    "me = int(os.environ['REPROSPEC_INSTANCE'])\n"
    "twice = len(sys.argv) > 1\n"
    "if me == 1 and not twice:\n"
    "    sys.exit(0)\n"
    "if me == 0:\n"
    "    open('port', 'w').write(str(port))\n"
    "    while not os.path.exists('go'):\n"
    "        time.sleep(0.05)\n"
    "else:\n"
    "    while not os.path.exists('bound'):\n"
    "        time.sleep(0.05)\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('', port))\n"
    "s.listen()\n"
    "if me == 0:\n"
    "    open('bound', 'w').close()\n"
    "    time.sleep(2)\n"
)


@pytest.mark.parametrize("outsider", [True, False], ids=["another-process", "its-own-bind"])
def test_a_master_port_another_process_took_is_an_infra_error(
    tmp_path: Path, outsider: bool
) -> None:
    """pt42: MASTER_PORT is free when it is picked, but a process outside the engine may
    bind it before the rank does: the rank's EADDRINUSE was the cell's plain error, a
    verdict of a program that never ran as the spec says. Here the test is that process.
    A program that binds the port twice itself leaves it free when it ends: its error."""
    (tmp_path / "binds.py").write_text(_BINDS)
    folder = RunFolder(tmp_path / "run").create()
    argv = ["python", "binds.py"] if outsider else ["python", "binds.py", "twice"]
    plan = _plan(tmp_path, argv, 2, timeout_s=60.0)
    with port_taker(tmp_path, take=outsider) as held:
        result = AttemptExecutor(LocalRunner(native_stacks=False), folder)(
            plan, (), threading.Event()
        )
    port = int((tmp_path / "port").read_text())
    assert len(held) == outsider
    assert result is not None
    if outsider:
        assert result.infra_error == (
            f"MASTER_PORT {port} was taken by another process before instance 0 bound it "
            "(its output says the address was in use, and the port is bound still, by no "
            "process of the attempt): the instances did not run as the spec says; run again"
        )
    else:
        assert result.infra_error is None
        assert result.ran is not None
        assert [i.ran.kind for i in result.instances if i.ran] == ["pass", "error"]


# Instance 0 serves MASTER_PORT to instance 1 and closes their connection first (the
# server's side of it stays in TIME_WAIT on the port), then binds the port again without
# SO_REUSEADDR, which TIME_WAIT refuses: its own bug, whatever reads the port after it.
_REBINDS = (
    "import os, socket, sys, time\n"
    "port = int(os.environ['MASTER_PORT'])\n"
    "if os.environ['REPROSPEC_INSTANCE'] == '1':\n"
    "    for _ in range(400):\n"
    "        try:\n"
    "            c = socket.create_connection(('127.0.0.1', port))\n"
    "            break\n"
    "        except OSError:\n"
    "            time.sleep(0.05)\n"
    "    c.recv(1)\n"
    "    time.sleep(0.5)\n"
    "    sys.exit(0)\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('', port))\n"
    "s.listen()\n"
    "a, _ = s.accept()\n"
    "a.close()\n"
    "s.close()\n"
    "time.sleep(0.2)\n"
    "socket.socket().bind(('', port))\n"
)


def test_a_master_port_left_in_time_wait_by_the_program_is_its_own_error(
    tmp_path: Path,
) -> None:
    """The program's own store closed its connection first, so the port is in TIME_WAIT
    when the attempt ends: no process holds it, and a rank that failed saying the address
    was in use failed by the program's own doing (an error as it ran), where the port's
    reading took TIME_WAIT for another process's bind and called it infra-error."""
    (tmp_path / "rebinds.py").write_text(_REBINDS)
    folder = RunFolder(tmp_path / "run").create()
    plan = _plan(tmp_path, ["python", "rebinds.py"], 2, timeout_s=60.0)
    result = AttemptExecutor(LocalRunner(native_stacks=False), folder)(plan, (), threading.Event())
    assert result is not None
    assert result.infra_error is None
    assert [i.ran.kind for i in result.instances if i.ran] == ["error", "pass"]
    ran = result.instances[0].ran
    assert ran is not None
    assert ran.exception == "OSError"
    assert "Address already in use" in (ran.message or "")


def test_materialize_refuses_more_than_one_instance(cli: Cli, tmp_path: Path) -> None:
    result = cli("materialize", str(EXAMPLE), "-o", str(tmp_path / "bundle"))
    assert result.code == 2
    # Located at the spec's own line, as every refusal of what a spec says.
    line = EXAMPLE.read_text().splitlines().index("  instances: ${{ matrix.instances }}") + 1
    assert f"{EXAMPLE}:{line}:" in result.stderr
    assert "run.instances: a bundle runs one container per cell" in result.stderr
    assert "(cells instances=4)" in result.stderr
    assert "Traceback" not in result.stderr
