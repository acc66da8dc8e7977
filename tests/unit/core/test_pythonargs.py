"""The one reader of a Python interpreter's command line (core/pythonargs.py), and the
readers that now ask it: each had its own, and each missed part of the grammar."""

from __future__ import annotations

import re

import pytest

from reprospec.core.pythonargs import LIBRARY_CODE, PythonProgram, is_python, python_program


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["train.py", "--lr", "1"], PythonProgram("script", "train.py", 1)),
        (["-u", "-X", "dev", "train.py"], PythonProgram("script", "train.py", 4)),
        (["-Wignore", "train.py"], PythonProgram("script", "train.py", 2)),
        (["-W", "ignore", "-c", "print(1)", "x"], PythonProgram("code", "print(1)", 4)),
        (["-uc", "print(1)"], PythonProgram("code", "print(1)", 2)),
        (["-cprint(1)"], PythonProgram("code", "print(1)", 1)),
        (["-m", "pytest", "-x"], PythonProgram("module", "pytest", 2)),
        (["-mpytest", "-x"], PythonProgram("module", "pytest", 1)),
        (["-Im", "pkg"], PythonProgram("module", "pkg", 2)),
        (["--check-hash-based-pycs", "always", "t.py"], PythonProgram("script", "t.py", 3)),
        (["--", "-odd.py", "a"], PythonProgram("script", "-odd.py", 2)),
        (["-", "a"], PythonProgram("stdin", None, 1)),
        (["-u"], PythonProgram("stdin", None, 1)),
        ([], PythonProgram("stdin", None, 0)),
        (["--version"], PythonProgram("nothing", None, 1)),
        (["-c"], PythonProgram("code", None, 1)),
    ],
)
def test_what_an_interpreters_words_run(args: list[str], expected: PythonProgram) -> None:
    assert python_program(args) == expected


def test_an_interpreter_is_named_by_its_file_and_version() -> None:
    for name in ("python", "python3", "python3.12", "/usr/bin/python3.9", "../.venv/bin/python"):
        assert is_python(name), name
    # PyPy's, a free-threaded build's and Windows' (core/notstarted.py's rule took them).
    for name in (
        "pypy3",
        "/opt/pypy/bin/pypy3.10",
        "python3.13t",
        "python.exe",
        r"C:\Py\python.exe",
    ):
        assert is_python(name), name
    for name in ("python3-config", "pythonw", "ipython", "cpython", "pytest"):
        assert not is_python(name), name


def test_the_readers_that_ask_it_read_the_joined_forms() -> None:
    # Each missed one: validate took `python3.12 -uc x`'s code for a script to look up,
    # capture's footprint read `-mpkg.cli` as no module.
    from reprospec.capture.footprint import _command_code, _program_words
    from reprospec.outcome.pytestreport import pytest_args_start
    from reprospec.plan.missing import _script_of

    assert _script_of(["python", "-Wignore", "nothere.py"]) == "nothere.py"
    assert _script_of(["python3.12", "-uc", "x"]) is None
    assert _program_words(["python", "-mpkg.cli", "--flag"]) == ["--module", "pkg.cli"]
    assert _command_code(["timeout", "5", "python3", "-uc", "import x"]) == "import x"
    assert pytest_args_start(["python3.12", "-X", "dev", "-m", "pytest", "-x"]) == 5


def test_library_code_keeps_its_meaning_inside_a_longer_pattern() -> None:
    # A bare top-level alternation: `".*" + LIBRARY_CODE + ".*"` split into `.*/lib/...`
    # or `/site-packages/.*`, and a prefix bound only the interpreter's library.
    around = re.compile(".*" + LIBRARY_CODE + ".*")
    assert around.fullmatch("/x/site-packages/y")
    assert around.fullmatch("/usr/lib/python3.13t/threading.py")
    assert not re.search("^/opt" + LIBRARY_CODE, "/home/u/site-packages/y")
    assert re.search("^/opt" + LIBRARY_CODE, "/opt/dist-packages/y")
