"""A docker attempt of `run.instances`: each instance's hang is read from the workdir's lines,
as a lone docker attempt's is, not from this host at the container's `/work` paths."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from reprospec.core.inputs import AttemptPlan
from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import Execution, Outcome
from reprospec.pipeline.attempt import AttemptExecutor
from reprospec.store.runfolder import RunFolder
from tests.support.plans import attempt_plan, execution_in

# The container's workdir, as the dump names it: no such folder on this host.
_ROOT = "/no-such-container-root"

_JOB = """\
import threading, time
lock = threading.Lock()
lock.acquire()
def beat():
    while True:
        time.sleep(0.05)
def work():
    pass
    with lock:
        pass
w = threading.Thread(target=work, name="w")
w.start()
threading.Thread(target=beat, name="heartbeat", daemon=True).start()
w.join()
"""

# The heartbeat dumped first (threads are dumped newest first), `w` on the held lock.
_STACK = f"""\
--- pid 88 (python job.py) ---
Thread 0x00007f0000000002 (most recent call first):
  File "{_ROOT}/job.py", line 6 in beat
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007f0000000001 (most recent call first):
  File "{_ROOT}/job.py", line 9 in work
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000000 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 1139 in _wait_for_tstate_lock
  File "/usr/lib/python3.11/threading.py", line 1119 in join
  File "{_ROOT}/job.py", line 14 in <module>
"""


class _HungInstances:
    """A runner named `name` whose every instance hangs as `_STACK` says, in a container
    that names the workdir `container` (None: on this host), as it records."""

    def __init__(self, name: str, container: str | None) -> None:
        self.name = name
        self.container = container

    def prepare(self, plans: Sequence[AttemptPlan]) -> None:
        del plans

    def run(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slot: tuple[str, ...] = (),
        cancel: threading.Event | None = None,
    ) -> Execution:
        del plan, log_dir, gpu_slot, cancel
        raise AssertionError("an attempt of instances runs them with run_instances")

    def run_instances(
        self,
        plan: AttemptPlan,
        log_dir: Path,
        *,
        gpu_slots: Sequence[tuple[str, ...]],
        cancel: threading.Event | None = None,
    ) -> tuple[Execution, ...]:
        del gpu_slots, cancel
        executions = []
        for number in range(plan.copies):
            folder = log_dir / f"instance-{number}"
            folder.mkdir(parents=True, exist_ok=True)
            for log in ("stdout.log", "stderr.log", "events.jsonl"):
                (folder / log).write_text("")
            (folder / "stack.txt").write_text(_STACK)
            hung = execution_in(folder, None, timed_out=True)
            executions.append(
                dataclasses.replace(
                    hung,
                    stack_path=folder / "stack.txt",
                    instance=number,
                    container_workdir=self.container,
                )
            )
        return tuple(executions)

    def capture_environment(self, plan: AttemptPlan, log_dir: Path) -> Mapping[str, JsonValue]:
        del plan, log_dir
        return {}

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("runner", "container", "named"),
    [("docker", _ROOT, "work"), ("local", None, "beat"), ("podman", _ROOT, "work")],
)
def test_each_instance_of_a_docker_attempt_reads_the_workdirs_lines(
    tmp_path: Path, runner: str, container: str | None, named: str
) -> None:
    """Each instance is ranked from the workdir's lines under docker (`w` on the lock, not
    the heartbeat: `hang in beat` stayed for run.instances alone, review); a local attempt's
    path is the host's, no such file, and the dump's order stands. What tells them apart is
    the container's workdir each execution recorded, not the runner's name: another
    runner's container (`podman`) was read as this host's files."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text(_JOB)
    plan = dataclasses.replace(attempt_plan(["python", "job.py"], work), instances=2)
    folder = RunFolder(tmp_path / "run").create()
    result = AttemptExecutor(_HungInstances(runner, container), folder)(plan, (), threading.Event())
    assert result is not None
    assert result.instances is not None
    for instance in result.instances:
        assert isinstance(instance.outcome, Outcome)
        hung_in = instance.outcome.hung_in
        assert hung_in is not None
        assert (hung_in.path, hung_in.function) == (f"{_ROOT}/job.py", named)
