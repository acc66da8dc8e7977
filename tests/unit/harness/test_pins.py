"""The pins capture writes: the distributions behind a program's imports, read in its
interpreter (reprospec_harness.pins), of the packages this test environment has."""

from __future__ import annotations

import sys

from reprospec.harness import HARNESS_ROOT

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness.pins import distributions


def test_a_requirement_of_an_extra_leaves_the_package_pinned() -> None:
    # execnet requires pytest only for its `testing` extra: pytest was left out as coming
    # with execnet, and a captured `pytest -n 2` spec pinned execnet alone (a new user).
    pinned = distributions(["execnet", "pytest"])
    assert [p.split("==")[0].lower() for p in pinned] == ["execnet", "pytest"]
