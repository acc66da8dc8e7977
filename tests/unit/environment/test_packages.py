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


def test_an_extra_needs_what_it_requires() -> None:
    """`torch[opt-einsum]` passed the check with opt-einsum missing: only torch was looked
    for, and the cell ran without what the spec asked. Each requirement the extra adds
    (Requires-Dist `...; extra == "opt-einsum"`) is judged too, through nested extras, and
    a missing or mismatched one names the extra that needs it."""
    markers = {"python_version": "3.11", "sys_platform": "linux"}
    requires = {
        "torch": (
            "filelock",  # a plain dependency: the installer's, not the extra's
            'opt-einsum>=3.3; extra == "opt-einsum"',
            'pyyaml; extra == "pyyaml"',
            'optree>=0.13.0; extra == "optree"',
            'old-thing; extra == "optree" and python_version < "3"',
        ),
        "kit": ('kit[b]; extra == "all"', 'dep-b[x]==2; extra == "b"'),
        "dep-b": ('deep>=5; extra == "x"',),
    }
    everything = {"pyyaml": "6.0", "optree": "0.12.0", "kit": "1", "dep-b": "2", "deep": "4"}
    have = Installed("py", {"torch": "2.13.0", "kit": "1"}, markers, "", everything, requires)
    assert mismatches(["torch[pyyaml]", "torch"], have) == ()
    assert mismatches(["torch[opt_einsum,optree]==2.13.0"], have) == (
        "opt-einsum is not installed (torch[opt-einsum] requires opt-einsum>=3.3)",
        "optree 0.12.0 is installed (torch[optree] requires optree>=0.13.0)",
    )
    assert mismatches(["kit[all]"], have) == (
        "deep 4 is installed (dep-b[x] requires deep>=5; the cell needs kit[all])",
    )
    # A capture (no Requires-Dist) cannot judge an extra: the distribution alone is judged.
    captured = Installed("py", {"torch": "2.13.0"}, markers)
    assert mismatches(["torch[opt-einsum]"], captured) == ()
