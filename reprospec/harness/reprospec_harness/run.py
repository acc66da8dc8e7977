"""Run one cell's workload: imports, setup, phases; every move an event, every failure real.

Exit codes: the workload's own (0, 1 for an exception, a signal for a crash), and
EXIT_INFRA (3) with an `infra_error` event when this machine cannot run the cell at all
(no CUDA device, torch not installed) or the spec's built-in configuration is wrong
(`config.ConfigError`: a bad model parameter, an unknown dtype, an entrypoint or an entry
of `imports` that does not exist): the engine turns that into an infra-error verdict.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from . import cell as cell_module
from . import distributed, envinfo, events, stackdump
from .config import ConfigError, InfraError, infra_error, resolve_device
from .values import JsonObject, JsonValue, array, obj, to_int

# Switches that are environment variables read when CUDA initializes: set before any import.
DEBUG_ENV = {
    "cuda_launch_blocking": ("CUDA_LAUNCH_BLOCKING", "1"),
    "device_side_assertions": ("TORCH_USE_CUDA_DSA", "1"),
    "deterministic": ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
}


def main() -> int:
    cell = cell_module.load()
    workload, environment = cell.workload, cell.environment
    stackdump.register()
    if not faulthandler.is_enabled():
        stackdump.arm_fatal()
    debug = obj(workload.get("debug"))
    for switch, (name, value) in DEBUG_ENV.items():
        if debug.get(switch):
            os.environ.setdefault(name, value)
    events.emit("start", cell=cell.cell_id, attempt=cell.attempt, pid=os.getpid())
    env_path = os.environ.get("REPROSPEC_ENV_JSON")
    packages = [str(name) for name in array(environment.get("packages"))]
    info = envinfo.capture(packages, with_torch=False)  # written now: an import may hang or crash
    if env_path:
        envinfo.write(env_path, info)
    requested = str(workload.get("device") or environment.get("device") or "cpu")
    try:
        import_modules([str(name) for name in array(workload.get("imports"))])
        ranks = distributed.settings(workload)
        if ranks is None:
            device = resolve_device(requested)
        else:
            distributed.check_backend(ranks, requested)
    except InfraError as exc:
        return infra_error(exc)
    finally:
        if env_path:
            info["torch"] = envinfo.capture_torch(init_cuda=_on_cuda(workload, environment))
            info["workload"] = _workload_facts(workload)
            envinfo.write(env_path, info)
    from .setup import build  # torch-dependent: after the spec's own imports
    from .training import run_phases

    if ranks is not None:
        # This process supervises the ranks (distributed.py); they build and train.
        phases = [str(obj(phase)["name"]) for phase in array(workload["phases"])]
        return distributed.supervise(ranks, phases, requested)

    events.emit("phase", phase="setup")
    try:
        work = build(workload, device, seed=to_int(workload.get("seed") or 0), attempt=cell.attempt)
    except ConfigError as exc:  # a mistake in the spec's built-in configuration, not the incident
        return infra_error(exc)
    run_phases(work)
    return 0


def import_modules(modules: list[str]) -> None:
    """The spec's imports in order, each an event (locates an import hang); then torch.

    A listed module whose top-level package is not there (a typo, a package not installed
    in this interpreter) is a mistake of the spec or of this machine, never the incident:
    a ConfigError naming the entry, so that `expect: {outcome: error}` cannot count it as
    reproduced. A module that is there and fails (its own missing import included) is
    the program failing, and stays an error, as an entry point's does (entrypoints.py); so
    is a submodule an installed package lacks (`pkg.sub` in a version without `sub`: a
    bisect over versions finds where it went).
    """
    order = list(modules) + ([] if "torch" in modules else ["torch"])
    for name in order:
        events.emit("import", module=name, phase="import")
        cwd = str(Path.cwd())
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        if not name or name.startswith("."):  # import_module's ValueError would read as the bug
            raise ConfigError(
                f"workload.imports[{modules.index(name)}]",
                f"{name!r} is not an absolute module name",
            )
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if name == "torch" and exc.name == "torch":
                raise InfraError(f"torch is not installed in {sys.executable}") from exc
            missing = exc.name or ""
            if missing and missing == name.split(".")[0]:
                raise ConfigError(
                    f"workload.imports[{modules.index(name)}]",
                    f"no module named {missing!r} in {sys.executable} "
                    f"(working directory {Path.cwd()})",
                ) from None
            raise


def _on_cuda(workload: Mapping[str, JsonValue], environment: Mapping[str, JsonValue]) -> bool:
    return str(workload.get("device") or environment.get("device") or "cpu").startswith("cuda")


def _workload_facts(workload: Mapping[str, JsonValue]) -> JsonObject:
    loader = obj(obj(workload.get("data")).get("loader"))
    return {
        key: loader.get(key) for key in ("num_workers", "pin_memory", "multiprocessing_context")
    }
