"""shellexit.own_exit: where a command runs no program and its words, or a shell script it
names, tell a shell to exit with the status seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.outcome.shellexit import own_exit


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("sh -c 'exit 139'", "exit 139"),
        ('bash -c "set -e; sh -c \\"exit 139\\""', "exit 139"),
        ("dash -c 'true; exit 139'", "exit 139"),
        ("true;exit 139", "exit 139"),
        ("f() { return 139; }; f", "return 139"),
        ("function f { echo x >&2; return 139; }\nf", "return 139"),
        ("false || exit 139", "exit 139"),
        ("A=1; export A; echo 'exit code' 2>&1; exit 139 # a comment", "exit 139"),
        ("sh -c ': # exit 1\n exit 139'", "exit 139"),
        ("bash -eux -c 'exit 139'", "exit 139"),
        ("echo '$(./segv)' '`./segv`'; exit 139", "exit 139"),  # single quotes: words
        ("sh -euc 'exit 139'", "exit 139"),
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
        # A program runs: its death may be what the shell passes on in words of its own.
        "x || exit 139",
        "./segv 2>/dev/null; exit 139",
        "sh -c './segv; exit 139'",
        "./segv | tee log; rc=${PIPESTATUS[0]}; exit 139",
        "echo $(./segv); exit 139",
        "echo `./segv`; exit 139",
        'echo "`./segv`"; exit 139',
        'echo "$(./segv)"; exit 139',
        "echo $((1 + 2)); exit 139",
        "echo; exit 139 &",
        "(exit 139)",
        "true | exit 139",
        "trap 'echo stop; exit 139' TERM; wait",
        "rc=$?; exit 139",
        "f() { ./segv; return 139; }; f",
        "cat <<EOF\nx\nEOF\nexit 139",
        "zsh -c 'exit 139'",
        # A login or interactive shell reads /etc/profile or ~/.bashrc first: they run programs.
        "sh -lc 'exit 139'",
        "bash -ic 'exit 139'",
        "sh -l -c 'exit 139'",
        "sh -c 'exit 139",
        "echo exit 139",
        # Digits int() and the shell refuse: a word, neither a status nor a descriptor.
        "exit ²",
        "²>/dev/null exit 139",
        # Comments are no words: the status they document is the program's.
        "./segv # exit 139",
        "# exit 139\n./segv",
    ],
)
def test_no_exit_n_of_its_own(line: str) -> None:
    assert own_exit(139, ["/bin/sh", "-c", line], None) is None


def test_a_script_the_command_names(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("#!/usr/bin/env bash\necho hi\nexit 134\n")
    (tmp_path / "b.sh").write_text("set -e\n  exit 134 # no shebang: its suffix\n")
    (tmp_path / "t.py").write_text("#!/usr/bin/python3\n# exit 134\n")
    (tmp_path / "z.sh").write_text("#!/bin/zsh\nexit 134\n")
    (tmp_path / "ls.sh").write_text("#!/bin/sh\nls\nexit 134\n")
    (tmp_path / "doc.sh").write_text("#!/bin/sh\n# Expected: exit 134 (SIGABRT)\n./abort\n")
    trap = "#!/bin/bash\ntrap 'echo stopping >&2; exit 134' TERM\nexit 134\n"
    (tmp_path / "trap.sh").write_text(trap)
    assert own_exit(134, ["/bin/sh", "-c", "A=1 ./run --x"], tmp_path) == "exit 134 in run"
    assert own_exit(134, ["bash", "b.sh"], tmp_path) == "exit 134 in b.sh"
    assert own_exit(134, [str(tmp_path / "b.sh")], Path("/")) == "exit 134 in b.sh"
    assert own_exit(134, ["/bin/sh", "-c", "./run; exit 134"], tmp_path) == "exit 134 in run"
    # Not a shell script: a Python file's text is no shell's word.
    assert own_exit(134, ["/bin/sh", "-c", "./t.py"], tmp_path) is None
    assert own_exit(134, ["/bin/sh", "-c", "./missing.sh"], tmp_path) is None
    assert own_exit(139, ["/bin/sh", "-c", "./run"], tmp_path) is None
    # A shell whose reports of a death are not read, a program run, a comment, a trap.
    assert own_exit(134, ["/bin/sh", "-c", "./z.sh"], tmp_path) is None
    assert own_exit(134, ["/bin/sh", "-c", "./ls.sh"], tmp_path) is None
    assert own_exit(134, ["bash", "doc.sh"], tmp_path) is None
    assert own_exit(134, ["bash", "trap.sh"], tmp_path) is None
    # A script run by name is looked up on PATH, not in the workdir.
    assert own_exit(134, ["/bin/sh", "-c", "b.sh"], tmp_path) is None
