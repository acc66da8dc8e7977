"""Faults that can never fire: a located validation error naming the cells, in-process.

A `where: worker` fault without workers or a `backward` fault in an eval phase made the run
a plain pass judged `not-reproduced`, with no word of the fault (nu17 D3).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.errors import SpecError
from reprospec.spec.load import load_spec

WORKLOAD = """reprospec: 1
name: s
{matrix}workload:
  model: {{builtin: mlp, params: {{hidden: 8}}}}
  data:
    dataset: {{builtin: synthetic, size: 32, shape: [4], classes: 2}}
    loader: {{batch_size: 4, num_workers: {workers}}}
  phases: [{{name: train, steps: 3}}, {{name: val, steps: 2}}]
  faults:
    - {fault}
expect: {{outcome: crash, signal: SIGSEGV}}
"""


def spec(tmp_path: Path, fault: str, *, workers: str = "0", matrix: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(WORKLOAD.format(matrix=matrix, workers=workers, fault=fault))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return [line.removeprefix(f"{path}:") for line in caught.value.problems]


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (
            "{kind: segfault, where: worker, at: {phase: train, step: 2}}",
            "10:7: workload.faults[0]: this fault can never fire: where: worker needs "
            "num_workers > 0; this cell has 0 (in cell default)",
        ),
        (
            "{kind: segfault, at: {phase: val, step: 1, stage: backward}}",
            "10:7: workload.faults[0]: this fault can never fire: stage: backward comes only in "
            "a phase that trains, and phase 'val' evaluates (mode eval: forward and loss, no "
            "backward) (in cell default)",
        ),
        (
            "{kind: abort, where: worker, at: {phase: train, stage: forward}}",
            "10:7: workload.faults[0]: this fault can never fire: stage does not apply to a "
            "where: worker fault (a worker fetches items; it runs no stages) (in cell default)",
        ),
    ],
)
def test_a_fault_that_can_never_fire_is_a_located_error(
    tmp_path: Path, fault: str, expected: str
) -> None:
    assert problems_of(spec(tmp_path, fault)) == [expected]


def test_only_the_cells_that_arm_the_fault_count(tmp_path: Path) -> None:
    # wl.yaml's shape: the fault is armed only in one cell, and there it cannot fire.
    matrix = "matrix: {case: [plain, worker]}\n"
    fault = "{kind: segfault, where: worker, when: \"${{ matrix.case == 'worker' }}\"}"
    assert problems_of(spec(tmp_path, fault, matrix=matrix)) == [
        "11:7: workload.faults[0]: this fault can never fire: where: worker needs "
        "num_workers > 0; this cell has 0 (in cell case=worker)"
    ]


def test_every_cell_named_when_none_can_fire_it(tmp_path: Path) -> None:
    matrix = "matrix: {w: [0], pin: [true, false]}\n"
    path = spec(
        tmp_path, "{kind: segfault, where: worker}", workers="'${{ matrix.w }}'", matrix=matrix
    )
    assert problems_of(path) == [
        "11:7: workload.faults[0]: this fault can never fire: where: worker needs "
        "num_workers > 0; these cells have 0 (in cells w=0,pin=true; w=0,pin=false)"
    ]


@pytest.mark.parametrize(
    ("fault", "workers", "matrix"),
    [
        # Some cells fire it: the 0-worker cells are the spec's controls (docs/spec-format.md).
        ("{kind: segfault, where: worker}", "'${{ matrix.w }}'", "matrix: {w: [0, 2]}\n"),
        ("{kind: segfault, where: worker, at: {phase: val, step: 1}}", "2", ""),
        # Left out where it cannot fire: no cell arms it where it cannot.
        (
            "{kind: segfault, where: worker, when: '${{ matrix.w > 0 }}'}",
            "'${{ matrix.w }}'",
            "matrix: {w: [0, 2]}\n",
        ),
        ("{kind: segfault, where: worker, when: false}", "0", ""),
        ("{kind: segfault, at: {phase: train, step: 1, stage: backward}}", "0", ""),
        ("{kind: segfault, at: {step: 1, stage: optimizer}}", "0", ""),
        ("{kind: segfault, at: {phase: val, step: 1, stage: loss}}", "0", ""),
    ],
)
def test_a_fault_some_cell_can_fire_is_valid(
    tmp_path: Path, fault: str, workers: str, matrix: str
) -> None:
    assert load_spec(spec(tmp_path, fault, workers=workers, matrix=matrix)).name == "s"


def test_an_eval_phase_by_mode_and_a_train_phase_by_mode(tmp_path: Path) -> None:
    path = spec(tmp_path, "{kind: segfault, at: {phase: val, step: 1, stage: backward}}")
    text = path.read_text()
    path.write_text(text.replace("{name: val, steps: 2}", "{name: val, steps: 2, mode: train}"))
    assert load_spec(path).name == "s"
    path.write_text(
        text.replace("{name: train, steps: 3}", "{name: train, steps: 3, mode: eval}").replace(
            "phase: val, ", ""
        )
    )
    assert problems_of(path) == [
        "10:7: workload.faults[0]: this fault can never fire: stage: backward comes only in a "
        "phase that trains, and no phase of this cell does (in cell default)"
    ]
