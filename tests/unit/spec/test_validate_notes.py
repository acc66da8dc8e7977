"""`validate`'s notes on a valid spec: a matrix axis that nothing reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonObject
from reprospec.spec.checks.cells import unread_axes
from reprospec.spec.validate import validate

HEAD = "reprospec: 1\nname: axes\nmatrix:\n  seed: [1, 2, 3]\n  b: [x, y]\n"


@pytest.mark.parametrize(
    ("rest", "unread"),
    [
        # Three cells of `seed` that nothing read ran the same command, nothing said.
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


def test_an_unread_axis_of_one_value_in_the_run_s_cells_is_no_axis_of_theirs() -> None:
    """A run of one cell (bisect's candidate, whose override replaced the packages that read
    the axis) runs no two cells alike: it was told to use run.repeat instead of its matrix."""
    document: JsonObject = {
        "name": "axes",
        "matrix": {"seed": [1, 2], "b": ["x", "y"]},
        "command": "true",
    }
    one = [Cell(id="seed=1,b=x", index=0, matrix={"seed": 1, "b": "x"})]
    assert unread_axes(document) == ["seed", "b"]
    assert unread_axes(document, one) == []
    both = [*one, Cell(id="seed=2,b=x", index=1, matrix={"seed": 2, "b": "x"})]
    assert unread_axes(document, both) == ["seed"]


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


def test_a_matrix_value_written_like_a_version_that_yaml_reads_as_another_number(
    tmp_path: Path,
) -> None:
    """`python: [3.9, 3.10]`: 3.10 is the number 3.1, its cell `python=3.1`, and it was said
    only where a text field read it (here, where `expect.cases` reads it, not at all). Said
    at the value now; a number written as it reads (`3.9`, `1.0`, `0.10` is no version) is not."""
    spec = tmp_path / "v.yaml"
    spec.write_text(
        "reprospec: 1\nname: v\n# the versions\nmatrix:\n  python: [3.9, 3.10, '3.11']\n"
        "  lr: [0.10, 1.0]\n  torch:\n    - 2.10\n"
        "command: echo ${{ matrix.lr }} ${{ matrix.torch }}\n"
        "expect:\n  outcome: pass\n  cases: [{when: {python: 3.1}, outcome: pass}]\n"
    )
    found = validate([spec])
    assert not found.problems, found.problems
    assert [note for note in found.notes if "to YAML" in note] == [
        f"{spec}:5:17: matrix.python[1]: 3.10 is the number 3.1 to YAML (its cell is "
        "python=3.1): quote it, '3.10', if it is a version",
        f"{spec}:8:7: matrix.torch[0]: 2.10 is the number 2.1 to YAML (its cell is "
        "torch=2.1): quote it, '2.10', if it is a version",
    ], found.notes


def test_a_public_env_name_that_looks_secret_is_noted_as_still_masked(tmp_path: Path) -> None:
    """`public_env: [API_TOKEN]` changed nothing (public_env cannot unmask a secret's name),
    and nothing said so. A count's name (`MAX_TOKENS`, whose number is shown) and a plain
    one are not noted."""
    spec = tmp_path / "p.yaml"
    spec.write_text(
        "reprospec: 1\nname: p\n"
        "command: echo ${{ env.API_TOKEN }} ${{ env.MAX_TOKENS }} ${{ env.MODE }}\n"
        "environment:\n  public_env: [API_TOKEN, MAX_TOKENS, MODE]\nexpect: {outcome: pass}\n"
    )
    found = validate([spec])
    assert not found.problems, found.problems
    assert found.notes == [
        f"{spec}:5:16: environment.public_env[0]: API_TOKEN looks secret, and public_env "
        "cannot unmask such a name: its value stays *** in every output"
    ], found.notes
