"""The markdown report of a real 200-cell run that failed two ways (tests/support/grid200.py).

Before: "What separates" drew one pattern for the 16 cells that failed as expected under
a headline of 21 failed cells, so the 5 unexpected ValueErrors read as covered by it, and
only the first failure showed its log. Now each failure gets the cells it happened in,
exactly, and a failure no attempt expected shows its own excerpt.
"""

from __future__ import annotations

import re

import pytest

from tests.support.grid200 import (
    EXPECTED_CELLS,
    VALUE_ERROR_CELLS,
    Grid200,
    cells_of,
    run_grid200,
    with_signature,
)


@pytest.fixture(scope="module")
def grid200(tmp_path_factory: pytest.TempPathFactory) -> Grid200:
    return run_grid200(tmp_path_factory.mktemp("grid200"))


def _section(report: str, heading: str) -> str:
    return report.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_what_separates_states_each_failure_for_exactly_its_cells(grid200: Grid200) -> None:
    report = (grid200.folder / "report.md").read_text(encoding="utf-8")
    assert report.split("**", 2)[1].startswith("21 of 200 cells failed")
    section = _section(report, "What separates failing from passing cells")
    entries = [line for line in section.splitlines() if line.startswith("- ")]
    # One entry per failure, none for all failing cells at once.
    assert len(entries) == 2, section
    assert "every failing cell" not in section
    by_phrase = {"error exit 3": "error:exit-3", "error exit 1 ValueError": "error:ValueError"}
    covered: set[str] = set()
    for entry in entries:
        found = re.match(r"- `([^`]+)` in (\d+) of 200 cells(, not expected)?: (.*)$", entry)
        assert found, entry
        signature = by_phrase[found[1]]
        patterns = re.findall(r"`([^`]+)`", found[4])
        held = set().union(*(cells_of(p, grid200.cells) for p in patterns))
        # Exactly the cells where that failure happened: no more, no fewer.
        assert held == with_signature(grid200, signature), entry
        assert int(found[2]) == len(held)
        assert (found[3] is not None) == (signature == "error:ValueError"), entry
        covered |= held
    assert with_signature(grid200, "error:exit-3") == EXPECTED_CELLS
    assert with_signature(grid200, "error:ValueError") == VALUE_ERROR_CELLS
    assert covered == EXPECTED_CELLS | VALUE_ERROR_CELLS


def test_a_failure_no_attempt_expected_shows_its_log_excerpt(grid200: Grid200) -> None:
    report = (grid200.folder / "report.md").read_text(encoding="utf-8")
    failure = _section(report, "Failure")
    # The first failure is the expected exit 3; the ValueError follows with its own evidence.
    assert "First seen in cell `a=0,b=2`, attempt 1: `error exit 3`." in failure
    other = failure.split("### Not expected: `error exit 1 ValueError`", 1)[1]
    assert "In 5 cells, first seen in cell `a=1,b=2`, attempt 1." in other
    excerpt = other.split("Log excerpt:", 1)[1]
    assert "ValueError: bad config value 1" in excerpt
    assert 'File "job.py", line 8, in <module>' in excerpt
