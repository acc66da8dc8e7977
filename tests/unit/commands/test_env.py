"""`reprospec env`'s text: the lines of a capture."""

from __future__ import annotations

from reprospec.commands.env import summary


def test_an_interpreter_without_torch_has_no_cpu_capability_not_none() -> None:
    # `reprospec env --python /usr/bin/python3` (no torch there) printed
    # `cpu capability  None`, Python's word for a missing value.
    lines = dict(summary({"torch": {"installed": False}}))
    assert lines["torch"] == "not installed"
    assert lines["cpu capability"] == "none"
    assert dict(summary({"torch": {"cpu_capability": "AVX2"}}))["cpu capability"] == "AVX2"
