"""A cell's `packages` against what an interpreter has: mismatches name both sides."""

from __future__ import annotations

from reprospec.environment.packages import Installed, PackageCheck, mismatches, pins


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
    asked for no packages and passed without six. Refused before any probe runs."""
    reason = PackageCheck().reason("/no/such/python", ["six=1.2", "torch>>2"])
    assert reason == (
        "cannot check the cell's packages: 'six=1.2' is not a valid requirement (did you"
        " mean 'six==1.2'?); 'torch>>2' is not a valid requirement (did you mean 'torch>2'?)"
    )


def test_pins_are_each_named_requirement_at_the_version_held() -> None:
    """What a venv's ranges resolved to, as the standalone repro says it: names as the spec
    wrote them, extras kept, matched whatever their spelling; a wheel's or a URL's entry,
    whose freeze line holds no version, and one not installed, left out."""
    held = {"six": "1.16.0", "typing-extensions": "4.12.2", "requests": "2.32.3",
            "x": "file:///w/x-1.0-py3-none-any.whl"}  # fmt: skip
    wanted = [
        "six<1.17",
        "Typing_Extensions>=4",
        "requests[socks,use_chardet]<3",
        "./w/x-1.0-py3-none-any.whl",
        "x @ file:///w/x-1.0-py3-none-any.whl",
        "absent",
    ]
    assert pins(wanted, held) == (
        "six==1.16.0",
        "Typing_Extensions==4.12.2",
        "requests[socks,use_chardet]==2.32.3",
    )
