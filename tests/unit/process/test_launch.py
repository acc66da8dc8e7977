"""process/launch.py's pieces that need no process of their own."""

from __future__ import annotations

import ast
import os
import signal

import pytest

from reprospec.process import launch
from reprospec.process.rlimits import LAUNCH


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (0, 0),
        (3 << 8, 3),
        (138 << 8, 138),  # an exit 138, no SIGUSR1
        (int(signal.SIGUSR1), -10),
        (int(signal.SIGKILL), -9),
        (int(signal.SIGSEGV) | 0x80, -11),  # with its core dumped
    ],
)
def test_a_wait_status_becomes_a_subprocess_returncode(status: int, expected: int) -> None:
    """By hand, as os.waitstatus_to_exitcode (3.9+) gives it, for an image's older python3."""
    assert launch.returncode_of(status) == expected
    assert launch.returncode_of(status) == os.waitstatus_to_exitcode(status)


def test_a_stopped_status_is_no_end() -> None:
    with pytest.raises(ValueError, match="not an end"):
        launch.returncode_of(0x137F)  # WIFSTOPPED, SIGSTOP


def test_launch_compiles_on_the_oldest_python3_an_image_may_run_it_with() -> None:
    """An image's python3 runs it as the container's init: 3.7 must compile it."""
    ast.parse(LAUNCH.read_text(encoding="utf-8"), feature_version=(3, 7))
