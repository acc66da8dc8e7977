"""Which commands run shells and their builtins alone: read from the words, and "no" to
anything that may start a program."""

from __future__ import annotations

import pytest

from reprospec.outcome.shellexit import runs_shells_alone


@pytest.mark.parametrize(
    "argv",
    [
        ("/bin/sh", "-c", "sh -c 'exit 139'"),
        ("/bin/sh", "-c", "bash -c 'true; exit 139' && exit 1"),
        ("/bin/sh", "-c", "A=1 sh -e -c 'sh -c \"exit 139\"'"),
        ("sh", "-c", "exit 139"),
    ],
)
def test_shells_and_builtins_alone(argv: tuple[str, ...]) -> None:
    assert runs_shells_alone(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ("/bin/sh", "-c", "sh -c './segv'"),
        ("/bin/sh", "-c", "sh -c 'true; ./segv; exit 139'"),
        ("/bin/sh", "-c", "sh run.sh"),  # a script file: what it runs is not in the words
        ("/bin/sh", "-c", "sh -c 'exit $CODE'"),
        ("/bin/sh", "-c", 'sh -c "$CMD"'),
        ("/bin/sh", "-c", "sh -c 'true\n./segv'"),
        ("/bin/sh", "-c", "sh -c 'exit 139' | cat"),
        ("/bin/sh", "-c", "sh -c '(exit 139)'"),
        ("/bin/sh", "-c", "sh -c 'exit 139' > log"),
        ("/bin/sh", "-c", "docker run img sh -c 'exit 139'"),
        ("python", "-c", "exit(139)"),
    ],
)
def test_anything_that_may_start_a_program_is_not(argv: tuple[str, ...]) -> None:
    assert not runs_shells_alone(argv)
