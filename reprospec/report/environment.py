"""The environment table of the bug report: the harness's capture as (label, value) rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprospec.words import size

# Sections of the captured environment (harness envinfo) that get rows of their own.
_ENV_SECTIONS = frozenset(
    {
        "format",
        "python",
        "os",
        "cpu",
        "memory",
        "shm",
        "torch",
        "nvidia",
        "nvcc",
        "multiprocessing",
        "packages",
        "env",
        "environment_mismatch",
    }
)


def _words(*parts: Any) -> str:
    """The non-empty parts joined by spaces; '(…)' parts whose inside is empty are dropped."""
    return " ".join(str(p) for p in parts if p not in (None, "", "()", []))


def env_value(value: Any) -> str:
    """Any environment value as readable text ('' when there is nothing to say)."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        items = ((k, env_value(v)) for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in items if v)
    if isinstance(value, (list, tuple)):
        sep = "; " if any(isinstance(v, Mapping) for v in value) else ", "
        return sep.join(t for t in (env_value(v) for v in value) if t)
    return str(value)


def _section(env: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = env.get(name)
    return value if isinstance(value, Mapping) else {}


def _torch_rows(torch: Mapping[str, Any], nvidia: Mapping[str, Any]) -> list[tuple[str, str]]:
    if not torch or torch.get("captured") is False:
        return []
    if torch.get("installed") is False:
        return [("torch", "not installed")]
    if torch.get("error"):
        return [("torch", f"import failed: {torch['error']}")]
    details = ", ".join(
        part
        for part in (
            f"CPU capability {torch['cpu_capability']}" if torch.get("cpu_capability") else "",
            "debug build" if torch.get("debug") else "",
            f"{torch['num_threads']} threads" if torch.get("num_threads") else "",
        )
        if part
    )
    if torch.get("cuda"):
        state = "available" if torch.get("cuda_available") else "not available"
        cuda = f"{torch['cuda']} ({state}, {torch.get('device_count') or 0} devices)"
    elif torch.get("hip"):
        cuda = f"none; ROCm {torch['hip']}"
    else:
        cuda = "none (CPU-only torch build)" if torch.get("version") else ""
    if nvidia.get("cuda_version"):
        cuda = _words(cuda, f"(driver supports CUDA {nvidia['cuda_version']})")
    return [
        ("torch", _words(torch.get("version"), f"({details})" if details else "")),
        ("CUDA", cuda),
        ("cuDNN", env_value(torch.get("cudnn"))),
        ("CUDA arch list", env_value(torch.get("arch_list"))),
    ]


def _gpus(torch: Mapping[str, Any], nvidia: Mapping[str, Any]) -> str:
    gpus = nvidia.get("gpus") or torch.get("gpus") or []
    texts = []
    for gpu in gpus:
        if not isinstance(gpu, Mapping):
            texts.append(str(gpu))
            continue
        memory = size(gpu["memory_mib"] * 2**20) if gpu.get("memory_mib") else ""
        cc = f"cc {gpu['capability']}" if gpu.get("capability") else ""
        inside = ", ".join(p for p in (cc, memory) if p)
        texts.append(_words(f"{gpu.get('index', '?')}:", gpu.get("name"), f"({inside})"))
    if texts:
        return "; ".join(texts)
    return "none (no nvidia-smi)" if "nvidia_smi" in nvidia and not nvidia["nvidia_smi"] else ""


def environment_rows(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows for the environment table, from the harness capture; nothing empty."""
    py, system, cpu = _section(env, "python"), _section(env, "os"), _section(env, "cpu")
    memory, shm, torch = _section(env, "memory"), _section(env, "shm"), _section(env, "torch")
    nvidia, nvcc = _section(env, "nvidia"), _section(env, "nvcc")
    cores = cpu.get("cores")
    usable = cpu.get("usable_cores")
    memory_notes = ", ".join(
        f"{label} {size(memory[key])}"
        for key, label in (
            ("available", "available:"),
            ("cgroup_limit", "cgroup limit"),
            ("rlimit_as", "RLIMIT_AS"),
        )
        if memory.get(key)
    )
    rows = [
        ("Python", _words(py.get("version"), f"({py.get('implementation') or ''})")),
        (
            "OS",
            _words(
                system.get("distribution") or system.get("system"),
                f"({system.get('machine') or ''})",
            ),
        ),
        ("Kernel", env_value(system.get("kernel"))),
        ("WSL", env_value(system.get("wsl"))),
        ("Container", env_value(system.get("container"))),
        ("CPU", _words(cpu.get("model"), f"({cpu.get('vendor') or ''})")),
        ("CPU flags", env_value(cpu.get("flags"))),
        ("Cores", _words(cores, f"({usable} usable)" if usable and usable != cores else "")),
        ("Memory", _words(size(memory.get("total")), f"({memory_notes})")),
        (
            "/dev/shm",
            "missing"
            if shm.get("present") is False
            else _words(
                size(shm.get("size")), f"({size(shm['free'])} free)" if shm.get("free") else ""
            ),
        ),
        *_torch_rows(torch, nvidia),
        ("GPUs", _gpus(torch, nvidia)),
        ("Driver", env_value(nvidia.get("driver_version"))),
        ("nvcc", env_value(nvcc.get("version"))),
        ("Start method", env_value(_section(env, "multiprocessing").get("start_method"))),
        (
            "Packages",
            ", ".join(f"{k} {v or 'not installed'}" for k, v in _section(env, "packages").items()),
        ),
    ]
    rows += [(key, env_value(value)) for key, value in env.items() if key not in _ENV_SECTIONS]
    return [(label, value) for label, value in rows if value]


def env_vars(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, value) of the environment variables the capture recorded, sorted."""
    return [(str(k), str(v)) for k, v in sorted(_section(env, "env").items())]


def mismatches(env: Mapping[str, Any]) -> list[str]:
    """Where the spec's environment differs from the one that ran, one line each."""
    found = env.get("environment_mismatch")
    if not found:
        return []
    if isinstance(found, Mapping):
        return [f"{k}: {env_value(v)}" for k, v in found.items()]
    if isinstance(found, (list, tuple)):
        return [env_value(item) for item in found]
    return [str(found)]
