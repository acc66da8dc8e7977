"""The "Versions" block of a PyTorch bug report, from the environment captured in the child.

PyTorch's issue template asks for the output of `python -m torch.utils.collect_env`.
The same facts were captured by `reprospec_harness.envinfo` in the target
interpreter (the engine never imports torch): glibc, the compilers, every
installed distribution, and `torch.__config__.show()`. This module only words
them, in collect_env's layout, so a maintainer reads what they are used to.
"""

from __future__ import annotations

from collections.abc import Mapping

NOT_COLLECTED = "Could not collect"


def _section(env: Mapping[str, object], name: str) -> Mapping[str, object]:
    value = env.get(name)
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _text(value: object, default: str = NOT_COLLECTED) -> str:
    if value is None or value == "" or value == []:
        return default
    if isinstance(value, bool):
        return str(value)
    return str(value)


def versions_text(env: Mapping[str, object]) -> str | None:
    """collect_env's report of the captured environment; None when it was not captured."""
    extra = _section(env, "collect_env")
    if not extra:
        return None
    torch, system, cpu = _section(env, "torch"), _section(env, "os"), _section(env, "cpu")
    nvidia, nvcc = _section(env, "nvidia"), _section(env, "nvcc")
    installed = torch.get("installed") is not False and not torch.get("error")
    if torch.get("installed") is False:
        torch_version = "N/A (torch is not installed)"
    elif torch.get("error"):
        torch_version = f"N/A ({torch['error']})"
    else:
        torch_version = _text(torch.get("version"))
    gpus = _list(nvidia.get("gpus")) or _list(torch.get("gpus"))
    gpu_lines = [
        f"GPU {gpu.get('index', '?')}: {gpu.get('name', '?')}"
        for gpu in gpus
        if isinstance(gpu, Mapping)
    ]
    no_cuda = "No CUDA" if not torch.get("cuda_available") else NOT_COLLECTED
    lines = [
        f"PyTorch version: {torch_version}",
        f"Is debug build: {_text(torch.get('debug'), 'N/A')}",
        f"CUDA used to build PyTorch: {_text(torch.get('cuda'), 'None' if installed else 'N/A')}",
        f"ROCM used to build PyTorch: {_text(torch.get('hip'), 'N/A')}",
        "",
        f"OS: {_text(system.get('distribution') or system.get('system'))}"
        + (f" ({system['machine']})" if system.get("machine") else ""),
        f"GCC version: {_text(extra.get('gcc'))}",
        f"Clang version: {_text(extra.get('clang'))}",
        f"CMake version: {_text(extra.get('cmake'))}",
        f"Libc version: {_text(extra.get('libc'), 'N/A')}",
        "",
        f"Python version: {_text(extra.get('python_full'))} (64-bit runtime)",
        f"Python platform: {_text(extra.get('platform'))}",
        f"Is CUDA available: {_text(torch.get('cuda_available'), 'N/A')}",
        f"CUDA runtime version: {_text(nvcc.get('version'), no_cuda)}",
        f"GPU models and configuration: {'; '.join(gpu_lines) or no_cuda}",
        f"Nvidia driver version: {_text(nvidia.get('driver_version'), no_cuda)}",
        f"cuDNN version: {_text(torch.get('cudnn'), no_cuda)}",
        "",
        "CPU:",
        f"Model name: {_text(cpu.get('model'))}",
        f"CPU(s): {_text(cpu.get('cores'))} ({_text(cpu.get('usable_cores'))} usable)",
        f"Flags: {' '.join(str(f) for f in _list(cpu.get('flags'))) or NOT_COLLECTED}",
        "",
        "Versions of all installed packages:",
    ]
    pip = _section(extra, "pip")
    lines += [f"[pip3] {name}=={version}" for name, version in pip.items()] or [
        "[pip3] " + NOT_COLLECTED
    ]
    config = torch.get("config")
    if isinstance(config, str) and config.strip():
        lines += ["", "torch.__config__.show():", config.rstrip()]
    return "\n".join(lines)
