"""A damaged `isolate` state file is refused with its name (exit 2), never an internal
error: garbage, and JSON nested 100,000 deep. Real isolate runs."""

from __future__ import annotations

from pathlib import Path

from tests.functional.commands.test_isolate import isolate


def test_a_damaged_state_file_is_refused_named(tmp_path: Path) -> None:
    code, _, stderr = isolate(tmp_path, "--budget", "6")
    assert code in (0, 1), stderr
    (state,) = (tmp_path / "out" / "isolate").glob("*/state.json")
    for damage in ("[" * 100_000 + "]" * 100_000, '{"format": 1, "probes": '):
        state.write_text(damage)
        code, _, stderr = isolate(tmp_path, "--budget", "6")
        assert code == 2, stderr
        assert str(state) in stderr
        assert "damaged isolate state file" in stderr
        assert "Traceback" not in stderr
