"""`run.instances` on the docker runner: N real containers released from one start barrier.

The example spec's program crashes only when copies run at once (rank 0 writes a kernel
into the shared cache in place; the others load it half-written: a real SIGSEGV). With
one container per instance, the copies still share what copies of a program on one
machine share: the cache (the attempt's XDG_CACHE_HOME), the network (MASTER_ADDR) and
/dev/shm, through the attempt's pod.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

# Real-engine tests: `pytest -m "not docker and not slurm"` runs the unit suite alone.
pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

import reprospec  # noqa: E402
from reprospec import native  # noqa: E402
from reprospec.core.inputs import AttemptPlan  # noqa: E402
from reprospec.core.results import Outcome  # noqa: E402
from reprospec.errors import InfraError  # noqa: E402
from reprospec.pipeline.attempt import AttemptExecutor  # noqa: E402
from reprospec.runners.docker import image  # noqa: E402
from reprospec.runners.docker.runner import DockerRunner  # noqa: E402
from reprospec.store.runfolder import RunFolder  # noqa: E402
from tests.support.cli import SPECS  # noqa: E402
from tests.support.docker import CLIENT, containers_of, needs_engine, require_image  # noqa: E402
from tests.support.plans import attempt_plan  # noqa: E402
from tests.support.ports import port_taker  # noqa: E402


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    return DockerRunner(client=CLIENT)


def instances_plan(tmp_path: Path, command: str, copies: int) -> AttemptPlan:
    plan = attempt_plan(["python3", "-c", command], tmp_path)
    return replace(plan, instances=copies)


@needs_engine
def test_the_example_passes_with_one_container_and_crashes_with_four(tmp_path: Path) -> None:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    spec = reprospec.load_spec(SPECS / "instances-shared-cache.yaml")
    result = reprospec.run(spec, reprospec.RunOptions(runner="docker", out=tmp_path))
    assert containers_of(tmp_path) == set()  # the instances and their pods are gone
    cells = {cell.cell.id: cell for cell in result.cells}
    assert {cid: cell.verdict for cid, cell in cells.items()} == {
        "instances=1": "reproduced",
        "instances=4": "reproduced",
    }, {cid: cell.attempts[0].outcome for cid, cell in cells.items()}
    (four,) = cells["instances=4"].attempts
    assert isinstance(four.outcome, Outcome)
    assert four.outcome.signal == "SIGSEGV"
    # Every instance recorded: rank 0 builds and passes, ranks 1-3 crash.
    kinds = {i.instance: i.outcome.kind for i in four.instances if isinstance(i.outcome, Outcome)}
    assert kinds == {0: "pass", 1: "crash", 2: "crash", 3: "crash"}, four.instances
    # The attempt's outcome is the first failure by time, by the engine's clock.
    ends = {i.instance: i.end_s for i in four.instances}
    assert all(end is not None for end in ends.values()), ends
    first = min((1, 2, 3), key=lambda n: (ends[n] or 0.0, n))
    assert four.instance == first
    # Started together: every container waited at the barrier before any was released.
    ready = [i.ready_s for i in four.instances]
    start = [i.start_s for i in four.instances]
    assert all(r is not None for r in ready)
    assert all(s is not None for s in start)
    assert max(r for r in ready if r is not None) <= min(s for s in start if s is not None)
    assert four.start_spread_s is not None
    # Each instance's own folder. The crashing instances write `core` into the one workdir
    # they share, at once: one core is left and read (gdb in the image), the instances whose
    # core it overwrote say so, and none gets another's stack.
    folder = tmp_path / "runs" / result.run_id / "cells" / "instances=4" / "1"
    read = said = 0
    for number in (1, 2, 3):
        stacks = native.read(folder / f"instance-{number}")
        assert stacks is not None, number
        if stacks.processes:
            (process,) = stacks.processes
            # The spec's command is a string: /bin/sh -c runs python as its child.
            assert process.signal == "SIGSEGV"
            assert process.error is None
            assert process.command == "python kernel_cache.py"
            assert (native.top_frames(stacks) or "").startswith("strlen (libc.so")
            read += 1
        else:
            assert "another instance's core may have overwritten it" in (stacks.unavailable or "")
            said += 1
    assert read >= 1
    assert read + said == 3
    assert native.read(folder / "instance-0") is None  # it passed: nothing to take
    assert sorted(p.name for p in (SPECS / "fixtures").iterdir() if p.name.startswith("core")) == []


@needs_engine
def test_instances_share_the_pods_network_and_shm_and_get_their_variables(
    runner: DockerRunner, tmp_path: Path
) -> None:
    # Rank 0 listens on MASTER_PORT and puts a file in /dev/shm; rank 1 connects to
    # MASTER_ADDR and reads the file: both only work if the containers share them.
    code = (
        "import os, socket, time, json\n"
        "rank = int(os.environ['RANK'])\n"
        "addr, port = os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])\n"
        "seen = {k: os.environ[k] for k in ('REPROSPEC_INSTANCE', 'REPROSPEC_INSTANCES',\n"
        "        'RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'TMPDIR', 'XDG_CACHE_HOME')}\n"
        "if rank == 0:\n"
        "    open('/dev/shm/from-rank-0', 'w').write('shm shared')\n"
        "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "    s.bind((addr, port)); s.listen(1); c, _ = s.accept()\n"
        "    seen['got'] = c.recv(100).decode()\n"
        "else:\n"
        "    for _ in range(600):\n"
        "        try:\n"
        "            c = socket.create_connection((addr, port), timeout=1); break\n"
        "        except OSError:\n"
        "            time.sleep(0.05)\n"
        "    c.sendall(b'hello from rank 1')\n"
        "    seen['shm'] = open('/dev/shm/from-rank-0').read()\n"
        "print(json.dumps(seen))\n"
    )
    plan = instances_plan(tmp_path, code, 2)
    executions = runner.run_instances(plan, tmp_path / "a", gpu_slots=[])
    assert containers_of(tmp_path) == set()
    assert [e.returncode for e in executions] == [0, 0], [
        e.stderr_path.read_text() for e in executions
    ]
    zero, one = (json.loads(e.stdout_path.read_text()) for e in executions)
    assert zero["got"] == "hello from rank 1"
    assert one["shm"] == "shm shared"
    for number, seen in enumerate((zero, one)):
        assert seen["REPROSPEC_INSTANCE"] == seen["RANK"] == seen["LOCAL_RANK"] == str(number)
        assert seen["REPROSPEC_INSTANCES"] == seen["WORLD_SIZE"] == "2"
        assert seen["MASTER_ADDR"] == "127.0.0.1"
        # The attempt's TMPDIR and cache, shared by both, as on one machine.
        assert seen["TMPDIR"] == "/reprospec/shared/tmp"
        assert seen["XDG_CACHE_HOME"] == "/reprospec/shared/cache"
    for number, execution in enumerate(executions):
        assert execution.instance == number
        assert execution.log_dir == (tmp_path / "a" / f"instance-{number}").resolve()
        assert execution.ready_at is not None
        assert execution.released_at is not None
    assert max(e.ready_at or 0 for e in executions) <= min(e.released_at or 0 for e in executions)
    events = (tmp_path / "a" / "instance-1" / "events.jsonl").read_text()
    assert '"event": "instance_start"' in events
    assert not (tmp_path / "a" / "barrier").exists()


@needs_engine
def test_an_instance_that_cannot_start_releases_no_one(
    runner: DockerRunner, tmp_path: Path
) -> None:
    plan = replace(attempt_plan(["no-such-program-x"], tmp_path), instances=2)
    with pytest.raises(InfraError) as err:
        runner.run_instances(plan, tmp_path / "a", gpu_slots=[])
    assert containers_of(tmp_path) == set()
    assert "the 2 instances were not started" in str(err.value)
    assert "cannot start no-such-program-x" in str(err.value)


@needs_engine
def test_the_attempt_executor_runs_docker_instances(runner: DockerRunner, tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").create()
    plan = instances_plan(tmp_path, "import os; os._exit(3 if os.environ['RANK'] == '1' else 0)", 2)
    result = AttemptExecutor(runner, folder)(plan, (), threading.Event())
    assert result is not None
    assert result.infra_error is None
    assert isinstance(result.outcome, Outcome)
    assert result.outcome.kind == "error"
    assert result.instance == 1
    assert [i.outcome.kind for i in result.instances if isinstance(i.outcome, Outcome)] == [
        "pass",
        "error",
    ]


@needs_engine
def test_a_host_process_on_master_ports_number_is_not_the_pods(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """The instances share their pod's network, not the machine's: a process of the machine
    bound to MASTER_PORT's number takes nothing from them, and rank 0 that binds the port
    twice itself fails by its own doing (an error as it ran), where the reading of the
    machine's port after it called it infra-error ('taken by another process')."""
    code = (
        "import os, socket, sys, time\n"
        "if os.environ['RANK'] == '1':\n"
        "    sys.exit(0)\n"
        "port = int(os.environ['MASTER_PORT'])\n"
        "open('port', 'w').write(str(port))\n"
        "for _ in range(600):\n"
        "    if os.path.exists('go'):\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "s = socket.socket(); s.bind(('', port)); s.listen()\n"
        "socket.socket().bind(('', port))\n"
    )
    plan = instances_plan(tmp_path, code, 2)
    with port_taker(tmp_path) as held:
        executions = runner.run_instances(plan, tmp_path / "a", gpu_slots=[])
    assert held, "the machine's process did not bind the port's number"
    assert containers_of(tmp_path) == set()
    assert [e.returncode for e in executions] == [1, 0]
    assert "Address already in use" in executions[0].stderr_path.read_text()
