"""Which perturbations a fork of a preload server can apply (perturb/apply.py's `unforkable`),
and what the fork is told to apply as launch.py would (`fork_options`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.sections import Perturb
from reprospec.perturb.apply import Applied
from reprospec.perturb.fork import fork_options, unforkable


@pytest.mark.parametrize(
    "section",
    [
        {"switch_interval": 1e-6},
        {"gc": "aggressive"},
        {"cpus": 1},
        {"nice": 5},
        {"cpu_load": 2, "io_load": 1},
        {"memory_limit": "256m"},
        {"torch": {"num_threads": 1, "interop_threads": 2}},
    ],
)
def test_what_a_fork_applies_forks(section: dict[str, object]) -> None:
    assert unforkable(Perturb.from_section(section)) is None


@pytest.mark.parametrize(
    ("section", "reason"),
    [
        ({"hash_seed": 3}, "perturb.hash_seed: PYTHONHASHSEED is read when the interpreter"),
        ({"malloc": "perturb"}, "perturb.malloc=perturb: glibc's thread cache is turned off"),
        ({"malloc": 7}, "perturb.malloc=7: glibc's thread cache"),
        ({"malloc": "check"}, "perturb.malloc=check: MALLOC_CHECK_"),
        ({"torch": {"caching_allocator": False}}, "perturb.torch.caching_allocator: torch's CUDA"),
        ({"torch": {"alloc_conf": "expandable_segments:True"}}, "perturb.torch.alloc_conf:"),
        ({"switch_interval": 1e-6, "hash_seed": 3}, "perturb.hash_seed:"),
    ],
)
def test_what_only_a_start_applies_runs_fresh(section: dict[str, object], reason: str) -> None:
    said = unforkable(Perturb.from_section(section))
    assert said is not None
    assert said.startswith(reason)


def test_the_fork_gets_launch_pys_options_and_where_to_say_it_could_not() -> None:
    applied = Applied(launch_options=("--cpus", "0,1", "--nice", "5", "--cgroup", "/cg/x"))
    assert fork_options(applied, Path("/r/perturb-refused.txt")) == {
        "cpus": "0,1",
        "nice": "5",
        "cgroup": "/cg/x",
        "refused": "/r/perturb-refused.txt",
    }
    assert fork_options(Applied(), None) == {}
