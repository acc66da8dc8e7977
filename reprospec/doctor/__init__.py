"""`reprospec doctor`: compatibility checks from a captured environment (a dict from envinfo).

Each check is pass / warn / fail / skipped with one line of why and, unless it
passed, one line of what to do. Without a GPU, GPU checks are skipped, never failed.
`machine.py` checks the machine, `needs.py` what a spec needs of it, `engine.py`
how the engine starts attempts here; `check.py` holds what they are made of. Pure
functions, no torch.
"""

from __future__ import annotations

from reprospec.doctor.check import NO_GPU, Captured, Check, Status, version_tuple
from reprospec.doctor.engine import check_native_stacks, check_starter
from reprospec.doctor.machine import (
    arch_ok,
    check_arch_list,
    check_cpu_capability,
    check_cuda_available,
    check_driver,
    check_nvcc,
    check_torch,
    check_wsl,
)
from reprospec.doctor.needs import (
    Needs,
    batchformat_size,
    check_device,
    check_limits,
    check_memory,
    check_shm,
    check_spec_environment,
    environment_mismatches,
    needs_of,
    satisfies,
)


def run_checks(env: Captured, needs: Needs | None = None) -> list[Check]:
    """Every check, machine first, then what the spec needs (when a spec was given)."""
    checks = [
        check_torch(env),
        check_cuda_available(env),
        check_driver(env),
        check_arch_list(env),
        check_cpu_capability(env),
        check_shm(env, needs or Needs()),
        check_wsl(env),
        check_nvcc(env),
    ]
    if needs is not None:
        checks += [
            check_device(env, needs),
            check_memory(env, needs),
            check_limits(needs),
            check_spec_environment(env, needs),
        ]
    return checks


__all__ = [
    "NO_GPU",
    "Captured",
    "Check",
    "Needs",
    "Status",
    "arch_ok",
    "batchformat_size",
    "check_native_stacks",
    "check_starter",
    "environment_mismatches",
    "needs_of",
    "run_checks",
    "satisfies",
    "version_tuple",
]
