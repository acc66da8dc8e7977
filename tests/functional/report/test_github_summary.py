"""The GitHub step summary writes spec strings as one table cell each: a matrix value with
a line break cannot forge a row of the results table. A real run, with a real summary file."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: forged
title: "t\\n| x | `fake-title` | pass | 9/9 | reproduced |"
matrix:
  v: ["ok\\n| x | `forged-row` | pass | 1/1 | reproduced |"]
command: python -c "pass"
expect: {outcome: pass}
"""


def test_a_line_break_in_a_matrix_value_forges_no_row(tmp_path: Path, cli: Cli) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    summary = tmp_path / "summary.md"
    ran = cli("run", str(spec), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert ran.code == 0, ran.stderr
    rows = [line for line in summary.read_text().splitlines() if line.startswith("|")]
    assert len(rows) == 3, rows  # the header, its rule, the one cell
    assert "forged-row" in rows[2]
    assert not any(line.startswith("| x |") for line in summary.read_text().splitlines())
