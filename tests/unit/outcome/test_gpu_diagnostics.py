"""compute-sanitizer records, CUDA core dumps and NCCL flight-recorder dumps, read from
real outputs recorded on an H200 (tests/data/gpu/README.md says which step made each)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from reprospec.outcome import cudacore, flightrecorder, sanitizerlog
from reprospec.outcome.sanitizerlog import short_kernel
from reprospec.process import sanitizer
from tests.support.paths import DATA

GPU = DATA / "gpu"
SAN = GPU / "sanitizer"
CORE = GPU / "coredump"
NCCL = GPU / "nccl"


def _report(step: str, ext: str = "out") -> sanitizerlog.SanitizerReport:
    return sanitizerlog.parse((SAN / f"sanitizer.{step}.{ext}").read_text())


# -- compute-sanitizer --------------------------------------------------------------------


def test_memcheck_wild_write_names_kernel_thread_address_and_count() -> None:
    report = _report("memcheck.native-wild")
    assert report.errors == 33  # 32 writes + the API error at cudaDeviceSynchronize
    assert len(report.records) == 33
    first = report.records[0]
    assert first.kind == "Invalid __global__ write of size 4 bytes"
    assert first.kernel == "write_wild(float *, long long)"
    assert (first.offset, first.source) == ("0xa0", "kernels.cu:32")
    assert (first.thread, first.block) == ("(0,0,0)", "(0,0,0)")
    assert first.address == "0x8f4f2e800000"
    assert first.size == 4
    assert first.host_frames == ("main [0x90f5] in kernels",)
    assert any("bytes after the nearest allocation" in d for d in first.details)
    api = report.records[-1]
    assert api.kind.startswith("Program hit cudaErrorLaunchFailure (error 719)")
    assert api.kernel is None
    assert report.kernels == ("write_wild",)


def test_memcheck_of_a_triton_kernel_counts_what_the_print_limit_cut() -> None:
    for report in (_report("memcheck.triton"), _report("logfile.triton", "log")):
        assert (report.errors, report.not_printed) == (1026, 926)
        first = report.records[0]
        assert (short_kernel(first.kernel or ""), first.source) == ("oob_store", "fault.py:43")
        # The Python frames compute-sanitizer appends to the host backtrace.
        assert first.host_frames[-1] == "main in fault.py:80"
        assert first.host_frames[0].startswith("launch [0x1ccc] in __triton_launcher")
    # With --log-file the program's output stays out of the log, and its own files keep it.
    assert "fault: triton launching" in (SAN / "sanitizer.logfile.triton.out").read_text()
    assert "fault:" not in (SAN / "sanitizer.logfile.triton.log").read_text()


def test_a_one_past_the_end_write_into_the_next_buffer_is_no_memcheck_error() -> None:
    """Recorded quirk: `kernels oob` writes buf[256], which is the next allocation's first
    float (out[0] became 1): memcheck reports 0 errors. 0 errors is not "no bug"."""
    report = _report("memcheck.native-oob")
    assert (report.errors, report.records) == (0, ())
    assert "out[0]=1" in (SAN / "sanitizer.memcheck.native-oob.out").read_text()
    assert report.headline() == "0 errors"


def test_a_device_side_assert_names_no_kernel_rather_than_the_intrinsic() -> None:
    report = _report("memcheck.assert")
    assert report.errors == 3
    warp = report.records[0]
    assert warp.kind == "Warp assert"
    assert warp.function == "__assertfail"
    assert warp.kernel is None  # only __assertfail is named: never call it the kernel
    assert warp.thread == "(2,0,0)"
    assert report.kernels == ()


def test_racecheck_both_report_forms() -> None:
    short = _report("racecheck.native-race")
    assert (short.errors, short.warnings) == (1, 0)
    assert short.headline().startswith("1 error; first: ")  # counted as one, not "1 errors"
    (race,) = short.records
    assert race.kind == "Race between a Write access and a Read access"
    assert (race.kernel, race.source) == ("shared_race(int *)", "kernels.cu:37")
    every = _report("racecheck-all.native-race")
    assert (every.errors, every.warnings, len(every.records)) == (257, 0, 100)
    assert every.summary().startswith("257 errors")
    hazard = every.records[0]
    assert hazard.kind == "Potential RAW hazard on __shared__ memory"
    assert (hazard.address, hazard.block, hazard.thread) == ("0x400", "(0,0,0)", "(0,0,0)")
    assert hazard.details[:2] == (
        "Write Thread (0,0,0) at shared_race(int *)+0x90 in kernels.cu:37",
        "Read Thread (32,0,0) at shared_race(int *)+0xa0 in kernels.cu:39",
    )


def test_initcheck_and_synccheck_records() -> None:
    uninit = _report("initcheck.native-uninit")
    assert (uninit.errors, uninit.not_printed, len(uninit.records)) == (256, 156, 100)
    assert uninit.records[0].address == "0x7f6ad8800100"
    assert uninit.kernels == ("read_uninit",)
    torch_uninit = _report("initcheck.uninit")
    assert torch_uninit.errors == 262144
    assert torch_uninit.kernels == ("at::native::reduce_kernel",)
    assert torch_uninit.records[0].size == 16
    diverged = _report("synccheck.native-syncdiv")
    assert diverged.errors == 16
    assert diverged.records[0].kind == "Barrier error detected. Divergent thread(s) in warp."
    assert diverged.kernels == ("divergent_barrier",)
    # Reported inside __syncwarp; the kernel is the device frame below it.
    warp = _report("synccheck.native-syncwarp")
    assert warp.records[0].function == "__syncwarp(unsigned int)"
    assert warp.records[0].device_frames == ("bad_syncwarp(int *)+0x40 in kernels.cu:52",)
    assert (warp.kernels, warp.records[0].source) == (("bad_syncwarp",), "kernels.cu:52")


def test_clean_runs_and_the_empty_xml() -> None:
    for step in ("memcheck.native-ok", "memcheck.ok", "xml.native-oob"):
        report = _report(step)
        assert (report.errors, report.records, report.seen) == (0, (), True)
    assert "<ComputeSanitizerOutput/>" in (SAN / "sanitizer.xml.native-oob.xml").read_text()


def test_no_device_visible_is_compute_sanitizers_own_failure() -> None:
    """With the GPU hidden (CUDA_VISIBLE_DEVICES=-1) the program starts, prints, fails its
    first CUDA call and exits 1; compute-sanitizer exits 255: infra-error, not the program."""
    out = (SAN / "sanitizer.memcheck.no-gpu-visible.out").read_text()
    err = (SAN / "sanitizer.memcheck.no-gpu-visible.err").read_bytes()
    rc = int((SAN / "sanitizer.memcheck.no-gpu-visible.rc").read_text())
    assert rc == 255
    assert _report("memcheck.no-gpu-visible").never_started
    own = "\n".join(line for line in out.splitlines() if line.startswith("========="))
    program = "".join(line + "\n" for line in out.splitlines() if not line.startswith("="))
    reason = sanitizer.own_failure(rc, own, program.encode() + err)
    assert reason is not None
    assert "no CUDA-capable device is detected" in reason
    assert "Target application terminated before first instrumented API call" in reason
    # The same log with a program that failed for its own reasons stays the program's.
    assert sanitizer.own_failure(rc, own, b"kernels: mode ok\nValueError: bad\n") is None


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("write_wild(float *, long long)", "write_wild"),
        ("oob_store", "oob_store"),
        ("void at::native::reduce_kernel<(int)512, (int)1>(T3)", "at::native::reduce_kernel"),
        ("__syncwarp(unsigned int)", "__syncwarp"),
    ],
)
def test_short_kernel_names(name: str, short: str) -> None:
    assert short_kernel(name) == short


# -- CUDA core dumps ----------------------------------------------------------------------


def _gdb(step: str) -> cudacore.CoreReading:
    return cudacore.read_cuda_gdb(
        (CORE / f"coredump.{step}.cudagdb.out").read_text(),
        (CORE / f"coredump.{step}.cudagdb.err").read_text(),
        int((CORE / f"coredump.{step}.cudagdb.rc").read_text()),
    )


def test_cuda_gdb_reads_the_assert_core() -> None:
    reading = _gdb("assert")
    assert reading.problem is None
    assert reading.exception == "Warp Assert"
    assert reading.kernel_name == "at::native::index_elementwise_kernel"
    assert reading.pc == "0x00007f94a37a2ff0"
    assert (reading.block, reading.thread, reading.sm, reading.warp) == (
        "(0,0,0)",
        "(2,0,0)",
        124,
        "2",
    )


@pytest.mark.parametrize("step", ["triton", "backward"])
def test_cuda_gdb_abort_is_the_problem_and_keeps_only_whole_lines(step: str) -> None:
    """cuda-gdb 13.0 aborted (rc 134) on cores whose warp had exited: std::out_of_range
    on warp index 4294967294 (-2) >= 64 warps per SM, in print_cuda_exception_string."""
    reading = _gdb(step)
    assert reading.problem is not None
    assert reading.problem.startswith("cuda-gdb aborted with an internal error (std::out_of_range")
    assert "4294967294" in reading.problem
    assert "cuda_exception::print_cuda_exception_string" in reading.problem
    # What it printed whole before it died: the exception and the PC's function.
    assert reading.exception == "Warp Illegal Address"
    assert (reading.kernel_name, reading.where) == ("oob_store", "fault.py:43")
    assert (reading.block, reading.thread) == (None, None)


def test_cuda_gdb_that_printed_nothing_names_no_kernel() -> None:
    reading = cudacore.read_cuda_gdb("", (CORE / "coredump.triton.cudagdb.err").read_text(), 134)
    assert (reading.kernel, reading.exception, reading.pc) == (None, None, None)
    assert reading.problem is not None


def test_the_drivers_progress_lines() -> None:
    triton = cudacore.read_driver((CORE / "coredump.triton.err").read_text())
    assert triton is not None
    assert (triton.exception, triton.pc, triton.sm) == (
        "Warp Illegal Address",
        "0x7f5ea77a0b50",
        124,
    )
    assert triton.warp == "exited"
    assert triton.kernel is None  # the warp had exited: no stack, no kernel named
    assert triton.core == "/tmp/gpu-record/cores/coredump.triton.1807.vm.nvcudmp"
    asserted = cudacore.read_driver((CORE / "coredump.assert.err").read_text())
    assert asserted is not None
    assert asserted.exception == "Warp Assert"
    assert asserted.kernel_name == "at::native::index_elementwise_kernel"
    # The plain program and the native one under the variables wrote no core at all.
    assert cudacore.read_driver((CORE / "coredump.native.err").read_text()) is None
    assert cudacore.read_driver((CORE / "native.wild.err").read_text()) is None


def test_demangle() -> None:
    assert (
        cudacore.demangle("_ZNK14cuda_exception27print_cuda_exception_stringEv")
        == "cuda_exception::print_cuda_exception_string"
    )
    assert cudacore.demangle("_Z22gdb_internal_backtracev") == "gdb_internal_backtrace"
    assert cudacore.demangle("main") is None


# -- the NCCL flight recorder -------------------------------------------------------------


def test_the_hang_dump_names_the_collective_never_completed() -> None:
    trace = flightrecorder.read(NCCL / "hang_fr_rank_0")
    assert isinstance(trace, flightrecorder.RankTrace)
    assert (trace.rank, trace.version) == (0, "2.10")
    assert (trace.last_enqueued, trace.last_started, trace.last_completed) == (2, -1, 1)
    first, second = trace.collectives
    assert (first.seq, first.op, first.state) == (1, "all_reduce", "completed")
    assert (second.seq, second.op, second.state) == (2, "all_reduce", "scheduled")
    assert second.input_sizes == ((1048576,),)
    assert second.dtypes == ("Float",)
    assert second.called_from == "hang (nccl.py:105)"
    assert second.timeout_ms == 10000
    assert flightrecorder.behind([trace]) == (
        "rank 0 never completed collective #2 all_reduce scheduled [1048576] Float "
        "from hang (nccl.py:105)"
    )
    # The watchdog's own words on stderr agree: SeqNum=2 timed out, last completed 1.
    err = (NCCL / "nccl.hang.err").read_text()
    assert "WorkNCCL(SeqNum=2, OpType=ALLREDUCE" in err
    assert "last enqueued work: 2, last completed work: 1" in err


def test_the_json_dump_and_which_rank_is_behind() -> None:
    """The JSON form (another run: five collectives completed) beside the hang's rank:
    the rank that enqueued fewer is the one behind."""
    done = flightrecorder.read(NCCL / "fr__dump_nccl_trace.json")
    hung = flightrecorder.read(NCCL / "hang_fr_rank_0")
    assert isinstance(done, flightrecorder.RankTrace)
    assert isinstance(hung, flightrecorder.RankTrace)
    assert [c.op for c in done.collectives] == [
        "all_reduce",
        "broadcast",
        "all_gather",
        "reduce_scatter",
        "all_reduce_barrier",
    ]
    # Recorded quirk: every entry says completed, the counters still say -1 (none).
    assert done.last_completed == -1
    assert {c.state for c in done.collectives} == {"completed"}
    ranks = [hung, flightrecorder.RankTrace(1, done.collectives, done.last_enqueued, -1, -1)]
    assert flightrecorder.behind(ranks) == (
        "rank 0 behind: reached collective 2 while others reached 5"
    )


def test_a_pickle_that_names_a_class_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nccl-trace-rank-3"
    path.write_bytes(pickle.dumps({"entries": [Path("/etc/passwd")]}))
    said = flightrecorder.read(path)
    assert isinstance(said, str)
    assert "refused" in said
    (tmp_path / "nccl-trace-rank-4").write_bytes(b"\x80\x05garbage")
    assert isinstance(flightrecorder.read(tmp_path / "nccl-trace-rank-4"), str)
