"""How a container gets environment.perturb (perturb/container.py), without an engine."""

from __future__ import annotations

import os

import pytest

from reprospec.core.sections import Perturb
from reprospec.perturb.apply import PerturbRefused, cpus_note
from reprospec.perturb.container import ContainerPerturb, for_container
from reprospec.runners.docker.engine import perturbed_config
from reprospec.runners.docker.sdk import ContainerConfig


def _config() -> ContainerConfig:
    return {
        "image": "i",
        "entrypoint": ["python3"],
        "command": ["-c", "pass"],
        "name": "n",
        "detach": True,
        "labels": {},
        "mem_limit": 1 << 30,
    }


def test_a_plain_attempt_changes_nothing() -> None:
    applied = for_container(Perturb(), memory=1 << 30)
    assert applied == ContainerPerturb()
    config = _config()
    perturbed_config(config, applied)
    assert config == _config()


def test_cpus_nice_and_memory_reach_the_container_config() -> None:
    first = min(os.sched_getaffinity(0))
    applied = for_container(Perturb(cpus=1, nice=3, memory_limit=64 << 20), memory=1 << 30)
    config = _config()
    perturbed_config(config, applied)
    assert config["cpuset_cpus"] == str(first)
    assert config["mem_limit"] == config["memswap_limit"] == 64 << 20
    assert [*config["entrypoint"], *config["command"]] == [
        "nice",
        "-n",
        "3",
        "python3",
        "-c",
        "pass",
    ]
    assert applied.cpu_list == (first,)


def test_the_spec_memory_limit_wins_when_lower_and_says_so() -> None:
    applied = for_container(Perturb(memory_limit=1 << 30), memory=64 << 20)
    assert applied.memory == 64 << 20
    assert applied.notes == ("memory_limit=1.0 GiB (environment.memory 64.0 MiB is lower)",)


def test_what_a_container_cannot_get_is_refused_by_name() -> None:
    with pytest.raises(PerturbRefused, match=r"^perturb.nice=-1 not applied: .*CAP_SYS_NICE"):
        for_container(Perturb(nice=-1))
    too_many = len(os.sched_getaffinity(0)) + 1
    with pytest.raises(PerturbRefused, match=rf"^perturb.cpus={too_many} not applied"):
        for_container(Perturb(cpus=too_many))


def test_a_cpu_count_is_said_as_a_count_then_the_cpus_it_chose() -> None:
    # `cpus: 1` was said `cpus=0 (affinity)` (the CPU list under the field's name): read as
    # "zero CPUs" in the line that says what an amplified run ran under.
    first = min(os.sched_getaffinity(0))
    assert for_container(Perturb(cpus=1), memory=1 << 30).notes == (
        f"cpus=1 (docker --cpuset-cpus: CPU {first})",
    )
    assert cpus_note(1, (first,), "affinity") == f"cpus=1 (affinity: CPU {first})"
    assert cpus_note((0, 2), (0, 2), "affinity") == "cpus=0,2 (affinity)"
