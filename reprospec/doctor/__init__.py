"""`reprospec doctor`: compatibility checks from a captured environment (a dict from envinfo).

Each check is pass / warn / fail / skipped with one line of why and, unless it
passed, one line of what to do. Without a GPU, GPU checks are skipped, never failed.
`machine.py` checks the machine, `needs.py` what a spec needs of it, `engine.py`
how the engine starts attempts here; `check.py` holds what they are made of. Pure
functions, no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reprospec.core.lazynames import lazy_getattr
from reprospec.environment.captured import Captured

if TYPE_CHECKING:
    from reprospec.doctor.check import NO_GPU, Check, Status, version_tuple
    from reprospec.doctor.engine import check_native_stacks, check_starter
    from reprospec.doctor.machine import arch_ok
    from reprospec.doctor.needs import (
        Needs,
        batchformat_size,
        needs_of,
    )

# Name -> the submodule that defines it, imported at the first use of a name: every run's
# environment capture reads `doctor.needs`, and importing the package imported the
# machine's and the engine's checks too, which only `reprospec doctor` runs (issue 30,
# item 4).
_WHERE = {
    "NO_GPU": "check",
    "Check": "check",
    "Status": "check",
    "version_tuple": "check",
    "check_native_stacks": "engine",
    "check_starter": "engine",
    "arch_ok": "machine",
    "Needs": "needs",
    "batchformat_size": "needs",
    "needs_of": "needs",
}

_SUBMODULES = frozenset(_WHERE.values()) | {"cuda"}


__getattr__ = lazy_getattr(__name__, _WHERE, _SUBMODULES, globals())


def run_checks(
    env: Captured, needs: Needs | None = None, visible_devices: str | None = None
) -> list[Check]:
    """Every check, machine first, then what the spec needs (when a spec was given).
    `visible_devices`: CUDA_VISIBLE_DEVICES where set, whose ids `run` hands out as GPU
    slots (the `gpu-slots` check, and the spec's `device`)."""
    from reprospec.doctor.machine import (
        check_arch_list,
        check_cpu_capability,
        check_cuda_available,
        check_driver,
        check_gpu_slots,
        check_nvcc,
        check_torch,
        check_wsl,
    )
    from reprospec.doctor.needs import (
        Needs,
        check_device,
        check_limits,
        check_memory,
        check_shm,
        check_spec_environment,
    )

    # A spec of builtin workloads only never touches torch's numpy bridge (one that needs no
    # torch at all has its torch checks skipped below).
    numpy_used = needs is None or needs.numpy or not needs.torch
    checks = [
        check_torch(env, numpy_used),
        check_cuda_available(env),
        *([check_gpu_slots(env, visible_devices)] if visible_devices is not None else []),
        check_driver(env),
        check_arch_list(env),
        check_cpu_capability(env),
        check_shm(env, needs or Needs()),
        check_wsl(env),
        check_nvcc(env),
    ]
    if needs is not None and not needs.torch:
        checks = [_not_needed(check) for check in checks]
    if needs is not None and needs.runner == "venv":
        checks = [_of_the_venvs(check, env, needs) for check in checks]
    elif needs is not None and needs.runner != "local":
        checks = [_installed_by_runner(check, env, needs) for check in checks]
    if needs is not None:
        checks += [
            check_device(env, needs, visible_devices),
            check_memory(env, needs),
            check_limits(needs),
            check_spec_environment(env, needs),
        ]
    return checks


# The checks about torch and what it runs on: a spec that imports no torch needs none.
# `shm` is one: its advice is for DataLoader workers passing tensors through /dev/shm, and
# `doctor` warned a spec of plain commands (`shm_size: 64m`, or `--runner docker`'s 64 MiB)
# that its DataLoader workers would run out of shared memory.
TORCH_CHECKS = frozenset({"torch", "cuda", "cuda-driver", "gpu-arch", "cpu-capability", "shm"})
# The checks of an interpreter, of `run_checks`' machine checks: `doctor --runner docker`
# makes them on each image's environment (commands/doctorimage.py). `shm` and `wsl` are not
# among them: a container has docker's /dev/shm, and shares the host's kernel.
INTERPRETER_CHECKS = frozenset(
    {"torch", "cuda", "gpu-slots", "cuda-driver", "gpu-arch", "cpu-capability", "nvcc"}
)


def _not_needed(check: Check) -> Check:
    """A torch check's failure or warning, for a spec that needs no torch: skipped, saying why."""
    from reprospec.doctor.check import Check

    if check.name not in TORCH_CHECKS or check.status not in ("fail", "warn"):
        return check
    return Check(check.name, "skipped", f"the spec needs no torch ({check.why})")


def _installed_by_runner(check: Check, env: Captured, needs: Needs) -> Check:
    """The torch check's `torch is not installed in this interpreter`, on the docker runner
    (the venv runner's are `_of_the_venvs`'), where the spec's packages name torch: skipped,
    saying the runner installs them into each cell's image. Not in a Dockerfile's image,
    into which the docker runner installs nothing: skipped there as if it would."""
    from reprospec.doctor.check import NO_TORCH, Check
    from reprospec.environment.captured import section
    from reprospec.environment.packages import requirements_naming

    # (The captured fact, not its wording `_this_torch` gives.)
    if check.name != "torch" or section(env, "torch").get("installed") is not False:
        return check
    if needs.runner == "docker" and needs.dockerfile:
        return check
    named = requirements_naming(needs.packages, "torch")
    if not named:
        return check
    return Check(
        "torch",
        "skipped",
        f"{NO_TORCH}; the {needs.runner} runner installs the spec's {', '.join(named)} for "
        "each cell",
    )


def _this_torch(env: Captured) -> str:
    """The captured interpreter's torch, in words: `NO_TORCH`, `this interpreter's torch is
    2.5.1`, or that it was not captured."""
    from reprospec.doctor.check import NO_TORCH
    from reprospec.environment.captured import section

    torch = section(env, "torch")
    version = torch.get("version")
    if torch.get("installed") is False:
        return NO_TORCH
    if isinstance(version, str) and version:
        return f"this interpreter's torch is {version}"
    return "this interpreter's torch was not captured"


# The checks that read the interpreter's torch (its build, CUDA, arch list, CPU kernels): on
# the venv runner, the torch of the interpreter each cell's venv is built on, not the cells'.
_TORCH_READ = frozenset({"cuda", "cuda-driver", "gpu-arch", "cpu-capability"})


def _of_the_venvs(check: Check, env: Captured, needs: Needs) -> Check:
    """On the venv runner, the torch checks as of what the cells run: each cell's venv holds
    only its packages, not the interpreter's it is built on, which is what was captured.
    doctor passed (or warned `pip install numpy` of) that interpreter's torch 2.13 for a
    spec of `torch==2.5.1`, and its numpy bridge for cells whose venvs hold no numpy.

    `torch`: where the cells' packages name torch, of those packages (a warning where they
    name no numpy and a cell may use it: torch does not require numpy, so its bridge fails
    in the venv unless another package brings it; else skipped, saying what is installed);
    where they name none, the interpreter's, said so, a failure only a warning. The others
    that read its torch are said to be of it, a failure only a warning: the cells install a
    torch of their own, or none (spec-environment warns of a package that brings one)."""
    from dataclasses import replace

    from reprospec.doctor.check import Check
    from reprospec.doctor.needs import named_cells
    from reprospec.environment.packages import requirements_naming

    if check.name != "torch" and (check.name not in _TORCH_READ or check.status == "skipped"):
        return check
    ours = _this_torch(env)
    sets = needs.cell_packages
    named = {each: requirements_naming(each.packages, "torch") for each in sets}
    torches = ", ".join(dict.fromkeys(r for each in sets for r in named[each]))
    if check.name != "torch":
        # A failure of this interpreter's is never the cells': their venvs hold a torch of
        # their own packages, or none (a package that brings one, `torchvision`, is
        # spec-environment's to warn of), where this one failed `doctor` for either.
        status = "warn" if check.status == "fail" else check.status
        if not torches:
            return replace(check, status=status, why=f"of this interpreter's torch, which the "
                           f"cells' venvs do not hold: {check.why}")  # fmt: skip
        return replace(
            check,
            status=status,
            why=f"of this interpreter's torch, not the cells' ({torches}, installed in each "
            f"cell's venv): {check.why}",
        )
    if not needs.torch:
        # (`_not_needed` said a failure so; a pass was of a torch no cell has)
        return check if check.status != "pass" else Check(
            "torch", "skipped", f"the spec needs no torch ({ours}; the cells' venvs hold only "
            "the spec's packages)"
        )  # fmt: skip
    if not torches:
        return replace(
            check,
            status="warn" if check.status == "fail" else check.status,
            why=f"of this interpreter, not of the cells' venvs, whose packages name no torch "
            f"(spec-environment): {check.why}",
        )
    lacking = [
        cell
        for each in sets
        if named[each] and not requirements_naming(each.packages, "numpy")
        for cell in (each.cells or ("",))
    ]
    if needs.numpy and lacking:
        ids = [cell for cell in dict.fromkeys(lacking) if cell]
        of = f" in {named_cells(ids)}" if ids and len(ids) < needs.cells else ""
        return Check(
            "torch",
            "warn",
            f"the venv runner installs the spec's {torches} in each cell's venv, and the cell's "
            f"packages name no numpy{of}: torch imports without it, but Tensor.numpy(), "
            "torch.from_numpy and a DataLoader batching numpy arrays fail there, unless one of "
            f"them requires numpy ({ours}, not what the cells run)",
            "add numpy to environment.packages (a torch built for numpy 1.x needs 'numpy<2')",
        )
    return Check(
        "torch",
        "skipped",
        f"{ours}, not what the cells run: the venv runner installs the spec's {torches} for "
        "each cell",
    )


__all__ = [
    "INTERPRETER_CHECKS",
    "NO_GPU",
    "Check",
    "Needs",
    "Status",
    "arch_ok",
    "batchformat_size",
    "check_native_stacks",
    "check_starter",
    "needs_of",
    "run_checks",
    "version_tuple",
]
