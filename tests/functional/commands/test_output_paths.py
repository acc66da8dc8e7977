"""`-o`/`--output` and `--out` that cannot be written are refused before anything runs.

`minimize -o /proc/min-out` ran its whole search, then exited 2 with `No such file or
directory: /proc/min-out`, naming no option; `-o a_file/sub` the same (`Not a
directory`). Every verb that writes a folder or file checks these paths first
(cli._dispatch, options.check_writable): a located error naming the option, exit 2, no
traceback, no run stored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import ROOT, run_cli

SPEC = str(ROOT / "tests" / "data" / "minimize" / "crash.yaml")


def _cases(tmp: Path) -> list[tuple[list[str], str]]:
    store = str(tmp / "store")
    under_file = str(tmp / "a_file" / "sub")
    cases: list[tuple[list[str], str]] = []
    for bad in ("/proc/reprospec-out", under_file):
        cases += [
            (["minimize", SPEC, "-o", bad, "--out", store], "-o"),
            (["capture", "--from-log", "-", "-o", bad, "--out", store], "-o"),
            (["bundle", "latest", "-o", bad, "--out", store], "-o"),
            (["materialize", str(tmp / "nothing.tar.gz"), "-o", bad], "-o"),
            (["run", SPEC, "--out", bad], "--out"),
            (["isolate", SPEC, "--out", bad], "--out"),
            (["minimize", SPEC, "--out", bad], "--out"),
            (["amplify", SPEC, "--out", bad], "--out"),
            (["bisect", SPEC, "--out", bad], "--out"),
        ]
    return cases


@pytest.mark.parametrize("index", range(18))
def test_an_unwritable_output_is_refused_before_anything_runs(tmp_path: Path, index: int) -> None:
    (tmp_path / "a_file").write_text("not a folder\n", encoding="utf-8")
    argv, flag = _cases(tmp_path)[index]
    bad = argv[argv.index(flag) + 1]
    # Before the fix minimize ran its whole search (minutes) before it said anything.
    result = run_cli(tmp_path, *argv, cwd=tmp_path, stdin="", timeout=60)
    assert result.code == 2, result.stderr
    assert f"reprospec: {flag} {bad}: cannot write there: " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    # Nothing ran: no store was made, neither the one named nor the default.
    assert not (tmp_path / "store").exists()
    assert not (tmp_path / ".reprospec").exists()
