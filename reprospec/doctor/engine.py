"""The engine's own check: how it starts attempts on this machine (starter.py)."""

from __future__ import annotations

from reprospec.doctor.check import Check


def check_starter(ready: bool, how: str) -> Check:
    """The attempt starter: built (each attempt starts through it), or why not."""
    if ready:
        return Check("starter", "pass", f"attempts start through {how}")
    return Check(
        "starter",
        "warn",
        f"attempts start through Python's preexec_fn ({how}): same guarantees, "
        "about 2 ms more of the engine's CPU per attempt",
        "install a C compiler (apt install gcc), or set CC",
    )
