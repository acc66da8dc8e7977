"""cuda-gdb on an attempt's GPU core dump (`environment.debug.cuda_coredump`), in batch.

The driver writes the core into the attempt folder (core/gpudebug.py CORE_PATTERN); once
every process of the attempt is gone, cuda-gdb opens the first core and prints the
faulting kernel, the focus, the backtrace and the PC's instructions. Its stdout, stderr
and exit status are kept as they are (CUDA_GDB_FILES): outcome/cudacore.py reads them,
and where cuda-gdb aborted (cuda-gdb 13.0 did on an H200 for cores whose warp had
exited, tests/data/gpu/coredump/) that is the reading's problem, never a guess.
The commands are the ones scripts/gpu/record.sh ran on the H200.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from reprospec.core import capped
from reprospec.core.gpudebug import CORE_GLOB, CUDA_GDB_FILES

TOOLKIT_PATH = "/usr/local/cuda/bin/cuda-gdb"
TIMEOUT_S = 60.0
OUTPUT_BYTES = 1 << 20
COMMANDS = (
    "set pagination off",
    "set confirm off",
    "set width 0",
    "info cuda devices",
    "info cuda kernels",
    "info cuda blocks",
    "info cuda warps",
    "info cuda lanes",
    "bt",
    "info frame",
    "x/6i $pc - 32",
    "info registers $pc",
)


def cuda_gdb_path() -> str | None:
    """cuda-gdb on PATH, else the toolkit's; None when neither."""
    found = shutil.which("cuda-gdb")
    if found:
        return found
    return TOOLKIT_PATH if os.access(TOOLKIT_PATH, os.X_OK) else None


def first_core(log_dir: Path) -> Path | None:
    """The attempt's first GPU core (by name: the driver names it by pid and host)."""
    cores = sorted(log_dir.glob(CORE_GLOB))
    return cores[0] if cores else None


def argv(executable: str, core: Path) -> list[str]:
    """cuda-gdb in batch on `core`: the core opened first, then each command."""
    out = [executable, "-batch", "-nx"]
    for command in (*COMMANDS[:3], f"target cudacore {core}", *COMMANDS[3:]):
        out += ["-ex", command]
    return out


def read_core(log_dir: Path, timeout_s: float = TIMEOUT_S) -> str | None:
    """cuda-gdb's output on the attempt's core, into its files; a warning when it could not run.

    Nothing is done (and None said) when the attempt left no core.
    """
    core = first_core(log_dir)
    if core is None:
        return None
    executable = cuda_gdb_path()
    if executable is None:
        return (
            f"environment.debug.cuda_coredump: {core.name} was written, but cuda-gdb is not "
            f"on PATH or at {TOOLKIT_PATH}: the driver's lines on stderr are all that was read"
        )
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    env.pop("PYTHONPATH", None)
    try:
        done = capped.run(argv(executable, core), limit=OUTPUT_BYTES, timeout_s=timeout_s, env=env)
    except OSError as exc:
        return f"cuda-gdb did not start: {exc.strerror or exc}"
    out, err, status = (log_dir / name for name in CUDA_GDB_FILES)
    out.write_bytes(done.stdout)
    err.write_bytes(done.stderr)
    status.write_text(f"{done.returncode}\n")
    if done.timed_out:
        return f"cuda-gdb on {core.name} was stopped after {timeout_s:.0f}s"
    return None


__all__ = ["COMMANDS", "argv", "cuda_gdb_path", "first_core", "read_core"]
