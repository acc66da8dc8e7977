"""Resource limits for local attempts: `memory` (RLIMIT_AS) and `shm_size` (a private /dev/shm).

`wrap_argv` prefixes the attempt's argv with `reprospec/process/launch.py`, which applies
the limits in the child and execs the attempt. A limit this machine cannot apply
becomes a warning for the report and the attempt runs without it.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from reprospec.core.sections import Environment
from reprospec.core.units import format_size

LAUNCH = Path(__file__).with_name("launch.py")
# Measured: under about 650 MB of address space `import torch` itself fails.
TORCH_IMPORT_FLOOR = 650 * 2**20


@functools.cache
def namespaces_permitted() -> str | None:
    """None if this machine lets us mount a private /dev/shm, else why not."""
    if not sys.platform.startswith("linux"):
        return f"private mount namespaces need Linux (this is {sys.platform})"
    probe = [sys.executable, "-S", "-E", str(LAUNCH), "--probe", "--shm-size", str(2**20)]
    try:
        # Its refusal quotes the kernel's or mount's words (a path among them): replaced.
        done = subprocess.run(probe, capture_output=True, text=True, errors="replace", timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return done.stderr.strip().removeprefix("reprospec: shm_size not applied: ") or "probe failed"


def wrap_argv(
    argv: Sequence[str],
    environment: Environment,
    launch_options: Sequence[str] = (),
    *,
    torch: bool = True,
) -> tuple[list[str], list[str]]:
    """Return (argv that applies the limits of `environment`, warnings for limits not applied).

    `launch_options` are more options for launch.py (an instance's `--barrier DIR
    --instance N`): with them, the argv always goes through launch.py. `torch`: whether
    the spec says it uses torch (AttemptPlan.uses_torch), whose import a small `memory`
    breaks; a command that says nothing of torch is not warned of it at every attempt.
    """
    options: list[str] = list(launch_options)
    warnings: list[str] = []
    shm = environment.shm_size
    if shm is not None:
        refused = namespaces_permitted()
        if refused is None:
            options += ["--shm-size", str(shm)]
        else:
            warnings.append(
                f"shm_size {format_size(shm)} not applied (/dev/shm is the machine's own): "
                f"{refused}; "
                "run as root or use the docker runner"
            )
    size = environment.memory
    if size is not None:
        memory = format_size(size)
        if environment.wants_gpu:
            # CUDA reserves tens of GB of virtual address space: RLIMIT_AS would break CUDA init.
            warnings.append(
                f"memory {memory} not applied: RLIMIT_AS breaks CUDA initialization; "
                "use the docker runner for a memory limit on GPU attempts"
            )
        else:
            options += ["--memory", str(size)]
            if torch and size < TORCH_IMPORT_FLOOR:
                warnings.append(
                    f"memory {memory} is below ~650 MB of address space: "
                    "`import torch` itself is likely to fail"
                )
    if not options:
        return list(argv), warnings
    return [sys.executable, "-S", "-E", str(LAUNCH), *options, "--", *argv], warnings
