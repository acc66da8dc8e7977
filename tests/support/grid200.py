"""A real 200-cell run that failed two ways, for the report-at-scale tests (markdown and HTML).

A 10x20 matrix of a shell `case`: 16 cells exit 3 as the spec expects (`a=0|3|6|9,
b=2|5|11|17`), 5 more raise an unexpected ValueError (`a=1|2|4|5|7, b=2`: the same `b=2`
as some of the expected ones), the other 179 pass. The shell prints a Python traceback
for the ValueError as Python would: the run takes seconds, not 200 interpreter starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprospec.report.markup import show_value
from tests.support.cli import run_cli

SPEC = """\
reprospec: 1
name: grid200
title: Exit 3 on a pattern of a 10x20 grid
matrix:
  a: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  b: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
command: |
  case "${{ matrix.a }},${{ matrix.b }}" in
    [0369],2|[0369],5|[0369],11|[0369],17)
      echo "exiting 3 as the bug does" >&2; exit 3;;
    [12457],2)
      echo "parsing the config of a=${{ matrix.a }}"
      printf 'Traceback (most recent call last):\\n  File "job.py", line 8, in <module>\\n' >&2
      echo "ValueError: bad config value ${{ matrix.a }}" >&2; exit 1;;
  esac
expect: {outcome: error, exit_code: 3}
"""

EXPECTED_CELLS = {f"a={a},b={b}" for a in (0, 3, 6, 9) for b in (2, 5, 11, 17)}
VALUE_ERROR_CELLS = {f"a={a},b=2" for a in (1, 2, 4, 5, 7)}


@dataclass(frozen=True)
class Grid200:
    """The run's folder and what results.json says of its cells."""

    folder: Path
    cells: dict[str, dict[str, object]]  # cell id -> its matrix values
    outcomes: dict[str, set[str]]  # cell id -> the signatures of its attempts


def run_grid200(tmp: Path) -> Grid200:
    """Run the spec for real (`-j 4`) and read back its results."""
    spec = tmp / "grid200.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    result = run_cli(tmp / "out", "run", str(spec), "-j", "4", timeout=300)
    # Exit 1: cells not reproduced (the passing ones and the ValueErrors).
    assert result.code == 1, result.stdout[-2000:] + result.stderr[-2000:]
    data = result.results()
    cells = {c["id"]: c["matrix"] for c in data["cells"]}
    outcomes = {c["id"]: {a["outcome"]["signature"] for a in c["attempts"]} for c in data["cells"]}
    assert len(cells) == 200
    return Grid200(result.latest_run(), cells, outcomes)


def cells_of(pattern: str, cells: dict[str, dict[str, object]]) -> set[str]:
    """The cells a report's pattern holds: `a=0|3, b=2` (values of some axes), or a cell id."""
    if pattern in cells:
        return {pattern}
    wanted = [part.strip().split("=", 1) for part in pattern.split(",")]
    return {
        cell_id
        for cell_id, matrix in cells.items()
        if all(show_value(matrix[axis]) in values.split("|") for axis, values in wanted)
    }


def with_signature(run: Grid200, signature: str) -> set[str]:
    return {cell_id for cell_id, found in run.outcomes.items() if signature in found}
