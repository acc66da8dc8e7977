"""Environment capture's parsers on recorded outputs: nvidia-smi, nvcc, cpuinfo, meminfo."""

from __future__ import annotations

import sys

import pytest

from reprospec.harness import HARNESS_ROOT
from tests.support.paths import DATA

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness import envinfo

NVIDIA = DATA / "nvidia"


def test_query_gpu_csv_with_header_and_any_field_order() -> None:
    text = (NVIDIA / "query-gpu-compute_cap-titanv-rtx5880.csv").read_text()
    gpus = envinfo.parse_nvidia_smi_csv(
        text, ("compute_cap", "compute_mode", "driver_version", "name", "index")
    )
    assert gpus == [
        {
            "capability": "7.0",
            "compute_mode": "Default",
            "driver_version": "570.86.15",
            "name": "NVIDIA TITAN V",
            "index": 0,
        },
        {
            "capability": "8.9",
            "compute_mode": "Default",
            "driver_version": "570.86.15",
            "name": "NVIDIA RTX 5880 Ada Generation",
            "index": 1,
        },
    ]
    only = envinfo.parse_nvidia_smi_csv(
        (NVIDIA / "query-gpu-compute_cap-only.csv").read_text(), ("compute_cap",)
    )
    assert only == [{"capability": "8.9"}]


def test_invalid_field_error_parses_to_no_gpu() -> None:
    assert (
        envinfo.parse_nvidia_smi_csv((NVIDIA / "query-gpu-compute_cap-invalid-470.txt").read_text())
        == []
    )


@pytest.mark.parametrize(
    ("name", "driver", "cuda"),
    [
        ("nvidia-smi-450.57-titan-xp.txt", "450.57", "11.0"),
        ("nvidia-smi-470.256.02-a10g.txt", "470.256.02", "11.4"),
        ("nvidia-smi-550.40.07-rtx4070.txt", "550.40.07", "12.4"),
        (
            "nvidia-smi-610.43.03-kmd-umd.txt",
            "610.43.03",
            "13.3",
        ),  # the newer KMD / CUDA UMD banner
    ],
)
def test_nvidia_smi_banner(name: str, driver: str, cuda: str) -> None:
    assert envinfo.parse_nvidia_smi_banner((NVIDIA / name).read_text()) == {
        "driver_version": driver,
        "cuda_version": cuda,
    }


def test_nvcc_version() -> None:
    assert envinfo.parse_nvcc_version((NVIDIA / "nvcc-11.1.txt").read_text()) == "11.1"
    assert envinfo.parse_nvcc_version((NVIDIA / "nvcc-10.1.txt").read_text()) == "10.1"
    assert envinfo.parse_nvcc_version("nvcc: command not found") is None
    assert envinfo.parse_nvcc_build((NVIDIA / "nvcc-11.1.txt").read_text()) == "11.1.105"
    assert envinfo.parse_nvcc_build("nvcc: command not found") is None


def test_cpuinfo_and_meminfo() -> None:
    cpu = envinfo.parse_cpuinfo(
        "vendor_id\t: GenuineIntel\nmodel name\t: Xeon\nflags\t\t: fpu sse4_2 avx avx2 fma\n\n"
        "model name\t: second core ignored\n"
    )
    assert cpu == {
        "model": "Xeon",
        "vendor": "GenuineIntel",
        "flags": ["sse4_2", "avx", "avx2", "fma"],
    }
    assert envinfo.parse_meminfo("MemTotal:  1024 kB\nMemFree: 1 kB\n") == {"MemTotal": 1024 * 1024}
    assert envinfo.requirement_name("torch==2.13.0") == "torch"
    assert envinfo.requirement_name("scikit-learn >=1.4; python_version>'3'") == "scikit-learn"


def test_the_harness_masks_the_names_the_engine_masks() -> None:
    """The harness cannot import the engine: its copy of the pattern must stay the same."""
    from reprospec.core import redact

    assert envinfo.SECRET.pattern == redact.SECRET_NAME.pattern
    assert envinfo.SECRET.flags == redact.SECRET_NAME.flags
    assert envinfo.MASK == redact.MASK


def test_the_capture_carries_the_interpreters_pep508_marker_values() -> None:
    # What a captured environment's packages are judged by (doctor, a run's Environment
    # mismatch): `six; python_version<'3'` is not needed on 3.11. PEP 508's own values.
    from packaging.markers import default_environment

    assert envinfo.marker_environment() == default_environment()


def test_a_part_one_run_did_not_capture_is_one_row_not_one_per_field() -> None:
    from reprospec.core.jsontypes import JsonObject
    from reprospec.environment.facts import environment_diff

    local: JsonObject = {"torch": {"captured": False}, "env": {"HOME": "/root"}, "os": "linux"}
    torch: JsonObject = {"installed": True, "version": "2.13.0+cpu", "num_threads": 2}
    docker: JsonObject = {"torch": torch, "env": {}}
    assert environment_diff(local, docker) == [
        {"key": "torch.captured", "a": False, "b": True},
        # `env: {}` beside the other side's variables says nothing their own rows do not.
        {"key": "env.HOME", "a": "/root", "b": None},
        {"key": "os", "a": "linux", "b": None},
    ]
    # A capture that failed holds nothing of torch: "missing", not "captured".
    assert environment_diff(local, {"error": "timed out"})[0] == {
        "key": "torch.captured",
        "a": False,
        "b": None,
    }
    # Both captured: compared field by field, as before.
    assert environment_diff(docker, {**docker, "torch": {**torch, "num_threads": 4}}) == [
        {"key": "torch.num_threads", "a": 2, "b": 4}
    ]
