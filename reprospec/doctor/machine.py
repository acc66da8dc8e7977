"""The machine's checks: torch, CUDA, the driver, GPU architectures, CPU kernels, WSL, nvcc.

Pure functions of a captured environment (no torch here). Without a GPU, GPU
checks are skipped, never failed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reprospec.core.runoptions import parse_gpu_list, slots_said
from reprospec.core.words import plural
from reprospec.doctor.check import (
    NO_GPU,
    NO_TORCH,
    Check,
    Status,
    gpus,
    seen_devices,
    torch_state,
    unseen_ids,
    unseen_said,
    version_tuple,
)
from reprospec.environment.captured import Captured, section, strings, text

# Minimum Linux driver per CUDA toolkit (NVIDIA's CUDA release notes); used when
# nvidia-smi's banner (which states the newest CUDA the driver supports) is unavailable.
MIN_DRIVER: dict[tuple[int, ...], str] = {
    (13, 0): "580.65.06",
    (12, 9): "575.51.03",
    (12, 8): "570.26",
    (12, 6): "560.28.03",
    (12, 5): "555.42.02",
    (12, 4): "550.54.14",
    (12, 3): "545.23.06",
    (12, 2): "535.54.03",
    (12, 1): "530.30.02",
    (12, 0): "525.60.13",
    (11, 8): "520.61.05",
    (11, 7): "515.43.04",
    (11, 6): "510.39.01",
    (11, 5): "495.29.05",
    (11, 4): "470.42.01",
    (11, 3): "465.19.01",
    (11, 2): "460.27.03",
    (11, 1): "455.23",
    (11, 0): "450.36.06",
}


def check_torch(env: Captured, numpy_used: bool = True) -> Check:
    """Whether torch imports, and its numpy bridge with it; `numpy_used=False` (a spec whose
    workloads are the harness's builtins only, which never touch numpy) passes a failing
    bridge, saying so: a workload with 2 DataLoader workers runs and passes without numpy."""
    torch = section(env, "torch")
    if torch.get("installed") is False:
        return Check(
            "torch",
            "fail",
            NO_TORCH,
            "pip install torch (CI: pip install torch==2.13.0)",
        )
    if torch.get("error"):
        return Check(
            "torch",
            "fail",
            f"import torch fails: {torch['error']}",
            "reinstall torch in a clean environment; check LD_LIBRARY_PATH",
        )
    if not torch.get("version"):
        return Check("torch", "skipped", "torch was not captured")
    build = f"CUDA {torch['cuda']}" if torch.get("cuda") else "CPU-only"
    imports = f"torch {torch['version']} ({build} build) imports"
    bridge = numpy_bridge(env)
    if bridge is None:
        return Check("torch", "pass", imports)
    numpy = section(env, "packages").get("numpy")
    without = f"{imports}, but not its numpy bridge ({bridge}" + (
        f"; numpy {numpy} is installed)" if numpy else "; numpy is not installed)"
    )
    if not numpy_used:
        unused = "the spec's builtin models and datasets do not use it"
        return Check("torch", "pass", f"{without}: {unused}")
    return Check(
        "torch",
        "warn",
        f"{without}: Tensor.numpy(), torch.from_numpy and a DataLoader batching numpy arrays fail",
        (
            "install a numpy this torch was built against (a torch built for numpy 1.x needs "
            "pip install 'numpy<2')"
            if numpy
            else "pip install numpy"
        ),
    )


def numpy_bridge(env: Captured) -> str | None:
    """Why torch's numpy bridge fails in the captured interpreter (`RuntimeError: Numpy is
    not available`), or None where it works or was not captured (an older capture). torch
    imports without numpy, or with a numpy of another ABI, and only warns `Failed to
    initialize NumPy`: `doctor` passed it as fine."""
    torch = section(env, "torch")
    if torch.get("numpy") is not None or "numpy" not in section(torch, "errors"):
        return None
    return text(section(torch, "errors").get("numpy")) or "it fails"


def check_cuda_available(env: Captured) -> Check:
    torch = section(env, "torch")
    found = gpus(env)
    if not found and not torch.get("device_count"):
        return Check("cuda", "skipped", NO_GPU)
    count = torch.get("device_count")
    count = count if isinstance(count, int) else 0
    names = ", ".join(sorted({str(g.get("name")) for g in found})) or plural(count, "device")
    if torch.get("version") and not torch.get("cuda"):
        return Check(
            "cuda",
            "fail",
            f"GPU present ({names}) but torch {torch['version']} is a CPU-only build",
            "install a CUDA wheel, e.g. pip install torch --index-url https://download.pytorch.org/whl/cu126",
        )
    if torch.get("cuda_available") is False:
        return Check(
            "cuda",
            "fail",
            f"GPU present ({names}) but torch.cuda.is_available() is False",
            "check the driver (nvidia-smi), CUDA_VISIBLE_DEVICES and the cuda-driver check",
        )
    return Check(
        "cuda",
        "pass",
        f"torch sees {plural(count or len(found), 'CUDA device')}: {names}",
    )


def check_gpu_slots(env: Captured, visible: str) -> Check:
    """What `run` does with a set CUDA_VISIBLE_DEVICES: it hands out its ids as the GPU
    slots (pipeline/gpus.py), whatever this machine has. With `CUDA_VISIBLE_DEVICES=0,1`
    and no GPU, doctor said only "no CUDA device" while `run` gave each attempt an id, and
    its `device` check failed a spec of `gpus: 1` as "its cells will end as infra-error"
    where run ran them."""
    ids = parse_gpu_list(visible)
    shown = slots_said(visible)
    if not ids:
        return Check(
            "gpu-slots",
            "pass",
            f"{shown} names no GPU: run hands out no GPU slots "
            "(a cell with environment.gpus is infra-error, not run)",
        )
    slots = f"run hands out its {plural(len(ids), 'id')} ({', '.join(ids)}) as GPU slots"
    if seen_devices(env):
        unseen = unseen_ids(env, ids)
        if unseen:
            return Check(
                "gpu-slots",
                "warn",
                f"{shown}: {slots}, each attempt its own, but {unseen_said(unseen)}: "
                "an attempt handed one finds no GPU behind it",
                "give CUDA_VISIBLE_DEVICES the ids of this machine's GPUs (nvidia-smi -L)",
            )
        return Check("gpu-slots", "pass", f"{shown}: {slots}, each attempt its own")
    return Check(
        "gpu-slots",
        "warn",
        f"{shown}: {slots}, each attempt its own, but {NO_GPU} is seen here (neither "
        "nvidia-smi nor torch finds one): a cell's program finds no GPU behind its id",
        "unset CUDA_VISIBLE_DEVICES on a machine without GPUs, or run where these ids name GPUs",
    )


def check_driver(env: Captured) -> Check:
    torch, nvidia = section(env, "torch"), section(env, "nvidia")
    if not gpus(env):
        return Check("cuda-driver", "skipped", NO_GPU)
    runtime: tuple[int, ...] = version_tuple(torch.get("cuda"))[:2]
    if not runtime:
        return Check("cuda-driver", "skipped", f"{torch_state(env)}: no CUDA runtime to match")
    supported: tuple[int, ...] = version_tuple(nvidia.get("cuda_version"))[:2]
    driver = nvidia.get("driver_version")
    if not supported and driver:
        # No banner: the newest toolkit whose minimum driver this driver meets.
        fits = [
            cuda
            for cuda, need in MIN_DRIVER.items()
            if version_tuple(driver) >= version_tuple(need)
        ]
        supported = max(fits) if fits else (0, 0)
    if not supported:
        return Check("cuda-driver", "skipped", "driver version unknown (nvidia-smi not found)")
    have = ".".join(map(str, supported))
    want = ".".join(map(str, runtime))
    if runtime[0] > supported[0]:
        return Check(
            "cuda-driver",
            "fail",
            f"torch needs CUDA {want} but driver {driver} supports at most CUDA {have}",
            f"upgrade the driver to >= {MIN_DRIVER.get(runtime, 'a newer release')}, "
            f"or install a torch wheel built for CUDA {supported[0]}.x",
        )
    if runtime > supported:
        return Check(
            "cuda-driver",
            "warn",
            f"torch's CUDA {want} is newer than driver {driver}'s CUDA {have}: "
            "minor-version compatibility only (PTX JIT and newer APIs fail)",
            f"upgrade the driver to >= {MIN_DRIVER.get(runtime, 'a newer release')}",
        )
    return Check(
        "cuda-driver", "pass", f"driver {driver} supports CUDA {have} >= torch's CUDA {want}"
    )


def arch_ok(capability: str, arch_list: Sequence[str]) -> Status:
    """pass: a cubin runs it; warn: only PTX (JIT-compiled at start-up); fail: nothing runs it."""
    major, minor = (*version_tuple(capability), 0, 0)[:2]
    cubins: list[tuple[int, int]] = []
    ptx: list[tuple[int, int]] = []
    for arch in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)[af]?", arch)
        if match:
            (cubins if match.group(1) == "sm" else ptx).append(
                (int(match.group(2)), int(match.group(3)))
            )
    # A cubin runs on the same major with an equal or higher minor; PTX on any later GPU.
    if any(m == major and n <= minor for m, n in cubins):
        return "pass"
    if any((m, n) <= (major, minor) for m, n in ptx):
        return "warn"
    return "fail"


def check_arch_list(env: Captured) -> Check:
    found = gpus(env)
    if not found:
        return Check("gpu-arch", "skipped", NO_GPU)
    arch_list = strings(section(env, "torch").get("arch_list"))
    if not arch_list:
        why = torch_state(env)
        if why == "torch is a CPU-only build":
            why = "torch reports no compiled CUDA architectures (CPU-only build?)"
        return Check("gpu-arch", "skipped", why)
    results = []
    for gpu in found:
        if not gpu.get("capability"):
            return Check(
                "gpu-arch",
                "skipped",
                f"compute capability of {gpu.get('name')} unknown "
                "(driver too old for nvidia-smi's compute_cap)",
            )
        results.append((gpu, arch_ok(str(gpu["capability"]), arch_list)))
    compiled = " ".join(arch_list)
    for gpu, status in results:
        if status == "fail":
            sm = "sm_" + str(gpu["capability"]).replace(".", "")
            return Check(
                "gpu-arch",
                "fail",
                f"{gpu.get('name')} is {sm}, not in torch's compiled architectures ({compiled}): "
                "'no kernel image is available for execution on the device'",
                f"install a torch build that includes {sm} (newer CUDA wheel) or build with "
                f"TORCH_CUDA_ARCH_LIST={gpu['capability']}",
            )
    for gpu, status in results:
        if status == "warn":
            return Check(
                "gpu-arch",
                "warn",
                f"{gpu.get('name')} ({gpu['capability']}) runs only through PTX JIT "
                f"({compiled}): slow first start, and it fails if the driver is older than the PTX",
                "use a torch build with a matching sm_ cubin",
            )
    caps = ", ".join(f"{g.get('name')} {g['capability']}" for g, _ in results)
    return Check("gpu-arch", "pass", f"{caps} covered by {compiled}")


CAPABILITY_FLAGS = {
    "AVX512": ("avx512f", "avx512bw", "avx512vl", "avx512dq"),
    "AVX2": ("avx2", "fma"),
}


def check_cpu_capability(env: Captured) -> Check:
    capability = text(section(env, "torch").get("cpu_capability"))
    flags = set(strings(section(env, "cpu").get("flags")))
    if not capability:
        torch = section(env, "torch")
        if torch.get("installed") is False or torch.get("error"):
            return Check("cpu-capability", "skipped", torch_state(env))
        return Check("cpu-capability", "skipped", "torch's CPU capability was not captured")
    if capability not in CAPABILITY_FLAGS:
        return Check("cpu-capability", "pass", f"torch uses {capability} kernels")
    missing = [flag for flag in CAPABILITY_FLAGS[capability] if flag not in flags]
    if missing:
        return Check(
            "cpu-capability",
            "fail",
            f"torch dispatches {capability} kernels but the CPU lacks {', '.join(missing)}: "
            "expect SIGILL (illegal instruction)",
            "set ATEN_CPU_CAPABILITY=default (or avx2) and report the misdetection",
        )
    best = next(
        (cap for cap, need in CAPABILITY_FLAGS.items() if all(f in flags for f in need)), None
    )
    forced = section(env, "env").get("ATEN_CPU_CAPABILITY")
    if (
        best
        and best != capability
        and list(CAPABILITY_FLAGS).index(best) < list(CAPABILITY_FLAGS).index(capability)
    ):
        return Check(
            "cpu-capability",
            "warn",
            f"the CPU supports {best} but torch uses {capability}"
            + (f" (ATEN_CPU_CAPABILITY={forced})" if forced else ""),
            "unset ATEN_CPU_CAPABILITY unless the lower level is the point of the test",
        )
    return Check(
        "cpu-capability",
        "pass",
        f"torch uses {capability}; the CPU has {', '.join(CAPABILITY_FLAGS[capability])}",
    )


def check_wsl(env: Captured) -> Check:
    wsl = section(env, "os").get("wsl")
    if not wsl:
        return Check("wsl", "pass", "not running under WSL")
    return Check(
        "wsl",
        "warn",
        f"running under {wsl}: pinned memory is limited, /dev/shm and GPU access go "
        "through the WSL layer (CUDA needs the Windows driver, not a Linux one)",
        "compare with a native Linux run before blaming torch",
    )


def check_nvcc(env: Captured) -> Check:
    nvcc = section(env, "nvcc")
    runtime = section(env, "torch").get("cuda")
    if not nvcc.get("path"):
        if runtime:
            return Check(
                "nvcc",
                "warn",
                "nvcc not found: only needed to build CUDA extensions (torch ships its runtime)",
                "install the CUDA toolkit matching torch's CUDA "
                + str(runtime)
                + " if you build extensions",
            )
        return Check("nvcc", "skipped", f"nvcc not found; {torch_state(env)}")
    version = nvcc.get("version") or "unknown"
    if runtime and version_tuple(version)[:1] != version_tuple(runtime)[:1]:
        return Check(
            "nvcc",
            "warn",
            f"nvcc {version} vs torch's CUDA {runtime}: extensions built with it "
            "fail to load or to compile",
            f"use a CUDA {version_tuple(runtime)[0]}.x toolkit for extensions",
        )
    why = torch_state(env)
    used = ": not used by torch" if why == "torch is a CPU-only build" else ""
    suffix = "" if runtime else f" ({why}{used})"
    return Check("nvcc", "pass", f"nvcc {version} at {nvcc['path']}{suffix}")
