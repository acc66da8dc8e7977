"""An attempt folder holding real GPU diagnostics (recorded on an H200, tests/data/gpu/):
the outcome carries the findings, the signature the kernel, and the report leads with them."""

from __future__ import annotations

import shutil
from pathlib import Path

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.results import CellResult, Execution, Rate, RunResult, Standalone
from reprospec.outcome.evidence import Evidence
from reprospec.pipeline.attempt import attempt_result
from reprospec.report.markdown import render_markdown
from reprospec.store.resultsjson import run_from_dict, run_to_dict
from tests.support.paths import DATA
from tests.support.plans import attempt_plan
from tests.support.runs import ENV, T0, T1

GPU = DATA / "gpu"


def _folder(tmp_path: Path, files: dict[str, Path]) -> Path:
    folder = tmp_path / "cells" / "fault=triton" / "1"
    folder.mkdir(parents=True)
    for name, source in files.items():
        shutil.copyfile(source, folder / name)
    for name in ("stdout.log", "stderr.log", "events.jsonl"):
        (folder / name).touch()
    return folder


def _execution(folder: Path, returncode: int | None, *, timed_out: bool = False) -> Execution:
    return Execution(
        cell_id="fault=triton",
        attempt=1,
        log_dir=folder,
        returncode=returncode,
        timed_out=timed_out,
        duration_s=8.0,
        started=T0,
        finished=T1,
        stdout_path=folder / "stdout.log",
        stderr_path=folder / "stderr.log",
        events_path=folder / "events.jsonl",
    )


def _run(cell: CellResult, standalone: Standalone | None = None) -> RunResult:
    """A one-cell run of the recorded fault program, as the reports read it."""
    return RunResult(
        run_id="20261128-174451-cuda-fault-26b3",
        spec_name="cuda-fault",
        spec_path="cuda-fault.yaml",
        spec_text="reprospec: 1\nname: cuda-fault\ncommand: python3 fault.py triton\n",
        runner="local",
        started=T0,
        finished=T1,
        environment=ENV,
        cells=(cell,),
        standalone=standalone,
    )


def _report(tmp_path: Path, execution: Execution, debug: dict[str, object]) -> str:
    plan = attempt_plan(["python3", "fault.py", "triton"], tmp_path, environment={"debug": debug})
    result = attempt_result(plan, execution, Evidence.read(execution), "cells/fault=triton/1/")
    run = _run(
        CellResult(
            cell=Cell(id="fault=triton", index=0, matrix={"fault": "triton"}),
            expected=Expectation("any"),
            verdict="observed",
            reason="observed",
            rate=Rate(1, 1, 0.21, 1.0),
            attempts=(result,),
            command="python3 fault.py triton",
        )
    )
    # What is stored is what a later report reads: the findings survive results.json.
    assert run_from_dict(run_to_dict(run)).cells[0].attempts[0].gpu == result.gpu
    return render_markdown(run)


def _failure_lead(markdown: str) -> str:
    """The Failure section from its "First seen" line to the next paragraph after the finding."""
    section = markdown.split("## Failure", 1)[1]
    return section.split("First seen in cell", 1)[1]


def test_compute_sanitizer_findings_lead_the_failure(tmp_path: Path) -> None:
    san = GPU / "sanitizer"
    folder = _folder(
        tmp_path,
        {
            "compute-sanitizer.log": san / "sanitizer.logfile.triton.log",
            "stdout.log": san / "sanitizer.logfile.triton.out",
            "stderr.log": san / "sanitizer.logfile.triton.err",
        },
    )
    execution = _execution(folder, int((san / "sanitizer.logfile.triton.rc").read_text()))
    markdown = _report(tmp_path, execution, {"compute_sanitizer": "memcheck"})
    lead = _failure_lead(markdown)
    first_paragraphs = lead.split("\n\n")[1:3]
    assert first_paragraphs[0] == "What the GPU diagnostics found (`environment.debug`):"
    assert first_paragraphs[1].startswith(
        "- compute-sanitizer: 1,026 errors (926 not printed), in oob_store\n"
        "  - Invalid __global__ write of size 4 bytes in oob_store (fault.py:43), "
        "thread (64,0,0) of block (4,0,0), at 0x834172800900\n"
        "    - Access to 0x834172800900 is out of bounds\n"
    )
    assert "launched from: run in jit.py:744 <- <lambda> in jit.py:370 <- launch_oob in " in lead
    # Before the Python exception, which names a synchronize far from the fault.
    assert lead.index("compute-sanitizer") < lead.index("unspecified launch failure")
    assert "error:torch.AcceleratorError:kernel=oob_store" in markdown


def test_a_core_dump_cuda_gdb_could_not_read_says_why(tmp_path: Path) -> None:
    core = GPU / "coredump"
    folder = _folder(
        tmp_path,
        {
            "stdout.log": core / "coredump.triton.out",
            "stderr.log": core / "coredump.triton.err",
            "cuda-gdb.out": core / "coredump.triton.cudagdb.out",
            "cuda-gdb.err": core / "coredump.triton.cudagdb.err",
            "cuda-gdb.rc": core / "coredump.triton.cudagdb.rc",
        },
    )
    execution = _execution(folder, int((core / "coredump.triton.rc").read_text()))
    markdown = _report(tmp_path, execution, {"cuda_coredump": True})
    lead = _failure_lead(markdown)
    assert (
        "- CUDA core dump (cuda-gdb): Warp Illegal Address in oob_store (fault.py:43) "
        "at PC 0x7f5ea77a0b50" in lead
    )
    assert "cuda-gdb aborted with an internal error (std::out_of_range" in lead
    assert ":kernel=oob_store" in markdown


def test_a_core_dump_without_cuda_gdb_names_no_kernel(tmp_path: Path) -> None:
    """The driver's lines alone: the warp had exited, so no kernel is named (none guessed)."""
    core = GPU / "coredump"
    folder = _folder(
        tmp_path,
        {"stdout.log": core / "coredump.triton.out", "stderr.log": core / "coredump.triton.err"},
    )
    execution = _execution(folder, int((core / "coredump.triton.rc").read_text()))
    evidence = Evidence.read(execution)
    assert evidence.gpu is not None
    assert evidence.gpu.kernel is None
    markdown = _report(tmp_path, execution, {"cuda_coredump": True})
    assert (
        "- CUDA core dump (driver): Warp Illegal Address at PC 0x7f5ea77a0b50, SM 124 warp "
        "exited (the warp had exited: the driver names no kernel)" in _failure_lead(markdown)
    )
    assert "kernel=" not in markdown


def test_a_flight_recorder_dump_leads_a_hang(tmp_path: Path) -> None:
    nccl = GPU / "nccl"
    folder = _folder(
        tmp_path,
        {
            "nccl-trace-rank-0": nccl / "hang_fr_rank_0",
            "stdout.log": nccl / "nccl.hang.out",
            "stderr.log": nccl / "nccl.hang.err",
        },
    )
    execution = _execution(folder, None, timed_out=True)
    markdown = _report(tmp_path, execution, {"nccl_flight_recorder": True})
    lead = _failure_lead(markdown)
    assert (
        "- NCCL flight recorder: rank 0 never completed collective #2 all_reduce scheduled "
        "[1048576] Float from hang (nccl.py:105)" in lead
    )
    assert (
        "  - rank 0: enqueued 2, started none, completed 1; last: #1 all_reduce completed" in lead
    )
    evidence = Evidence.read(execution)
    assert evidence.gpu is not None
    assert evidence.gpu.kernel is None  # a hang names no kernel
    assert "kernel=" not in markdown


def test_a_cell_under_gpu_diagnostics_is_offered_no_one_line_plain_repro() -> None:
    """Its plain command fails another way (no sanitizer's exit code, no core dump)."""
    from dataclasses import replace

    from reprospec.core.jsontypes import JsonObject
    from reprospec.report.standalone import flaky_loop, repro_line

    def run_with(debug: JsonObject) -> RunResult:
        cell = CellResult(
            cell=Cell(id="fault=triton", index=0, matrix={"fault": "triton"}),
            expected=Expectation("any"),
            verdict="observed",
            reason="observed",
            rate=Rate(1, 1, 0.21, 1.0),
            attempts=(),
            command="python3 fault.py triton",
            environment={"debug": debug},
        )
        return _run(cell, Standalone("fault=triton", "command", run="python3 fault.py triton"))

    plain = run_with({"compute_sanitizer": "off", "cuda_coredump": False})
    assert repro_line(plain, flaky_loop(plain)).endswith("`python3 fault.py triton`")
    sanitized = run_with({"compute_sanitizer": "memcheck"})
    assert repro_line(sanitized, flaky_loop(sanitized)) == ""
    unknown = replace(plain, cells=())  # an unknown cell: nothing to hold back
    assert repro_line(unknown, flaky_loop(unknown)) != ""
