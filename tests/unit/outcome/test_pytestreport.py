"""pytest's report of a failing test, read as a live run and a pasted ticket both show it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reprospec.outcome.pytestreport import (
    FailedTest,
    crashed_test,
    first_failure,
    ini_quiet,
    is_pytest,
    narrowed_to,
    prints_test_ids,
    pytest_verbose,
    ran_no_test,
    xdist_running,
)
from reprospec.spec.presets import PRESETS

# pytest 8-9, a failed `assert`: the E line and the summary leave out `AssertionError: `,
# the line under the E lines names it; a second test fails after the first.
LIVE = """\
tests/test_io.py .FF

=================================== FAILURES ===================================
_____________________________ test_roundtrip_fp16 ______________________________

    def test_roundtrip_fp16():
>       assert F32 == F16
E       assert torch.float32 == torch.float16

tests/test_io.py:8: AssertionError
_________________________________ TestIO.test_load _________________________________

    def test_load(self):
>       raise OSError("no file")
E       OSError: no file

tests/test_io.py:12: OSError
=========================== short test summary info ============================
FAILED tests/test_io.py::test_roundtrip_fp16 - assert torch.float32 == torch....
FAILED tests/test_io.py::TestIO::test_load - OSError: no file
========================= 2 failed, 1 passed in 0.33s ==========================
"""

# An exception raised deep in a library: several traceback entries, a module-qualified type.
DEEP = """\
______________________________ test_alloc ______________________________

>   x = big()
tests/test_mem.py:3:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
>   raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
E   torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB

lib/alloc.py:40: OutOfMemoryError
FAILED tests/test_mem.py::test_alloc - torch.OutOfMemoryError: CUDA out of memory. Tried t...
"""


def test_a_live_run_names_its_first_failing_test_and_the_type_pytest_left_out() -> None:
    assert first_failure(LIVE) == FailedTest(
        "tests/test_io.py::test_roundtrip_fp16",
        "AssertionError",
        "assert torch.float32 == torch.float16",
    )


def test_the_type_and_message_come_from_the_failing_tests_own_section() -> None:
    assert first_failure(DEEP) == FailedTest(
        "tests/test_mem.py::test_alloc",
        "torch.OutOfMemoryError",
        "CUDA out of memory. Tried to allocate 2.00 GiB",
    )


def test_a_summary_alone_gives_its_type_and_message_and_no_failure_gives_none() -> None:
    line = "FAILED tests/t.py::test_x[a-1] - ValueError: bad value 3\n"
    assert first_failure(line) == FailedTest("tests/t.py::test_x[a-1]", "ValueError", "bad value 3")
    assert first_failure("ERROR tests/t.py::test_y - RuntimeError: fixture\n") == FailedTest(
        "tests/t.py::test_y", "RuntimeError", "fixture", "ERROR"
    )
    assert first_failure("tests/t.py ... [100%]\n3 passed in 0.1s\n") is None
    assert first_failure("FAILED to open the file\n") is None


# pytest 9.0, `raise RuntimeError()`: an exception with no message is its type alone,
# in its section and in the summary.
NO_MESSAGE = """\
=================================== FAILURES ===================================
_______________________________ test_empty_error _______________________________

    def test_empty_error():
>       raise RuntimeError()
E       RuntimeError

test_hang.py:8: RuntimeError
=========================== short test summary info ============================
FAILED test_hang.py::test_empty_error - RuntimeError
============================== 1 failed in 0.73s ===============================
"""


def test_an_exception_with_no_message_has_no_message_not_its_type() -> None:
    expected = FailedTest("test_hang.py::test_empty_error", "RuntimeError", None)
    assert first_failure(NO_MESSAGE) == expected
    # The summary alone (a paste of its last lines) reads the same.
    assert first_failure(NO_MESSAGE.split("short test summary info")[1]) == expected
    assert first_failure("FAILED t.py::test_k - builtins.KeyError\n") == FailedTest(
        "t.py::test_k", "builtins.KeyError", None
    )
    # A failed `assert`'s summary is its message, with no type.
    assert first_failure("FAILED t.py::test_a - assert 1 == 2\n") == FailedTest(
        "t.py::test_a", None, "assert 1 == 2"
    )


COLLECTION_ERROR = """\
collected 0 items / 1 error

==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_fetch.py _____________________
ImportError while importing test module '/home/u/pyproj/tests/test_fetch.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_fetch.py:1: in <module>
    from mylib import fetch
E   ModuleNotFoundError: No module named 'mylib'
=========================== short test summary info ============================
ERROR tests/test_fetch.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.97s ===============================
"""


def test_a_module_that_failed_to_collect_gives_its_import_error() -> None:
    # `pytest tests/test_fetch.py` exiting 2 at collection was `error exit 2`, no exception:
    # the summary's `ERROR tests/test_fetch.py` names no `::test`.
    assert first_failure(COLLECTION_ERROR) == FailedTest(
        "tests/test_fetch.py", "ModuleNotFoundError", "No module named 'mylib'", "ERROR"
    )


SETUP_ERROR = """\
==================================== ERRORS ====================================
_________________________ ERROR at setup of test_uses __________________________
    @pytest.fixture
    def db():
>       raise RuntimeError("no db")
E       RuntimeError: no db

t.py:5: RuntimeError
=========================== short test summary info ============================
ERROR t.py::test_uses - RuntimeError: no db
"""


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # A collection error read as `pytest reports tests/test_fetch.py failed`: no test
        # failed, pytest could not import the module.
        (COLLECTION_ERROR, "ERROR collecting tests/test_fetch.py"),
        (SETUP_ERROR, "ERROR at setup of t.py::test_uses"),
        ("ERROR t.py::test_y - RuntimeError: x\n", "ERROR t.py::test_y"),
        ("FAILED t.py::test_x - ValueError: bad\n", "t.py::test_x failed"),
    ],
)
def test_what_pytest_reported_is_said_in_its_words(text: str, said: str) -> None:
    failed = first_failure(text)
    assert failed is not None
    assert failed.reported() == said


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("pytest", "-x", "tests"), True),
        (("/usr/bin/py.test",), True),
        (("python3.11", "-u", "-m", "pytest", "-x"), True),
        (("/bin/sh", "-c", "CUDA_VISIBLE_DEVICES=0 python -m pytest tests -q"), True),
        (("uv", "run", "pytest"), True),
        # pt35: a launcher's option of a value (`--with X`) left X read as the program.
        (("uv", "run", "--with", "pytest-xdist", "pytest", "-n", "2"), True),
        (("uv", "run", "--with=pytest-xdist", "--isolated", "pytest"), True),
        (("uv", "run", "--", "pytest"), True),
        (("uvx", "--with", "pytest-xdist", "pytest"), True),
        (("uv", "tool", "run", "pytest"), True),
        (("poetry", "run", "pytest", "-x"), True),
        (("hatch", "run", "python", "-m", "pytest"), True),
        # pt40: hatch's `ENV:PROGRAM` and `-e ENV`, and pipx run, were read as no pytest.
        (("hatch", "run", "test:pytest", "-x"), True),
        (("hatch", "run", "test:python", "-m", "pytest"), True),
        (("hatch", "-e", "test", "run", "pytest"), True),
        (("hatch", "run", "test:cov"), False),
        # pt42: hatch's options joined to their values, its own switches before `run`, and
        # its matrix selectors after it were read as no pytest.
        (("hatch", "--env=test", "run", "pytest"), True),
        (("hatch", "-etest", "run", "pytest"), True),
        (("hatch", "--env", "test", "run", "pytest"), True),
        (("hatch", "-v", "--data-dir", "d", "run", "pytest"), True),
        (("hatch", "run", "+py=3.11", "test:pytest"), True),
        (("hatch", "run", "+py=3.11", "-py=3.9", "pytest"), True),
        (("hatch", "--env=test", "shell"), False),
        (("hatch", "run", "+py=3.11", "test:cov"), False),
        (("pipx", "run", "pytest", "-x"), True),
        (("pipx", "run", "--spec", "pytest==8.3.0", "pytest"), True),
        (("pipx", "run", "black", "."), False),
        (("python", "-X", "dev", "-m", "pytest"), True),
        (("python", "-W", "error", "-m", "pytest"), True),
        (("uv", "run", "--with", "pytest", "python", "run.py"), False),
        (("python", "run.py", "-m", "pytest"), False),  # a script, given `-m pytest`
        (("python", "-c", "import pytest"), False),
        (("bash", "-c", "pytest"), False),
        # A wrapper's words first (`timeout 60`) made the command no pytest run.
        (("timeout", "60", "python3", "-m", "pytest", "t.py"), True),
        (("timeout", "-s", "KILL", "60", "nice", "-n", "5", "pytest", "-x"), True),
        (("env", "-u", "HOME", "pytest"), True),
        (("A=1", "env", "-i", "B=2", "stdbuf", "-oL", "uv", "run", "pytest"), True),
        (("timeout", "60", "python3", "t.py"), False),
        (("timeout", "--bogus", "60", "pytest"), False),  # not sure where pytest starts
    ],
)
def test_which_commands_are_pytest(argv: tuple[str, ...], expected: bool) -> None:
    assert is_pytest(argv) is expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("pytest", "-q", "tests/x.py"), ["pytest", "tests/x.py", "-v"]),
        (("pytest", "-qx", "--quiet", "t.py"), ["pytest", "-x", "t.py", "-v"]),
        # Python's own -q (before `-m pytest`) is no pytest's: kept.
        (
            ("python", "-q", "-m", "pytest", "-q", "t.py"),
            ["python", "-q", "-m", "pytest", "t.py", "-v"],
        ),
        (("pytest", "-vv", "t.py"), ["pytest", "-vv", "t.py"]),
        (
            ("uv", "run", "--with", "x", "pytest", "-q", "t.py"),
            ["uv", "run", "--with", "x", "pytest", "t.py", "-v"],
        ),
        (
            ("python", "-X", "dev", "-m", "pytest", "-q", "t.py"),
            ["python", "-X", "dev", "-m", "pytest", "t.py", "-v"],
        ),
        (("pytest", "-q", "--", "-odd.py"), ["pytest", "-v", "--", "-odd.py"]),
        (
            ("hatch", "run", "test:pytest", "-q", "t.py"),
            ["hatch", "run", "test:pytest", "t.py", "-v"],
        ),
        (("pipx", "run", "pytest", "-q", "t.py"), ["pipx", "run", "pytest", "t.py", "-v"]),
        (
            ("hatch", "--env=test", "run", "+py=3.11", "pytest", "-q", "t.py"),
            ["hatch", "--env=test", "run", "+py=3.11", "pytest", "t.py", "-v"],
        ),
        # A shell's script is one word: nothing is added after it.
        (("/bin/sh", "-c", "pytest -q t.py"), ["/bin/sh", "-c", "pytest -q t.py"]),
    ],
)
def test_a_pytest_command_is_made_to_print_each_tests_id(
    argv: tuple[str, ...], expected: list[str]
) -> None:
    assert pytest_verbose(argv) == expected


def test_xdists_report_of_a_crashed_worker_names_the_test_it_ran() -> None:
    text = (
        "[gw1] node down: Not properly terminated\n"
        "[gw1] [100%] FAILED tests/test_x.py::test_crash \n\n"
        "worker 'gw1' crashed while running 'tests/test_x.py::test_crash[a-1]'\n"
    )
    assert crashed_test(text) == "tests/test_x.py::test_crash[a-1]"
    assert crashed_test("FAILED tests/test_x.py::test_crash - boom") is None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("pytest", "tests/test_x.py", "-v"), ["pytest", "T", "-v"]),
        # Options and their values are kept; each test path goes, the first becomes the node.
        (
            (
                "python",
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-k",
                "tests",
                "-x",
                "tests",
                "-n2",
                "tests/test_x.py",
            ),
            ["python", "-m", "pytest", "-p", "no:cacheprovider", "-k", "tests", "-x", "T", "-n2"],
        ),
        (("pytest", "--tb=short", "-n", "2", "tests/"), ["pytest", "--tb=short", "-n", "2", "T"]),
        (("pytest", "--ignore", "tests", "tests/test_x.py"), ["pytest", "--ignore", "tests", "T"]),
        (("pytest", "T"), None),  # the test alone already
        (("pytest", "-v"), None),  # no test path: pytest's testpaths
        (("pytest", "--cov-whatever", "tests", "tests/test_x.py"), None),  # a value or a path?
        (("sh", "-c", "pytest tests"), None),
    ],
)
def test_a_pytest_command_narrowed_to_one_test(
    tmp_path: Path, argv: tuple[str, ...], expected: list[str] | None
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_crash():\n    pass\n")
    node = "tests/test_x.py::test_crash"
    words = tuple(node if word == "T" else word for word in argv)
    want = [node if word == "T" else word for word in expected] if expected else None
    assert narrowed_to(words, node, tmp_path) == want
    # A node pytest named from another rootdir: no file of the workdir.
    assert narrowed_to(words, "sub/tests/test_x.py::test_crash", tmp_path) is None


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("pytest.ini", "[pytest]\naddopts = -ra -q\n", 1),
        ("pytest.ini", "[other]\n", 0),
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-qq --tb=short"\n', 2),
        ("pyproject.toml", '[tool.pytest]\naddopts = ["-rA", "--quiet"]\n', 1),
        ("pyproject.toml", "[tool.black]\nline-length = 100\n", None),  # no pytest table
        ("tox.ini", "[pytest]\naddopts = -xq\n", 1),
        ("setup.cfg", "[tool:pytest]\naddopts = -v\n", 0),
        ("setup.cfg", "[metadata]\nname = x\n", None),  # no [tool:pytest]: the folder above
    ],
)
def test_the_quiet_an_ini_files_addopts_adds(
    tmp_path: Path, name: str, text: str, expected: int | None
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -q -q -q\n")  # the folder above's
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / name).write_text(text)
    assert ini_quiet(folder, {}) == (3 if expected is None else expected)
    assert ini_quiet(folder, {"PYTEST_ADDOPTS": "-q"}) == (4 if expected is None else expected + 1)
    assert pytest_verbose(("pytest", "t.py"), 2) == ["pytest", "t.py", "-v", "-v", "-v"]


@pytest.mark.parametrize(
    ("line", "test"),
    [
        # A crash's -v line goes on with faulthandler's report.
        ("t.py::test_x[a b] Fatal Python error: Segmentation fault", "t.py::test_x[a b]"),
        ("t.py::test_x[a b] PASSED                            [ 33%]", "t.py::test_x[a b]"),
        ("t.py::TestA::test_y[1-foo bar] ", "t.py::TestA::test_y[1-foo bar]"),
        # A `]` inside the parameters' id: the one before the status word ends it.
        ("t.py::test_x[a] b] FAILED   [ 50%]", "t.py::test_x[a] b]"),
        # ... and on a crash's line (`pytest -v 2>&1`): it was cut at `[a]` (lo37).
        ("t.py::test_x[a] b] Fatal Python error: Segmentation fault", "t.py::test_x[a] b]"),
        ("t.py::test_plain PASSED [ 10%]", "t.py::test_plain"),
        ("t.py::test_plain", "t.py::test_plain"),
    ],
)
def test_the_pytest_preset_reads_a_parametrized_id_with_spaces_whole(line: str, test: str) -> None:
    """pt35: `\\S+` cut `test_x[a b]` to `test_x[a`, the phase and the node id capture
    narrowed the command to (pytest: `not found`)."""
    marker = PRESETS["pytest"].markers[0]
    found = re.search(marker.pattern, line)
    assert found is not None
    assert found["phase"] == test


def test_a_failing_parametrized_id_with_spaces_is_read_whole_from_the_report() -> None:
    text = "FAILED t.py::test_y[1-foo bar] - AssertionError: foo bar\n"
    failed = first_failure(text)
    assert failed == FailedTest("t.py::test_y[1-foo bar]", "AssertionError", "foo bar")
    # xdist writes the test as repr does: in double quotes where it holds a `'`.
    crashed = "worker 'gw0' crashed while running \"t.py::test_x[it's a b]\"\n"
    assert crashed_test(crashed) == "t.py::test_x[it's a b]"


def test_the_tests_xdists_workers_had_started_and_not_ended() -> None:
    """pt35: -v's last test line under xdist is any worker's: test_c, started and passed
    after test_hang began, was a hang's phase."""
    header = "created: 2/2 workers\n2 workers [4 items]\n\nscheduling tests via LoadScheduling\n\n"
    text = header + (
        "t.py::test_a \nt.py::test_b \n[gw0] [ 25%] PASSED t.py::test_a \n"
        "t.py::test_hang[x y] \n[gw1] [ 50%] PASSED t.py::test_b \nt.py::test_c \n"
        "[gw1] [ 75%] PASSED t.py::test_c \n"
    )
    assert xdist_running(text) == ("t.py::test_hang[x y]",)
    # Two hung, none ended: no `[gw0]` line at all.
    assert xdist_running(header + "t.py::test_two \nt.py::test_one ") == (
        "t.py::test_two",
        "t.py::test_one",
    )
    assert xdist_running("t.py::test_a PASSED [100%]\n") is None  # no xdist


# pytest 9's own words for a run of no test: a node id or a path it did not find, an option
# it does not know (exit 4, on stderr), nothing collected or selected (exit 5, on stdout).
@pytest.mark.parametrize(
    ("code", "stderr", "stdout", "said"),
    [
        (
            4,
            "ERROR: not found: /w/t.py::test_typo\n(no match in any of [<Module t.py>])\n",
            "",
            "pytest ran no test: not found: /w/t.py::test_typo (exit 4)",
        ),
        (
            4,
            "ERROR: file or directory not found: nosuch.py\n\n",
            "",
            "pytest ran no test: file or directory not found: nosuch.py (exit 4)",
        ),
        (
            4,
            "ERROR: usage: python -m pytest [options] [file_or_dir] [file_or_dir] [...]\n"
            "python -m pytest: error: unrecognized arguments: --badopt\n"
            "  inifile: None\n  rootdir: /w\n",
            "",
            "pytest ran no test: unrecognized arguments: --badopt (exit 4)",
        ),
        (
            5,
            "",
            "collecting ... collected 10 items / 10 deselected / 0 selected\n\n"
            "============================ 10 deselected in 0.31s ============================\n",
            "pytest ran no test, none collected or selected: "
            "collected 10 items / 10 deselected / 0 selected (exit 5)",
        ),
        (
            5,
            "",
            "\nno tests ran in 0.01s\n",
            "pytest ran no test, none collected or selected (exit 5)",
        ),
        # Each test it selected skipped (exit 0): `-v`'s reason, or `-rs`'s under -q.
        (
            0,
            "",
            "t.py::test_gpu SKIPPED (needs a GPU (cuda))                        [100%]\n\n"
            "============================== 1 skipped in 0.01s ==============================\n",
            "pytest ran no test: 1 skipped: needs a GPU (cuda) (exit 0)",
        ),
        (
            0,
            "",
            "s\n=========================== short test summary info ============================\n"
            "SKIPPED [1] t.py:3: no GPU\n1 skipped, 9 deselected, 1 warning in 0.02s\n",
            "pytest ran no test: 1 skipped, 9 deselected, 1 warning: no GPU (exit 0)",
        ),
        # A test that ran beside the skipped ones (an xfail ran too): the run's own pass.
        (
            0,
            "",
            "t.py::test_a PASSED\nt.py::test_b SKIPPED (x)\n=== 1 passed, 1 skipped in 0.01s ===\n",
            None,
        ),
        (0, "", "=== 1 skipped, 1 xfailed in 0.01s ===\n", None),
        (0, "", "=== 2 passed in 0.01s ===\n", None),
        # The program's own exit 4s: a conftest that fails to import, a plugin.
        (
            4,
            "ImportError while loading conftest '/w/conftest.py'.\nE   ModuleNotFoundError: x\n",
            "",
            None,
        ),
        (4, "ERROR: Error importing plugin \"nosuch\": No module named 'nosuch'\n", "", None),
        (1, "ERROR: not found: /w/t.py::test_typo\n", "", None),
    ],
)
def test_a_pytest_run_of_no_test_says_why(
    code: int, stderr: str, stdout: str, said: str | None
) -> None:
    assert ran_no_test(code, stderr, stdout) == said


@pytest.mark.parametrize(
    ("command", "prints"),
    [
        ("python -m pytest test_fx.py", False),
        ("pytest -q test_fx.py", False),
        ("py.test -rA test_fx.py", False),  # the summary names tests only once all ended
        ("pytest -v test_fx.py", True),
        ("pytest -xsv test_fx.py", True),
        ("python -m pytest --verbose test_fx.py", True),
        ("pytest --verbosity=2 test_fx.py", True),
        ("pytest --verbosity 1 test_fx.py", True),
        ("pytest -v -q test_fx.py", False),  # -q cancels it
        ("pytest -vv -q test_fx.py", True),
        ("pytest -k v test_fx.py", False),  # -k's value, no switch
        ("pytest -- -v", False),  # a test path
        ("python train.py -v", None),
    ],
)
def test_a_pytest_command_prints_test_ids_with_a_verbosity_above_the_default(
    command: str, prints: bool | None
) -> None:
    assert prints_test_ids(command.split()) is prints


# pytest 9's report of a test whose asyncio.TaskGroup failed: the group's traceback as
# CPython prints it, no `E   ` line, and a summary cut at the terminal's width.
_TASK_GROUP_REPORT = """\
F                                                                        [100%]
=================================== FAILURES ===================================
___________________________________ test_tg ____________________________________
  + Exception Group Traceback (most recent call last):
  |   File "/w/test_tg.py", line 8, in test_tg
  |     asyncio.run(main())
  |   File "/usr/lib/python3.11/asyncio/taskgroups.py", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/w/test_tg.py", line 3, in bad
    |     raise e
    | ValueError: a
    +---------------- 2 ----------------
    | Traceback (most recent call last):
    |   File "/w/test_tg.py", line 3, in bad
    |     raise e
    | KeyError: 'b'
    +------------------------------------
=========================== short test summary info ============================
FAILED test_tg.py::test_tg - ExceptionGroup: unhandled errors in a TaskGrou...
1 failed in 0.32s
"""


def test_a_tests_exception_group_is_read_with_its_members() -> None:
    failed = first_failure(_TASK_GROUP_REPORT)
    assert failed is not None
    assert (failed.exception, failed.message) == (
        "ExceptionGroup",
        "unhandled errors in a TaskGroup (2 sub-exceptions)",
    )
    assert [(m.type, m.message) for m in failed.members] == [
        ("ValueError", "a"),
        ("KeyError", "'b'"),
    ]
    # pytest shortens a group of one to its member in the summary: the section still says.
    single = _TASK_GROUP_REPORT.replace(
        "ExceptionGroup: unhandled errors in a TaskGrou...",
        "ValueError('a') [single exception in Exceptio...",
    )
    failed = first_failure(single)
    assert failed is not None
    assert failed.exception == "ExceptionGroup"


# pytest 9's report of a test that logged a TaskGroup's failure (`logging.exception`) and
# then failed its own assert: the group is in the section's `Captured log call` part.
_LOGGED_GROUP_REPORT = """\
F                                                                        [100%]
=================================== FAILURES ===================================
___________________________ test_logged_then_assert ____________________________

    def test_logged_then_assert():
        try:
            asyncio.run(main())
        except ExceptionGroup:
            logging.exception("request failed")
>       assert 1 == 2
E       assert 1 == 2

test_cases.py:15: AssertionError
------------------------------ Captured log call -------------------------------
ERROR    root:test_cases.py:14 request failed
  + Exception Group Traceback (most recent call last):
  |   File "/w/test_cases.py", line 12, in test_logged_then_assert
  |     asyncio.run(main())
  |   File "/usr/lib/python3.11/asyncio/taskgroups.py", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/w/test_cases.py", line 4, in bad
    |     raise ValueError("boom")
    | ValueError: boom
    +------------------------------------
=========================== short test summary info ============================
FAILED test_cases.py::test_logged_then_assert - assert 1 == 2
1 failed in 0.25s
"""


def test_a_group_the_test_logged_is_not_its_exception() -> None:
    # It was read as `ExceptionGroup[ValueError]`, and `expect.exception: AssertionError`
    # missed the test's own failure.
    failed = first_failure(_LOGGED_GROUP_REPORT)
    assert failed is not None
    assert (failed.exception, failed.message, failed.members) == (
        "AssertionError",
        "assert 1 == 2",
        (),
    )


# pytest 9.2's `--tb=short` report of a test whose assert failed in `except ExceptionGroup:`
# (3.11.7): a bare `E   assert 1 == 2` and no `file:line: AssertionError` line.
_SHORT_ASSERT_IN_HANDLER = """\
test_cases.py F                                                          [100%]

=================================== FAILURES ===================================
____________________________ test_assert_in_handler ____________________________
  + Exception Group Traceback (most recent call last):
  |   File "/w/test_cases.py", line 32, in test_assert_in_handler
  |     asyncio.run(main())
  |   File "/usr/lib/python3.11/asyncio/taskgroups.py", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/w/test_cases.py", line 4, in bad
    |     raise ValueError("boom")
    | ValueError: boom
    +------------------------------------

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/w/test_cases.py", line 34, in test_assert_in_handler
    assert 1 == 2
AssertionError: assert 1 == 2

During handling of the above exception, another exception occurred:
test_cases.py:34: in test_assert_in_handler
    assert 1 == 2
E   assert 1 == 2
=========================== short test summary info ============================
FAILED test_cases.py::test_assert_in_handler - assert 1 == 2
============================== 1 failed in 0.29s ===============================
"""


def test_a_short_reports_assert_in_a_groups_handler_keeps_its_exception() -> None:
    # The `E` block names no type: read as no exception and no chain, so neither
    # `expect.exception: AssertionError` nor the group's `ValueError` met it.
    failed = first_failure(_SHORT_ASSERT_IN_HANDLER)
    assert failed is not None
    assert (failed.exception, failed.message) == ("AssertionError", "assert 1 == 2")
    assert [(e.type, [m.type for m in e.members]) for e in failed.chain] == [
        ("ExceptionGroup", ["ValueError"]),
        ("AssertionError", []),
    ]


# `pytest -q --tb=native`: a test's chain as CPython prints it, no `E` line (pytest 9's own
# frames between left out).
NATIVE = """\
=================================== FAILURES ===================================
__________________________________ test_chain __________________________________
Traceback (most recent call last):
  File "/w/test_chain.py", line 6, in test_chain
    load()
  File "/w/test_chain.py", line 2, in load
    raise KeyError("missing")
KeyError: 'missing'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/.venv/lib/python3.11/site-packages/_pytest/runner.py", line 361, in from_call
    result: TResult | None = func()
                             ^^^^^^
  File "/w/test_chain.py", line 8, in test_chain
    raise RuntimeError("wrapped") from e
RuntimeError: wrapped
=========================== short test summary info ============================
FAILED test_chain.py::test_chain - RuntimeError: wrapped
1 failed in 0.19s
"""


def test_a_native_traceback_gives_the_tests_chain() -> None:
    failed = first_failure(NATIVE)
    assert failed is not None
    assert (failed.exception, failed.message) == ("RuntimeError", "wrapped")
    assert [(e.type, e.message, e.link) for e in failed.chain] == [
        ("KeyError", "'missing'", "cause"),
        ("RuntimeError", "wrapped", None),
    ]


# pytest 9's `--tb=short` report of a test whose assert failed while it handled an OSError
# raised from a KeyError: its own format, pytest's `assert ...` with no type, a part of a
# cause never raised (a `Timeout` whose message runs over two lines) and no native header.
SHORT_CHAIN = """\
=================================== FAILURES ===================================
__________________________________ test_three __________________________________
test_c.Timeout: slow
after 3 tries

The above exception was the direct cause of the following exception:
test_c.py:22: in test_three
    raise OSError("disk\\nfull") from Timeout("slow\\nafter 3 tries")
E   OSError: disk
E   full

During handling of the above exception, another exception occurred:
test_c.py:26: in test_three
    assert 1 == 2
E   assert 1 == 2
=========================== short test summary info ============================
FAILED test_c.py::test_three - assert 1 == 2
1 failed in 0.15s
"""


def test_a_short_reports_chain_is_read_from_its_parts() -> None:
    # It read no chain, and no exception: the `E` block names no type.
    failed = first_failure(SHORT_CHAIN)
    assert failed is not None
    assert (failed.exception, failed.message) == ("AssertionError", "assert 1 == 2")
    assert [(e.type, e.message, e.link) for e in failed.chain] == [
        ("test_c.Timeout", "slow\nafter 3 tries", "cause"),
        ("OSError", "disk\nfull", "context"),
        ("AssertionError", "assert 1 == 2", None),
    ]
    # A part with frames and no `E` line says no type: no chain is made up.
    broken = SHORT_CHAIN.replace("E   OSError: disk\nE   full\n", "")
    failed = first_failure(broken)
    assert failed is not None
    assert failed.chain == ()


# pytest-xdist's `-n 2 --tb=long` report of `raise RuntimeError("top") from KeyError("x")`:
# the worker's line heads the section, right above the cause never raised.
XDIST_LONG = """\
=================================== FAILURES ===================================
__________________________________ test_cause __________________________________
[gw1] linux -- Python 3.11.7 /work/.venv/bin/python
KeyError: 'x'

The above exception was the direct cause of the following exception:

    def test_cause():
>       raise RuntimeError("top") from KeyError("x")
E       RuntimeError: top

test_c.py:19: RuntimeError
=========================== short test summary info ============================
FAILED test_c.py::test_cause - RuntimeError: top
1 failed in 1.65s
"""


def test_an_xdist_workers_line_is_no_part_of_the_chain() -> None:
    # Read as a line of the cause's part, which then said no type: no chain was read.
    for report in (
        XDIST_LONG,
        XDIST_LONG.replace("[gw1] linux -- Python 3.11.7 /work/.venv/bin/python\n", ""),
    ):
        failed = first_failure(report)
        assert failed is not None
        assert [(e.type, e.message, e.link) for e in failed.chain] == [
            ("KeyError", "'x'", "cause"),
            ("RuntimeError", "top", None),
        ]
    # Only a section's first line is the worker's: one further down is read as it stands.
    moved = XDIST_LONG.replace("[gw1] linux -- Python 3.11.7 /work/.venv/bin/python\n", "")
    moved = moved.replace("KeyError: 'x'\n", "KeyError: 'x'\n[gw1] linux -- Python 3.11.7\n")
    failed = first_failure(moved)
    assert failed is not None
    assert failed.chain[0].message == "'x'\n[gw1] linux -- Python 3.11.7"
