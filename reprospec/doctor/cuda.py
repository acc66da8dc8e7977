"""The CUDA libraries the loader sees, the compute-sanitizer found, and the CUDA smoke test.

`ldconfig -p` says which CUDA libraries a program on this machine would load (the
driver's libcuda, the runtime, cuDNN, NCCL, cuBLAS, NVRTC, ...), without loading
any. The smoke test is a tiny torch CUDA op in a child (the engine never imports
torch): the one check that a CUDA program really runs here. Pure functions of their
inputs; commands/doctor.py runs ldconfig and the child.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reprospec.core.frozen import frozen
from reprospec.doctor.check import NO_GPU, Check

# Matched at the start of a library's name: `libicudata` must not pass as CUDA.
CUDA_LIBRARIES = (
    "libcuda",
    "libcudart",
    "libcudnn",
    "libnccl",
    "libcublas",
    "libcublasLt",
    "libnvrtc",
    "libcufft",
    "libcurand",
    "libcusparse",
    "libcusolver",
    "libnvJitLink",
    "libcupti",
    "libnvidia-ml",
)
_LINE = re.compile(r"^\s*(?P<name>\S+)\s+\((?P<flags>[^)]*)\)\s+=>\s+(?P<path>\S.*?)\s*$")
# A library's base name: `libcudart.so.13` -> `libcudart`, `libcudnn_ops.so.9` -> `libcudnn_ops`.
_BASE = re.compile(r"^(?P<base>lib[A-Za-z0-9_+-]+?)\.so")
SMOKE_CODE = (
    "import torch\n"
    "x = torch.arange(4, device='cuda')\n"
    "y = (x * 2).sum()\n"
    "torch.cuda.synchronize()\n"
    "print('smoke', y.item(), torch.cuda.get_device_name(0))\n"
)


@frozen
class Library:
    """One entry of `ldconfig -p`: `libcudart.so.13` at its path."""

    name: str
    path: str


def cuda_libraries(ldconfig_output: str) -> tuple[Library, ...]:
    """The CUDA libraries in `ldconfig -p` output, in its order, without the unversioned links."""
    found: list[Library] = []
    for line in ldconfig_output.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        name = match["name"]
        base = _BASE.match(name)
        if base is None or not any(
            base["base"] == lib or base["base"].startswith(f"{lib}_") for lib in CUDA_LIBRARIES
        ):
            continue
        if name.endswith(".so") and any(f.name.startswith(f"{name}.") for f in found):
            continue  # the development link beside the versioned library
        found.append(Library(name, match["path"]))
    return tuple(found)


def check_cuda_libraries(libraries: Sequence[Library] | None, problem: str = "") -> Check:
    """Which CUDA libraries the loader sees (and whether the driver's libcuda is among them)."""
    if libraries is None:
        return Check("cuda-libraries", "skipped", f"ldconfig -p did not run: {problem}")
    if not libraries:
        return Check("cuda-libraries", "skipped", "no CUDA library in the loader's cache")
    names = ", ".join(sorted({lib.name for lib in libraries}))
    if not any(lib.name.startswith("libcuda.so") for lib in libraries):
        return Check(
            "cuda-libraries",
            "pass",
            f"{names} (no libcuda.so: the NVIDIA driver's library is not installed, so no "
            "program here reaches a GPU; a wheel's own libraries are not listed by ldconfig)",
        )
    return Check("cuda-libraries", "pass", names)


def check_compute_sanitizer(path: str | None) -> Check:
    """Where `environment.debug.compute_sanitizer` finds its binary."""
    if path is None:
        return Check(
            "sanitizer",
            "skipped",
            "not found (environment.debug.compute_sanitizer cells would be infra-error)",
            "pip install nvidia-cuda-sanitizer-api into the attempts' interpreter",
        )
    return Check("sanitizer", "pass", path)


def check_cuda_smoke(has_gpu: bool, returncode: int | None, output: str) -> Check:
    """The smoke test's result: a torch CUDA op in a child; skipped without a GPU."""
    if not has_gpu:
        return Check("cuda-smoke", "skipped", f"{NO_GPU}: no CUDA op to run")
    if returncode == 0 and "smoke 12" in output:
        line = next(ln for ln in output.splitlines() if ln.startswith("smoke"))
        return Check("cuda-smoke", "pass", f"a torch CUDA op ran: {line.removeprefix('smoke 12 ')}")
    said = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    detail = said[-1] if said else "no output"
    status = "timed out" if returncode is None else f"exit {returncode}"
    return Check(
        "cuda-smoke",
        "fail",
        f"a torch CUDA op failed in a child ({status}): {detail[:300]}",
        "run nvidia-smi; check the driver, CUDA_VISIBLE_DEVICES and the cuda-driver check",
    )
