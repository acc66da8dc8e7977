"""GPU slots: the ids handed to attempts, each attempt its own CUDA_VISIBLE_DEVICES.

Slots are plain ids taken from `--gpus` or the outer CUDA_VISIBLE_DEVICES (never
the physical numbering behind it), so the scheduler works the same without a GPU.
The parent never touches CUDA: it only lists devices with `nvidia-smi -L`.
`--gpus` ids are checked against the GPUs the machine has (CUDA_VISIBLE_DEVICES
when set, else `nvidia-smi -L`; without either there are none): an unknown id is
a usage error, never a slot handed to an attempt. What lists them is machinegpus.py.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from reprospec.core.runoptions import gpu_ids, parse_gpu_list

if TYPE_CHECKING:
    from reprospec.pipeline.machinegpus import MachineGpus


def visible_gpus(
    cli_value: str | None,
    environ: Mapping[str, str] = os.environ,
    *,
    machine: MachineGpus | None = None,
) -> tuple[str, ...]:
    """The GPU ids this run may hand out: --gpus, else CUDA_VISIBLE_DEVICES, else nvidia-smi.

    `--gpus` ids are checked against `machine` (default: this machine, machine_gpus):
    an id the machine does not have is a UsageError naming the ones it has.
    """
    if (
        cli_value is None
        and "CUDA_VISIBLE_DEVICES" not in environ
        and shutil.which("nvidia-smi") is None
    ):
        return ()  # nothing names a GPU: the lister and its classes are not imported
    from reprospec.pipeline import machinegpus

    if cli_value is not None:
        slots = gpu_ids(cli_value)
        if slots:
            machinegpus.check_gpu_ids(
                cli_value, slots, machine or machinegpus.machine_gpus(environ)
            )
        return slots
    if "CUDA_VISIBLE_DEVICES" in environ:
        return parse_gpu_list(environ["CUDA_VISIBLE_DEVICES"])
    return tuple(gpu.index for gpu in machinegpus.nvidia_smi_list()[0])


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
