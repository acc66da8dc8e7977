"""A pasted `pip freeze` lists pip, setuptools and wheel beside the program's packages: the
skeleton pins the program's, not the tools each runner builds its environment with."""

from __future__ import annotations

from reprospec.capture.envblock import parse_machine

FREEZE = """\
$ pip freeze
numpy==1.26.4
pandas==2.1.0
pip==24.0
setuptools==69.5.1
wheel==0.43.0
"""


def test_a_freeze_s_packaging_tools_are_not_pinned() -> None:
    # `environment.packages` held pip==24.0, setuptools==69.5.1 and wheel==0.43.0.
    machine = parse_machine("ValueError: numpy.dtype size changed\n" + FREEZE)
    assert machine.requirements == ("numpy==1.26.4", "pandas==2.1.0")
    assert machine.package("pip") is not None  # still read: what the log said


def test_a_tool_the_failure_names_is_pinned() -> None:
    """`No module named 'pkg_resources'` is setuptools' version's question: pinned."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "setup.py", line 1, in <module>\n'
        "    import pkg_resources\n"
        "ModuleNotFoundError: No module named 'pkg_resources'\n" + FREEZE
    )
    assert parse_machine(log).requirements == (
        "numpy==1.26.4",
        "pandas==2.1.0",
        "setuptools==69.5.1",
    )
    framed = '  File "/venv/lib/python3.11/site-packages/pip/_internal/main.py", line 9\n'
    assert "pip==24.0" in parse_machine(framed + FREEZE).requirements


def test_prose_naming_a_tool_does_not_pin_it() -> None:
    """Only Python's import statement names a tool's module: "from pip" in a sentence pinned
    pip==24.0 again, "built from wheel" wheel==0.43.0."""
    for prose in (
        "I installed everything from pip\n",
        "numpy built from wheel\n",
        "we import pip's resolver output below\n",
        "import setuptools-scm failed to build\n",
    ):
        machine = parse_machine(prose + FREEZE)
        assert machine.tools_in_failure == (), prose
        assert machine.requirements == ("numpy==1.26.4", "pandas==2.1.0"), prose
    for source in (
        "    from pip._internal.cli.main import main\n",
        ">       import wheel.bdist_wheel as bw\n",
        "    import setuptools, os\n",
    ):
        assert parse_machine(source + FREEZE).tools_in_failure != (), source
