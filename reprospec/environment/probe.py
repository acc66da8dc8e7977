"""Capture an interpreter's environment by running `python -m reprospec_harness.envinfo` in a child.

The parent never imports torch: the child does, and may even crash doing it,
which is reported in the result instead of failing the probe.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.scoped import Scoped
from reprospec.environment.interpreter import run_python, version_of
from reprospec.errors import InfraError
from reprospec.harness import HARNESS_ROOT

# The local runner puts this on every child's PYTHONPATH; it is ours, not the machine's.
STACKDUMP_DIR = Path(__file__).resolve().parent.parent / "stackdump"

TIMEOUT_S = 120.0
# An environment's JSON is tens of kilobytes; more is an interpreter printing on its own.
OUTPUT_BYTES = 4 << 20
# Bumped when the torch part of a capture gains fields, so cached captures are retaken.
CACHE_FORMAT = 3


def _run(
    python: str,
    args: Sequence[str],
    harness_root: Path = HARNESS_ROOT,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(harness_root), env.get("PYTHONPATH")) if p)
    argv = [python, "-m", "reprospec_harness.envinfo", *args]
    # The interpreter is the spec's: what it prints is kept within a bound (capped.py).
    done = run_python(
        argv, what="environment capture", limit=OUTPUT_BYTES, timeout_s=TIMEOUT_S, env=env
    )
    return subprocess.CompletedProcess(
        argv,
        done.returncode if done.returncode is not None else -9,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def _died(done: subprocess.CompletedProcess[str]) -> str:
    if done.returncode < 0:
        try:
            return f"killed by {signal.Signals(-done.returncode).name}"
        except ValueError:
            return f"killed by signal {-done.returncode}"
    last = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
    return last[0]


# shared_captures(): the captures of the open block, by everything a capture is asked with.
_SHARED: Scoped[tuple[object, ...], JsonObject] = Scoped()


@contextlib.contextmanager
def shared_captures() -> Iterator[None]:
    """While open, a capture asked again with the same interpreter, packages, variables and
    options is the first one's, not a new child.

    A search (isolate, minimize, amplify, a flaky bisect's repeated versions) runs tens to
    hundreds of small runs of one program with one interpreter; each run's capture was a
    child of its own (about 0.1 s of CPU, a third of a small crash's attempt), which told the
    same facts each time. Inside the block its runs share the capture of the first, machine
    part (memory, /dev/shm) included: the search's environment, as it was when it started. A
    capture that failed is not kept. The outermost block's end forgets them all.
    """
    with _SHARED.block():
        yield


def probe_environment(
    python: str,
    packages: Sequence[str] = (),
    *,
    cuda: bool = False,
    harness_root: Path = HARNESS_ROOT,
    extra_env: Mapping[str, str] | None = None,
    torch_cache: Path | None = None,
    with_torch: bool = True,
) -> JsonObject:
    """The environment of `python` as the harness sees it; `cuda`: GPU properties from torch too.

    `with_torch=False`: torch is not imported (its version still comes from its package
    metadata), for a spec that never uses torch: one quick child, nothing to wait for.

    `extra_env` is the spec's `environment.env`, so CUDA_*/TORCH_* settings show as they ran.
    With `torch_cache` (a folder), the torch part (2 s of CPU to import torch) is reused
    while the same torch build, driver and CUDA/TORCH variables are seen, and the tools'
    versions (nvcc, gcc, cmake) while their binaries are the same; the machine part
    (memory, /dev/shm, CPU, GPUs) is captured fresh every time, but inside
    `shared_captures()`.
    """
    key = (
        python, tuple(packages), cuda, str(harness_root), tuple(sorted((extra_env or {}).items())),
        str(torch_cache), with_torch,
    )  # fmt: skip
    shared = _SHARED.get(key)
    if shared is not None:
        return copy.deepcopy(shared)  # the caller's to change (a run adds its mismatches)
    info = _probe(python, packages, cuda, harness_root, extra_env, torch_cache, with_torch)
    torch = info.get("torch")
    if not ("error" in info or (isinstance(torch, dict) and "error" in torch)):
        _SHARED.keep(key, copy.deepcopy(info))
    return info


def _probe(
    python: str,
    packages: Sequence[str],
    cuda: bool,
    harness_root: Path,
    extra_env: Mapping[str, str] | None,
    torch_cache: Path | None,
    with_torch: bool,
) -> JsonObject:
    args = [arg for name in packages for arg in ("--package", name)] + (["--cuda"] if cuda else [])
    if torch_cache is not None:
        # nvcc, gcc and cmake --version, by binary: asked once, not on every run.
        args += ["--tool-cache", str(torch_cache / "tools.json")]
    if not with_torch and not cuda:
        return _capture(
            python, [*args, "--package", "torch", "--no-torch"], harness_root, extra_env
        )
    if torch_cache is not None and not cuda:
        fresh = _capture(
            python, [*args, "--package", "torch", "--no-torch"], harness_root, extra_env
        )
        cache_file = torch_cache / f"torch-{_torch_key(python, fresh, extra_env)}.json"
        try:
            fresh["torch"] = json.loads(cache_file.read_text())
            return fresh
        except (OSError, ValueError):
            pass
        info = _capture_with_torch(python, args, harness_root, extra_env)
        torch = info.get("torch")
        torch = torch if isinstance(torch, dict) else {}
        if "error" not in torch:
            torch_cache.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(torch))
            tmp.replace(cache_file)
        return info
    return _capture_with_torch(python, args, harness_root, extra_env)


def _capture_with_torch(
    python: str, args: Sequence[str], harness_root: Path, extra_env: Mapping[str, str] | None
) -> JsonObject:
    done = _run(python, args, harness_root, extra_env)
    if done.returncode != 0:
        # Importing torch crashed or failed the whole capture: capture without it, say why.
        reason = _died(done)
        info = _capture(python, [*args, "--no-torch"], harness_root, extra_env)
        info["torch"] = {"installed": True, "error": f"import torch failed: {reason}"}
        return info
    return _parse(done.stdout, python, harness_root)


def _capture(
    python: str, args: Sequence[str], harness_root: Path, extra_env: Mapping[str, str] | None
) -> JsonObject:
    done = _run(python, args, harness_root, extra_env)
    if done.returncode != 0:
        raise InfraError(f"environment capture with {python} failed: {_too_old(python, done)}")
    return _parse(done.stdout, python, harness_root)


# The oldest Python the capture (the harness's envinfo) runs on: pyproject's requires-python.
HARNESS_PYTHON = (3, 10)


def _too_old(python: str, done: subprocess.CompletedProcess[str]) -> str:
    """Why the capture died, saying so where the interpreter is older than the harness: a
    Python 3.7 (a venv runner's `environment.python`, whose cells run) said only `SyntaxError:
    invalid syntax`, the harness's line, as if the interpreter were broken."""
    said = _died(done)
    if done.returncode < 0 or not said.startswith(("SyntaxError", "ImportError")):
        return said
    said_version, _ = version_of(python)  # (the one probe of a version: its output bounded)
    if said_version is None:
        return said
    version = tuple(int(part) for part in said_version.split("."))
    if version[:2] >= HARNESS_PYTHON:
        return said
    return (
        f"it is Python {'.'.join(map(str, version))}, and the capture runs reprospec's harness, "
        f"which needs Python {'.'.join(map(str, HARNESS_PYTHON))} or later ({said}); "
        "give --python an interpreter that new"
    )


def _torch_key(
    python: str, fresh: Mapping[str, JsonValue], extra_env: Mapping[str, str] | None
) -> str:
    """What the torch part depends on: interpreter, torch build, driver, CUDA/TORCH variables."""
    import hashlib

    env = {**os.environ, **(extra_env or {})}
    relevant = sorted(
        (k, v) for k, v in env.items() if k.startswith(("CUDA_", "TORCH_", "PYTORCH_", "OMP_"))
    )
    nvidia, packages = fresh.get("nvidia"), fresh.get("packages")
    gpus = nvidia.get("gpus") if isinstance(nvidia, dict) else None
    torch = packages.get("torch") if isinstance(packages, dict) else None
    # numpy's version too: torch's numpy bridge (the part's `numpy`) works or not with it,
    # and a numpy installed after the capture would go on reading as missing.
    numpy = packages.get("numpy") if isinstance(packages, dict) else None
    # CACHE_FORMAT: a capture of an older reprospec lacks fields (torch's build config).
    parts = [CACHE_FORMAT, os.path.realpath(python), torch, numpy, gpus, relevant]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def _parse(stdout: str, python: str, harness_root: Path = HARNESS_ROOT) -> JsonObject:
    try:
        info = json.loads(stdout)
    except ValueError as exc:
        raise InfraError(f"environment capture with {python} printed no JSON: {exc}") from exc
    if not isinstance(info, dict):
        raise InfraError(f"environment capture with {python} printed no JSON object")
    return without_our_path(info, (str(harness_root), str(STACKDUMP_DIR)))


def without_our_path(info: JsonObject, ours: Sequence[str]) -> JsonObject:
    """`info` (a capture) with the folders the engine put on PYTHONPATH (`ours`: the
    harness, the stack dumper) taken out of its `env`: they are ours, not the machine's,
    and a runner that names them otherwise (a container's mounts) would read as a change
    of environment in `compare`."""
    variables = info.get("env")
    if not isinstance(variables, dict):
        return info
    path = str(variables.get("PYTHONPATH") or "")
    kept = [p for p in path.split(os.pathsep) if p and p not in ours]
    if kept:
        variables["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        variables.pop("PYTHONPATH", None)
    return info
