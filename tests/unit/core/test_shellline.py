"""A shell line's skeleton: its own operators, what is quoted one word."""

from __future__ import annotations

import pytest

from reprospec.core.shellline import runs_a_substitution, skeleton


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
