"""Where the tests' files are, from any depth of tests/ (unit/, functional/, real/ and below)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"
CHILDREN = DATA / "children"


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder every xdist worker of this session sees (the session's own without xdist).

    Each worker's basetemp is `<session basetemp>/popen-gwN`: its parent is the session's.
    What the workers share there is made once, under an exclusive lock on a file of it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / name
    folder.mkdir(exist_ok=True)
    return folder
