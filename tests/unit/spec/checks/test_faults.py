"""Faults that can never fire: a located validation error naming the cells, in-process.

A `where: worker` fault without workers or a `backward` fault in an eval phase made the run
a plain pass judged `not-reproduced`, with no word of the fault.
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


# dd6.yaml's shape, a matrix over world_size with a fault of each cell's own rank.
DISTRIBUTED = """reprospec: 1
name: s
matrix:
  f: [exit-rank1, hang-rank2]
workload:
  model: {{builtin: mlp, params: {{hidden: 8}}}}
  data:
    dataset: {{builtin: synthetic, size: 48, shape: [4], classes: 2}}
    loader: {{batch_size: 4}}
  phases: [{{name: train, steps: 3}}]
  distributed: {{world_size: "${{{{ matrix.f == 'hang-rank2' and 3 or 2 }}}}", backend: gloo}}
  faults:
    - {{kind: exit, code: 3, rank: 1, at: {{phase: train, step: 2}}, when: {when1}}}
    - {{kind: hang, rank: 2, at: {{phase: train, step: 2}}, when: {when2}}}
expect: {{outcome: error}}
"""


def distributed_spec(tmp_path: Path, when1: str, when2: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(DISTRIBUTED.format(when1=when1, when2=when2))
    return path


def test_a_rank_fault_is_checked_only_in_the_cells_that_arm_it(tmp_path: Path) -> None:
    # The rank-2 fault is off where world_size is 2: valid, where the harness said
    # infra-error in that cell after its torch import.
    path = distributed_spec(
        tmp_path, "\"${{ matrix.f == 'exit-rank1' }}\"", "\"${{ matrix.f == 'hang-rank2' }}\""
    )
    assert load_spec(path).name == "s"


def test_an_armed_fault_of_a_rank_the_cell_lacks_is_a_located_error(tmp_path: Path) -> None:
    # Armed in every cell: the 2-rank cell has no rank 2, named at the fault's rank.
    path = distributed_spec(tmp_path, "\"${{ matrix.f == 'exit-rank1' }}\"", "true")
    assert problems_of(path) == [
        "14:26: workload.faults[1].rank: rank 2 does not exist: world_size is 2 (ranks 0..1) "
        "(in cell f=exit-rank1)"
    ]


def test_a_rank_fault_in_a_cell_without_distributed_is_a_located_error(tmp_path: Path) -> None:
    path = spec(tmp_path, "{kind: abort, rank: 1}")
    assert problems_of(path) == [
        "10:27: workload.faults[0].rank: rank needs workload.distributed; this cell has none "
        "(in cell default)"
    ]


# wf2.yaml's shape, 32 items in batches of 4 and a val phase without steps (8 batches).
def one_pass_spec(tmp_path: Path, fault: str, *, size: str = "32", extra: str = "") -> Path:
    path = spec(tmp_path, fault, workers="2")
    text = path.read_text().replace("{name: val, steps: 2}", "{name: val}")
    text = text.replace("size: 32", f"size: {size}").replace(
        "num_workers: 2}", f"num_workers: 2{extra}}}"
    )
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("fault", "extra", "expected"),
    [
        (
            "{kind: segfault, where: worker, at: {index: 999}}",
            "",
            "at.index 999 is past the dataset: it has 32 items (indexes 0..31)",
        ),
        (
            "{kind: segfault, at: {phase: val, step: 12}}",
            "",
            "step 12 never comes: phase 'val' gives no steps, so it runs one pass of the data, "
            "8 batches (32 items, batch_size 4)",
        ),
        (
            "{kind: segfault, where: worker, at: {phase: val, step: 9}}",
            "",
            "step 9 never comes: phase 'val' gives no steps, so it runs one pass of the data, "
            "8 batches (32 items, batch_size 4)",
        ),
        (
            # drop_last: 30 items make 7 whole batches of 4.
            "{kind: segfault, at: {phase: val, step: 8}}",
            ", drop_last: true",
            "step 8 never comes: phase 'val' gives no steps, so it runs one pass of the data, "
            "7 batches (30 items, batch_size 4)",
        ),
        (
            "{kind: abort, at: {step: 9}}",
            "",
            "step 9 never comes: no phase of this cell has more than 8 steps; a phase without "
            "steps runs one pass of 8 batches (32 items, batch_size 4)",
        ),
    ],
)
def test_a_fault_past_the_data_is_a_located_error(
    tmp_path: Path, fault: str, extra: str, expected: str
) -> None:
    size = "30" if "drop_last" in extra else "32"
    assert problems_of(one_pass_spec(tmp_path, fault, size=size, extra=extra)) == [
        f"10:7: workload.faults[0]: this fault can never fire: {expected} (in cell default)"
    ]


@pytest.mark.parametrize(
    "fault",
    [
        "{kind: segfault, where: worker, at: {index: 31}}",
        "{kind: segfault, at: {phase: val, step: 8}}",
        "{kind: segfault, where: worker, at: {phase: val, step: 8}}",
        # Workers prefetch past a phase's steps: a worker fault there is the step check's.
        "{kind: segfault, where: worker, at: {phase: train, step: 3}}",
        "{kind: abort, at: {step: 8}}",
    ],
)
def test_a_fault_the_data_reaches_is_valid(tmp_path: Path, fault: str) -> None:
    assert load_spec(one_pass_spec(tmp_path, fault)).name == "s"


def test_each_ranks_share_of_the_data_sets_its_batches(tmp_path: Path) -> None:
    # 2 ranks of 32 items: 16 each, 4 batches of 4 per rank in a phase without steps.
    path = one_pass_spec(tmp_path, "{kind: segfault, at: {phase: val, step: 5}}")
    text = path.read_text().replace("  faults:", "  distributed: {world_size: 2}\n  faults:")
    path.write_text(text)
    assert problems_of(path) == [
        "11:7: workload.faults[0]: this fault can never fire: step 5 never comes: phase 'val' "
        "gives no steps, so it runs one pass of the data, 4 batches (16 items per rank of 32, "
        "batch_size 4) (in cell default)"
    ]
    path.write_text(text.replace("step: 5", "step: 4"))
    assert load_spec(path).name == "s"


@pytest.mark.parametrize("where", ["main", "worker"])
def test_a_fault_at_step_0_is_a_located_error(tmp_path: Path, where: str) -> None:
    # Steps count from 1: `at.step: 0` was accepted (minimum 0) and the fault never fired,
    # so the run passed, `not-reproduced`, without a word of the fault.
    path = spec(tmp_path, f"{{kind: segfault, where: {where}, at: {{phase: train, step: 0}}}}")
    column = 62 if where == "main" else 64
    assert problems_of(path) == [
        f"10:{column}: workload.faults[0].at.step: expected an integer >= 1, got 0"
    ]


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (
            "{kind: skip_allreduce, at: {phase: train, step: 2}}",
            "10:14: workload.faults[0].kind: skip_allreduce needs workload.distributed; "
            "this cell has none (in cell default)",
        ),
        (
            "{kind: skip_allreduce, at: {phase: train}}",
            "10:34: workload.faults[0].at: skip_allreduce happens in a rank's main process at a "
            "step: give at: {phase, step} and no where: worker (in cell default)",
        ),
    ],
)
def test_a_skip_allreduce_no_rank_can_do_is_a_located_error(
    tmp_path: Path, fault: str, expected: str
) -> None:
    # The harness refused both only in the attempt, after its torch import: infra-error.
    path = spec(tmp_path, fault)
    if "step: 2" not in fault:
        text = path.read_text().replace("  faults:", "  distributed: {world_size: 2}\n  faults:")
        path.write_text(text)
        expected = expected.replace("10:", "11:", 1)
    assert problems_of(path) == [expected]
