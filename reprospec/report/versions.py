"""The "Versions" block of a PyTorch bug report, from the environment captured in the child.

PyTorch's issue template asks for the output of `python -m torch.utils.collect_env`.
The same facts were captured by `reprospec_harness.envinfo` in the target
interpreter (the engine never imports torch): glibc, the compilers, every
installed distribution, and `torch.__config__.show()`. This module only words
them, in collect_env's layout, so a maintainer reads what they are used to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reprospec.core.results import RunResult
from reprospec.environment.facts import within

NOT_COLLECTED = "Could not collect"
# For a field whose value a toggle chose: the run has no one value to give.
DIFFERS = "differs from cell to cell (the results show each cell's)"


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


def captured_where(run: RunResult, one_cell: Sequence[str]) -> str:
    """Where the Versions block's facts come from, for its heading."""
    cell = run.environment.get("captured_in")
    if not within("python", one_cell):
        if cell and any(f.startswith("collect_env.pip.") for f in one_cell):
            # A toggle chose a package's version: what that version pulls in (packaging 21.3's
            # pyparsing, which 22.0 has not) is listed too, and is that cell's, not the run's.
            return (
                f"captured in the environment of cell {cell}; the cells' packages differ, so "
                "the others it lists (what those pull in) may too"
            )
        return "captured in the run's interpreter"
    # The cells ran several interpreters (a python, image or dockerfile a toggle chose).
    return (
        f"captured in the interpreter of cell {cell} only"
        if cell
        else "captured in one cell's interpreter only"
    ) + "; the cells ran different interpreters"


def versions_text(env: Mapping[str, object], one_cell: Sequence[str] = ()) -> str | None:
    """collect_env's report of the captured environment; None when it was not captured.

    `one_cell`: the fields that hold the capture's cell's values only (`facts.one_cell_fields`):
    the packages a toggle chose are said to differ instead of naming one cell's version.
    """
    extra = _section(env, "collect_env")
    if not extra:
        return None
    torch, system, cpu = _section(env, "torch"), _section(env, "os"), _section(env, "cpu")
    nvidia, nvcc = _section(env, "nvidia"), _section(env, "nvcc")
    varies = within("torch", one_cell) and not within("python", one_cell)
    if varies:
        # One cell's torch, not the run's: none of its facts is the run's.
        torch = {}
    elif torch.get("captured") is False:
        # A command spec's capture does not import torch (seconds, for a spec that may not
        # use it); its installed version is still known, from the package's metadata.
        torch = _uncaptured(_section(env, "packages"))
    imported = "cuda_available" in torch
    if varies:
        torch_version = DIFFERS
    elif torch.get("installed") is False:
        torch_version = "N/A (torch is not installed)"
    elif torch.get("error"):
        torch_version = f"N/A ({torch['error']})"
    else:
        torch_version = _text(torch.get("version"))
    # What only an imported torch tells: N/A where there is no torch to ask.
    unknown = NOT_COLLECTED if torch.get("installed") and not torch.get("error") else "N/A"
    gpus = _list(nvidia.get("gpus")) or _list(torch.get("gpus"))
    gpu_lines = [
        f"GPU {gpu.get('index', '?')}: {gpu.get('name', '?')}"
        for gpu in gpus
        if isinstance(gpu, Mapping)
    ]
    runtime = nvcc.get("build") or nvcc.get("version")
    driver = nvidia.get("driver_version")
    # collect_env's rule: "No CUDA" only where an imported torch has no CUDA and the machine
    # shows none either (no nvcc, no GPU, no driver); a fact missing otherwise was not
    # collected. "No CUDA" beside an nvcc's runtime version contradicted itself.
    no_cuda = (
        "No CUDA"
        if imported and not torch.get("cuda_available") and not (runtime or gpu_lines or driver)
        else NOT_COLLECTED
    )
    lines = [
        f"PyTorch version: {torch_version}",
        f"Is debug build: {_text(torch.get('debug'), 'N/A' if imported else unknown)}",
        f"CUDA used to build PyTorch: "
        f"{_text(torch.get('cuda'), 'None' if no_cuda != NOT_COLLECTED else unknown)}",
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
        f"Is CUDA available: {_text(torch.get('cuda_available'), unknown)}",
        f"CUDA runtime version: {_text(runtime, no_cuda)}",
        f"GPU models and configuration: {'; '.join(gpu_lines) or no_cuda}",
        f"Nvidia driver version: {_text(driver, no_cuda)}",
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
    lines += [
        f"[pip3] {name}: {DIFFERS}"
        if not within("python", one_cell) and within(f"collect_env.pip.{name}", one_cell)
        else f"[pip3] {name}=={version}"
        for name, version in pip.items()
    ] or ["[pip3] " + NOT_COLLECTED]
    config = torch.get("config")
    if isinstance(config, str) and config.strip() and not varies:
        lines += ["", "torch.__config__.show():", config.rstrip()]
    return "\n".join(lines)


def _uncaptured(packages: Mapping[str, object]) -> Mapping[str, object]:
    """What is known of a torch the capture did not import: installed or not, and its version."""
    if "torch" not in packages:
        return {}
    version = packages["torch"]
    if not version:
        return {"installed": False}
    return {"installed": True, "version": version}
