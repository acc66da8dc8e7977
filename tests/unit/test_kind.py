"""The unit folder's rule holds: a unit test that starts a child process fails, saying where
the test belongs (tests/unit/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.unit.conftest import ChildProcessInUnitTest


def test_a_unit_test_cannot_start_a_child_process() -> None:
    with pytest.raises(ChildProcessInUnitTest, match=r"belongs in tests/functional/"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(ChildProcessInUnitTest, match=r"os\.fork"):
        os.fork()
