"""`environment.debug`'s values, variables and refused pairs; compute-sanitizer's own failure and
the loader's CUDA libraries read from outputs recorded on a machine without a GPU.

The real runs (the wrapping as the child saw it, the real compute-sanitizer, doctor) are
tests/functional/runners/test_gpu_debug.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.gpudebug import (
    LIGHTWEIGHT_CORE_FLAGS,
    SANITIZER_ERROR_EXIT,
    GpuDebug,
    GpuDebugError,
    conflicts,
    left_findings,
    sanitizer_argv,
)
from reprospec.doctor import cuda
from reprospec.outcome import cudacore
from reprospec.process import sanitizer
from tests.support.paths import DATA

RECORDED = DATA / "sanitizer"


# -- the values ----------------------------------------------------------------------------


def test_every_spelling_of_off_is_off_and_on_values_are_normalised() -> None:
    off = {"launch_blocking": False, "cuda_coredump": None, "compute_sanitizer": "off",
           "nccl_debug": False, "nccl_flight_recorder": None}  # fmt: skip
    assert GpuDebug.from_section(off) == GpuDebug()
    assert not GpuDebug.from_section(off).any
    on = GpuDebug.from_section(
        {"cuda_coredump": True, "nccl_debug": True, "nccl_flight_recorder": True}
    )
    assert (on.cuda_coredump, on.nccl_debug, on.nccl_flight_recorder) == (
        "lightweight",
        "INFO",
        2000,
    )
    assert on.to_json() == {
        "cuda_coredump": "lightweight", "nccl_debug": "INFO", "nccl_flight_recorder": 2000,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"compute_sanitizer": "leakcheck"}, "compute_sanitizer"),
        ({"cuda_coredump": "tiny"}, "cuda_coredump"),
        ({"nccl_debug": "LOUD"}, "nccl_debug"),
        ({"nccl_flight_recorder": 0}, "nccl_flight_recorder"),
        ({"launch_blocking": "yes please"}, "launch_blocking"),
    ],
)
def test_a_bad_value_names_its_field(section: dict[str, object], key: str) -> None:
    with pytest.raises(GpuDebugError) as caught:
        GpuDebug.from_section(section)
    assert caught.value.key == key


def test_the_variables_name_files_in_the_attempt_folder() -> None:
    debug = GpuDebug(
        launch_blocking=True, cuda_coredump="lightweight", nccl_debug="WARN",
        nccl_debug_subsys="INIT,COLL", nccl_flight_recorder=500,
    )  # fmt: skip
    env = debug.variables("/runs/a/cells/c/1")
    assert env["CUDA_LAUNCH_BLOCKING"] == "1"
    assert env["CUDA_ENABLE_COREDUMP_ON_EXCEPTION"] == "1"
    assert env["CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION"] == "0"
    assert env["CUDA_COREDUMP_FILE"] == "/runs/a/cells/c/1/cuda-core.%p.%h.nvcudmp"
    assert env["CUDA_COREDUMP_GENERATION_FLAGS"] == LIGHTWEIGHT_CORE_FLAGS
    assert (env["NCCL_DEBUG"], env["NCCL_DEBUG_SUBSYS"]) == ("WARN", "INIT,COLL")
    assert env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == env["TORCH_FR_BUFFER_SIZE"] == "500"
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == "/runs/a/cells/c/1/nccl-trace-rank-"
    full = GpuDebug(cuda_coredump="full").variables("/a")
    assert "CUDA_COREDUMP_GENERATION_FLAGS" not in full


def test_pairs_that_cannot_work_together() -> None:
    both = GpuDebug(compute_sanitizer="memcheck", cuda_coredump="lightweight")
    paths = [path for path, _ in conflicts(both)]
    assert paths == [("environment", "debug", "cuda_coredump")]
    preload = conflicts(GpuDebug(compute_sanitizer="racecheck"), preload=["torch"])
    assert [path for path, _ in preload] == [("run", "preload")]
    ignored = conflicts(
        GpuDebug(compute_sanitizer="memcheck"), env={"CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1"}
    )
    assert "no effect under environment.debug.compute_sanitizer" in ignored[0][1]
    twice = conflicts(GpuDebug(launch_blocking=True), env={"CUDA_LAUNCH_BLOCKING": "1"})
    assert twice[0][0] == ("environment", "env", "CUDA_LAUNCH_BLOCKING")
    assert conflicts(GpuDebug(cuda_coredump="full", nccl_debug="INFO")) == []


# -- validation ------------------------------------------------------------------------------


# -- real runs -------------------------------------------------------------------------------


def test_sanitizer_argv_keeps_the_program_last() -> None:
    argv = sanitizer_argv("/cs", "memcheck", "/att", ["python", "t.py", "--x"])
    assert argv[0] == "/cs"
    assert argv[-3:] == ["python", "t.py", "--x"]


# -- compute-sanitizer without a GPU: recorded, and for real where the wheel is installed -----


def test_the_recorded_no_gpu_failure_is_compute_sanitizers_own() -> None:
    log = (RECORDED / "logfile.log").read_text()
    rc = int((RECORDED / "logfile.rc").read_text())
    out = (RECORDED / "logfile.stdout").read_bytes() + (RECORDED / "logfile.stderr").read_bytes()
    reason = sanitizer.own_failure(rc, log, out)
    assert reason is not None
    assert "Target application terminated before first instrumented API call" in reason
    assert "COMPUTE-SANITIZER" not in reason
    # Without --log-file its words are on stdout, as the program's would be.
    plain = (RECORDED / "plain.stdout").read_text()
    assert sanitizer.own_failure(int((RECORDED / "plain.rc").read_text()), plain, b"") is not None
    # A program that printed, or another exit status, is the program's own outcome.
    assert sanitizer.own_failure(rc, log, b"hello from the program\n") is None
    assert sanitizer.own_failure(SANITIZER_ERROR_EXIT, log, b"") is None


# -- doctor ----------------------------------------------------------------------------------


def test_cuda_libraries_of_a_recorded_ldconfig() -> None:
    text = (DATA / "nvidia" / "ldconfig-p-no-driver-cuda13-toolkit.txt").read_text()
    names = [lib.name for lib in cuda.cuda_libraries(text)]
    assert "libcudart.so.13" in names
    assert "libcupti.so.13" in names
    assert "libcudart.so" not in names  # the development link beside it
    assert not any(name.startswith("libicudata") for name in names)
    check = cuda.check_cuda_libraries(cuda.cuda_libraries(text))
    assert check.status == "pass"
    assert "no libcuda.so" in check.why


@pytest.mark.parametrize("recorded", sorted((DATA / "gpu" / "coredump").glob("*.err")))
def test_every_stderr_the_driver_reader_takes_passes_the_first_test(recorded: Path) -> None:
    # left_findings is all an attempt pays before outcome/gpufindings.py is imported: it
    # must let through every recorded stderr whose core-dump lines the reader reads.
    text = recorded.read_text(errors="replace")
    if cudacore.read_driver(text) is not None:
        assert left_findings(["stdout.log", "stderr.log"], text)


def test_each_diagnostic_file_is_a_finding_and_a_plain_folder_none() -> None:
    plain = ["stdout.log", "stderr.log", "events.jsonl", "native-stacks.json"]
    assert not left_findings(plain, "Traceback (most recent call last):\n...")
    for name in ("compute-sanitizer.log", "cuda-gdb.out", "nccl-trace-rank-3"):
        assert left_findings([*plain, name], "")
    # cuda-gdb's other two files come with its stdout; alone they are nothing to read.
    assert not left_findings([*plain, "cuda-gdb.err"], "")
