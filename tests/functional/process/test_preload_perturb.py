"""environment.perturb under run.preload: an attempt whose perturbations a fork can apply is
forked from the unperturbed attempt's server and runs under them; one that only a process's
start can apply runs fresh and says which."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import psutil
import pytest

from reprospec.core.inputs import AttemptPlan
from reprospec.core.results import Execution
from reprospec.core.sections import AGGRESSIVE_GC
from reprospec.perturb import apply
from reprospec.perturb import fork as perturb_fork
from reprospec.perturb.apply import Applied, make_memory_cgroup, remove_cgroup
from reprospec.perturb.fork import fork_options
from reprospec.runners.local import LocalRunner
from tests.support.plans import preload_plan


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    local = LocalRunner(python=sys.executable, native_stacks=False)
    yield local
    local.close()


def probe(
    runner: LocalRunner,
    folder: Path,
    perturb: Mapping[str, object] | None,
    *args: str,
    preload: tuple[str, ...] = ("marked",),
    attempt: int = 1,
) -> tuple[Execution, dict[str, object]]:
    """Run perturbed.py under `perturb` (None: unperturbed); its execution and what it saw."""
    out = folder / f"seen-{attempt}.json"
    plan: AttemptPlan = preload_plan(
        ["python", "perturbed.py", str(out), *args],
        preload=preload,
        env={"PRELOAD_MARK": "m"},
        environment={"perturb": perturb} if perturb else None,
        attempt=attempt,
    )
    execution = runner.run(plan, folder / f"attempt-{attempt}")
    seen = json.loads(out.read_text()) if out.is_file() else {}
    return execution, seen


def servers() -> list[int]:
    """The pids of this engine's preload servers."""
    found = []
    for child in psutil.Process().children():
        try:
            if any("reprospec_forkserver" in part for part in child.cmdline()):
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def test_a_perturbed_attempt_forks_from_the_unperturbed_ones_server_and_runs_under_it(
    runner: LocalRunner, tmp_path: Path
) -> None:
    plain, before = probe(runner, tmp_path, None)
    assert plain.launch == "forked", plain.launch_note
    (server,) = servers()
    cpu = min(os.sched_getaffinity(0))
    perturb = {"switch_interval": 1e-6, "gc": "aggressive", "cpus": 1, "nice": 7, "cpu_load": 1}
    execution, seen = probe(runner, tmp_path, perturb, attempt=2)
    assert execution.returncode == 0, (tmp_path / "attempt-2" / "stderr.log").read_text()
    # Forked, from the same server as the unperturbed attempt (its variables are not the key).
    assert execution.launch == "forked", execution.launch_note
    assert servers() == [server]
    assert seen["ppid"] == server
    assert seen["mark"] == "m"  # preloaded: imported by the server, not by the attempt
    # Under each perturbation, as a fresh attempt would be.
    assert seen["switch"] == pytest.approx(1e-6)
    assert seen["gc"] == list(AGGRESSIVE_GC)
    assert seen["cpus"] == [cpu]
    assert seen["nice"] == max(7, os.getpriority(os.PRIO_PROCESS, 0))
    assert "switch_interval=1e-06" in str(seen["perturb"])
    recorded = " ".join(execution.perturbed)
    for phrase in ("switch_interval=1e-06", "gc=aggressive", f"cpus=1 (affinity: CPU {cpu})"):
        assert phrase in recorded
    # The unperturbed attempt before it was not perturbed, and neither is the server.
    assert before["switch"] == pytest.approx(0.005)
    assert before["gc"] != list(AGGRESSIVE_GC)
    assert before["perturb"] is None
    assert psutil.Process(server).nice() == os.getpriority(os.PRIO_PROCESS, 0)


def test_a_forked_attempt_joins_its_memory_cgroup(runner: LocalRunner, tmp_path: Path) -> None:
    folder, how = make_memory_cgroup(64 * 2**20, f"reprospec-test-{os.getpid()}")
    if folder is None:
        pytest.skip(f"no memory cgroup here: {how}")
    remove_cgroup(folder)
    execution, seen = probe(runner, tmp_path, {"memory_limit": "256m"})
    assert execution.returncode == 0, (tmp_path / "attempt-1" / "stderr.log").read_text()
    assert execution.launch == "forked", execution.launch_note
    assert "memory_limit=256.0 MiB (cgroup" in " ".join(execution.perturbed)
    (line,) = [
        line
        for line in str(seen["cgroup"]).splitlines()
        if line.split(":")[1] in ("memory", "")
        and "reprospec-" in line.split(":")[2].rsplit("/", 1)[-1]
    ]
    assert line  # the attempt's own cgroup, made for it (and removed after it)
    assert not Path(folder.parent, line.rsplit("/", 1)[-1]).exists()


def test_a_perturbation_the_fork_cannot_apply_is_an_infra_error(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As launch.py does for a fresh attempt: the reason, exit 126, never a plain run. The
    # engine checked the CPU; the fork is told one that is not there, as a CPU taken
    # offline between the two would be.
    def options(applied: Applied, refused: Path | None) -> dict[str, str]:
        return {**fork_options(applied, refused), "cpus": "4096"}

    monkeypatch.setattr(perturb_fork, "fork_options", options)
    execution, seen = probe(runner, tmp_path, {"cpus": 1})
    assert seen == {}  # the program never ran
    assert execution.infra_error is not None
    assert execution.infra_error.startswith("perturb cpus 4096 not applied: "), execution
    stderr = (tmp_path / "attempt-1" / "stderr.log").read_text()
    assert "reprospec: perturb cpus 4096 not applied" in stderr


def test_without_a_memory_cgroup_a_fork_takes_the_address_space_limit(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply, "make_memory_cgroup", lambda *_: (None, "none in this test"))
    execution, seen = probe(runner, tmp_path, {"memory_limit": "8g"})
    assert execution.returncode == 0, (tmp_path / "attempt-1" / "stderr.log").read_text()
    assert execution.launch == "forked", execution.launch_note
    assert "memory_limit=8.0 GiB (address-space limit RLIMIT_AS" in " ".join(execution.perturbed)
    assert seen["address_space"] == 8 * 2**30


@pytest.mark.parametrize(
    ("perturb", "reason"),
    [
        ({"hash_seed": 7}, "perturb.hash_seed: PYTHONHASHSEED is read when the interpreter starts"),
        (
            {"switch_interval": 1e-6, "malloc": "perturb"},
            "perturb.malloc=perturb: glibc's thread cache",
        ),
    ],
)
def test_a_perturbation_only_a_start_applies_runs_fresh_and_says_which(
    runner: LocalRunner, tmp_path: Path, perturb: dict[str, object], reason: str
) -> None:
    execution, seen = probe(runner, tmp_path, perturb)
    assert execution.returncode == 0
    assert execution.launch == "fresh"
    assert (execution.launch_note or "").startswith(f"ran fresh: {reason}"), execution.launch_note
    assert seen["ppid"] not in servers()
    if "hash_seed" in perturb:
        assert seen["hash_seed"] == "7"
    else:
        assert seen["switch"] == pytest.approx(1e-6)


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.parametrize("preload", [("torch",), ("marked",)])
def test_torch_pools_are_set_in_the_fork(
    runner: LocalRunner, tmp_path: Path, preload: tuple[str, ...]
) -> None:
    # Preloaded, torch's pools are set before the program runs; imported by the attempt
    # itself, right after that import, as in a fresh interpreter.
    perturb = {"torch": {"num_threads": 1, "interop_threads": 3}}
    execution, seen = probe(runner, tmp_path, perturb, "torch", preload=preload)
    assert execution.returncode == 0, (tmp_path / "attempt-1" / "stderr.log").read_text()
    assert execution.launch == "forked", execution.launch_note
    assert seen["torch_threads"] == 1
    assert seen["interop_threads"] == 3
    assert seen["omp"] == "1"
    assert seen["sum"] == 64.0 * 64 * 64


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to take one away")
def test_cpus_sizes_a_preloaded_torchs_pool_as_a_fresh_start_does(
    runner: LocalRunner, tmp_path: Path
) -> None:
    # A fresh interpreter's torch counts the CPUs of its affinity as it loads; the server's
    # torch loaded with all of them, so a fork under cpus=1 kept a pool of 2 or more threads.
    execution, seen = probe(runner, tmp_path, {"cpus": 1}, "torch", preload=("torch",))
    assert execution.returncode == 0, (tmp_path / "attempt-1" / "stderr.log").read_text()
    assert execution.launch == "forked", execution.launch_note
    assert len(seen["cpus"]) == 1  # type: ignore[arg-type]
    assert seen["torch_threads"] == 1
    # torch.num_threads still says it, over the CPUs' count.
    execution, seen = probe(
        runner,
        tmp_path,
        {"cpus": 1, "torch": {"num_threads": 2}},
        "torch",
        preload=("torch",),
        attempt=2,
    )
    assert execution.launch == "forked", execution.launch_note
    assert seen["torch_threads"] == 2
