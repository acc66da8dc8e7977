"""A cell's `packages` against what an interpreter has: mismatches name both sides."""

from __future__ import annotations

from reprospec.environment.packages import Installed, PackageCheck, mismatches


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


def test_an_entry_naming_no_distribution_is_a_reason_not_a_pass() -> None:
    """`six=1.2` names nothing the probe can look for: left out, the cell ran as if the spec
    asked for no packages and passed without six (nu17 D1). Refused before any probe runs."""
    reason = PackageCheck().reason("/no/such/python", ["six=1.2", "torch>>2"])
    assert reason == (
        "cannot check the cell's packages: 'six=1.2' is not a valid requirement (did you"
        " mean 'six==1.2'?); 'torch>>2' is not a valid requirement (did you mean 'torch>2'?)"
    )
