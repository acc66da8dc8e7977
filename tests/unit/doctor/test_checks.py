"""Doctor checks from environment dicts built from recorded real outputs (no GPU needed)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reprospec import doctor
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.sections import Environment
from reprospec.doctor.needs import CellPackages
from reprospec.environment.captured import environment_mismatches
from reprospec.harness import HARNESS_ROOT
from reprospec.native import CorePattern
from tests.support.paths import DATA

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness import envinfo

NVIDIA = DATA / "nvidia"


ARCH = json.loads((NVIDIA / "torch-arch-lists.json").read_text())


AVX512 = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"]


@pytest.fixture(autouse=True)
def _no_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    # On the venv runner a PYTHONPATH is asked of a probe, a process: that check is
    # tests/functional/doctor/test_pythonpath.py's.
    monkeypatch.delenv("PYTHONPATH", raising=False)


def machine(
    banner: str | None = None,
    csv: str | None = None,
    fields: tuple[str, ...] = envinfo.GPU_FIELDS,
    torch: dict[str, Any] | None = None,
    **extra: JsonValue,
) -> dict[str, Any]:
    """An env dict as envinfo writes it, GPU parts parsed from a recorded output."""
    nvidia: dict[str, Any] = {"gpus": []}
    if csv:
        nvidia["gpus"] = envinfo.parse_nvidia_smi_csv((NVIDIA / csv).read_text(), fields)
    if banner:
        nvidia.update(envinfo.parse_nvidia_smi_banner((NVIDIA / banner).read_text()))
    return {
        "cpu": {"flags": AVX512},
        "shm": {"present": True, "size": 8 * 2**30},
        "os": {"wsl": None},
        "nvidia": nvidia,
        "nvcc": {"path": None},
        "python": {"version": "3.11.7"},
        "packages": {"torch": "2.13.0+cpu"},
        "torch": {
            "installed": True,
            "version": "2.13.0+cpu",
            "cuda": None,
            "cpu_capability": "AVX512",
            "arch_list": [],
            "cuda_available": False,
            "device_count": 0,
            **(torch or {}),
        },
        **extra,
    }


def by_name(env: dict[str, Any], needs: doctor.Needs | None = None) -> dict[str, doctor.Check]:
    return {check.name: check for check in doctor.run_checks(env, needs)}


ADA = "query-gpu-compute_cap-titanv-rtx5880.csv"


ADA_FIELDS = ("compute_cap", "compute_mode", "driver_version", "name", "index")


def test_no_gpu_skips_every_gpu_check_never_fails() -> None:
    checks = by_name(machine())
    for name in ("cuda", "cuda-driver", "gpu-arch"):
        assert (checks[name].status, checks[name].why) == ("skipped", "no CUDA device")
    assert checks["torch"].status == "pass"
    assert checks["cpu-capability"].status == "pass"
    assert not [c for c in checks.values() if c.status == "fail"]


def test_cpu_only_torch_on_a_gpu_machine_fails_cuda() -> None:
    checks = by_name(machine("nvidia-smi-550.40.07-rtx4070.txt", ADA, ADA_FIELDS))
    assert checks["cuda"].status == "fail"
    assert "CPU-only build" in checks["cuda"].why
    assert "download.pytorch.org/whl/cu" in checks["cuda"].todo


def cuda_torch(version: str, cuda: str) -> dict[str, Any]:
    return {
        "version": version,
        "cuda": cuda,
        "arch_list": ARCH[version],
        "cuda_available": True,
        "device_count": 2,
    }


def test_healthy_gpu_machine_passes() -> None:
    env = machine(
        "nvidia-smi-610.43.03-kmd-umd.txt",
        ADA,
        ADA_FIELDS,
        torch=cuda_torch("2.10.0+cu128", "12.8"),
    )
    checks = by_name(env)
    assert checks["cuda"].status == "pass"
    assert "NVIDIA TITAN V" in checks["cuda"].why
    assert checks["cuda-driver"].status == "pass"
    assert "CUDA 13.3" in checks["cuda-driver"].why
    # 8.9 has no sm_89 cubin, but sm_86 runs on it (same major, lower minor)
    assert checks["gpu-arch"].status == "pass", checks["gpu-arch"].why


def test_driver_too_old_for_the_runtime_major_fails_minor_warns() -> None:
    old = by_name(
        machine(
            "nvidia-smi-470.256.02-a10g.txt",
            ADA,
            ADA_FIELDS,
            torch=cuda_torch("2.11.0+cu126", "12.6"),
        )
    )
    assert old["cuda-driver"].status == "fail"
    assert (
        old["cuda-driver"].why
        == "torch needs CUDA 12.6 but driver 470.256.02 supports at most CUDA 11.4"
    )
    assert ">= 560.28.03" in old["cuda-driver"].todo
    minor = by_name(
        machine(
            "nvidia-smi-550.40.07-rtx4070.txt",
            ADA,
            ADA_FIELDS,
            torch=cuda_torch("2.11.0+cu128", "12.8"),
        )
    )
    assert minor["cuda-driver"].status == "warn"
    assert "minor-version compatibility" in minor["cuda-driver"].why


def test_driver_without_banner_uses_the_minimum_driver_table() -> None:
    env = machine(
        None, ADA, ADA_FIELDS, torch=cuda_torch("2.11.0+cu128", "12.8")
    )  # driver 570.86.15 from csv
    env["nvidia"]["driver_version"] = env["nvidia"]["gpus"][0]["driver_version"]
    assert by_name(env)["cuda-driver"].status == "pass"


def test_gpu_not_in_the_compiled_arch_list_fails() -> None:
    # cu128 builds of 2.11 dropped sm_70: the TITAN V (7.0) has no kernel image
    checks = by_name(
        machine(
            "nvidia-smi-610.43.03-kmd-umd.txt",
            ADA,
            ADA_FIELDS,
            torch=cuda_torch("2.11.0+cu128", "12.8"),
        )
    )
    arch = checks["gpu-arch"]
    assert arch.status == "fail"
    assert "NVIDIA TITAN V is sm_70" in arch.why
    assert "no kernel image is available" in arch.why


def test_ptx_only_is_a_warning_and_unknown_capability_is_skipped() -> None:
    assert doctor.arch_ok("12.0", ARCH["cu118-with-ptx"]) == "warn"  # compute_37 PTX JITs forward
    assert doctor.arch_ok("12.0", ARCH["2.11.0+cu126"]) == "fail"
    assert doctor.arch_ok("9.0", ["sm_90a"]) == "pass"
    env = machine("nvidia-smi-470.256.02-a10g.txt", torch=cuda_torch("2.11.0+cu126", "12.6"))
    env["nvidia"]["gpus"] = [
        {"name": "NVIDIA A10G", "memory_mib": 22731}
    ]  # 470 has no compute_cap field
    assert by_name(env)["gpu-arch"].status == "skipped"


def test_cpu_capability_against_flags() -> None:
    lying = machine(torch={"cpu_capability": "AVX512"}, cpu={"flags": ["avx", "avx2", "fma"]})
    assert by_name(lying)["cpu-capability"].status == "fail"
    assert "SIGILL" in by_name(lying)["cpu-capability"].why
    forced = machine(torch={"cpu_capability": "AVX2"}, env={"ATEN_CPU_CAPABILITY": "avx2"})
    check = by_name(forced)["cpu-capability"]
    assert check.status == "warn"
    assert "ATEN_CPU_CAPABILITY=avx2" in check.why


def test_shm_against_workers_and_batches() -> None:
    docker_default = machine(shm={"present": True, "size": 64 * 2**20})
    needs = doctor.Needs(num_workers=2, batch_bytes=24 * 2**20)
    shm = by_name(docker_default, needs)["shm"]
    assert shm.status == "fail"
    assert "2 workers x prefetch 2 batches of 24.0 MiB need about 96.0 MiB" in shm.why
    assert by_name(machine(), needs)["shm"].status == "pass"
    assert (
        by_name(docker_default)["shm"].status == "warn"
    )  # no spec: small /dev/shm is worth a word
    # the spec's own shm_size is what the attempt gets, if it can be mounted
    own = doctor.Needs(num_workers=2, batch_bytes=24 * 2**20, shm_size=64 * 2**20)
    assert "the spec's shm_size" in by_name(machine(), own)["shm"].why
    # Under docker the attempts get the container's /dev/shm, docker's 64 MiB unless the
    # spec sets shm_size: doctor said this machine's (a roomy host passed a spec whose
    # workers' batches the container cannot hold).
    in_docker = by_name(machine(), replace(needs, runner="docker"))["shm"]
    assert in_docker.status == "fail"
    assert in_docker.why.startswith("the container's /dev/shm (docker's default; ")
    sized = replace(needs, runner="docker", shm_size=2**30)
    assert by_name(machine(), sized)["shm"].status == "pass"


def test_wsl_and_nvcc() -> None:
    assert by_name(machine(os={"wsl": "WSL2"}))["wsl"].status == "warn"
    nvcc = {
        "path": "/usr/local/cuda/bin/nvcc",
        "version": envinfo.parse_nvcc_version((NVIDIA / "nvcc-11.1.txt").read_text()),
    }
    env = machine(
        "nvidia-smi-550.40.07-rtx4070.txt",
        ADA,
        ADA_FIELDS,
        torch=cuda_torch("2.11.0+cu126", "12.6"),
        nvcc=nvcc,
    )
    assert by_name(env)["nvcc"].status == "warn"
    assert "nvcc 11.1 vs torch's CUDA 12.6" in by_name(env)["nvcc"].why
    assert by_name(machine())["nvcc"].status == "skipped"


def test_spec_needs() -> None:
    needs = doctor.Needs(
        device="cuda",
        memory=512 * 2**20,
        python="3.10",
        packages=("torch==2.13.0", "numpy>=3"),
        shm_size=2**26,
        shm_refused="not root",
    )
    checks = by_name(machine(packages={"torch": "2.13.0+cpu", "numpy": "2.4.6"}), needs)
    assert checks["device"].status == "fail"
    assert "infra-error" in checks["device"].why
    assert checks["memory"].status == "fail"
    assert "import torch" in checks["memory"].why
    assert checks["limits"].status == "warn"
    # On the local runner a package it lacks makes every cell infra-error: a failure.
    assert checks["spec-environment"].status == "fail"
    assert checks["spec-environment"].why == (
        "numpy 2.4.6 is installed (the cell needs numpy>=3): on the local runner every cell "
        "that names it is an infra error, not run (and the interpreter is python 3.11.7; "
        "the spec names 3.10)"
    )
    assert "--runner venv" in checks["spec-environment"].todo


def test_a_memory_limit_under_torchs_floor_fails_only_where_torch_runs_under_rlimit_as() -> None:
    # A spec of commands ran and passed under 100m; doctor failed it for torch's floor, and
    # under docker, whose limit is the container's (a cgroup), not RLIMIT_AS.
    env = machine()
    small = doctor.Needs(memory=100 * 2**20, torch=False)
    assert by_name(env, small)["memory"].status == "pass"
    assert "RLIMIT_AS" in by_name(env, small)["memory"].why
    torch_docker = replace(small, torch=True, runner="docker")
    assert by_name(env, torch_docker)["memory"].status == "pass"
    assert "the container's memory limit" in by_name(env, torch_docker)["memory"].why
    assert by_name(env, replace(small, torch=True))["memory"].status == "fail"


def test_spec_packages_the_runner_installs_are_no_failure() -> None:
    env = machine(packages={"numpy": "2.4.6"})
    needs = doctor.Needs(packages=("numpy>=3", "sqlparse==0.5.3"), runner="venv")
    check = by_name(env, needs)["spec-environment"]
    assert (check.status, check.why) == (
        "pass",
        "the venv runner installs the spec's packages (this interpreter: numpy 2.4.6 is "
        "installed (the cell needs numpy>=3))",
    )
    # Another python version is still only a warning, whatever the runner.
    check = by_name(env, replace(needs, python="3.10"))["spec-environment"]
    assert (check.status, check.why) == (
        "warn",
        "the interpreter is python 3.11.7; the spec names 3.10 (the venv runner installs the "
        "spec's packages)",
    )
    assert by_name(env, replace(needs, runner="local"))["spec-environment"].status == "fail"


def test_a_folder_the_venv_runner_installs_is_not_said_to_match() -> None:
    # `./mypkg` names no distribution, so nothing was compared: it said "python and packages
    # match the spec's environment" of an interpreter that was never asked for it.
    env = machine(packages={"numpy": "2.4.6"})
    needs = doctor.Needs(packages=("./mypkg", "numpy"), runner="venv")
    check = by_name(env, needs)["spec-environment"]
    assert (check.status, check.why) == (
        "pass",
        "the venv runner installs the spec's packages (./mypkg: no distribution named, not "
        "compared with this interpreter)",
    )
    # Named and here: the interpreter's match is what is said.
    check = by_name(env, replace(needs, packages=("numpy",)))["spec-environment"]
    assert check.why == "python and packages match the spec's environment"


def test_a_capture_naming_no_interpreter_is_asked_nothing_on_any_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The local runner's package check judged nothing where the capture named no
    interpreter, but the venv runner's PYTHONPATH check asked reprospec's own interpreter
    (a process) in its place: one rule now, nothing asked (doctor/needs.py
    `_checked_python`), the capture's versions alone said."""
    monkeypatch.setenv("PYTHONPATH", "/src")
    env = machine(packages={"numpy": "2.4.6"})
    assert "executable" not in env["python"]
    needs = doctor.Needs(packages=("numpy>=3",), runner="venv")
    check = by_name(env, needs)["spec-environment"]
    assert (check.status, check.why) == (
        "pass",
        "the venv runner installs the spec's packages (this interpreter: numpy 2.4.6 is "
        "installed (the cell needs numpy>=3))",
    )
    local = by_name(env, replace(needs, runner="local"))["spec-environment"]
    assert local.status == "fail"


@pytest.mark.parametrize(
    ("installed", "requirement", "ok"),
    [
        ("2.13.0+cpu", "torch==2.13.0", True),
        ("2.13.0+cpu", "torch==2.13.0+cu126", False),
        ("2.13.0", "torch>=2.5,<3", True),
        ("2.4.1", "torch>=2.5", False),
        ("2.13.0", "torch==2.13.*", True),
        ("1.26.4", "numpy~=1.26", True),
        ("2.0.0", "numpy~=1.26", False),
        ("6.0.3", "pyyaml", True),
    ],
)
def test_packages_are_compared_by_the_runs_rule(installed: str, requirement: str, ok: bool) -> None:
    name = requirement.split("=")[0].split(">")[0].split("~")[0]
    env = machine(packages={name: installed})
    mismatches = environment_mismatches(env, {"packages": [requirement]})
    assert mismatches == (
        [] if ok else [f"{name} {installed} is installed (the cell needs {requirement})"]
    )


def test_a_requirement_whose_marker_is_false_is_not_needed() -> None:
    # `run` skips `six; python_version<'3'` on 3.11 (the package check evaluates
    # the marker) and the cell passes; doctor failed it: "six is not installed; the spec
    # needs six; python_version<'3'". The report's Environment mismatch said the same.
    markers: JsonObject = {"python_version": "3.11", "python_full_version": "3.11.7"}
    env = machine(packages={"six": None}, python={"version": "3.11.7", "markers": markers})
    needs = doctor.Needs(packages=("six; python_version<'3'",))
    check = by_name(env, needs)["spec-environment"]
    assert (check.status, check.why) == (
        "pass",
        "python and packages match the spec's environment",
    )
    assert environment_mismatches(env, {"packages": [*needs.packages]}) == []
    # The marker true: required, and missing.
    on_311 = doctor.Needs(packages=("six; python_version>='3'",))
    assert by_name(env, on_311)["spec-environment"].status == "fail"


def test_each_cells_packages_are_checked_and_named() -> None:
    # A matrix over six==1.11.0 / six==1.16.0 named only the last cell's 1.16.0.
    cells: list[tuple[JsonObject, Environment]] = [
        ({}, Environment(workdir=Path.cwd(), packages=(f"six=={version}",)))
        for version in ("1.11.0", "1.16.0", "1.11.0")
    ]
    needs = doctor.needs_of(cells, ["a=1,six=1.11.0", "a=1,six=1.16.0", "a=2,six=1.11.0"])
    assert needs.packages == ("six==1.11.0", "six==1.16.0")
    check = by_name(machine(packages={"six": "1.16.0"}), needs)["spec-environment"]
    assert (check.status, check.why.split(": on the local runner")[0]) == (
        "fail",
        "six 1.16.0 is installed (the cell needs six==1.11.0) in cells a=1,six=1.11.0, "
        "a=2,six=1.11.0",
    )
    check = by_name(machine(packages={"six": None}), needs)["spec-environment"]
    assert check.why.split(": on the local runner")[0] == (
        "six is not installed (the cell needs six==1.11.0) in cells a=1,six=1.11.0, "
        "a=2,six=1.11.0; six is not installed (the cell needs six==1.16.0) in cell "
        "a=1,six=1.16.0"
    )


def test_needs_of_takes_the_most_demanding_cell() -> None:
    data: JsonObject = {
        "dataset": {"builtin": "synthetic", "shape": [3, 256, 256]},
        "loader": {"batch_size": 32},
    }
    cells: list[tuple[JsonObject, Environment]] = [
        (
            {"data": {**data, "loader": {"batch_size": 32, "num_workers": n}}},
            Environment(workdir=Path.cwd(), shm_size=64 * 2**20),
        )
        for n in (0, 2)
    ]
    needs = doctor.needs_of(cells)
    assert (needs.num_workers, needs.batch_bytes, needs.shm_size) == (2, 24 * 2**20, 64 * 2**20)


def test_gpu_checks_say_why_there_is_no_cuda_runtime() -> None:
    for torch, why in (
        ({"installed": False}, "torch is not installed"),
        ({"installed": True, "error": "ImportError: libcudart.so"}, "torch does not import"),
        ({"installed": True, "version": "2.13.0", "cuda": None}, "torch is a CPU-only build"),
    ):
        gpu = by_name(machine("nvidia-smi-550.40.07-rtx4070.txt", ADA, ADA_FIELDS, torch=torch))
        assert gpu["cuda-driver"].why == f"{why}: no CUDA runtime to match"
        assert gpu["nvcc"].why.endswith(f"; {why}")


def test_native_stacks_check_says_what_keeps_them_from_a_crash() -> None:
    plain = CorePattern("core")
    missing = doctor.check_native_stacks(None, plain, -1)
    assert (missing.status, missing.why) == (
        "warn",
        "gdb not found: crashes and hangs get Python stacks only",
    )
    assert "apt-get install gdb" in missing.todo
    piped = doctor.check_native_stacks(
        "/usr/bin/gdb", CorePattern("|/lib/systemd/systemd-coredump %P %u"), -1
    )
    assert piped.status == "warn"
    assert "pipes cores to /lib/systemd/systemd-coredump" in piped.why
    assert "sysctl kernel.core_pattern=core" in piped.todo
    no_limit = doctor.check_native_stacks("/usr/bin/gdb", plain, 0)
    assert no_limit.status == "warn"
    assert "hard core size limit" in no_limit.why
    shared = doctor.check_native_stacks("/usr/bin/gdb", plain, -1)
    assert shared.status == "pass"
    assert "can still replace each other's core" in shared.why
    own = doctor.check_native_stacks("/usr/bin/gdb", CorePattern("core", uses_pid=True), -1)
    assert own.status == "pass"
    assert "replace" not in own.why
    assert "eu-stack not found: apt-get install elfutils" in own.why


def test_native_stacks_check_names_eu_stack_the_faster_reader() -> None:
    own = CorePattern("core", uses_pid=True)
    both = doctor.check_native_stacks("/usr/bin/gdb", own, -1, "/usr/bin/eu-stack")
    assert (both.status, both.why.split(";")[0]) == (
        "pass",
        "eu-stack at /usr/bin/eu-stack (gdb at /usr/bin/gdb)",
    )
    alone = doctor.check_native_stacks(None, own, -1, "/usr/bin/eu-stack")
    assert alone.status == "pass"
    assert alone.why.startswith("eu-stack at /usr/bin/eu-stack; cores go to")
    # Without py-spy a crashed worker's Python frames stay in its core: said, with the fix.
    assert alone.why.endswith("gets no Python frames from its core (pip install py-spy)")
    spy = doctor.check_native_stacks(None, own, -1, "/usr/bin/eu-stack", "/venv/bin/py-spy")
    assert "py-spy" not in spy.why


def test_environment_gpus_beyond_the_visible_ones_fail() -> None:
    """`environment.gpus: 1` passed `doctor` on a machine with none (its device
    check read only `device: cuda`), and every cell of the run was an infra-error."""
    none = by_name(machine(), doctor.Needs(gpus=1))["device"]
    assert none.status == "fail"
    assert none.why.startswith("the spec needs 1 GPU (environment.gpus) but this machine has no")
    two = machine(fields=ADA_FIELDS, csv=ADA)
    assert by_name(two, doctor.Needs(gpus=3))["device"].status == "fail"
    assert "has 2 visible" in by_name(two, doctor.Needs(gpus=3))["device"].why
    assert by_name(two, doctor.Needs(gpus=2))["device"].status == "pass"


def test_a_spec_without_torch_is_not_warned_of_dataloader_shared_memory() -> None:
    """`shm`'s advice is for DataLoader workers: a spec of plain commands with
    `shm_size: 64m` (or docker's 64 MiB) was warned its workers would run out of it."""
    commands = doctor.Needs(shm_size=64 * 2**20, torch=False)
    shm = by_name(machine(), commands)["shm"]
    assert shm.status == "skipped"
    assert shm.why.startswith("the spec needs no torch (")
    in_docker = by_name(machine(), doctor.Needs(torch=False, runner="docker"))["shm"]
    assert in_docker.status == "skipped"
    # A workload (torch) is still told.
    assert by_name(machine(), doctor.Needs(shm_size=64 * 2**20))["shm"].status == "warn"


def test_a_torch_whose_numpy_bridge_fails_warns_where_the_spec_may_use_it() -> None:
    """torch imports without numpy (or with one of another ABI), warning only `Failed to
    initialize NumPy`: `doctor` passed it. The harness's builtin workloads never touch
    numpy, so only a spec that may (a command, an entrypoint) is warned."""
    errors = {"errors": {"numpy": "RuntimeError: Numpy is not available"}}
    missing = machine(torch={"numpy": None, **errors})
    torch = by_name(missing)["torch"]
    assert (torch.status, torch.todo) == ("warn", "pip install numpy")
    assert "numpy is not installed" in torch.why
    assert "Tensor.numpy()" in torch.why
    abi = machine(torch={"numpy": None, **errors}, packages={"numpy": "2.1.0"})
    assert "'numpy<2'" in by_name(abi)["torch"].todo
    assert by_name(machine(torch={"numpy": True}))["torch"].status == "pass"
    assert by_name(machine())["torch"].status == "pass"  # an older capture: not said
    builtin: JsonObject = {
        "model": {"builtin": "mlp"},
        "data": {"dataset": {"builtin": "synthetic"}},
    }
    own: JsonObject = {"model": {"entrypoint": "mine:Net"}}
    here = Environment(workdir=Path.cwd())
    assert not doctor.needs_of([(builtin, here)]).numpy
    assert doctor.needs_of([(own, here)]).numpy
    # User code by the other ways in: a `module:callable` loss, `imports`.
    loss: JsonObject = {"model": {"builtin": "mlp", "loss": "losses:finite_cross_entropy"}}
    assert doctor.needs_of([(loss, here)]).numpy
    assert doctor.needs_of([({**builtin, "imports": ["mine"]}, here)]).numpy
    assert doctor.needs_of([({}, Environment(workdir=Path.cwd(), packages=("torch",)))]).numpy
    builtins_only = by_name(missing, doctor.needs_of([(builtin, here)]))["torch"]
    assert builtins_only.status == "pass"
    assert builtins_only.why.endswith(
        "(RuntimeError: Numpy is not available; numpy is not installed): the spec's builtin "
        "models and datasets do not use it"
    )
    entry = by_name(missing, doctor.needs_of([(own, here)]))["torch"]
    assert entry.status == "warn"


def test_a_builtin_workloads_module_colon_name_value_is_no_user_code() -> None:
    """Every string of a workload shaped `a:b` (a builtin model's `s3:bucket` parameter)
    counted as the user's entry point: the spec was said to use torch's numpy bridge."""
    here = Environment(workdir=Path.cwd())
    workload: JsonObject = {
        "model": {"builtin": "mlp", "params": {"source": "s3:bucket"}},
        "data": {"dataset": {"builtin": "synthetic", "name": "hf:mnist"}},
    }
    assert not doctor.needs_of([(workload, here)]).numpy
    dataset: JsonObject = {**workload, "data": {"dataset": {"entrypoint": "ds:DS"}}}
    assert doctor.needs_of([(dataset, here)]).numpy


def test_a_spec_of_workloads_without_dataloader_workers_is_not_warned_of_dev_shm() -> None:
    """An entrypoint dataset (its batch size unknown) with `num_workers: 0` was warned its
    DataLoader workers would run out of a 64 MiB /dev/shm: it starts none."""
    here = Environment(workdir=Path.cwd(), shm_size=64 * 2**20)
    dataset: JsonObject = {
        "model": {"builtin": "mlp"},
        "data": {"dataset": {"entrypoint": "ds:DS"}, "loader": {"num_workers": 0}},
    }
    needs = doctor.needs_of([(dataset, here)])
    assert needs.workers_known
    shm = by_name(machine(), needs)["shm"]
    assert shm.status == "pass"
    assert shm.why.endswith("; the spec uses no DataLoader workers")
    # A command's workers are unknown: still worth a word, as for the machine alone.
    command = doctor.needs_of([({}, Environment(workdir=Path.cwd(), packages=("torch",)))])
    assert not command.workers_known
    small = machine(shm={"present": True, "size": 64 * 2**20})
    assert by_name(small, command)["shm"].status == "warn"
    assert by_name(small)["shm"].status == "warn"


def test_torch_missing_where_the_runner_installs_the_specs_torch_is_not_a_failure() -> None:
    """`doctor --runner venv` checks the bare interpreter the venv runner builds each cell's
    venv on: it failed `torch is not installed` for a spec whose packages name torch."""
    bare = machine(torch={"installed": False, "version": None})
    # (numpy: no cell uses it, or its torch's bridge would be held against the packages)
    spec = doctor.Needs(packages=("torch==2.13.0",), runner="venv", numpy=False)
    torch = by_name(bare, spec)["torch"]
    assert torch.status == "skipped"
    assert torch.why.endswith("the venv runner installs the spec's torch==2.13.0 for each cell")
    assert by_name(bare, replace(spec, runner="local"))["torch"].status == "fail"
    # Packages that name no torch: this interpreter's missing torch is none of the cells'
    # (their venvs hold their packages: torchvision brings one), a warning, not a failure.
    for packages in (("six",), ("torchvision==0.20",)):
        torch = by_name(bare, replace(spec, packages=packages))["torch"]
        assert torch.status == "warn", torch
        assert torch.why.startswith("of this interpreter, not of the cells' venvs"), torch.why
    # In a Dockerfile's image (doctor SPEC --runner docker), into which the docker runner
    # installs nothing: it said `the docker runner installs the spec's torch==2.13.0`.
    docker = replace(spec, runner="docker")
    assert by_name(bare, docker)["torch"].status == "skipped"
    assert by_name(bare, replace(docker, dockerfile=True))["torch"].status == "fail"


def test_a_spec_python_that_is_a_path_names_no_version_to_hold_the_interpreter_to() -> None:
    """`environment.python: /opt/py/bin/python3.11` (the venv runner builds on it): doctor
    and the run warned `the interpreter is python 3.11.7; the spec names /opt/...`."""
    from reprospec.core.sections import same_python

    env = machine()
    assert environment_mismatches(env, {"python": "/opt/py/bin/python3.11"}, ran=False) == []
    assert same_python("3.11.7", "/opt/py/bin/python3.11")
    assert environment_mismatches(env, {"python": "3.12"}, ran=False) == [
        "the interpreter is python 3.11.7; the spec names 3.12"
    ]
    assert not same_python("3.11.7", "3.1")


@pytest.mark.parametrize(
    ("package", "named"),
    [
        ("Torch==2.1", True),
        ("torch[cuda]", True),
        ("torch>=2; python_version >= '3'", True),
        ("./wheels/torch-2.3.0-cp311-cp311-linux_x86_64.whl", True),
        ("torchvision", False),
        ("torch-audio", False),
    ],
)
def test_a_package_list_names_torch_by_the_package_checks_own_reader(
    package: str, named: bool
) -> None:
    """`needs_of` matched `torch` case-sensitively and the runner's skip did not: for
    `Torch==2.1` doctor said the spec needs no torch and skipped every torch check."""
    cells: list[tuple[JsonObject, Environment]] = [
        ({}, Environment(workdir=Path.cwd(), packages=(package,)))
    ]
    needs = doctor.needs_of(cells)
    assert needs.torch is named
    bare = machine(torch={"installed": False, "version": None})
    torch = by_name(bare, replace(needs, runner="venv", numpy=False))["torch"]
    assert torch.status == "skipped"
    installs = f"the venv runner installs the spec's {package} for each cell"
    assert torch.why.endswith(installs) is named
    assert torch.why.startswith("the spec needs no torch") is not named


def test_a_path_package_fails_where_the_runner_refuses_it_whatever_the_capture() -> None:
    # `unchecked` held only where the capture named an interpreter: without one, doctor
    # passed ./mypkg on the local runner, and with --runner docker said "the docker runner
    # installs the spec's packages" where run refuses every cell.
    env = machine(packages={"six": "1.16.0"})  # no python executable: nothing is asked
    mine = CellPackages(("six", "./mypkg"), ("default",))
    local = by_name(env, doctor.Needs(packages=mine.packages, package_sets=(mine,)))
    check = local["spec-environment"]
    assert check.status == "fail"
    assert check.why.startswith(
        "cannot check the cell's packages: './mypkg' names no distribution this interpreter "
        "can be checked for (name @ url names one): on the local runner every cell that "
        "names it is an infra error, not run"
    )
    assert "mypkg @ file:///path/to/mypkg" in check.todo
    assert "install them into this interpreter" not in check.todo  # it cannot help
    docker = doctor.Needs(packages=mine.packages, package_sets=(mine,), runner="docker")
    check = by_name(env, docker)["spec-environment"]
    assert check.status == "fail"
    assert check.why.startswith(
        "environment.packages './mypkg': a path on this machine, which the image's build cannot see"
    )
    assert "installs the spec's packages" not in check.why
    # A Dockerfile's image is checked, as the local runner checks: refused so too.
    built = replace(mine, dockerfile=True)
    check = by_name(env, replace(docker, package_sets=(built,)))["spec-environment"]
    assert check.status == "fail"
    assert check.why.startswith("cannot check the cell's packages: './mypkg' names no")
    # The venv runner installs it from there.
    venv = replace(docker, runner="venv")
    assert by_name(env, venv)["spec-environment"].status == "pass"


def test_cuda_visible_devices_ids_are_said_as_the_slots_run_hands_out() -> None:
    """`CUDA_VISIBLE_DEVICES=0,1 reprospec doctor` on a machine without a GPU said only
    "no CUDA device", and failed a spec of `gpus: 1` as "its cells will end as
    infra-error", while `run` handed the cells those ids and ran them (pipeline/gpus.py)."""

    def checks(env: dict[str, Any], visible: str, gpus: int = 0) -> dict[str, doctor.Check]:
        needs = doctor.Needs(gpus=gpus) if gpus else None
        return {c.name: c for c in doctor.run_checks(env, needs, visible)}

    bare = checks(machine(), "0,1", gpus=1)
    assert bare["cuda"].why == "no CUDA device"  # true to the machine: none is seen
    assert bare["gpu-slots"].status == "warn"
    assert bare["gpu-slots"].why.startswith(
        "CUDA_VISIBLE_DEVICES=0,1: run hands out its 2 ids (0, 1) as GPU slots"
    )
    assert "no CUDA device is seen here" in bare["gpu-slots"].why
    assert bare["device"].status == "warn"  # the cells run: not "will end as infra-error"
    assert "infra-error" not in bare["device"].why
    # More GPUs than ids: run's cells are infra-error, as it says.
    assert checks(machine(), "0", gpus=2)["device"].status == "fail"
    assert "run has 1 GPU slot (CUDA_VISIBLE_DEVICES=0)" in checks(machine(), "0", 2)["device"].why
    hidden = checks(machine(), "", gpus=1)
    assert hidden["gpu-slots"].why.startswith("CUDA_VISIBLE_DEVICES='' names no GPU")
    assert hidden["device"].status == "fail"
    # One spelling of the variable in one doctor output: not `(CUDA_VISIBLE_DEVICES=)`.
    assert "run has 0 GPU slots (CUDA_VISIBLE_DEVICES='')" in hidden["device"].why
    assert "(CUDA_VISIBLE_DEVICES='-1')" in checks(machine(), "-1", gpus=1)["device"].why
    gpu = checks(machine(fields=ADA_FIELDS, csv=ADA), "1")
    assert gpu["gpu-slots"].status == "pass"
    # Ids enough and a device seen: run hands them out whatever the machine counts, so
    # the machine's own count (2 GPUs here) never fails the cells as infra-error.
    two = machine(fields=ADA_FIELDS, csv=ADA)
    more = checks(two, "0,1,2,3", gpus=3)
    assert more["gpu-slots"].status == "warn"
    assert more["device"].status == "warn"
    assert more["device"].why == (
        "the spec needs 3 GPUs: run hands its cells the ids of CUDA_VISIBLE_DEVICES=0,1,2,3, "
        "but ids 2, 3 name no GPU seen here: a cell handed one runs, and its program finds "
        "no GPU behind it"
    )
    enough = checks(two, "0,1", gpus=2)["device"]
    assert enough.status == "pass"
    assert enough.why.endswith("run hands its cells the ids of CUDA_VISIBLE_DEVICES=0,1")
    # Unset: no such check, and the device check reads the machine as before.
    assert "gpu-slots" not in by_name(machine())


def test_cuda_visible_devices_ids_that_name_no_gpu_here_warn() -> None:
    """gpu-slots and device passed ids that name no device as long as the machine had one:
    `2,3` on a 2-GPU machine (every cell finds no GPU), and `0,1,2,3` there for `gpus: 2`
    (the second attempt at a time is handed `2,3`). nvidia-smi's rows name the machine's
    indexes whatever the mask; without them, torch's count under the mask does."""

    def checks(env: dict[str, Any], visible: str, gpus: int) -> dict[str, doctor.Check]:
        return {c.name: c for c in doctor.run_checks(env, doctor.Needs(gpus=gpus), visible)}

    two = machine(fields=ADA_FIELDS, csv=ADA)  # GPUs 0 and 1; torch (CPU build) sees none
    past = checks(two, "2,3", gpus=1)
    assert past["gpu-slots"].status == "warn"
    assert past["gpu-slots"].why == (
        "CUDA_VISIBLE_DEVICES=2,3: run hands out its 2 ids (2, 3) as GPU slots, each attempt "
        "its own, but ids 2, 3 name no GPU seen here: an attempt handed one finds no GPU "
        "behind it"
    )
    assert past["device"].status == "warn"
    assert "ids 2, 3 name no GPU seen here" in past["device"].why
    four = checks(two, "0,1,2,3", gpus=2)
    assert four["gpu-slots"].status == four["device"].status == "warn"
    assert "ids 2, 3 name no GPU" in four["device"].why
    one = checks(two, "1,3", gpus=1)["device"]
    assert one.status == "warn"
    assert "but id 3 names no GPU seen here" in one.why
    # A UUID is not judged (the capture keeps none); an index the machine has passes.
    assert checks(two, "GPU-8f3c,1", gpus=1)["gpu-slots"].status == "pass"
    # Without nvidia-smi's rows: torch counted 2 under the mask, so a third id is past them.
    counted = machine(torch={"device_count": 2})
    third = checks(counted, "0,1,2", gpus=1)
    assert third["gpu-slots"].status == "warn"
    assert "id 2 names no GPU seen here" in third["gpu-slots"].why
    assert checks(counted, "0,1", gpus=2)["device"].status == "pass"


@pytest.mark.parametrize("count", [2, 2.0, "2"])
def test_gpu_slots_and_device_count_the_devices_seen_by_one_rule(count: JsonValue) -> None:
    """gpu-slots took torch's device_count only as an int: a capture of 2.0 or "2" warned
    "no CUDA device is seen here" while `device` counted 2 of it."""
    env = machine(torch={"device_count": count})
    found = {c.name: c for c in doctor.run_checks(env, doctor.Needs(gpus=2), "0,1")}
    assert found["gpu-slots"].status == "pass"
    assert found["device"].status == "pass"


def test_a_spec_python_that_is_a_programs_name_names_its_version() -> None:
    """`environment.python: python3.10` (the venv runner finds it on PATH): the run warned
    `the spec names Python python3.10; this run had 3.10.13`."""
    from reprospec.core.sections import same_python

    assert same_python("3.10.13", "python3.10")
    assert same_python("3.10.13", "python")
    assert not same_python("3.11.7", "python3.10")
    ten = machine(python={"version": "3.10.13"})
    assert environment_mismatches(ten, {"python": "python3.10"}, ran=False) == []
    assert environment_mismatches(ten, {"python": "python3.11"}, ran=False) == [
        "the interpreter is python 3.10.13; the spec names python3.11"
    ]


def test_each_cells_packages_are_the_sets_or_the_one_list() -> None:
    # Spelled out three times in doctor/needs.py: a Needs made by hand names `packages` only.
    from reprospec.doctor.needs import CellPackages

    assert doctor.Needs(packages=("six",)).cell_packages == (CellPackages(("six",)),)
    sets = (CellPackages(("six==1.0",), ("a",)), CellPackages(("six==2.0",), ("b",)))
    assert doctor.Needs(packages=("six",), package_sets=sets).cell_packages == sets


def test_a_workload_whose_venv_has_no_torch_fails_on_the_venv_runner() -> None:
    # The cell's venv holds only its packages: the harness found no torch there (each cell
    # `infra-error: torch is not installed in <venv>/bin/python`), but doctor passed, the
    # interpreter the venv is built on having torch.
    here = Environment(workdir=Path.cwd())
    workload: JsonObject = {"model": {"builtin": "mlp"}}
    pinned = Environment(workdir=Path.cwd(), packages=("torch==2.13.0",))
    cells: list[tuple[JsonObject, Environment]] = [(workload, here), (workload, pinned), ({}, here)]
    needs = replace(doctor.needs_of(cells, ["w", "pinned", "command"]), runner="venv")
    check = by_name(machine(), needs)["spec-environment"]
    assert check.status == "fail"
    assert (
        "and the cell names none (cell w): every such cell is an infra error (torch is not "
        "installed in the cell's venv), not run"
    ) in check.why
    assert "cell of it" not in check.why
    # As commands/doctor hands it on for the venv runner's python: the cells still named.
    checked = by_name(machine(), replace(needs, python="3.11", pythons=()))["spec-environment"]
    assert "and the cell names none (cell w): every such cell" in checked.why
    # Each workload pins torch: nothing to say; the local runner runs the interpreter's.
    assert by_name(machine(), replace(needs, torchless=()))["spec-environment"].status != "fail"
    assert by_name(machine(), replace(needs, runner="local"))["spec-environment"].status != "fail"


@pytest.mark.parametrize("entry", ["torchvision==0.18.0", "lightning", "./mypkg"])
def test_a_workload_whose_packages_may_require_torch_only_warns_on_the_venv_runner(
    entry: str,
) -> None:
    """torchvision, lightning or a folder's distribution installs torch as a dependency: the
    cell runs, but doctor failed spec-environment (the cells were found by whether their
    packages name torch), and said nothing else of them."""
    workload: JsonObject = {"model": {"builtin": "mlp"}}
    env = Environment(workdir=Path.cwd(), packages=(entry,))
    needs = replace(doctor.needs_of([(workload, env)], ["w"]), runner="venv")
    assert needs.torchless == ()
    check = by_name(machine(), needs)["spec-environment"]
    assert check.status == "warn", check
    assert "unless one of them requires it (torchvision does)" in check.why
    if entry == "./mypkg":  # what the check says of the rest is kept
        assert "./mypkg: no distribution named" in check.why
    # What else the check finds is said with it (here another python).
    other = replace(needs, python="3.4", pythons=())
    said = by_name(machine(), other)["spec-environment"]
    assert said.status == "warn"
    assert "the spec names 3.4" in said.why


def test_on_the_venv_runner_the_torch_checks_are_of_the_cells_packages() -> None:
    """`doctor --runner venv` judged the torch of the interpreter the cells' venvs are built
    on: `torch 2.13.0 imports` for a spec of `torch==2.5.1`, and `pip install numpy` of its
    bridge where the cells' venvs get numpy from their packages, or none where they do not."""
    env = machine()
    bridge = machine(torch={**machine()["torch"], "numpy": None, "errors": {"numpy": "gone"}})
    cells = CellPackages(("torch==2.5.1",), ("a",))
    with_numpy = CellPackages(("torch==2.5.1", "numpy<2"), ("b",))
    spec = doctor.Needs(packages=cells.packages, package_sets=(cells,), runner="venv", cells=1)
    torch = by_name(env, spec)["torch"]
    assert torch.status == "warn"
    assert torch.why.startswith(
        "the venv runner installs the spec's torch==2.5.1 in each cell's venv, and the cell's "
        "packages name no numpy: "
    )
    assert "not what the cells run" in torch.why
    assert "numpy" in torch.todo
    # Both lists: the cell whose packages lack numpy is named.
    both = replace(spec, package_sets=(cells, with_numpy), cells=2)
    assert "name no numpy in cell a: " in by_name(env, both)["torch"].why
    # numpy named: nothing of this interpreter's bridge is said, as the cells get their own.
    fine = replace(spec, packages=with_numpy.packages, package_sets=(with_numpy,))
    torch = by_name(bridge, fine)["torch"]
    assert torch.status == "skipped"
    assert torch.why.endswith("the venv runner installs the spec's torch==2.5.1 for each cell")
    assert by_name(bridge, replace(fine, runner="local"))["torch"].status == "warn"
    # The checks that read this interpreter's torch say whose they are.
    capability = by_name(env, spec)["cpu-capability"]
    assert capability.why.startswith("of this interpreter's torch, not the cells' (torch==2.5.1")
    # No cell uses numpy (builtin workloads): skipped, as where numpy is named.
    assert by_name(env, replace(spec, numpy=False))["torch"].status == "skipped"


def test_on_the_venv_runner_this_interpreters_torch_fails_no_check_of_the_cells() -> None:
    """Cells of `torchvision==0.20` (which brings torch) on the venv runner: the checks of
    the interpreter their venvs are built on, which has no torch, said so themselves ("of
    this interpreter, not of the cells' venvs"), yet failed doctor (exit 1)."""
    bare = machine(torch={"installed": False, "version": None})
    cells = CellPackages(("torchvision==0.20",), ("a",))
    spec = doctor.Needs(
        packages=cells.packages, package_sets=(cells,), runner="venv", cells=1, numpy=False
    )
    checks = by_name(bare, spec)
    for name in ("torch", "cuda", "cuda-driver", "gpu-arch", "cpu-capability"):
        assert checks[name].status != "fail", checks[name]
    assert checks["torch"].status == "warn"
    # The local runner runs this interpreter: its failure stands.
    assert by_name(bare, replace(spec, runner="local"))["torch"].status == "fail"
    # This interpreter's torch dispatches kernels its CPU lacks: a failure of a torch no
    # cell's venv holds (their torch comes of torchvision) is a warning, said whose it is.
    lying = machine(torch={"cpu_capability": "AVX512"}, cpu={"flags": ["avx", "avx2", "fma"]})
    capability = by_name(lying, spec)["cpu-capability"]
    assert capability.status == "warn", capability
    assert capability.why.startswith(
        "of this interpreter's torch, which the cells' venvs do not hold"
    )
    assert by_name(lying, replace(spec, runner="local"))["cpu-capability"].status == "fail"


def test_several_problems_and_cells_are_said_in_the_plural() -> None:
    # "a 1.0 missing; b 2.0 missing: ... every cell that names it", and "the cell names none
    # (cells a, b)"; beside workloads whose packages name no torch, "every such cell is an
    # infra error (...)" was said twice (review).
    env = machine(packages={"six": "1.16.0", "attrs": "0.5"})
    two = doctor.Needs(packages=("six==9.0", "attrs==1.0"))
    check = by_name(env, two)["spec-environment"]
    assert check.status == "fail"
    assert "every cell that names one is an infra error" in check.why, check.why
    workload: JsonObject = {"model": {"builtin": "mlp"}}
    here = Environment(workdir=Path.cwd())
    vision = Environment(workdir=Path.cwd(), packages=("torchvision==0.18.0",))
    cells: list[tuple[JsonObject, Environment]] = [
        (workload, here),
        (workload, here),
        (workload, vision),
    ]
    needs = replace(doctor.needs_of(cells, ["a", "b", "v"]), runner="venv")
    check = by_name(machine(), needs)["spec-environment"]
    assert check.status == "fail"
    assert "and the cells name none (cells a, b): every such cell" in check.why, check.why
    assert check.why.count("is an infra error") == 1, check.why
    assert "name no torch (cell v): the same unless one requires it" in check.why, check.why
