"""The one reader of a Python interpreter's command line (core/pythonargs.py), and the
readers that now ask it: each had its own, and each missed part of the grammar."""

from __future__ import annotations

import re

import pytest

from reprospec.core.pythonargs import (
    LIBRARY_CODE,
    PythonProgram,
    is_interpreter_file,
    is_python,
    python_program,
)


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
        "/usr/lib/pypy3.10/bin/pypy3.10-c",  # what `pypy3` links to, /proc/PID/exe's name
        "pypy3-c",
        "python3.13t",
        "python.exe",
        r"C:\Py\python.exe",
    ):
        assert is_python(name), name
    for name in ("python3-config", "pythonw", "ipython", "cpython", "pytest", "python3-c"):
        assert not is_python(name), name
    # A build's ABI flags: debug (`d`), free-threaded debug (`td`), Python 3.7's `m`.
    for name in ("python3.11d", "/usr/bin/python3.13td", "python3.7m", "python3.7dm"):
        assert is_python(name), name
    # Debian's links to its debug build (`python3.11-dbg -> python3.11d`), not its config's.
    for name in ("python3.11-dbg", "/usr/bin/python3-dbg"):
        assert is_python(name), name
    for name in ("python3.11-dbg-config", "python3-dbg-config", "pypy3-dbg"):
        assert not is_python(name), name


def test_an_interpreters_file_is_its_executable_or_its_library() -> None:
    # The stacks' own rules beside is_python: `startswith("python")` (a hang's py-spy, a
    # core's gdb helper), and render's, which read PyPy's libpypy3.10-c as user code.
    for name in (
        "/usr/bin/python3.11",
        "python3.11d",
        "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
        "libpython3.13t.so.1.0",
        "libpython3.11d.so",
        "/opt/pypy/bin/libpypy3.10-c.so",
        "libpypy3-c.so",
        "/usr/lib/pypy3.10/bin/pypy3.10-c",  # render read frames in PyPy's binary as user code
        "libpython3.12.dylib",
        "libpython3.11",  # as native/symbols.short_library shortens one
    ):
        assert is_interpreter_file(name), name
    for name in ("python3-config", "libfoo.so", "libpythonw.so", "/x/libc.so.6", "pytest"):
        assert not is_interpreter_file(name), name
    # A library's name is an interpreter's name by is_python's rule: `-c` is PyPy's alone.
    assert not is_interpreter_file("libpython3.11-c.so")


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


def test_the_stacks_readers_ask_it_of_a_process_and_a_cores_files() -> None:
    # Each had its own `startswith("python")`: a hang's py-spy was asked about
    # python3-config, and a core's PyPy library never had its helper looked for.
    from pathlib import Path

    from reprospec.native.coreinfo import CoreInfo
    from reprospec.native.gdb import core_gdb_argv
    from reprospec.process.stacks import _looks_like_python
    from reprospec.process.tree import ProcInfo

    def looks(command: str) -> bool:  # no such pid: its command line's first word is read
        return _looks_like_python(ProcInfo(-1, 1, 1, "S", command))

    for command in ("/usr/bin/python3.13t train.py", "python3.11d -X dev t.py", "pypy3.10 t"):
        assert looks(command), command
    for command in ("/usr/bin/python3-config --libs", "sleep 100"):
        assert not looks(command), command
    files = (
        "/opt/py/lib/libpython3.13t.so.1.0",
        "/opt/pypy/bin/libpypy3.10-c.so",
        "/opt/tools/python-wrapper.so",
    )
    info = CoreInfo(Path("/c/core"), 7, "SIGSEGV", None, "x", tuple((0, 1, f) for f in files))
    argv = core_gdb_argv(info, "/c/core", exists=lambda path: path.endswith("-gdb.py"))
    loaded = [argv[at + 1] for at, word in enumerate(argv) if word == "-iex"]
    assert [f"add-auto-load-safe-path {f}-gdb.py" for f in files[:2]] == loaded[-2:]
    assert not any("python-wrapper" in line for line in loaded)
