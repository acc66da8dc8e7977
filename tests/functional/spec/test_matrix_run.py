"""A run of a matrix with include, exclude and `-m`: the cells, their order, ids, expectations
and verdicts in results.json, made from cells that are made as read (spec.matrix.MatrixCells,
CellView), and a bad matrix refused, located, before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliResult, run_cli

SPEC = """\
reprospec: 1
name: matrix-run
matrix:
  n: [1, 2, 3, 4]
  mode: [ok, bad]
  exclude:
    - {n: 3, mode: bad}
  include:
    - {n: 2, extra: x}
    - {n: 9, mode: ok}
command: ["sh", "-c", "test ${{ matrix.mode }} = ok || exit 7"]
run: {repeat: 2}
expect:
  outcome: pass
  cases:
    - {when: {n: 4, mode: bad}, outcome: pass}
    - {when: {mode: bad}, outcome: fail, exit_code: 7}
"""

# (id, matrix, expected outcome, verdict): the product less the excluded corner, the
# include that fits (n=2) merged into both its cells, the one that fits none appended.
WHOLE = [
    ("n=1,mode=ok", {"n": 1, "mode": "ok"}, "pass", "reproduced"),
    ("n=1,mode=bad", {"n": 1, "mode": "bad"}, "fail", "reproduced"),
    ("n=2,mode=ok,extra=x", {"n": 2, "mode": "ok", "extra": "x"}, "pass", "reproduced"),
    ("n=2,mode=bad,extra=x", {"n": 2, "mode": "bad", "extra": "x"}, "fail", "reproduced"),
    ("n=3,mode=ok", {"n": 3, "mode": "ok"}, "pass", "reproduced"),
    ("n=4,mode=ok", {"n": 4, "mode": "ok"}, "pass", "reproduced"),
    ("n=4,mode=bad", {"n": 4, "mode": "bad"}, "pass", "not-reproduced"),
    ("n=9,mode=ok", {"n": 9, "mode": "ok"}, "pass", "reproduced"),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CliResult]:
    """One engine run per selection, read by the tests below."""
    folder = tmp_path_factory.mktemp("matrix-run")
    spec = folder / "spec.yaml"
    spec.write_text(SPEC)
    selections = {
        "whole": (),
        "bad": ("-m", "mode=bad"),
        "two": ("-m", "n=2", "-m", "n=9", "-m", "mode=ok"),
    }
    return {
        name: run_cli(folder / name, "run", str(spec), "-j", "2", *filters)
        for name, filters in selections.items()
    }


def cells(result: CliResult) -> list[tuple[str, dict[str, Any], str, str]]:
    data = result.results()
    assert all(len(c["attempts"]) == 2 for c in data["cells"])
    return [(c["id"], c["matrix"], c["expected"]["outcome"], c["verdict"]) for c in data["cells"]]


def test_the_whole_matrix_runs_every_cell_in_order(runs: dict[str, CliResult]) -> None:
    result = runs["whole"]
    assert result.code == 1, result.stderr  # n=4,mode=bad expected to pass and did not
    assert cells(result) == WHOLE
    assert "7/8 cells reproduced" in result.stdout


def test_filters_keep_their_cells_in_matrix_order(runs: dict[str, CliResult]) -> None:
    assert runs["bad"].code == 1, runs["bad"].stderr
    assert cells(runs["bad"]) == [c for c in WHOLE if c[1]["mode"] == "bad"]
    assert runs["two"].code == 0, runs["two"].stderr
    assert cells(runs["two"]) == [WHOLE[2], WHOLE[7]]
    # The table names the kept cells and no other.
    table = runs["two"].stdout
    assert "n=2,mode=ok,extra=x" in table
    assert "n=9,mode=ok" in table
    assert "n=1,mode=ok" not in table


@pytest.mark.parametrize(
    ("matrix", "line", "message"),
    [
        ("  n: [1, '1']\n", 4, "matrix: cells 1 and 2 have the same id 'n=1'"),
        (
            "  n: [1, 2]\n  exclude:\n    - {n: 1}\n    - {n: 2}\n",
            4,
            "matrix: the matrix has no cells: every combination is excluded",
        ),
        (
            "  a: ["
            + ", ".join(map(str, range(1000)))
            + "]\n  b: ["
            + ", ".join(map(str, range(101)))
            + "]\n",
            4,
            "matrix: the matrix has 101000 cells; at most 100000 are allowed",
        ),
    ],
    ids=["same-id", "all-excluded", "too-many"],
)
def test_a_bad_matrix_is_refused_located_before_anything_runs(
    tmp_path: Path, matrix: str, line: int, message: str
) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(f"reprospec: 1\nname: bad\nmatrix:\n{matrix}command: [touch, RAN]\n")
    result = run_cli(tmp_path / "out", "run", str(spec), cwd=tmp_path)
    assert result.code == 2, result.stderr
    assert f"bad.yaml:{line}:" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "RAN").exists()
    assert not (tmp_path / "out" / "runs").exists()
