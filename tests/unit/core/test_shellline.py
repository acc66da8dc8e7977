"""A shell line's skeleton: its own operators, what is quoted one word."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprospec.core.shellline import runs_a_substitution, runs_python, shebang_python, skeleton


@pytest.mark.parametrize(
    ("line", "names", "shown"),
    [
        ('python -c "import sys; sys.exit(139)"', (), "python -c q"),
        ("echo 'a;b' && exit $?", (), "echo q && exit $?"),
        ('python x.py "a \\" (b)"', (), "python x.py q"),  # an escaped quote stays inside
        ("python x.py \\(", (), "python x.py "),  # an escaped character is no operator
        ("'unclosed", (), None),
        ('python "$(cat args)"', (), None),  # a substitution runs a program of its own
        ("python `cat args`", (), None),
        ('test "$MODE" = bad && exit 3', ("MODE",), None),  # expanded before NAME=value
        ('test "$MODE" = bad && exit 3', (), "test q = bad && exit 3"),
        ("echo '$(not run)'", (), "echo q"),  # single quotes keep everything literal
        ("echo '`not run`'", (), "echo q"),
        ('echo "`run`"', (), None),  # double quotes expand it
        ("echo \\`not run\\`", (), "echo not run"),  # an escaped backquote is a character
    ],
)
def test_a_lines_skeleton(line: str, names: tuple[str, ...], shown: str | None) -> None:
    assert skeleton(line, names) == shown


def test_what_begins_a_substitution() -> None:
    line = "a $(b) `c` $((1+2)) ${d} $e"
    assert [i for i in range(len(line)) if runs_a_substitution(line, i)] == [2, 7, 9, 11]


def test_what_runs_python(tmp_path: Path) -> None:
    # capture's `python -I` reader and a ticket's native one answered apart: env's `-S`
    # (`#!/usr/bin/env -S python3 -u`) read as no Python, srun and mpirun as no launcher,
    # a `#!/bin/bash` script as a native program (review).
    for word in ("python3", "/opt/py/bin/python", "python.exe", "x.py", "run.sh", "bash",
                 "srun", "mpirun", "torchrun", "/home/u/.venv/bin/pytest", "uv"):  # fmt: skip
        assert runs_python(word, None), word
    assert not runs_python("./crash", None)
    lines = {
        "#!/usr/bin/env -S python3 -u\n": True,
        "#!/usr/bin/python3\n": True,
        "#!/bin/sh\n'''exec' '/very/long/bin/python' \"$0\" \"$@\"\n'''\n": True,
        "#!/bin/bash -e\n": True,
        "#!/usr/bin/env -S bash -e\n": True,
        "#!/usr/bin/env -u HOME bash\n": True,  # HOME was read as its program (review)
        "#!/usr/bin/env --chdir=/tmp LC_ALL=C bash\n": True,
        "#!/usr/bin/env -u HOME perl\n": False,
        "#!/usr/bin/perl\n": False,
        "\x7fELF": False,
    }
    for line, expected in lines.items():
        (tmp_path / "t").write_text(line)
        assert runs_python("./t", tmp_path / "t") is expected, line


def test_an_env_shebang_names_the_python_env_runs(tmp_path: Path) -> None:
    # env's words read by the one grammar (`_env_program`): the program past its options
    # and assignments, not the first word that reads as Python anywhere (review).
    script = tmp_path / "t"
    for line, python in [
        ("#!/usr/bin/env python3", "python3"),
        ("#!/usr/bin/env -S python3 -u", "python3"),
        ("#!/usr/bin/env -u HOME PYTHONUNBUFFERED=1 python3.12", "python3.12"),
        ("#!/usr/bin/env bash python3", None),
    ]:
        script.write_text(f"{line}\nprint(1)\n")
        assert shebang_python(script) == python, line
