"""environment.perturb in a real container: each perturbation read back from inside it.

The docker runner applies every field: the variables as the local runner does, CPUs and
memory through the engine, nice through `nice -n`, the competitors beside the container.
What it cannot apply (a negative nice) is an infra-error that names it, never a plain run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
pytest.importorskip("docker", reason="skipped: the docker package is not installed")

from reprospec.core.results import Outcome  # noqa: E402
from reprospec.core.words import outcome_phrase  # noqa: E402
from reprospec.outcome.classify import classify  # noqa: E402
from reprospec.runners.docker import image  # noqa: E402
from reprospec.runners.docker.runner import DockerRunner  # noqa: E402
from tests.support.docker import CLIENT, make_plan, needs_engine, py, require_image  # noqa: E402

# What the container sees of each perturbation (cgroup v2 or v1 files, whichever exist).
_READ_BACK = """\
import json, os, sys, time
def first(*paths):
    for path in paths:
        if os.path.exists(path):
            return open(path).read().strip()
status = dict(line.split(':', 1) for line in open('/proc/self/status'))
writer = '/reprospec/attempt/io-load-0.bin'
deadline = time.monotonic() + 20
while not os.path.exists(writer) and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({
    'cpus': status['Cpus_allowed_list'].strip(),
    'nice': int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[16]),
    'memory': first('/sys/fs/cgroup/memory.max',
                    '/sys/fs/cgroup/memory/memory.limit_in_bytes'),
    'swap': first('/sys/fs/cgroup/memory.swap.max',
                  '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'),
    'switch_interval': sys.getswitchinterval(),
    'hash_seed': os.environ.get('PYTHONHASHSEED'),
    'io_load_seen': os.path.exists(writer),
}))
"""


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    require_image(CLIENT, image.DEFAULT_IMAGE)
    return DockerRunner(client=CLIENT)


@needs_engine
def test_every_perturbation_is_applied_inside_the_container(
    runner: DockerRunner, tmp_path: Path
) -> None:
    cpu = max(os.sched_getaffinity(0))  # not the first: a count would take that one
    perturb = {
        "cpus": [cpu],
        "nice": 7,
        "memory_limit": "96m",
        "switch_interval": 1e-6,
        "hash_seed": 11,
        "io_load": 1,
        "cpu_load": 1,
    }
    # The nice a container gets from the engine as it is: a dockerd itself started niced
    # (at 10, say) hands that on, and `nice -n 7` adds 7 to it (17), so 7 is what
    # reprospec adds, not the nice read back.
    base = runner.run(make_plan(py("import os; print(os.nice(0))"), tmp_path), tmp_path / "b")
    assert base.returncode == 0, base.stderr_path.read_text()
    engine_nice = int(base.stdout_path.read_text())
    if engine_nice + 7 > 19:
        pytest.skip(
            f"skipped: the engine's containers run at nice {engine_nice}: 7 more is past 19"
        )
    plan = make_plan(py(_READ_BACK), tmp_path, environment={"perturb": perturb})
    execution = runner.run(plan, tmp_path / "a")
    assert execution.infra_error is None, execution.infra_error
    assert execution.returncode == 0, execution.stderr_path.read_text()
    seen = json.loads(execution.stdout_path.read_text())
    assert seen["cpus"] == str(cpu)
    assert seen["nice"] == engine_nice + 7
    assert int(seen["memory"]) == 96 << 20
    assert seen["swap"] in ("0", str(96 << 20))  # v2: no swap; v1: memory+swap = memory
    assert seen["switch_interval"] == pytest.approx(1e-6)
    assert seen["hash_seed"] == "11"
    assert seen["io_load_seen"], "the io_load writer never wrote beside the container"
    assert execution.perturbed == (
        "switch_interval=1e-06",
        "hash_seed=11",
        f"cpus={cpu} (docker --cpuset-cpus)",
        "nice=7 (nice -n 7 in the container)",
        "cpu_load=1 (busy processes beside the container)",
        "io_load=1 (writers beside the container)",
        "memory_limit=96.0 MiB (docker --memory, no swap)",
    )
    # The competitors end with the attempt; their file with them.
    assert not (tmp_path / "a" / "io-load-0.bin").exists()


@needs_engine
def test_the_memory_limit_makes_an_oom_kill_a_crash(runner: DockerRunner, tmp_path: Path) -> None:
    code = "b = bytearray(400 << 20); print('allocated', len(b))"
    plan = make_plan(py(code), tmp_path, environment={"perturb": {"memory_limit": "64m"}})
    execution = runner.run(plan, tmp_path / "a")
    assert execution.infra_error is None, execution.infra_error
    assert execution.returncode == -9
    assert execution.oom == (
        "the kernel's OOM killer killed it: the container's memory limit, 64.0 MiB"
    )
    assert execution.stdout_path.read_text() == ""
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert outcome_phrase(outcome) == "crash SIGKILL by the OOM killer"


@needs_engine
def test_an_oom_kill_of_a_child_is_no_death_of_a_command_that_exits_0(
    runner: DockerRunner, tmp_path: Path
) -> None:
    """docker's OOMKilled says some process of the container was killed: the command that
    waited for its killed child and exited 0 read `crash SIGKILL by the OOM killer`."""
    code = (
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    b = bytearray(400 << 20)\n"
        "    b[::4096] = b'x' * (len(b) // 4096)\n"
        "    os._exit(0)\n"
        "print('child', os.waitpid(pid, 0)[1], flush=True)"
    )
    plan = make_plan(py(code), tmp_path, environment={"perturb": {"memory_limit": "64m"}})
    execution = runner.run(plan, tmp_path / "a")
    assert execution.infra_error is None, execution.infra_error
    assert execution.stdout_path.read_text() == "child 9\n"  # SIGKILL, as waitpid says it
    assert execution.returncode == 0
    outcome = classify(execution)
    assert isinstance(outcome, Outcome)
    assert outcome_phrase(outcome) == "pass"
    # The kill is the attempt's warning (pipeline/attempt.py), as the local runner's.
    assert not outcome.oom_killed
    assert execution.oom == (
        "the kernel's OOM killer killed it: the container's memory limit, 64.0 MiB"
    )


@needs_engine
def test_a_perturbation_the_container_cannot_get_is_an_infra_error(
    runner: DockerRunner, tmp_path: Path
) -> None:
    plan = make_plan(py("pass"), tmp_path, environment={"perturb": {"nice": -5}})
    execution = runner.run(plan, tmp_path / "a")
    assert execution.infra_error is not None
    assert execution.infra_error.startswith("perturb.nice=-5 not applied")
    assert "CAP_SYS_NICE" in execution.infra_error
    assert execution.perturbed == ()
    many = len(os.sched_getaffinity(0)) + 1
    plan = make_plan(py("pass"), tmp_path, environment={"perturb": {"cpus": many}})
    execution = runner.run(plan, tmp_path / "b")
    assert execution.infra_error is not None
    assert execution.infra_error.startswith(f"perturb.cpus={many} not applied")
