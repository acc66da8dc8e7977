"""environ.changed: variables set or unset for a block, then each as it was."""

from __future__ import annotations

import os

import pytest

from reprospec.core import environ


def test_set_and_unset_for_the_block_then_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPROSPEC_TEST_KEPT", "before")
    monkeypatch.setenv("REPROSPEC_TEST_GONE", "here")
    monkeypatch.delenv("REPROSPEC_TEST_NEW", raising=False)
    changes = {"REPROSPEC_TEST_KEPT": "during", "REPROSPEC_TEST_GONE": None}
    with environ.changed({**changes, "REPROSPEC_TEST_NEW": "1"}):
        assert os.environ["REPROSPEC_TEST_KEPT"] == "during"
        assert "REPROSPEC_TEST_GONE" not in os.environ
        assert os.environ["REPROSPEC_TEST_NEW"] == "1"
    assert os.environ["REPROSPEC_TEST_KEPT"] == "before"
    assert os.environ["REPROSPEC_TEST_GONE"] == "here"
    assert "REPROSPEC_TEST_NEW" not in os.environ


def test_an_error_in_the_block_still_puts_them_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPROSPEC_TEST_GONE", "here")
    with pytest.raises(KeyboardInterrupt), environ.changed({"REPROSPEC_TEST_GONE": None}):
        raise KeyboardInterrupt
    assert os.environ["REPROSPEC_TEST_GONE"] == "here"
