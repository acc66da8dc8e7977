"""A hang or crash expected at a test id that a pytest command without -v never prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.commands.validate import _later_notes
from reprospec.core.jsontypes import JsonObject
from reprospec.pipeline.quietpytest import quiet_pytest_phases
from reprospec.spec.load import load_spec

HANG: JsonObject = {
    "command": "python -m pytest test_fx.py",
    "markers": [{"preset": "pytest"}],
    "expect": {"outcome": "hang", "phase": "test_fx.py::test_uses"},
}


def _with(**changes: object) -> JsonObject:
    return {**HANG, **changes}  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("document", "paths"),
    [
        (HANG, [("expect", "phase")]),
        (_with(command=["pytest", "-q", "test_fx.py"]), [("expect", "phase")]),
        (_with(expect={"outcome": "crash", "phase": "t.py::test_uses"}), [("expect", "phase")]),
        (_with(command="python -m pytest -v test_fx.py"), []),
        (_with(command="pytest -n 2 t.py", expect={"outcome": "crash", "phase": "t.py::a"}), []),
        (_with(command="pytest -n 2 test_fx.py"), [("expect", "phase")]),
        (_with(command="python -m pytest ${{ matrix.flags }} test_fx.py"), []),  # per cell
        (_with(markers=[{"pattern": "^(?P<phase>\\S+::\\S+)"}]), []),  # a marker of its own
        (_with(expect={"outcome": "error", "phase": "test_fx.py::test_uses"}), []),  # summary
        (_with(expect={"outcome": "hang", "phase": "train"}), []),  # no test id
        (_with(environment={"env": {"PYTEST_ADDOPTS": "-v"}}), []),
        (
            _with(
                expect={
                    "outcome": "error",
                    "cases": [{"when": "x", "outcome": "hang", "phase": "t.py::test_a"}],
                }
            ),
            [("expect", "cases", 0, "phase")],
        ),
    ],
)
def test_a_test_id_no_line_names_is_found_at_its_phase(
    document: JsonObject, paths: list[tuple[object, ...]]
) -> None:
    assert [path for path, _ in quiet_pytest_phases(document)] == paths


def test_validate_notes_it_at_the_phase_line_and_says_to_add_v(tmp_path: Path) -> None:
    spec = tmp_path / "hang.yaml"
    spec.write_text(
        "reprospec: 1\nname: h\ncommand: python -m pytest test_fx.py\n"
        "markers: [{preset: pytest}]\nexpect:\n  outcome: hang\n"
        "  phase: test_fx.py::test_uses\n"
    )
    (note,) = _later_notes(str(spec), load_spec(spec))
    assert note.startswith(f"{spec}:7:10: expect.phase: phase 'test_fx.py::test_uses' of a hang")
    assert "add -v to the command" in note
