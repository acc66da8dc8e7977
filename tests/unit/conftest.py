"""The unit tests' one rule, enforced: they import modules and start no child process.

Every way Python starts a process (subprocess, fork, posix_spawn, exec, system) raises
during a unit test, so a test that needs a real child fails here with a message that
says where it belongs (tests/functional/), instead of making the inner loop slow."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

_STARTERS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system",
             "execv", "execve", "execvp", "execvpe")  # fmt: skip


class ChildProcessInUnitTest(AssertionError):
    """A unit test tried to start a process."""


def _refuse(what: str) -> object:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise ChildProcessInUnitTest(
            f"{what}: a unit test starts no child process; a test that needs one belongs"
            " in tests/functional/"
        )

    return refuse


@pytest.fixture(autouse=True)
def _no_child_processes() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", _refuse("subprocess.Popen"))
        for name in _STARTERS:
            if hasattr(os, name):
                patch.setattr(os, name, _refuse(f"os.{name}"))
        yield
