"""GPU slots: the ids handed to attempts, each attempt its own CUDA_VISIBLE_DEVICES.

Slots are plain ids taken from `--gpus` or the outer CUDA_VISIBLE_DEVICES (never
the physical numbering behind it), so the scheduler works the same without a GPU.
The parent never touches CUDA: it only counts devices with `nvidia-smi -L`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence

# What CUDA_VISIBLE_DEVICES accepts: an index, or a GPU/MIG UUID.
_GPU_ID = re.compile(r"^(\d+|(GPU|MIG)-[0-9A-Za-z/-]+)$")


def parse_gpu_list(text: str) -> tuple[str, ...]:
    """`"0,1,3"` -> ("0", "1", "3"); blanks dropped; "" or "none" -> ()."""
    if text.strip().lower() in ("", "none", "-1"):
        return ()
    return tuple(part.strip() for part in text.split(",") if part.strip())


def visible_gpus(cli_value: str | None, environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The GPU ids this run may hand out: --gpus, else CUDA_VISIBLE_DEVICES, else nvidia-smi."""
    if cli_value is not None:
        slots = parse_gpu_list(cli_value)
        bad = [slot for slot in slots if not _GPU_ID.match(slot)]
        if bad:
            from reprospec.errors import UsageError

            raise UsageError(
                f"--gpus {cli_value}: {bad[0]!r} is not a GPU id "
                "(expected indexes like 0,1,3 or UUIDs like GPU-8f3c...)"
            )
        return slots
    if "CUDA_VISIBLE_DEVICES" in environ:
        return parse_gpu_list(environ["CUDA_VISIBLE_DEVICES"])
    return _nvidia_smi_ids()


def _nvidia_smi_ids() -> tuple[str, ...]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ()
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    lines = [line for line in out.stdout.splitlines() if line.startswith("GPU ")]
    return tuple(str(i) for i in range(len(lines)))


class GpuPool:
    """Hands out disjoint sets of slot ids; `take` blocks until enough are free."""

    def __init__(self, slots: Sequence[str]) -> None:
        self._free = list(slots)
        self.size = len(slots)
        self._cond = threading.Condition()

    def take(self, count: int, cancel: threading.Event | None = None) -> tuple[str, ...] | None:
        """`count` free slots (lowest first), or None when cancelled while waiting."""
        if count <= 0:
            return ()
        with self._cond:
            while len(self._free) < count:
                if cancel is not None and cancel.is_set():
                    return None
                self._cond.wait(timeout=0.2)
            taken, self._free = self._free[:count], self._free[count:]
            return tuple(taken)

    def give_back(self, slots: Sequence[str]) -> None:
        if not slots:
            return
        with self._cond:
            self._free.extend(slots)
            self._free.sort(key=_slot_order)
            self._cond.notify_all()


def _slot_order(slot: str) -> tuple[int, str]:
    return (int(slot), slot) if slot.isdigit() else (1 << 30, slot)
