"""shellexit.own_exit: where a command's words, or a shell script it names, tell a shell to
exit with the status seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.outcome.shellexit import own_exit


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("sh -c 'exit 139'", "exit 139"),
        ('bash -c "set -e; sh -c \\"exit 139\\""', "exit 139"),
        ("true;exit 139", "exit 139"),
        ("f() { return 139; }; f", "return 139"),
        ("x || exit 139", "exit 139"),
    ],
)
def test_the_words_say_exit_n(line: str, said: str) -> None:
    assert own_exit(139, ["/bin/sh", "-c", line], None) == said


@pytest.mark.parametrize(
    "line",
    [
        "./segv",
        "./segv; exit $?",
        "sh -c './segv; exit'",
        "exit 1390",
        "exit 13",
        "python -c 'import sys; sys.exit(139)'",
        "myexit 139",
    ],
)
def test_no_exit_n_in_the_words(line: str) -> None:
    assert own_exit(139, ["/bin/sh", "-c", line], None) is None


def test_a_script_the_command_names(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("#!/usr/bin/env bash\nls\nexit 134\n")
    (tmp_path / "b.sh").write_text("ls\n  exit 134 # no shebang: its suffix\n")
    (tmp_path / "t.py").write_text("#!/usr/bin/python3\n# exit 134\n")
    assert own_exit(134, ["/bin/sh", "-c", "A=1 ./run --x"], tmp_path) == "exit 134 in run"
    assert own_exit(134, ["bash", "b.sh"], tmp_path) == "exit 134 in b.sh"
    assert own_exit(134, [str(tmp_path / "b.sh")], Path("/")) == "exit 134 in b.sh"
    # Not a shell script: a Python file's text is no shell's word.
    assert own_exit(134, ["/bin/sh", "-c", "./t.py"], tmp_path) is None
    assert own_exit(134, ["/bin/sh", "-c", "./missing.sh"], tmp_path) is None
    assert own_exit(139, ["/bin/sh", "-c", "./run"], tmp_path) is None
