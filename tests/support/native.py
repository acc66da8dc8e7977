"""Assertions on native stacks shared by the local and the docker runner's tests."""

from __future__ import annotations

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
