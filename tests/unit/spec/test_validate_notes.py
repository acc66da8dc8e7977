"""`validate`'s notes on a valid spec: a matrix axis that nothing reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.spec.validate import validate

HEAD = "reprospec: 1\nname: axes\nmatrix:\n  seed: [1, 2, 3]\n  b: [x, y]\n"


@pytest.mark.parametrize(
    ("rest", "unread"),
    [
        # nu44: three cells of `seed` that nothing read ran the same command, nothing said.
        ("command: echo ${{ matrix.b }}\nexpect: {outcome: pass}\n", ["seed"]),
        ("command: 'true'\nexpect: {outcome: pass}\n", ["seed", "b"]),
        ("command: echo ${{ matrix.b }} ${{ matrix.seed }}\nexpect: {outcome: pass}\n", []),
        # The cell's id, or the whole matrix, reads every axis.
        ("command: echo ${{ cell.id }}\nexpect: {outcome: pass}\n", []),
        ("command: echo '${{ matrix }}'\nexpect: {outcome: pass}\n", []),
        # An axis an `include` entry matches on to bring a key that is read changes what
        # runs: `seed` gives its cells their `x` (and `b` is read), though nothing names it.
        (
            "  include:\n    - {seed: 1, x: a}\n    - {seed: 2, x: b}\n"
            "command: echo ${{ matrix.x }} ${{ matrix.b }}\nexpect: {outcome: pass}\n",
            [],
        ),
        # One that brings only keys nothing reads does not.
        (
            "  include:\n    - {seed: 1, x: a}\n"
            "command: echo ${{ matrix.b }}\nexpect: {outcome: pass}\n",
            ["seed"],
        ),
        # An axis the expectation reads changes what is judged, if not what runs.
        (
            "command: echo ${{ matrix.b }}\nexpect:\n  outcome: pass\n"
            "  cases: [{when: {seed: 2}, outcome: pass}]\n",
            [],
        ),
    ],
)
def test_an_axis_nothing_reads_is_noted(tmp_path: Path, rest: str, unread: list[str]) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(HEAD + rest)
    found = validate([spec])
    assert found.problems == []
    noted = [n for n in found.notes if "read by nothing" in n]
    assert [n.split("'")[1] for n in noted] == unread
    lines = {"seed": 4, "b": 5}
    assert all(n.startswith(f"{spec}:{lines[n.split(chr(39))[1]]}:") for n in noted)
    assert all("run.repeat" in n for n in noted)


WORKLOAD = """reprospec: 1
name: faults
matrix:
  num_workers: [0, 2]
  pin_memory: [false, true]
workload:
  model: {builtin: cnn}
  data:
    dataset: {builtin: synthetic, size: 64, shape: [3, 8, 8], classes: 2}
    loader: {batch_size: 8, num_workers: "${{ matrix.num_workers }}",
             pin_memory: "${{ matrix.pin_memory }}"}
  phases: [{name: train, steps: 2}]
  faults:
    - {kind: segfault, where: main, at: {phase: train, step: 2},
       when: "WHEN"}
expect: {outcome: crash}
"""


@pytest.mark.parametrize(
    ("when", "silent"),
    [
        # A `when` no axis value meets: every cell ran without the fault, judged
        # not-reproduced with no word of it.
        ("${{ matrix.num_workers > 2 and matrix.pin_memory }}", True),
        ("false", True),
        # One cell injects it: the others are the spec's controls.
        ("${{ matrix.num_workers > 0 and matrix.pin_memory }}", False),
        ("${{ matrix.pin_memory }}", False),
        # Per attempt, or the machine's where it runs: not judged here.
        ("${{ attempt > 3 }}", False),
        ("${{ env.INJECT == '1' }}", False),
    ],
)
def test_a_fault_no_cell_injects_is_noted(tmp_path: Path, when: str, silent: bool) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(WORKLOAD.replace("WHEN", when))
    found = validate([spec])
    assert found.problems == []
    noted = [n for n in found.notes if "faults[0]" in n]
    if not silent:
        assert noted == []
        return
    assert noted == [
        f"{spec}:15:14: workload.faults[0]'s when is false in every one of the 4 cells: "
        "the fault is never injected, and a run judges the program without it"
    ]
