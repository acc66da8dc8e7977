"""The GPUs this machine has, for the check of `--gpus` ids and for the slots a run hands
out (pipeline/gpus.py's `visible_gpus`): `nvidia-smi -L` read, or CUDA_VISIBLE_DEVICES.

Its own module, imported where `--gpus` or CUDA_VISIBLE_DEVICES is given or nvidia-smi is
installed: a run on a machine without GPUs never builds its classes (issue 30, item 4).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.runoptions import parse_gpu_list, slots_said


@frozen
class Gpu:
    """One GPU this run may use, by every id that names it (CUDA_VISIBLE_DEVICES takes any)."""

    index: str
    uuid: str | None = None
    name: str = ""
    mig: tuple[str, ...] = ()  # UUIDs of its MIG devices

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.index, *((self.uuid,) if self.uuid else ()), *self.mig)


@frozen
class MachineGpus:
    """The GPUs this machine offers the run, where that came from, or why there are none."""

    gpus: tuple[Gpu, ...]
    source: str  # "nvidia-smi -L" or "CUDA_VISIBLE_DEVICES=2,3"; why there are none otherwise

    def known(self, gpu_id: str) -> bool:
        return any(gpu_id in gpu.ids for gpu in self.gpus)

    def device_of(self, gpu_id: str) -> str:
        """The device an id names: a MIG device by its UUID, a whole GPU by its index."""
        for gpu in self.gpus:
            if gpu_id in gpu.mig:
                return gpu_id
            if gpu_id in gpu.ids:
                return gpu.index
        return gpu_id

    def listing(self) -> str:
        """`GPUs 0, 1, 2, 3 (nvidia-smi -L: 4x NVIDIA GeForce RTX 3090)`.

        "GPU 0", never a bare "0": on the one-GPU H200, "it has 0 (...)" read as "none".
        """
        from reprospec.core.words import noun  # not imported with this module

        names = sorted({gpu.name for gpu in self.gpus if gpu.name})
        what = f": {len(self.gpus)}x {names[0]}" if len(names) == 1 else ""
        indexes = ", ".join(gpu.index for gpu in self.gpus)
        return f"{noun(len(self.gpus), 'GPU')} {indexes} ({self.source}{what})"


_SMI_GPU = Lazy(r"^GPU (\d+): (.*?)(?:\s*\(UUID: (GPU-[^)]+)\))?\s*$")
_SMI_MIG = Lazy(r"^\s+MIG .*\(UUID: (MIG-[^)]+)\)\s*$")


def parse_nvidia_smi_list(text: str) -> tuple[Gpu, ...]:
    """The GPUs (and their MIG devices) in `nvidia-smi -L` output."""
    gpus: list[Gpu] = []
    for line in text.splitlines():
        found = _SMI_GPU.match(line)
        if found:
            gpus.append(Gpu(index=found[1], uuid=found[3], name=found[2]))
            continue
        mig = _SMI_MIG.match(line)
        if mig and gpus:
            last = gpus[-1]
            gpus[-1] = Gpu(last.index, last.uuid, last.name, (*last.mig, mig[1]))
    return tuple(gpus)


def machine_gpus(environ: Mapping[str, str] = os.environ) -> MachineGpus:
    """The GPUs the run may hand out: CUDA_VISIBLE_DEVICES when set, else `nvidia-smi -L`.

    Without nvidia-smi and without CUDA_VISIBLE_DEVICES there are none (the parent
    never initialises CUDA to find out).
    """
    listed, problem = nvidia_smi_list()
    if "CUDA_VISIBLE_DEVICES" in environ:
        value = environ["CUDA_VISIBLE_DEVICES"]
        gpus = []
        for gpu_id in parse_gpu_list(value):
            match = next((gpu for gpu in listed if gpu_id in gpu.ids), None)
            gpus.append(match if match is not None else Gpu(index=gpu_id))
        if not gpus:
            return MachineGpus((), f"{slots_said(value)} hides every GPU")
        return MachineGpus(tuple(gpus), slots_said(value))
    if listed:
        return MachineGpus(listed, "nvidia-smi -L")
    return MachineGpus((), problem)


def check_gpu_ids(option: str, slots: Sequence[str], machine: MachineGpus) -> None:
    """UsageError (exit 2) unless every id of `--gpus` names a distinct GPU of `machine`."""
    from reprospec.core.caller import said
    from reprospec.errors import UsageError

    if not slots:
        return
    # Named as the caller gave it: `gpus` to the Python API's (RunOptions(gpus=...)).
    gpus = f"{said('--gpus', 'gpus')} {option}"
    if not machine.gpus:
        raise UsageError(f"{gpus}: this machine has no GPU ({machine.source})")
    unknown = [slot for slot in slots if not machine.known(slot)]
    if unknown:
        raise UsageError(
            f"{gpus}: no GPU {', '.join(unknown)} on this machine; it has {machine.listing()}"
        )
    # Two ids of one device (its index and its UUID) would give two attempts one GPU.
    seen: dict[str, str] = {}
    for slot in slots:
        device = machine.device_of(slot)
        if device in seen:
            raise UsageError(f"{gpus}: {seen[device]} and {slot} are the same GPU")
        seen[device] = slot


def nvidia_smi_list() -> tuple[tuple[Gpu, ...], str]:
    """(GPUs of `nvidia-smi -L`, why there are none when there are none)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return (), "nvidia-smi is not installed and CUDA_VISIBLE_DEVICES is not set"
    try:
        out = subprocess.run(
            [exe, "-L"],
            capture_output=True,
            text=True,
            # A GPU's name or a driver's message in any bytes: replaced, not a traceback.
            errors="replace",
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), f"nvidia-smi -L did not run: {exc}"
    gpus = parse_nvidia_smi_list(out.stdout) if out.returncode == 0 else ()
    if gpus:
        return gpus, ""
    said = (out.stdout + out.stderr).strip().splitlines()
    detail = said[-1].strip() if said else "no output"
    return (), f"nvidia-smi -L exited with {out.returncode}: {detail}"
