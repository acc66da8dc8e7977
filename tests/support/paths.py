"""Where the tests' files are, from any depth of tests/ (unit/, functional/, real/ and below)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"
CHILDREN = DATA / "children"
