"""Environment capture in the target interpreter: stdlib only; torch missing or broken is reported.

`python -m reprospec_harness.envinfo [--package NAME]... [--no-torch] [--cuda]` prints the JSON.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import multiprocessing
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .values import JsonObject, JsonValue

if TYPE_CHECKING:
    import importlib.metadata

ENV_PREFIXES = (
    "CUDA_",
    "CUDNN_",
    "CUBLAS_",
    "TORCH_",
    "NCCL_",
    "PYTORCH_",
    "OMP_",
    "MKL_",
    "KMP_",
    "OPENBLAS_",
    "NVIDIA_",
    "ATEN_",
    "TORCHINDUCTOR_",
    # The hub an ML program reads (`HF_TOKEN`, `HF_HUB_OFFLINE`): a token set in one run and
    # not the other is a difference `compare` names, masked.
    "HF_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
)
# W&B's switches and key by name, not `WANDB_*`: its entity, project and run id name a
# team's work, which a public bug report has no use for.
ENV_NAMES = (
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONPATH",
    "WANDB_MODE",
    "WANDB_DISABLED",
    "WANDB_API_KEY",
)
# Names whose values are never captured: the same pattern as the engine's
# reprospec.core.redact.SECRET_NAME (this package cannot import the engine; a test keeps them
# equal).
SECRET = re.compile(
    r"TOKEN(?!IZER)|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|AUTH|CREDENTIAL", re.IGNORECASE
)
MASK = "***"
CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
)
GPU_FIELDS = ("index", "name", "driver_version", "memory.total", "compute_cap")
DEFAULT_PACKAGES = ("torch", "numpy")


def _read(path: str) -> str | None:
    try:
        with Path(path).open(errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _run(argv: Sequence[str], timeout: float = 15) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, errors="replace"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return done.returncode, done.stdout + done.stderr


# What a tool printed for its `--version`, by the binary it ran (real path, mtime, size, the
# arguments), when the engine's probe passes --tool-cache FILE: nvcc, gcc, cmake and
# `uname -p` (platform.platform) were most of a short run's wait for its capture, and they
# print the same until the binary changes. None: nothing cached (`reprospec env`, doctor).
_TOOLS: JsonObject | None = None
_TOOLS_CHANGED = [False]


def _tool_key(parts: Sequence[object]) -> str:
    return json.dumps(list(parts), default=str)


def _run_tool(argv: Sequence[str], timeout: float = 15) -> tuple[int, str]:
    """`_run` for a tool's version, answered from the tool cache while the binary is the same."""
    if _TOOLS is None:
        return _run(argv, timeout)
    binary = Path(shutil.which(argv[0]) or argv[0])
    try:
        stat = binary.stat()
    except OSError:
        return _run(argv, timeout)
    key = _tool_key([str(binary.resolve()), stat.st_mtime_ns, stat.st_size, *argv[1:]])
    hit = _TOOLS.get(key)
    if isinstance(hit, list) and len(hit) == 2 and isinstance(hit[0], int):
        return hit[0], str(hit[1])
    code, out = _run(argv, timeout)
    if code == 0:  # a failure (a timeout on a busy machine) is tried again next time
        _TOOLS[key] = [code, out]
        _TOOLS_CHANGED[0] = True
    return code, out


def _platform() -> str:
    """platform.platform(), which runs `uname -p`; cached with the kernel's uname."""
    if _TOOLS is None:
        return platform.platform()
    key = _tool_key(["platform.platform", *os.uname(), sys.version])
    hit = _TOOLS.get(key)
    if isinstance(hit, str):
        return hit
    text = platform.platform()
    _TOOLS[key] = text
    _TOOLS_CHANGED[0] = True
    return text


def _load_tools(path: str) -> None:
    global _TOOLS
    try:
        with open(path, encoding="utf-8") as handle:  # noqa: PTH123
            loaded = json.load(handle)
    except (OSError, ValueError):
        loaded = {}
    _TOOLS = loaded if isinstance(loaded, dict) else {}


def _save_tools(path: str) -> None:
    if _TOOLS is None or not _TOOLS_CHANGED[0]:
        return
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)  # noqa: PTH103, PTH120
        write(path, _TOOLS)
    except OSError:
        pass  # the next run asks the tools again


# ---- parsers (pure: tested on recorded real outputs) -------------------------------------------


def parse_cpuinfo(text: str) -> JsonObject:
    """CPU model and the flags that matter to torch, from /proc/cpuinfo."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    model = (
        fields.get("model name")
        or fields.get("Model")
        or fields.get("cpu model")
        or fields.get("Hardware")
    )
    return {
        "model": model,
        "vendor": fields.get("vendor_id"),
        "flags": [flag for flag in CPU_FLAGS if flag in flags],
    }


def parse_meminfo(text: str) -> dict[str, int]:
    """MemTotal / MemAvailable / SwapTotal in bytes."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("MemTotal", "MemAvailable", "SwapTotal") and value.split():
            out[key] = int(value.split()[0]) * 1024
    return out


def parse_nvidia_smi_csv(text: str, fields: Sequence[str] = GPU_FIELDS) -> list[JsonObject]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv[,noheader]` as dicts."""
    gpus: list[JsonObject] = []
    for line in text.strip().splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(fields) or [c.split(" [")[0] for c in cells] == list(fields):
            continue  # the header, or a line that is not a row
        row: JsonObject = dict(zip(fields, cells, strict=True))
        if "memory.total" in row:
            match = re.match(r"(\d+)", str(row.pop("memory.total")))
            row["memory_mib"] = int(match.group(1)) if match else None
        if "compute_cap" in row:
            row["capability"] = row.pop("compute_cap")
        index = row.get("index")
        if isinstance(index, str) and index.isdigit():
            row["index"] = int(index)
        gpus.append(row)
    return gpus


def parse_nvidia_smi_banner(text: str) -> dict[str, str]:
    """Driver version and the newest CUDA it supports, from `nvidia-smi`'s banner (old and new)."""
    out: dict[str, str] = {}
    driver = re.search(r"(?:Driver|KMD) Version:\s*([\d.]+)", text)
    cuda = re.search(r"CUDA (?:UMD )?Version:\s*([\d.]+)", text)
    if driver:
        out["driver_version"] = driver.group(1)
    if cuda:
        out["cuda_version"] = cuda.group(1)
    return out


def parse_nvcc_version(text: str) -> str | None:
    """`release 12.1` from `nvcc --version`."""
    match = re.search(r"release (\d+\.\d+)", text)
    return match.group(1) if match else None


def parse_nvcc_build(text: str) -> str | None:
    """`V12.1.105` from `nvcc --version`: collect_env's "CUDA runtime version" (`12.1.105`)."""
    match = re.search(r"release .+ V(\S+)", text)
    return match.group(1) if match else None


def requirement_name(requirement: str) -> str:
    """`torch==2.13.0` -> `torch`: the name the probe asks importlib.metadata for. Not the
    engine's reader (`reprospec.environment.packages.requirement_name`, which parses with
    `packaging`): this runs in the program's own Python, which may have neither."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1) if match else requirement.strip()


# ---- capture ---------------------------------------------------------------------------------


def marker_environment() -> dict[str, str]:
    """This interpreter's PEP 508 marker values, as the package check's probe prints them
    (reprospec/environment/packages.py, PROBE_CODE): a spec's `six; python_version < '3'`
    is judged by them wherever its packages are compared with what an interpreter has (the
    run's check, the report's mismatches, `doctor`), never required where its marker is
    false."""
    impl = sys.implementation
    version = impl.version
    full = f"{version.major}.{version.minor}.{version.micro}"
    if version.releaselevel != "final":
        full += version.releaselevel[0] + str(version.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": full,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def _os_info() -> JsonObject:
    release = _read("/etc/os-release") or ""
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', release, re.MULTILINE)
    kernel = platform.release()
    osrelease = (_read("/proc/sys/kernel/osrelease") or kernel).lower()
    wsl = "WSL2" if "wsl2" in osrelease else ("WSL1" if "microsoft" in osrelease else None)
    if wsl is None and os.environ.get("WSL_DISTRO_NAME"):
        wsl = "WSL"
    return {
        "system": platform.system(),
        "distribution": pretty.group(1) if pretty else None,
        "kernel": kernel,
        "machine": platform.machine(),
        "wsl": wsl,
        "container": _container(),
    }


def _container() -> str | None:
    if Path("/.dockerenv").exists():
        return "docker"
    if Path("/run/.containerenv").exists():
        return "podman"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    cgroup = _read("/proc/1/cgroup") or ""
    for name in ("kubepods", "docker", "containerd", "lxc", "podman"):
        if name in cgroup:
            return name
    return os.environ.get("container") or None  # noqa: SIM112 - systemd/podman spell it lowercase


def _memory_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = (_read(path) or "").strip()
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def _limit(which: int) -> int | None:
    soft = resource.getrlimit(which)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def _shm() -> JsonObject:
    try:
        stats = os.statvfs("/dev/shm")
    except OSError:
        return {"present": False}
    return {
        "present": True,
        "size": stats.f_blocks * stats.f_frsize,
        "free": stats.f_bavail * stats.f_frsize,
    }


def _nvidia() -> JsonObject:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {"nvidia_smi": None, "gpus": []}
    fields: Sequence[str] = GPU_FIELDS
    code, out = _run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader"])
    if code != 0 and "compute_cap" in out:  # drivers before ~510 do not know the field
        fields = GPU_FIELDS[:-1]
        code, out = _run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader"])
    info: JsonObject = {
        "nvidia_smi": smi,
        "gpus": list(parse_nvidia_smi_csv(out, fields)) if code == 0 else [],
    }
    if code != 0:
        info["error"] = out.strip()[-500:]
    code, banner = _run([smi])
    info.update(parse_nvidia_smi_banner(banner) if code == 0 else {})
    return info


def _nvcc() -> JsonObject:
    # The paths as CUDA_HOME spells them (reported so); os.path.exists is False where
    # Path.exists raises (EACCES on someone else's CUDA_HOME).
    candidates = [shutil.which("nvcc")] + [
        os.path.join(root, "bin", "nvcc")  # noqa: PTH118
        for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
        if root
    ]
    for path in candidates:
        if path and os.path.exists(path):  # noqa: PTH110
            code, out = _run_tool([path, "--version"])
            if code != 0:
                return {"path": path, "version": None}
            return {
                "path": path,
                "version": parse_nvcc_version(out),
                "build": parse_nvcc_build(out),
            }
    return {"path": None, "version": None}


def _packages(names: Iterable[str]) -> dict[str, str | None]:
    wanted = dict.fromkeys([*DEFAULT_PACKAGES, *(requirement_name(n) for n in names)])
    folders = _distribution_folders()
    if folders is None:
        import importlib.metadata

        out: dict[str, str | None] = {}
        for name in wanted:
            try:
                out[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                out[name] = None
        return out
    # As importlib.metadata.version: the first folder on sys.path named for the package.
    first: dict[str, str] = {}
    for folder in folders:
        first.setdefault(_normalized(_folder_project(folder)), folder)
    versions: dict[str, str | None] = {}
    for name in wanted:
        where = first.get(_normalized(name))
        versions[name] = (_name_and_version(where)[1] or None) if where else None
    return versions


def _env_vars() -> dict[str, str]:
    """The variables that shape a run, a secret-looking one masked. Not every secret of the
    shell: a bug report that listed `AWS_SECRET_ACCESS_KEY: ***` told its readers what
    credentials the reporter keeps, and nothing about the bug."""
    return {
        key: (MASK if SECRET.search(key) else value)
        for key, value in sorted(os.environ.items())
        if key.startswith(ENV_PREFIXES) or key in ENV_NAMES
    }


# Compilers and build tools PyTorch's collect_env reports: (key, argv).
COMPILERS = (
    ("gcc", ("gcc", "--version")),
    ("clang", ("clang", "--version")),
    ("cmake", ("cmake", "--version")),
)


def _first_line(argv: Sequence[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    code, out = _run_tool(argv, timeout=10)
    lines = out.strip().splitlines()
    return lines[0].strip() if code == 0 and lines else None


def _libc() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        text = None
    if text:
        return text.replace(" ", "-", 1)
    name, version = platform.libc_ver()
    return f"{name}-{version}" if name else None


def distributions() -> dict[str, str]:
    """Every installed distribution of this interpreter, `pip list` style: name -> version."""
    found: dict[str, str] = {}
    folders = _distribution_folders()
    if folders is None:
        import importlib.metadata

        pairs = [_name_and_version(dist) for dist in importlib.metadata.distributions()]
    else:
        pairs = [_name_and_version(folder) for folder in folders]
    for name, version in pairs:
        if name and name not in found:  # the first on sys.path is the one imported
            found[name] = version
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


# importlib.metadata costs 15-25 ms to import (the email package comes with it), in the
# engine's probe of every run and in every workload's main process. Where every
# distribution is a folder of a sys.path folder, which is the usual case, those folders are
# listed here, as importlib.metadata's path finder lists them; anything else (a zip or an
# egg on sys.path, a finder that finds distributions of its own) goes to importlib.metadata.
_INFO_SUFFIXES = (".dist-info", ".egg-info")


def _distribution_folders() -> list[str] | None:
    """The metadata folders (and files) of sys.path, in import order; None: ask importlib."""
    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [importlib.machinery.PathFinder]:
        return None
    found: list[str] = []
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)  # noqa: PTH208 (names only, a path entry's worth)
        except NotADirectoryError:
            return None  # a zip file on sys.path
        except OSError:
            continue  # missing, unreadable: importlib.metadata skips it as well
        egg = folder.lower().endswith(".egg")
        for name in names:
            low = name.lower()
            if low.endswith(_INFO_SUFFIXES) or (egg and low == "egg-info"):
                found.append(os.path.join(folder, name))  # noqa: PTH118
    return found


def _folder_project(folder: str) -> str:
    """`torch-2.13.0.dist-info` -> `torch` (importlib.metadata's reading of the name)."""
    return os.path.basename(folder).rpartition(".")[0].partition("-")[0]  # noqa: PTH119


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_text(source: str | importlib.metadata.Distribution) -> str | None:
    if not isinstance(source, str):
        # "": an .egg-info file is the metadata itself (as Distribution.metadata reads it).
        return source.read_text("METADATA") or source.read_text("PKG-INFO") or source.read_text("")
    # A .dist-info folder, an .egg-info folder, or an .egg-info file (the metadata itself).
    for path in (os.path.join(source, "METADATA"), os.path.join(source, "PKG-INFO"), source):  # noqa: PTH118
        try:
            with open(path, encoding="utf-8") as handle:  # noqa: PTH123
                return handle.read()
        except (OSError, UnicodeDecodeError):
            continue
    return None


def _name_and_version(source: str | importlib.metadata.Distribution) -> tuple[str | None, str]:
    """Name and Version from the metadata's header lines (`source`: a folder of
    `_distribution_folders`, or importlib's Distribution).

    `dist.metadata` runs the whole file (a long description included) through the email
    parser, and `dist.version` does it again: two thirds of this capture's time, in
    a child every run starts.
    """
    text = _metadata_text(source)
    if text is None:
        return None, ""
    fields: dict[str, str] = {}
    for line in text.partition("\n\n")[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    return fields.get("Name"), fields.get("Version", "")


def capture_collect_env() -> JsonObject:
    """What PyTorch's collect_env adds to a bug report besides torch: libc, compilers, pip list.

    Captured only by `python -m reprospec_harness.envinfo` (the engine's probe), never in a
    workload's main process: it runs compilers and reads every distribution's metadata.
    """
    return {
        "python_full": sys.version.replace("\n", " "),
        "platform": _platform(),
        "libc": _libc(),
        **{key: _first_line(argv) for key, argv in COMPILERS},
        "pip": dict(distributions()),
    }


def capture_system(packages: Iterable[str] = (), *, full: bool = False) -> JsonObject:
    """Everything that does not need torch; `full`: the collect_env part too."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    memory = parse_meminfo(_read("/proc/meminfo") or "")
    info: JsonObject = {
        "format": 1,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            # Where its paths point: a report names them `<venv>/...` and `<python>/...`.
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "markers": dict(marker_environment()),
        },
        "os": _os_info(),
        "cpu": {
            **parse_cpuinfo(_read("/proc/cpuinfo") or ""),
            "cores": os.cpu_count(),
            "usable_cores": usable,
        },
        "memory": {
            "total": memory.get("MemTotal"),
            "available": memory.get("MemAvailable"),
            "swap": memory.get("SwapTotal"),
            "cgroup_limit": _memory_limit(),
            "rlimit_as": _limit(resource.RLIMIT_AS),
        },
        "shm": _shm(),
        "nvidia": _nvidia(),
        "nvcc": _nvcc(),
        "packages": dict(_packages(packages)),
        "env": dict(_env_vars()),
        "multiprocessing": {
            "start_method": multiprocessing.get_start_method(allow_none=True)
            or multiprocessing.get_context().get_start_method()
        },
    }
    if full:
        info["collect_env"] = capture_collect_env()
    return info


def capture_torch(init_cuda: bool = False, *, full: bool = False) -> JsonObject:
    """torch, CUDA runtime, cuDNN, CPU capability, arch list; GPU properties only if `init_cuda`;
    `full`: also `torch.__config__.show()` (how the build was configured).

    The harness asks for GPU properties only when the workload runs on CUDA anyway:
    they initialize CUDA, which would change what a later fork does.
    """
    try:
        import torch
    except ModuleNotFoundError as exc:
        if exc.name == "torch":
            return {"installed": False}
        return {"installed": True, "error": f"{type(exc).__name__}: {exc}"}
    except (
        BaseException
    ) as exc:  # a broken install raises anything (OSError for a missing .so, ...)
        return {"installed": True, "error": f"{type(exc).__name__}: {exc}"}
    info: JsonObject = {
        "installed": True,
        "version": torch.__version__,
        "debug": torch.version.debug,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
    }
    probes: dict[str, Callable[[], JsonValue]] = {
        "cudnn": lambda: (
            torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        ),
        "cpu_capability": lambda: torch.backends.cpu.get_cpu_capability(),
        "arch_list": lambda: list(torch.cuda.get_arch_list()),
        "cuda_available": lambda: torch.cuda.is_available(),
        "device_count": lambda: torch.cuda.device_count(),
        "num_threads": lambda: torch.get_num_threads(),
        "mkl": lambda: torch.backends.mkl.is_available(),
        "mkldnn": lambda: torch.backends.mkldnn.is_available(),
        "openmp": lambda: torch.backends.openmp.is_available(),
        # torch's numpy bridge (Tensor.numpy, torch.from_numpy, a DataLoader collating numpy
        # arrays): torch imports without numpy, or with a numpy of another ABI, and only
        # warns "Failed to initialize NumPy"; the call then raises "Numpy is not available".
        "numpy": lambda: torch.zeros(1).numpy() is not None,
    }
    if full:
        probes["config"] = lambda: torch.__config__.show()
    errors: JsonObject = {}
    for key, probe in probes.items():
        try:
            info[key] = probe()
        except Exception as exc:  # one failed probe must not lose the others
            info[key] = None
            info.setdefault("errors", errors)
            errors[key] = f"{type(exc).__name__}: {exc}"
    if init_cuda and info.get("cuda_available"):
        count = info.get("device_count")
        info["gpus"] = [_torch_gpu(i) for i in range(count if isinstance(count, int) else 0)]
    return info


def _torch_gpu(index: int) -> JsonObject:
    import torch  # imported already (capture_torch)

    props = torch.cuda.get_device_properties(index)
    return {
        "index": index,
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "memory_mib": props.total_memory // 2**20,
        "multiprocessors": props.multi_processor_count,
    }


def capture(
    packages: Iterable[str] = (),
    *,
    with_torch: bool = True,
    init_cuda: bool = False,
    full: bool = False,
) -> JsonObject:
    """The whole capture, as written to env.json and printed by `reprospec env`.

    `full` adds the collect_env part (libc, compilers, every installed distribution,
    torch's build configuration): the engine's probe asks for it, a workload does not.
    """
    info = capture_system(packages, full=full)
    info["torch"] = capture_torch(init_cuda, full=full) if with_torch else {"captured": False}
    return info


def readable(value: JsonValue) -> JsonValue:
    """`value` with each undecodable byte (a lone surrogate, as Python reads a non-UTF-8
    variable, path or command line) shown as U+FFFD. json.dump writes such a surrogate as an
    escape the engine reads back into a string no UTF-8 file takes: an `env TORCH_X=$'\\x80'`
    (or a Python installed under a non-UTF-8 folder) ended the run with an internal
    UnicodeEncodeError writing results.json, the run lost. The capture is shown, never run."""
    if isinstance(value, str):
        return _readable(value)
    if isinstance(value, dict):
        return {_readable(key): readable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [readable(item) for item in value]
    return value


def _readable(text: str) -> str:
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate no byte was read as (json's "\\ud800")
        return text.encode("utf-8", "replace").decode("utf-8")


def write(path: str, info: JsonObject) -> None:
    """Write atomically: a crash mid-write must not leave half a JSON document."""
    temporary = Path(f"{path}.tmp{os.getpid()}")
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(readable(info), handle, indent=2, default=str)
    temporary.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reprospec_harness.envinfo")
    parser.add_argument(
        "--package", action="append", default=[], help="also report this package's version"
    )
    parser.add_argument("--no-torch", action="store_true", help="do not import torch")
    parser.add_argument(
        "--cuda", action="store_true", help="query GPU properties through torch (inits CUDA)"
    )
    parser.add_argument(
        "--brief",
        action="store_true",
        help="leave out the collect_env part (libc, compilers, pip list, torch's config)",
    )
    parser.add_argument(
        "--tool-cache",
        metavar="FILE",
        help="reuse the tools' --version outputs kept in FILE while their binaries are the same",
    )
    args = parser.parse_args(argv)
    if args.tool_cache:
        _load_tools(args.tool_cache)
    info = capture(
        args.package, with_torch=not args.no_torch, init_cuda=args.cuda, full=not args.brief
    )
    if args.tool_cache:
        _save_tools(args.tool_cache)
    print(json.dumps(readable(info), indent=2, default=str))
    return 0


def _without_working_directory() -> None:
    """Take out the entry `python -m` puts first on sys.path, the current directory (`""` on
    older Pythons, else its absolute path), as the package check's `PROBE_CODE` takes out
    `python -c`'s: a stale `foo.egg-info` or `.dist-info` there was read as the
    environment's own version by the capture (doctor's package check, the report's
    Environment mismatches) and not by the run's package check. Only in the capture's own
    process (`python -m reprospec_harness.envinfo`): a workload imports from its cwd. None
    where `-P` (PYTHONSAFEPATH) put no such entry, and the first is PYTHONPATH's."""
    if getattr(sys.flags, "safe_path", False):
        return
    if sys.path and sys.path[0] in ("", str(Path.cwd())):
        del sys.path[0]


if __name__ == "__main__":
    _without_working_directory()
    sys.exit(main())
