"""Assertions on native stacks shared by the local and the docker runner's tests, and what
this process holds open (the core watch's unit and functional tests); nothing here starts a
process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from reprospec import native
from reprospec.native import NativeStacks


def assert_fault_in_a_torch_op(stacks: NativeStacks) -> None:
    """The crashing thread's top frame is a demangled torch op (`at::...`) in libtorch."""
    process = native.crashed_process(stacks)
    assert process is not None, stacks
    assert process.crashing_thread is not None, stacks
    top = native.fault_frames(process.crashing_thread)[0]
    assert (top.library or "").startswith("libtorch"), native.top_frames(stacks)
    assert "at::" in top.symbol
    assert "(" not in top.symbol.replace("(anonymous namespace)", "")
    assert "@libtorch" in (native.signature_frame(stacks) or "")


def fd_target(fd: Path) -> str:
    """What a /proc/self/fd entry points at; "" for one closed since it was listed."""
    try:
        return str(fd.readlink())
    except OSError:
        return ""


def held_fds(folder: Path) -> list[str]:
    """What this process holds open in `folder` (the watch's cores)."""
    inside = f"{folder}/"
    return [t for fd in Path("/proc/self/fd").iterdir() if (t := fd_target(fd)).startswith(inside)]


def until(check: Callable[[], bool]) -> bool:
    """Whether `check()` holds within 10 s (polled every 5 ms): a watch's thread acts soon,
    not at once."""
    deadline = time.monotonic() + 10
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True
