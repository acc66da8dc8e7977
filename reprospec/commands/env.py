"""`reprospec env [--format json]`: this machine as the harness sees it (captured in a child)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping

from reprospec.commands import options as opt
from reprospec.core.jsontypes import JsonValue


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `env` verb's arguments."""
    p = sub.add_parser("env", help="this machine as the harness sees it (runs in a child)")
    opt.text_or_json(p, help="text (default: a summary) or json (the whole capture)")
    opt.python(p, help="the interpreter to look through (default: this one)")


def run(args: argparse.Namespace) -> int:
    from reprospec.environment.probe import probe_environment
    from reprospec.runners.local import checked_python

    env = probe_environment(checked_python(getattr(args, "python", None)), cuda=True)
    if args.format == "json":
        json.dump(env, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        width = max(len(key) for key, _ in summary(env))
        for key, value in summary(env):
            sys.stdout.write(f"{key:<{width}}  {value}\n")
    return 0


def _size(value: JsonValue) -> str:
    return f"{value / 2**30:.1f} GiB" if isinstance(value, (int, float)) else "?"


def summary(env: Mapping[str, JsonValue]) -> list[tuple[str, str]]:
    """The environment as (label, value) lines, in the order a bug report wants them."""
    from reprospec.environment.captured import section, strings

    python, os_, cpu = section(env, "python"), section(env, "os"), section(env, "cpu")
    memory, shm, torch = section(env, "memory"), section(env, "shm"), section(env, "torch")
    nvidia, nvcc = section(env, "nvidia"), section(env, "nvcc")
    if torch.get("installed") is False:
        torch_line = "not installed"
    elif torch.get("error"):
        torch_line = f"broken: {torch['error']}"
    else:
        cuda, cudnn = torch.get("cuda") or "none", torch.get("cudnn") or "none"
        torch_line = f"{torch.get('version')} (CUDA {cuda}, cuDNN {cudnn})"
    found = torch.get("gpus") or nvidia.get("gpus")
    gpus = [g for g in found if isinstance(g, dict)] if isinstance(found, list) else []
    lines = [
        ("python", f"{python.get('version')} ({python.get('executable')})"),
        (
            "os",
            f"{os_.get('distribution') or os_.get('system')}, "
            f"kernel {os_.get('kernel')} {os_.get('machine')}"
            + (f", {os_['wsl']}" if os_.get("wsl") else "")
            + (f", in {os_['container']}" if os_.get("container") else ""),
        ),
        (
            "cpu",
            f"{cpu.get('model')}, {cpu.get('usable_cores')}/{cpu.get('cores')} cores, "
            f"flags {' '.join(strings(cpu.get('flags'))) or 'none'}",
        ),
        (
            "memory",
            f"{_size(memory.get('total'))} total, {_size(memory.get('available'))} available"
            + (
                f", cgroup limit {_size(memory['cgroup_limit'])}"
                if memory.get("cgroup_limit")
                else ""
            ),
        ),
        ("/dev/shm", f"{_size(shm.get('size'))}" if shm.get("present", True) else "missing"),
        ("torch", torch_line),
        # torch's, where it imports: without it the line said `None`.
        ("cpu capability", str(torch.get("cpu_capability") or "none")),
        ("cuda arch list", " ".join(strings(torch.get("arch_list"))) or "none"),
        (
            "gpus",
            "; ".join(
                f"{g.get('name')} (cc {g.get('capability')}, {g.get('memory_mib')} MiB)"
                for g in gpus
            )
            or "none",
        ),
        (
            "driver",
            f"{nvidia.get('driver_version')} (CUDA {nvidia.get('cuda_version')})"
            if nvidia.get("driver_version")
            else "none (no nvidia-smi)",
        ),
        ("nvcc", f"{nvcc.get('version')} ({nvcc.get('path')})" if nvcc.get("path") else "none"),
        ("start method", str(section(env, "multiprocessing").get("start_method"))),
        (
            "packages",
            ", ".join(f"{k} {v or 'missing'}" for k, v in section(env, "packages").items()),
        ),
    ]
    variables = section(env, "env")
    if variables:
        lines.append(("env", " ".join(f"{k}={v}" for k, v in variables.items())))
    return lines
