"""GPU listings parsed from recorded outputs; what slot separation says of failing attempts."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from reprospec.core.inputs import Cell, Expectation
from reprospec.core.results import AttemptResult, CellResult, NotRun, Outcome, Rate
from reprospec.errors import UsageError
from reprospec.pipeline.machinegpus import (
    MachineGpus,
    check_gpu_ids,
    machine_gpus,
    parse_nvidia_smi_list,
)
from reprospec.report.slots import Separation, separation, slot_label, slot_separation
from tests.support.cli import ROOT

NVIDIA = ROOT / "tests" / "data" / "nvidia"


A100_MIG = NVIDIA / "nvidia-smi-L-a100-mig.txt"


NO_DRIVER = NVIDIA / "nvidia-smi-no-driver.txt"


# PATH without any nvidia-smi: the interpreter's folder and the system's.
BARE_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])


def test_cuda_visible_devices_without_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", BARE_PATH)
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi")
    machine = machine_gpus({"CUDA_VISIBLE_DEVICES": "3"})
    assert machine.listing() == "GPU 3 (CUDA_VISIBLE_DEVICES=3)"
    check_gpu_ids("3", ("3",), machine)
    assert machine_gpus({"CUDA_VISIBLE_DEVICES": ""}).gpus == ()


def test_recorded_listings_parse() -> None:
    gpus = parse_nvidia_smi_list(A100_MIG.read_text())
    assert [g.index for g in gpus] == ["0", "1", "2", "3"]
    assert gpus[0].uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert len(gpus[0].mig) == 4
    assert gpus[1].mig == ()
    assert parse_nvidia_smi_list(NO_DRIVER.read_text()) == ()
    assert MachineGpus(gpus, "nvidia-smi -L").listing() == (
        "GPUs 0, 1, 2, 3 (nvidia-smi -L: 4x NVIDIA A100-SXM4-80GB)"
    )


def attempt(number: int, slot: tuple[str, ...], kind: str | None) -> AttemptResult:
    outcome = NotRun("no image") if kind is None else Outcome(kind=kind)  # type: ignore[arg-type]
    return AttemptResult(
        attempt=number,
        duration_s=1.0,
        outcome=outcome,
        matched=False,
        mismatches=(),
        logs="",
        gpu_slot=slot,
    )


def cell(name: str, *attempts: AttemptResult) -> CellResult:
    return CellResult(
        cell=Cell(id=name, index=0, matrix={"c": name}),
        expected=Expectation(outcome="crash"),
        verdict="reproduced",
        reason="",
        rate=Rate(0, len(attempts), 0.0, 1.0),
        attempts=attempts,
    )


def test_slot_separation_both_ways_and_when_it_says_nothing() -> None:
    mixed = cell(
        "a",
        attempt(1, ("0",), "pass"),
        attempt(2, ("1",), "crash"),
        attempt(3, ("2",), "crash"),
        attempt(4, ("0",), "pass"),
        attempt(5, ("3",), "pass"),
        attempt(6, ("3",), "error"),
        attempt(7, ("2",), None),
    )
    assert slot_separation([mixed]) == (
        "fails on GPU slots 1-3 (3 of 4 attempts), never on slot 0 (0 of 2 attempts)"
    )
    # A cell that never fails says nothing about slots, nor one that ran on a single slot.
    calm = cell("b", attempt(1, ("1",), "pass"), attempt(2, ("2",), "pass"))
    alone = cell("c", attempt(1, ("0",), "crash"), attempt(2, ("0",), "crash"))
    assert slot_separation([mixed, calm, alone]) == slot_separation([mixed])
    # Fails on every slot it ran on: the slot separates nothing.
    everywhere = cell(
        "d", attempt(1, ("0",), "crash"), attempt(2, ("1",), "pass"), attempt(3, ("1",), "crash")
    )
    assert slot_separation([everywhere]) is None
    assert slot_separation([]) is None
    assert slot_separation([cell("e", attempt(1, (), "crash"), attempt(2, (), "pass"))]) is None
    # Two GPUs per attempt, and a second informative cell.
    pairs = cell("f", attempt(1, ("0", "1"), "pass"), attempt(2, ("2", "3"), "crash"))
    other = cell("g", attempt(1, ("0", "1"), "pass"), attempt(2, ("2", "3"), "hang"))
    assert slot_separation([pairs, other]) == (
        "fails on GPU slot 2+3 (2 of 2 attempts), never on slot 0+1 (0 of 2 attempts), over 2 cells"
    )
    assert slot_label(("0", "1")) == "0+1"
    assert slot_label(()) == ""


def test_the_recorded_h200_listing_says_gpu_0_not_a_bare_0() -> None:
    """Recorded on the H200 (tests/data/gpu/machine/): `--gpus 0,5` said "it has 0 (...)",
    which reads as "it has none"."""
    gpus = parse_nvidia_smi_list(
        (ROOT / "tests" / "data" / "gpu" / "machine" / "nvidia-smi-L.out").read_text()
    )
    assert [(g.index, g.name, g.uuid) for g in gpus] == [
        ("0", "NVIDIA H200", "GPU-68b28bf9-2399-1b0f-1ebb-2d8a2e02daf4")
    ]
    machine = MachineGpus(gpus, "nvidia-smi -L")
    with pytest.raises(UsageError) as err:
        check_gpu_ids("0,5", ("0", "5"), machine)
    assert str(err.value) == (
        "--gpus 0,5: no GPU 5 on this machine; it has GPU 0 (nvidia-smi -L: 1x NVIDIA H200)"
    )


def test_separation_splits_a_tally_into_keys_that_failed_and_keys_that_never_did() -> None:
    # The rule under the slots' and the instances' sentences: [failed, runs] by key.
    assert separation({3: [2, 2], 0: [0, 1], 1: [1, 3], 2: [0, 2]}) == Separation(
        failing=(3, 1), clean=(0, 2), failed=3, runs_failing=5, runs_clean=3
    )
    assert separation({"0": [1, 1], "1": [2, 2]}) is None  # every key failed
    assert separation({"0": [0, 1], "1": [0, 4]}) is None  # none did
    assert separation({}) is None
