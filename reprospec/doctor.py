"""Compatibility checks from a captured environment (a dict from envinfo): pure functions, no torch.

Each check is pass / warn / fail / skipped with one line of why and, unless it
passed, one line of what to do. Without a GPU, GPU checks are skipped, never failed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from reprospec.sections import Environment
from reprospec.units import format_size

Status = Literal["pass", "warn", "fail", "skipped"]
NO_GPU = "no CUDA device"
MIB = 2**20
# Measured: under about 650 MB of address space `import torch` itself fails (RLIMIT_AS).
TORCH_IMPORT_FLOOR = 650 * MIB
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
ITEM_BYTES = {
    "float64": 8,
    "int64": 8,
    "long": 8,
    "float32": 4,
    "float": 4,
    "int32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
}


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    why: str
    todo: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Needs:
    """What a spec asks of the machine (the most demanding of its cells)."""

    device: str = "cpu"
    num_workers: int = 0
    prefetch_factor: int = 2
    batch_bytes: int | None = None
    shm_size: int | None = None
    memory: int | None = None
    python: str | None = None
    packages: tuple[str, ...] = ()
    shm_refused: str | None = None  # why a private /dev/shm cannot be mounted here, if it cannot


def version_tuple(text: str | None) -> tuple[int, ...]:
    """`12.4.1+cu124` -> (12, 4, 1); unparsable parts end the tuple."""
    parts: list[int] = []
    for part in re.split(r"[.+-]", text or ""):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def satisfies(installed: str, requirement: str) -> bool | None:
    """Whether `installed` meets `requirement`'s specifiers (== != >= <= > < ~=); None: unknown."""
    specifiers = re.findall(r"(==|!=|>=|<=|~=|>|<)\s*([\w.*+!-]+)", requirement)
    if not specifiers:
        return True
    have = version_tuple(installed)
    for op, wanted in specifiers:
        if "*" in wanted:
            prefix = wanted.split(".*")[0]
            ok = installed == prefix or installed.startswith(prefix + ".")
            ok = ok if op == "==" else not ok
        else:
            # A local label (+cpu) is ignored unless the requirement names one (PEP 440).
            want = version_tuple(wanted)
            ours = have if "+" not in wanted else version_tuple(installed)
            if not want:
                return None
            size = max(len(ours), len(want))
            a, b = ours + (0,) * (size - len(ours)), want + (0,) * (size - len(want))
            ok = {
                "==": a == b if "+" not in wanted else installed == wanted,
                "!=": a != b,
                ">=": a >= b,
                "<=": a <= b,
                ">": a > b,
                "<": a < b,
                "~=": a >= b and a[: len(want) - 1] == b[: len(want) - 1],
            }[op]
        if not ok:
            return False
    return True


def environment_mismatches(env: Mapping[str, Any], environment: Mapping[str, Any]) -> list[str]:
    """Differences between the spec's `environment` (python, packages) and what actually ran."""
    out = []
    wanted_python = environment.get("python")
    actual_python = str((env.get("python") or {}).get("version") or "")
    if (
        wanted_python
        and actual_python
        and not (
            actual_python == str(wanted_python) or actual_python.startswith(f"{wanted_python}.")
        )
    ):
        out.append(f"python {actual_python} ran; the spec names {wanted_python}")
    installed = env.get("packages") or {}
    for requirement in environment.get("packages") or []:
        name = _requirement_name(requirement)
        have = installed.get(name)
        if have is None and name not in installed:
            continue  # not captured: nothing to compare
        if have is None:
            out.append(f"{name} is not installed; the spec needs {requirement}")
        elif satisfies(have, requirement) is False:
            out.append(f"{name} {have} ran; the spec needs {requirement}")
    return out


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1) if match else requirement.strip()


def _gpus(env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """GPUs as torch saw them, else as nvidia-smi did (both carry `capability` when known)."""
    torch_gpus = (env.get("torch") or {}).get("gpus") or []
    return list(torch_gpus or (env.get("nvidia") or {}).get("gpus") or [])


def _torch(env: Mapping[str, Any]) -> Mapping[str, Any]:
    return env.get("torch") or {}


def _torch_state(env: Mapping[str, Any]) -> str:
    """torch when it brings no CUDA runtime: not installed, broken, not captured, or a CPU build."""
    torch = _torch(env)
    if torch.get("installed") is False:
        return "torch is not installed"
    if torch.get("error"):
        return "torch does not import"
    if not torch.get("version"):
        return "torch was not captured"
    return "torch is a CPU-only build"


# ---- the checks ----------------------------------------------------------------------------


def check_torch(env: Mapping[str, Any]) -> Check:
    torch = _torch(env)
    if torch.get("installed") is False:
        return Check(
            "torch",
            "fail",
            "torch is not installed in this interpreter",
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
    return Check("torch", "pass", f"torch {torch['version']} ({build} build) imports")


def check_cuda_available(env: Mapping[str, Any]) -> Check:
    torch = _torch(env)
    gpus = _gpus(env)
    if not gpus and not torch.get("device_count"):
        return Check("cuda", "skipped", NO_GPU)
    names = (
        ", ".join(sorted({str(g.get("name")) for g in gpus}))
        or f"{torch.get('device_count')} device(s)"
    )
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
        f"torch sees {torch.get('device_count') or len(gpus)} CUDA device(s): {names}",
    )


def check_driver(env: Mapping[str, Any]) -> Check:
    torch, nvidia = _torch(env), env.get("nvidia") or {}
    if not _gpus(env):
        return Check("cuda-driver", "skipped", NO_GPU)
    runtime: tuple[int, ...] = version_tuple(torch.get("cuda"))[:2]
    if not runtime:
        return Check("cuda-driver", "skipped", f"{_torch_state(env)}: no CUDA runtime to match")
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


def _arch_ok(capability: str, arch_list: Sequence[str]) -> Status:
    """pass: a cubin runs it; warn: only PTX (JIT-compiled at start-up); fail: nothing runs it."""
    major, minor = (version_tuple(capability) + (0, 0))[:2]
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


def check_arch_list(env: Mapping[str, Any]) -> Check:
    gpus = _gpus(env)
    if not gpus:
        return Check("gpu-arch", "skipped", NO_GPU)
    arch_list = _torch(env).get("arch_list") or []
    if not arch_list:
        why = _torch_state(env)
        if why == "torch is a CPU-only build":
            why = "torch reports no compiled CUDA architectures (CPU-only build?)"
        return Check("gpu-arch", "skipped", why)
    results = []
    for gpu in gpus:
        if not gpu.get("capability"):
            return Check(
                "gpu-arch",
                "skipped",
                f"compute capability of {gpu.get('name')} unknown "
                "(driver too old for nvidia-smi's compute_cap)",
            )
        results.append((gpu, _arch_ok(str(gpu["capability"]), arch_list)))
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


def check_cpu_capability(env: Mapping[str, Any]) -> Check:
    capability = _torch(env).get("cpu_capability")
    flags = set((env.get("cpu") or {}).get("flags") or [])
    if not capability:
        torch = _torch(env)
        if torch.get("installed") is False or torch.get("error"):
            return Check("cpu-capability", "skipped", _torch_state(env))
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
    forced = (env.get("env") or {}).get("ATEN_CPU_CAPABILITY")
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


def check_shm(env: Mapping[str, Any], needs: Needs) -> Check:
    shm = env.get("shm") or {}
    size = (
        needs.shm_size
        if needs.shm_size is not None and needs.shm_refused is None
        else shm.get("size")
    )
    if not shm.get("present", True) and needs.shm_size is None:
        return Check(
            "shm",
            "fail",
            "/dev/shm is missing: DataLoader workers cannot share tensors",
            "mount a tmpfs on /dev/shm (docker: --shm-size=2g or --ipc=host)",
        )
    if size is None:
        return Check("shm", "skipped", "/dev/shm size unknown")
    human = format_size(size)
    where = (
        "the spec's shm_size"
        if needs.shm_size is not None and needs.shm_refused is None
        else "/dev/shm"
    )
    if needs.num_workers == 0:
        if needs.batch_bytes is None and size < 1024 * MIB:
            return Check(
                "shm",
                "warn",
                f"/dev/shm is {human}: DataLoader workers passing big batches "
                "will run out of shared memory",
                "docker: --shm-size=2g or --ipc=host",
            )
        return Check(
            "shm",
            "pass",
            f"{where} is {human}"
            + ("; the spec uses no DataLoader workers" if needs.batch_bytes is not None else ""),
        )
    in_flight = needs.num_workers * needs.prefetch_factor
    if needs.batch_bytes is None:
        status: Status = "warn" if size < 1024 * MIB else "pass"
        return Check(
            "shm",
            status,
            f"{where} is {human} for {needs.num_workers} DataLoader workers",
            "" if status == "pass" else "give it >= 1g (docker: --shm-size=2g or --ipc=host)",
        )
    need = in_flight * needs.batch_bytes
    detail = (
        f"{where} is {human}; {needs.num_workers} workers x prefetch {needs.prefetch_factor} "
        f"batches of {format_size(needs.batch_bytes)} need about {format_size(need)}"
    )
    if size < need:
        return Check(
            "shm",
            "fail",
            detail + ": expect 'unable to allocate shared memory(shm)' "
            "(or SIGBUS in workers on older torch)",
            f"give /dev/shm >= {format_size(2 * need)}, or fewer workers",
        )
    if size < 2 * need:
        return Check(
            "shm", "warn", detail + ": little headroom", f"give /dev/shm >= {format_size(2 * need)}"
        )
    return Check("shm", "pass", detail)


def check_wsl(env: Mapping[str, Any]) -> Check:
    wsl = (env.get("os") or {}).get("wsl")
    if not wsl:
        return Check("wsl", "pass", "not running under WSL")
    return Check(
        "wsl",
        "warn",
        f"running under {wsl}: pinned memory is limited, /dev/shm and GPU access go "
        "through the WSL layer (CUDA needs the Windows driver, not a Linux one)",
        "compare with a native Linux run before blaming torch",
    )


def check_nvcc(env: Mapping[str, Any]) -> Check:
    nvcc = env.get("nvcc") or {}
    runtime = _torch(env).get("cuda")
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
        return Check("nvcc", "skipped", f"nvcc not found; {_torch_state(env)}")
    version = nvcc.get("version") or "unknown"
    if runtime and version_tuple(version)[:1] != version_tuple(runtime)[:1]:
        return Check(
            "nvcc",
            "warn",
            f"nvcc {version} vs torch's CUDA {runtime}: extensions built with it "
            "fail to load or to compile",
            f"use a CUDA {version_tuple(runtime)[0]}.x toolkit for extensions",
        )
    why = _torch_state(env)
    used = ": not used by torch" if why == "torch is a CPU-only build" else ""
    suffix = "" if runtime else f" ({why}{used})"
    return Check("nvcc", "pass", f"nvcc {version} at {nvcc['path']}{suffix}")


def check_device(env: Mapping[str, Any], needs: Needs) -> Check:
    if not needs.device.startswith("cuda"):
        return Check("device", "pass", f"the spec runs on {needs.device}")
    if not _gpus(env) and not _torch(env).get("device_count"):
        return Check(
            "device",
            "fail",
            f"the spec asks for {needs.device} but this machine has {NO_GPU}: "
            "its cells will end as infra-error",
            "run it on a GPU machine, or with device: auto",
        )
    return Check("device", "pass", f"the spec asks for {needs.device}; a CUDA device is visible")


def check_memory(env: Mapping[str, Any], needs: Needs) -> Check:
    if needs.memory is None:
        return Check("memory", "skipped", "the spec sets no memory limit")
    total = (env.get("memory") or {}).get("total")
    if needs.memory < TORCH_IMPORT_FLOOR:
        return Check(
            "memory",
            "fail",
            f"memory {format_size(needs.memory)} is below ~650 MB of address space: "
            "`import torch` itself fails under RLIMIT_AS",
            "give it >= 1g",
        )
    if total and needs.memory > total:
        return Check(
            "memory",
            "warn",
            f"memory {format_size(needs.memory)} exceeds this machine's {format_size(total)}",
            "lower it, or expect the kernel's OOM killer rather than a clean allocation failure",
        )
    return Check(
        "memory", "pass", f"memory limit {format_size(needs.memory)} (RLIMIT_AS, per process)"
    )


def check_limits(needs: Needs) -> Check:
    if needs.shm_size is None:
        return Check("limits", "skipped", "the spec sets no shm_size")
    if needs.shm_refused:
        return Check(
            "limits",
            "warn",
            f"shm_size cannot be applied here: {needs.shm_refused}",
            "run as root (private mount namespace) or with --runner docker",
        )
    return Check(
        "limits",
        "pass",
        f"a private {format_size(needs.shm_size)} /dev/shm can be mounted for each attempt",
    )


def check_spec_environment(env: Mapping[str, Any], needs: Needs) -> Check:
    if needs.python is None and not needs.packages:
        return Check("spec-environment", "skipped", "the spec names no python version or packages")
    mismatches = environment_mismatches(
        env, {"python": needs.python, "packages": list(needs.packages)}
    )
    if mismatches:
        return Check(
            "spec-environment",
            "warn",
            "; ".join(mismatches),
            "run with --python PATH of a matching interpreter, or --runner docker",
        )
    return Check("spec-environment", "pass", "python and packages match the spec's environment")


def run_checks(env: Mapping[str, Any], needs: Needs | None = None) -> list[Check]:
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


# ---- what a spec needs -----------------------------------------------------------------------


def needs_of(cells: Iterable[tuple[Mapping[str, Any], Environment]]) -> Needs:
    """The most demanding of the resolved cells, each `(workload, environment)`."""
    device, workers, prefetch, batch, shm, memory = "cpu", 0, 2, None, None, None
    python: str | None = None
    packages: tuple[str, ...] = ()
    for workload, environment in cells:
        wanted = str((workload or {}).get("device") or environment.device or "cpu")
        if wanted.startswith("cuda"):
            device = wanted
        data = (workload or {}).get("data") or {}
        loader = data.get("loader") or {}
        if int(loader.get("num_workers") or 0) >= workers:
            workers = int(loader.get("num_workers") or 0)
            prefetch = int(loader.get("prefetch_factor") or 2)
        size = batchformat_size(data)
        if size is not None:
            batch = max(batch or 0, size)
        if environment.shm_size is not None:
            shm = environment.shm_size
        if environment.memory is not None:
            memory = environment.memory
        python = environment.python or python
        packages = environment.packages or packages
    return Needs(
        device=device,
        num_workers=workers,
        prefetch_factor=prefetch,
        batch_bytes=batch,
        shm_size=shm,
        memory=memory,
        python=python,
        packages=packages,
    )


def batchformat_size(data: Mapping[str, Any]) -> int | None:
    """Bytes of one batch of the synthetic dataset (None for entry-point datasets)."""
    dataset = data.get("dataset") or {}
    if dataset.get("entrypoint") or "shape" not in dataset:
        return None
    item = math.prod(int(n) for n in dataset["shape"]) * ITEM_BYTES.get(
        str(dataset.get("dtype", "float32")), 4
    )
    return item * int((data.get("loader") or {}).get("batch_size") or 1)
