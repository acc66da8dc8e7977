"""isolate's checks of its options, before anything runs."""

from __future__ import annotations

import pytest

from reprospec.core.inputs import Cell
from reprospec.core.jsontypes import JsonValue
from reprospec.errors import UsageError
from reprospec.isolation.differences import MISSING
from reprospec.isolation.driver import _check_axes, _check_unsets

DOCUMENT: dict[str, JsonValue] = {
    "command": "python train.py",
    "run": {"timeout": "5m"},
    "matrix": {"fast": ["0", "1"]},
}


def test_unsetting_a_field_the_spec_lacks_is_refused_not_dropped() -> None:
    # `isolate --failing-set ~run.tmeout`: no difference came of it, and isolate ran and
    # answered as without it, never saying the option had done nothing.
    with pytest.raises(UsageError, match=r"--failing-set ~run\.tmeout: 'run\.tmeout' is not in"):
        _check_unsets({"run.tmeout": MISSING}, {}, DOCUMENT, "--failing-set", {})
    with pytest.raises(UsageError, match=r"'nope\.x' is not in the spec"):
        _check_unsets({"nope.x": MISSING}, {}, DOCUMENT, "--passing-set", {})


def test_unsetting_a_field_the_spec_or_the_other_side_has_is_a_difference() -> None:
    _check_unsets({"run.timeout": MISSING}, {}, DOCUMENT, "--failing-set", {})
    # The other side sets it: unsetting it here is that difference, said explicitly.
    _check_unsets({"run.stall": MISSING}, {"run.stall": "10s"}, DOCUMENT, "--passing-set", {})
    # A matrix axis is _check_axes's to refuse, by the axes the cells have.
    _check_unsets({"matrix.fast": MISSING}, {}, DOCUMENT, "--failing-set", {})
    _check_unsets({"run.stall": "10s"}, {}, DOCUMENT, "--failing-set", {})


def test_unsetting_a_variable_the_attempts_inherit_is_refused() -> None:
    # `FAST_KERNEL=1 reprospec isolate s.yaml --passing-set ~environment.env.FAST_KERNEL`,
    # in the shell the capture ran in: the passing side still had FAST_KERNEL=1, and
    # isolate said "the passing configuration fails the same way".
    document: dict[str, JsonValue] = {"environment": {"env": {"FAST_KERNEL": "1"}}}
    unset = {"environment.env.FAST_KERNEL": MISSING}
    with pytest.raises(UsageError, match=r"FAST_KERNEL is set in the environment isolate runs"):
        _check_unsets(unset, {}, document, "--passing-set", {"FAST_KERNEL": "1"})
    # Not inherited (unset in the shell, or a container's runner): a real difference.
    _check_unsets(unset, {}, document, "--passing-set", {"OTHER": "1"})
    # A value given for that side is one whatever the shell has.
    given = {"environment.env.FAST_KERNEL": ""}
    _check_unsets(given, {}, document, "--passing-set", {"FAST_KERNEL": "1"})


def test_unsetting_an_axis_every_cell_has_is_refused() -> None:
    # `--failing-set ~matrix.x` for an axis every cell holds: no cell is without it. It
    # ran, and was refused halfway through the search as an error of the spec's command,
    # under a `--set matrix=...` the user had not typed.
    cells = [
        Cell("x=0", 0, {"x": 0}),
        Cell("x=1,note=extra", 1, {"x": 1, "note": "extra"}),
    ]
    with pytest.raises(UsageError, match=r"--failing-set ~matrix\.x: every cell has a value of"):
        _check_axes(["~matrix.x"], "--failing-set", cells)
    # A key only an include entry brings is absent (null) in the other cells: a difference.
    _check_axes(["~matrix.note"], "--passing-set", cells)
    _check_axes(["matrix.x=2"], "--passing-set", cells)
