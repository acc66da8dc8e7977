"""compute-sanitizer for `environment.debug.compute_sanitizer`: where it is, when it failed itself.

The binary comes from the CUDA toolkit (on PATH, or `/usr/local/cuda/bin`) or from
the PyPI wheel `nvidia-cuda-sanitizer-api`, which installs no script on PATH: it puts
`nvidia/cu13/bin/compute-sanitizer` in the site-packages of the interpreter it was
installed into (the attempt's interpreter, asked once in a child; the engine imports
nothing of it).

On a machine without a usable GPU, compute-sanitizer never starts the program: it
prints its own error, nothing of the program's, and exits 255 (recorded on this CPU
machine: tests/data/sanitizer/). Where the machine has a GPU but the attempt sees none
(`CUDA_VISIBLE_DEVICES=-1`, recorded on an H200: tests/data/gpu/sanitizer/), the program
does start, prints, fails its first CUDA call with "no CUDA-capable device is detected
(cudaErrorNoDevice)" and exits 1, and compute-sanitizer replaces that status with its
own 255 ("terminated before first instrumented API call"). Both are `infra-error` with
the sanitizer's words, never a crash or an error of the program.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

from reprospec.core import capped

INSTALL_HINT = "pip install nvidia-cuda-sanitizer-api (into the attempt's interpreter)"
# Where the wheels put it, relative to a site-packages folder (cu13: nvidia-cuda-sanitizer-api;
# cu12: nvidia-cuda-sanitizer-api-cu12).
WHEEL_PATHS = (
    "nvidia/cu13/bin/compute-sanitizer",
    "nvidia/cuda_sanitizer_api/bin/compute-sanitizer",
)
TOOLKIT_PATHS = ("/usr/local/cuda/bin/compute-sanitizer",)
# compute-sanitizer's own failure (never a status of the program under it).
OWN_FAILURE_EXIT = 255
# What it says when the program never reached CUDA under it (recorded: tests/data/sanitizer/).
NEVER_STARTED = "Target application terminated before first instrumented API call"
# What the program's own output says when the attempt had no device to use (the CUDA
# runtime's wording and its error name, recorded: tests/data/gpu/sanitizer/).
NO_DEVICE = ("no CUDA-capable device is detected", "cudaErrorNoDevice")
_PREFIX = "========= "
_SYS_PATH_CODE = "import json, sys; print(json.dumps(sys.path))"


@functools.cache
def find(python: str) -> str | None:
    """The compute-sanitizer for attempts of `python`: PATH, its site-packages, the toolkit."""
    on_path = shutil.which("compute-sanitizer")
    if on_path:
        return on_path
    for folder in _sys_path(python):
        for relative in WHEEL_PATHS:
            candidate = Path(folder) / relative
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    for candidate_text in TOOLKIT_PATHS:
        if os.access(candidate_text, os.X_OK):
            return candidate_text
    return None


def _sys_path(python: str) -> list[str]:
    """`python`'s sys.path (its site-packages among them); [] when it does not answer."""
    try:
        done = capped.run([python, "-c", _SYS_PATH_CODE], limit=1 << 20, timeout_s=60)
    except OSError:
        return []
    if done.returncode != 0 or done.timed_out:
        return []
    try:
        paths = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return []
    return [p for p in paths if isinstance(p, str) and p]


def own_failure(returncode: int | None, log_text: str, program_output: bytes) -> str | None:
    """The reason, when compute-sanitizer failed before the program used CUDA; else None.

    All three must hold: its own exit status, its "terminated before first
    instrumented API call", and either not a byte of output from the program or the
    program saying it found no CUDA device. A program that ran and failed otherwise
    under it printed something else or exited otherwise.
    """
    if returncode != OWN_FAILURE_EXIT or NEVER_STARTED not in log_text:
        return None
    said_by_program = program_output.decode("utf-8", "replace")
    no_device = next((words for words in NO_DEVICE if words in said_by_program), None)
    if said_by_program.strip() and no_device is None:
        return None
    said = [
        line.removeprefix(_PREFIX).strip()
        for line in log_text.splitlines()
        if line.startswith(_PREFIX) and "COMPUTE-SANITIZER" not in line
    ]
    detail = "; ".join(s for s in said if s)[:400]
    if no_device is not None:
        return (
            f"compute-sanitizer: the program found no CUDA device ({no_device}) and "
            f"compute-sanitizer exited 255: {detail}. The attempt saw no GPU "
            "(CUDA_VISIBLE_DEVICES, environment.gpus, --gpus)"
        )
    return (
        f"compute-sanitizer could not start the program (exit 255, no output from it): "
        f"{detail}. It needs a GPU and the NVIDIA driver (libcuda) in the attempt"
    )
