"""Python's and the shell's words for a program they could not start (core/notstarted.py)."""

from __future__ import annotations

import pytest

from reprospec.core.notstarted import not_started

PY = "/venv/bin/python"


@pytest.mark.parametrize(
    ("stderr", "module", "missing"),
    [
        (f"{PY}: No module named pytest\n", "pytest", "pytest"),
        (
            f"{PY}: Error while finding module specification for 'absentpkg.sub' "
            "(ModuleNotFoundError: No module named 'absentpkg')\n",
            "absentpkg.sub",
            "absentpkg",
        ),
    ],
)
def test_python_dash_m_of_a_module_that_is_not_there_never_started(
    stderr: str, module: str, missing: str
) -> None:
    # `python -m pytest` in a venv without pytest ran no test: it was judged `error exit 1`,
    # and met an `expect: {outcome: error}` of a test that never ran.
    assert not_started(1, stderr) == (
        f"{PY} -m {module}: no module named {missing} in that interpreter (exit 1); "
        "install it there, or add it to environment.packages"
    )


def test_python_dash_m_of_a_module_no_declared_package_provides_says_so() -> None:
    # A package the cell declares may be the module's under another name (`tlz` of toolz) in
    # a version that has it: "add it to environment.packages" of a package that is there
    # misled. It names them, and how to judge a version that lacks the module.
    said = not_started(1, f"{PY}: No module named tlz\n", declared=("toolz", "numpy"))
    assert said == (
        f"{PY} -m tlz: no module named tlz in that interpreter (exit 1); install it there, or "
        "add the package that provides it to environment.packages (none of those it names, "
        "numpy, toolz, provides it there: where a version of theirs lacks tlz, "
        "`python -c 'import tlz'` judges that version)"
    )


@pytest.mark.parametrize(
    ("declared", "judged"),
    [
        ((), ""),
        (
            ("toolz",),
            " (none of those it names, toolz, provides it there: where a version of theirs "
            "lacks tlz, `python -c 'import tlz'` judges that version)",
        ),
    ],
)
def test_under_reprospecs_own_interpreter_it_leads_with_python(
    declared: tuple[str, ...], judged: str
) -> None:
    # There `python -c 'import tlz'` is the --python rule's infra-error too (no metadata ties
    # tlz to toolz), whose reason says "pass --python PATH"; `-m` of it led with "install it
    # there", into reprospec's own interpreter, with --python only inside the judge's
    # parenthesis (review). It then offered adding the package to environment.packages,
    # which the local runner (the only one that sets `unchosen`) checks and never installs,
    # and no longer said why --python: the runner's own words say it (review).
    unchosen = f"`python` in the command ran reprospec's own interpreter {PY}"
    said = not_started(1, f"{PY}: No module named tlz\n", declared=declared, unchosen=unchosen)
    assert said == (
        f"{PY} -m tlz: no module named tlz in that interpreter (exit 1); {unchosen}: pass "
        "--python PATH (the interpreter that has it), or --runner venv with its package in "
        f"environment.packages{judged}"
    )


@pytest.mark.parametrize(
    "stderr",
    [
        # Its package is there, the submodule is not: what the installed version lacks.
        f"{PY}: No module named json.absent\n",
        f"{PY}: Error while finding module specification for 'json.tool.x' "
        "(ModuleNotFoundError: __path__ attribute not found on 'json.tool')\n",
        # A traceback's own last line: an import inside a program that ran.
        "ModuleNotFoundError: No module named 'absentpkg'\n",
    ],
)
def test_a_module_the_program_or_its_version_lacks_is_no_setup_failure(stderr: str) -> None:
    assert not_started(1, stderr) is None


@pytest.mark.parametrize(
    "stderr",
    [
        # A child `python -m` the program ran, then the program's own failure.
        "/usr/bin/python3: No module named nosuch\nTraceback (most recent call last):\n"
        '  File "t.py", line 3, in <module>\nRuntimeError: boom\n',
        # Said by no interpreter: a program's own words.
        "ImportError: No module named yaml\n",
        "warning: No module named yaml\n",
    ],
)
def test_only_an_interpreters_last_line_is_python_dash_m_that_never_started(
    stderr: str,
) -> None:
    # Each was an infra-error ("ImportError -m yaml: ..."), a real failure never judged.
    assert not_started(1, stderr) is None


@pytest.mark.parametrize("exe", ["/opt/pypy/bin/pypy3", "/usr/bin/python3.13t", "python.exe"])
def test_python_dash_m_is_read_of_every_interpreter_is_python_names(exe: str) -> None:
    # Its own `\S*python[\d.]*` beside pythonargs.is_python missed pypy3 and python3.13t.
    said = not_started(1, f"{exe}: No module named pytest\n")
    assert (said or "").startswith(f"{exe} -m pytest: no module named pytest"), said
    # ...and took names no interpreter has (`ipython`), which is_python does not.
    assert not_started(1, "/usr/bin/ipython: No module named pytest\n") is None


def test_a_module_of_a_declared_package_is_normalized_as_pep_503_says() -> None:
    stderr = f"{PY}: No module named Typing_Extensions\n"
    assert not_started(1, stderr, declared={"typing-extensions"}) is None


def test_the_words_count_only_of_a_command_that_runs_that_module() -> None:
    stderr = f"{PY}: No module named black_tool\n"
    # The program ran `python -m black_tool` itself, then exited 1: its failure.
    assert not_started(1, stderr, argv=("python", "t.py")) is None
    assert not_started(1, stderr, argv=("/bin/sh", "-c", "python3 t.py && echo ok")) is None
    assert not_started(1, stderr, argv=("python", "-m", "other")) is None
    said = f"{PY} -m black_tool: no module named black_tool"
    for argv in (
        ("python", "-m", "black_tool", "x"),
        ("env", "python3.12", "-u", "-mblack_tool"),
        ("/bin/sh", "-c", "cd w && python -X dev -m black_tool --check ."),
    ):
        assert (not_started(1, stderr, argv=argv) or "").startswith(said), argv


def test_a_module_of_a_declared_package_is_no_setup_failure() -> None:
    # `python -m attrs.x` under attrs 21.2 (no `attrs` module yet): the version's failure.
    stderr = (
        f"{PY}: Error while finding module specification for 'attrs.x' "
        "(ModuleNotFoundError: No module named 'attrs')\n"
    )
    assert not_started(1, stderr, declared=("attrs",)) is None
    assert not_started(1, stderr, declared=("six",)) is not None
    typing = f"{PY}: No module named typing_extensions\n"
    assert not_started(1, typing, declared=("typing-extensions",)) is None


def test_the_words_count_only_with_their_exit_status() -> None:
    assert not_started(2, f"{PY}: No module named pytest\n") is None
