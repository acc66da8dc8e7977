"""A cell's `packages` against what an interpreter has: mismatches name both sides."""

from __future__ import annotations

from reprospec.environment.packages import Installed, mismatches


def test_mismatches_name_both_sides() -> None:
    have = Installed(
        "py", {"torch": "2.13.0+cpu", "numpy": "2.1.0", "six": None}, {"python_version": "3.11"}
    )
    assert mismatches(["torch==2.13.0", "numpy>=2", "torch~=2.13"], have) == ()
    assert mismatches(["torch==2.5.1", "numpy<2", "six"], have) == (
        "torch 2.13.0+cpu is installed (the cell needs torch==2.5.1)",
        "numpy 2.1.0 is installed (the cell needs numpy<2)",
        "six is not installed (the cell needs six)",
    )
    # A marker that does not apply to this interpreter asks for nothing.
    assert mismatches(['six==1.0; python_version < "3.0"'], have) == ()
    # Names are compared normalized; a wheel path names its distribution.
    assert mismatches(["Torch==2.13.0", "./w/numpy-2.1.0-cp311-cp311-linux_x86_64.whl"], have) == ()
    assert mismatches(["./w/numpy-1.26.4-cp311-cp311-linux_x86_64.whl"], have) == (
        "numpy 2.1.0 is installed (the cell needs ./w/numpy-1.26.4-cp311-cp311-linux_x86_64.whl)",
    )
