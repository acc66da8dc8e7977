"""isolate's checks of its options, before anything runs."""

from __future__ import annotations

import pytest

from reprospec.core.jsontypes import JsonValue
from reprospec.errors import UsageError
from reprospec.isolation.differences import MISSING
from reprospec.isolation.driver import _check_unsets

DOCUMENT: dict[str, JsonValue] = {
    "command": "python train.py",
    "run": {"timeout": "5m"},
    "matrix": {"fast": ["0", "1"]},
}


def test_unsetting_a_field_the_spec_lacks_is_refused_not_dropped() -> None:
    # `isolate --failing-set ~run.tmeout`: no difference came of it, and isolate ran and
    # answered as without it, never saying the option had done nothing.
    with pytest.raises(UsageError, match=r"--failing-set ~run\.tmeout: 'run\.tmeout' is not in"):
        _check_unsets({"run.tmeout": MISSING}, {}, DOCUMENT, "--failing-set")
    with pytest.raises(UsageError, match=r"'nope\.x' is not in the spec"):
        _check_unsets({"nope.x": MISSING}, {}, DOCUMENT, "--passing-set")


def test_unsetting_a_field_the_spec_or_the_other_side_has_is_a_difference() -> None:
    _check_unsets({"run.timeout": MISSING}, {}, DOCUMENT, "--failing-set")
    # The other side sets it: unsetting it here is that difference, said explicitly.
    _check_unsets({"run.stall": MISSING}, {"run.stall": "10s"}, DOCUMENT, "--passing-set")
    # A matrix axis is _check_axes's to refuse, by the axes the cells have.
    _check_unsets({"matrix.fast": MISSING}, {}, DOCUMENT, "--failing-set")
    _check_unsets({"run.stall": "10s"}, {}, DOCUMENT, "--failing-set")
