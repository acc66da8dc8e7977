"""Which of `environment.perturb` a fork of a preload server (`run.preload`) can apply, and
what the fork is told to apply.

A forked attempt runs under its perturbations as a fresh one does, each applied where a
fresh attempt has it applied: launch.py's (CPUs, nice, the memory cgroup or RLIMIT_AS)
before the program's interpreter exists, the interpreter's (switch interval, gc thresholds,
torch's thread pools, from REPROSPEC_PERTURB) before its first line; the competitors run
beside it either way. The server is the unperturbed attempt's (its key leaves the
perturbation's variables out), so an amplify's arms fork from the base's server. What only a
process's start can apply runs fresh (`unforkable` says why).
"""

from __future__ import annotations

from pathlib import Path

from reprospec.core.sections import Perturb
from reprospec.perturb.apply import Applied


def unforkable(perturb: Perturb) -> str | None:
    """Why an attempt under `perturb` cannot fork from a preload server; None when the fork
    can apply every perturbation before the program runs. These are read only as a process
    starts: a fork would run without them."""
    if perturb.hash_seed is not None:
        return "perturb.hash_seed: PYTHONHASHSEED is read when the interpreter starts"
    if perturb.malloc in ("check", "strict"):
        return (
            f"perturb.malloc={perturb.malloc}: MALLOC_CHECK_ (with libc_malloc_debug.so on "
            "LD_PRELOAD) acts only from a process's start"
        )
    if perturb.malloc is not None:
        # mallopt(M_PERTURB) would set the byte in a fork, but no call turns the cache off.
        return (
            f"perturb.malloc={perturb.malloc}: glibc's thread cache is turned off (GLIBC_TUNABLES, "
            "so that every free is perturbed) only as a process starts"
        )
    torch = perturb.torch
    for name, value, variable in (
        ("caching_allocator", torch.caching_allocator, "PYTORCH_NO_CUDA_MEMORY_CACHING"),
        ("alloc_conf", torch.alloc_conf, "PYTORCH_CUDA_ALLOC_CONF"),
    ):
        if value is not None:
            return (
                f"perturb.torch.{name}: torch's CUDA allocator reads {variable} once per "
                "process, and that a fork's reads it after the fork (not at the server's "
                "import) is not verified"
            )
    return None


def fork_options(applied: Applied, refused: Path | None) -> dict[str, str]:
    """What a forked attempt applies as launch.py would (`--cpus 0,1` -> {"cpus": "0,1"}), and
    where it writes the reason when it cannot (then it exits 126, as launch.py does)."""
    options = applied.launch_options
    pairs = zip(options[::2], options[1::2], strict=True)
    out = {name.removeprefix("--"): value for name, value in pairs}
    if refused is not None and out:
        out["refused"] = str(refused)
    return out
