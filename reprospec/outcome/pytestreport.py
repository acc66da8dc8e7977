"""pytest's own report of a failing test: which test, its exception and message.

pytest catches what a test raises and prints it in its report, so a pytest run that
fails has no uncaught traceback: the classifier's reader of tracebacks finds nothing,
and the attempt was `error exit 1` and no more. A ticket's pasted pytest output names
the test and the exception (`FAILED tests/test_io.py::test_x - AssertionError: ...`),
so a spec made from it expects them, and a live run must report them the same way to
meet it. For a command that is pytest (`is_pytest`), `first_failure` reads the report:

    ____________________ test_roundtrip_fp16 ____________________   the test's section
    E       assert torch.float32 == torch.float16                    the exception (E lines)
    tests/test_io.py:8: AssertionError                               its type, where it was raised
    FAILED tests/test_io.py::test_roundtrip_fp16 - assert torch....  the short summary

The test is the first of the short summary (the first to fail, the one `-x` stops at);
its type is its section's last `path:line: Type` line, else the `Type:` its last `E`
lines or the summary start with; its message is the first of those `E` lines without
the type (pytest shortens a failed `assert` to `assert ...`, with no `AssertionError:`),
else the summary's. The ticket reader uses the same reading, so both name one test.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from functools import lru_cache

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy

# `FAILED tests/test_io.py::test_x - AssertionError: message`; `ERROR ...` for a fixture's,
# and `ERROR tests/test_io.py` for a module that failed to collect (an import it makes).
_SUMMARY = Lazy(
    r"^(?P<kind>FAILED|ERROR) (?P<test>\S+\.py(?:::\S+?)?)(?: - (?P<rest>.*))?\s*$",
    re.MULTILINE,
)
_TEST_ID = Lazy(r"^[^\s:]+\.py::\S")
_SECTION_TITLE = Lazy(r"^_{3,} (?P<title>.+?) _{3,}\s*$")
_RULE = Lazy(r"^={3,}")
_RAISED_AT = Lazy(r"^\S+:\d+: (?P<type>[A-Za-z_][\w.]*)\s*$")
_E_LINE = Lazy(r"^E(?: +|$)")
# `ValueError: message`, `torch.OutOfMemoryError: ...`: a class name (capitalised) and a colon.
_TYPED = Lazy(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*): (?P<message>.*)$")
_ERROR_TITLE = Lazy(r"^ERROR at (?:setup|teardown) of ")
_PYTHON = Lazy(r"^python(?:\d+(?:\.\d+)*)?$")
# Runners that start the program named after them.
_WRAPPERS = ("uv", "poetry", "pdm", "pipenv", "hatch", "rye")


@frozen
class FailedTest:
    """The first failing test of a pytest report: its node id, exception type and message."""

    test: str
    exception: str | None
    message: str | None


def is_pytest(argv: Sequence[str]) -> bool:
    """Whether the command runs pytest: `pytest ...`, `python -m pytest ...`, `uv run pytest`
    (after `VAR=value` words; a string command read as the shell would split it)."""
    return _is_pytest(tuple(argv))


@lru_cache(maxsize=64)
def _is_pytest(argv: tuple[str, ...]) -> bool:
    words = list(argv)
    if words[:2] == ["/bin/sh", "-c"] and len(words) == 3:
        try:
            words = shlex.split(words[2], comments=True)
        except ValueError:
            return False
    while words and ("=" in words[0] and words[0].partition("=")[0].isidentifier()):
        words = words[1:]
    if words[:1] == ["env"]:
        words = [w for w in words[1:] if not ("=" in w and w.partition("=")[0].isidentifier())]
    if len(words) >= 2 and words[0] in _WRAPPERS and words[1] == "run":
        words = [w for w in words[2:] if not w.startswith("-")]
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program in ("pytest", "py.test"):
        return True
    if not _PYTHON.match(program):
        return False
    for index, word in enumerate(words[1:], start=1):
        if word == "-m":
            return words[index + 1 : index + 2] == ["pytest"]
        if word == "-mpytest":
            return True
        if not word.startswith("-"):
            return False  # a script
    return False


def is_test_id(phase: str) -> bool:
    """Whether a phase is a pytest node id (`tests/test_io.py::test_x`, the pytest preset's)."""
    return _TEST_ID.match(phase) is not None


def first_failure(text: str) -> FailedTest | None:
    """The first failing test of pytest's report in `text`, or None when it names none."""
    if "FAILED " not in text and "ERROR " not in text:
        return None
    summary = _SUMMARY.search(text)
    if summary is None:
        return None
    test = summary["test"]
    summary_type, summary_message = _typed(summary["rest"])
    exception = message = None
    section = _section(text, test)
    if section:
        raised = [m["type"] for line in section if (m := _RAISED_AT.match(line))]
        block = _last_e_block(section)
        first = block[0] if block else None
        typed = _TYPED.match(first) if first else None
        last = raised[-1] if raised else None
        if typed is not None and last in (None, typed["type"].rsplit(".", 1)[-1]):
            exception, message = typed["type"], typed["message"]
        else:  # `E   assert a == b`: pytest left out the `AssertionError: `
            exception = last
            message = first if first and first.rsplit(".", 1)[-1] != last else None
    if exception is None:
        exception = summary_type
    if message is None:
        message = summary_message
    return FailedTest(test, exception, message or None)


def _typed(rest: str | None) -> tuple[str | None, str | None]:
    if not rest:
        return None, None
    typed = _TYPED.match(rest.strip())
    if typed is not None:
        return typed["type"], typed["message"]
    return None, rest.strip()


def _section(text: str, test: str) -> list[str]:
    """The lines of `test`'s section of the FAILURES (or ERRORS), its title left out.

    A section runs from its `____ title ____` line to the next title or `====` rule; a
    ticket may paste one without the `==== FAILURES ====` line above it.
    """
    # A module that failed to collect has no test: its section is `ERROR collecting PATH`.
    name = ".".join(test.split("::")[1:]) if "::" in test else f"ERROR collecting {test}"
    found: list[str] | None = None
    for line in text.split("\n"):
        title = _SECTION_TITLE.match(line)
        if title is not None or _RULE.match(line):
            if found is not None:
                return found
            if title is not None and _ERROR_TITLE.sub("", title["title"]) == name:
                found = []
        elif found is not None:
            found.append(line)
    return found or []


def _last_e_block(section: Sequence[str]) -> list[str]:
    """The last run of `E   ` lines (the exception pytest reports), without the `E`."""
    blocks: list[list[str]] = []
    previous = False
    for line in section:
        if _E_LINE.match(line):
            if not previous:
                blocks.append([])
            blocks[-1].append(_E_LINE.sub("", line, count=1).strip())
            previous = True
        else:
            previous = False
    return [line for line in blocks[-1] if line] if blocks else []
