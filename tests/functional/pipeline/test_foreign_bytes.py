"""Bytes that are not UTF-8, from a user's machine and program, through a whole run: nothing
a user ran is lost to a UnicodeDecodeError or UnicodeEncodeError; an undecodable byte shows as
U+FFFD where it is shown."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Cli

SPEC = """\
reprospec: 1
name: foreign
command: python -c "raise SystemExit(0)"
"""


def test_a_variable_of_the_engines_environment_that_is_not_utf8_is_shown_replaced(
    cli: Cli, tmp_path: Path
) -> None:
    # `env TORCH_X=$'a\\x80b' reprospec run` (a variable the capture records) ended with
    # "internal error: UnicodeEncodeError" writing results.json, the run lost.
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    ran = cli("run", str(spec), env={"TORCH_X": "a\udc80b"})
    assert ran.code == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    folder = ran.latest_run()
    results = json.loads((folder / "results.json").read_bytes().decode("utf-8"))
    assert results["environment"]["env"]["TORCH_X"] == "a\ufffdb"
    assert "| TORCH_X | `a\ufffdb` |" in (folder / "report.md").read_bytes().decode("utf-8")
