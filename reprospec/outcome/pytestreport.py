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
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.pythonargs import is_python, python_program
from reprospec.core.results import bare_type
from reprospec.plan.wrappers import program_start
from reprospec.spec.presets import PYTEST_NODE_ID

if TYPE_CHECKING:
    from reprospec.outcome.tracebacks import PythonException

# `FAILED tests/test_io.py::test_x - AssertionError: message`; `ERROR ...` for a fixture's,
# and `ERROR tests/test_io.py` for a module that failed to collect (an import it makes).
# A parametrized test's id may hold spaces (`test_x[1-foo bar]`): read whole (PYTEST_NODE_ID).
_SUMMARY = Lazy(
    rf"^(?P<kind>FAILED|ERROR) (?P<test>{PYTEST_NODE_ID}|[^\s:]+\.py)(?: - (?P<rest>.*))?\s*$",
    re.MULTILINE,
)
_TEST_ID = Lazy(r"^[^\s:]+\.py::\S")
_SECTION_TITLE = Lazy(r"^_{3,} (?P<title>.+?) _{3,}\s*$")
_RULE = Lazy(r"^={3,}")
_RAISED_AT = Lazy(r"^\S+:\d+: (?P<type>[A-Za-z_][\w.]*)\s*$")
_E_LINE = Lazy(r"^E(?: +|$)")
# A frame's line of `--tb=short` (`test_c.py:8: in test_raised`).
_SHORT_FRAME = Lazy(r"^\S+:\d+: in \S")
# The line pytest-xdist heads a failure's section with, the worker that ran it (`[gw1] linux
# -- Python 3.11.7 /usr/bin/python`): no line of the report. Read as one, it stood above a
# cause never raised (`KeyError: 'x'`, under `--tb=long`), a part that said no type, and the
# chain was missed under `-n 2`.
_XDIST_WORKER = Lazy(r"^\[gw\d+\] ")
# An exception type as pytest writes it, both with a message and without one.
_TYPE = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*"
# `ValueError: message`, `torch.OutOfMemoryError: ...`: a class name (capitalised) and a colon.
_TYPED = Lazy(rf"^(?P<type>{_TYPE}): (?P<message>.*)$")
# What pytest writes of an exception with no message (`raise RuntimeError()`): its type
# alone, `FAILED t.py::test_x - RuntimeError`, which read as the message `RuntimeError`.
_BARE_TYPE = Lazy(rf"^{_TYPE}$")
_ERROR_TITLE = Lazy(r"^ERROR at (?P<at>setup|teardown) of ")
# Runners that start the program named after them.
_WRAPPERS = ("uv", "poetry", "pdm", "pipenv", "hatch", "rye", "pipx")


# CPython's traceback header at the margin, as `--tb=native` prints a test's exception (the
# other styles print pytest's own frames, an `E` line for each exception of a chain).
_NATIVE_HEADER = "Traceback (most recent call last):"

# Where a test's section turns to what it printed and logged (`---- Captured log call
# ----`, `Captured stderr call`): none of it is the test's exception.
_CAPTURED = Lazy(r"^-+ Captured .* -+\s*$")


@frozen
class FailedTest:
    """The first failing test of a pytest report: its node id, exception type and message."""

    test: str
    exception: str | None
    message: str | None
    # pytest's word for it: `FAILED` (the test failed) or `ERROR` (a module it could not
    # collect, or the setup or teardown of a test: no failure of the test itself), and for
    # a test's ERROR which of the two (`ERROR at setup of test_x`), where its section says.
    kind: str = "FAILED"
    at: str | None = None
    # An exception group's members (a test's `asyncio.TaskGroup`), where its section prints
    # the group's traceback as CPython does (pytest's every `--tb` style).
    members: tuple[PythonException, ...] = ()
    # The test's exception's chain, primary first, where the section prints it as CPython
    # does (an exception group in it: `raise RuntimeError(...) from group`) and it holds
    # more than the one; () otherwise. Its groups' members are met by expect.exception, as
    # the same code's run outside pytest.
    chain: tuple[PythonException, ...] = ()

    def reported(self) -> str:
        """What pytest said of it, in its words: `t.py::test_x failed`, `ERROR collecting
        t.py`, `ERROR at setup of t.py::test_x` (a collection error read as a test that
        failed)."""
        if self.kind == "FAILED":
            return f"{self.test} failed"
        if "::" not in self.test:
            return f"ERROR collecting {self.test}"
        return f"ERROR at {self.at} of {self.test}" if self.at else f"ERROR {self.test}"


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
    return pytest_args_start(words) is not None


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
    members: tuple[PythonException, ...] = ()
    chain: tuple[PythonException, ...] = ()
    section, at = _section(text, test)
    # The test's report, past which its captured output and logs begin: a TaskGroup's
    # failure logged there (`logging.exception`) is no exception of the test's.
    section = section[: next((i for i, s in enumerate(section) if _CAPTURED.match(s)), None)]
    from reprospec.outcome.tracebacks import is_group_header, parse_chain

    if section and any(is_group_header(line) or line == _NATIVE_HEADER for line in section):
        # A test that raised an exception group (a TaskGroup's failure): pytest prints it
        # as CPython does, with no `E   ` lines, and its summary shortens it (`ValueError(
        # 'boom') [single exception in Exceptio...`): read as no exception at all. One
        # that raised another from a group prints the group's chain so, then its own `E`.
        # Under `--tb=native` pytest prints every test's exception as CPython does, its
        # chain's blocks and link lines too, and no `E` line: its chain read none.
        chain = parse_chain("\n".join(section))
        if chain and not _last_e_block(section):
            exception, message, members = chain[-1].type, chain[-1].message, chain[-1].members
    if section and exception is None:
        raised = [m["type"] for line in section if (m := _RAISED_AT.match(line))]
        block = _last_e_block(section)
        first = block[0] if block else None
        typed = _TYPED.match(first) if first else None
        last = raised[-1] if raised else None
        if typed is not None and last in (None, bare_type(typed["type"])):
            exception, message = typed["type"], typed["message"]
        else:  # `E   assert a == b`: pytest left out the `AssertionError: `
            exception = last
            message = first if first and bare_type(first) != last else None
        if not chain:
            chain = _e_chain(section)
        if exception is None and chain:
            # `--tb=short`: a bare `E   assert 1 == 2` and no `file:line: AssertionError`
            # line; the chain CPython printed above it names the type.
            exception = chain[-1].type
            message = message or chain[-1].message
    if exception is None:
        exception = summary_type
    if message is None:
        message = summary_message
    if len(chain) < 2 or exception is None or bare_type(chain[-1].type) != bare_type(exception):
        chain = ()  # no chain, or not the one of the exception pytest reports
    return FailedTest(test, exception, message or None, summary["kind"], at, members, chain)


def _typed(rest: str | None) -> tuple[str | None, str | None]:
    if not rest:
        return None, None
    typed = _TYPED.match(rest.strip())
    if typed is not None:
        return typed["type"], typed["message"]
    if _BARE_TYPE.match(rest.strip()):
        return rest.strip(), None  # an exception with no message
    return None, rest.strip()


def _section(text: str, test: str) -> tuple[list[str], str | None]:
    """The lines of `test`'s section of the FAILURES (or ERRORS), its title left out, and
    for an ERROR's the step it was in (`setup`, `teardown`; None for any other).

    A section runs from its `____ title ____` line to the next title or `====` rule; a
    ticket may paste one without the `==== FAILURES ====` line above it. Its first line,
    where pytest-xdist names the worker there (`[gw1] linux -- Python ...`), is left out.
    """
    # A module that failed to collect has no test: its section is `ERROR collecting PATH`.
    name = ".".join(test.split("::")[1:]) if "::" in test else f"ERROR collecting {test}"
    found: list[str] | None = None
    at: str | None = None
    for line in text.split("\n"):
        title = _SECTION_TITLE.match(line)
        if title is not None or _RULE.match(line):
            if found is not None:
                return found, at
            if title is not None and _ERROR_TITLE.sub("", title["title"]) == name:
                found = []
                step = _ERROR_TITLE.match(title["title"])
                at = step["at"] if step is not None else None
        elif found is not None and (found or not _XDIST_WORKER.match(line)):
            found.append(line)
    return found or [], at


def _e_chain(section: Sequence[str]) -> tuple[PythonException, ...]:
    """The chain of a test's exception where pytest printed it in its own styles (`--tb=long`,
    `short`, `auto`): each exception's part of the section (its frames, its `E` lines, long's
    `path:line: Type`) joined to the next by CPython's link line at the margin, a cause never
    raised as its exception's own lines alone (`KeyError: 'root'`); primary first, the last
    its test's exception. Read as the `--tb=native` section of the same run reads (its
    `raise RuntimeError("top") from KeyError("x")` read no chain under these styles, and
    `expect.exception: KeyError` missed); () where the section has no link line, or a part
    says no type: a chain missed is better than one made up. `--tb=line` and `--tb=no` print
    no section, and so no chain."""
    from reprospec.outcome.tracebacks import CHAIN_LINKS, PythonException

    parts: list[list[str]] = [[]]
    links: list[str] = []
    for line in section:
        link = CHAIN_LINKS.get(line.rstrip()) if not line[:1].isspace() else None
        if link is None:
            parts[-1].append(line)
        else:
            links.append(link)
            parts.append([])
    if not links:
        return ()
    chain: list[PythonException] = []
    for n, part in enumerate(parts):
        read = _part_exception(part)
        if read is None:
            return ()
        chain.append(PythonException(*read, link=links[n] if n < len(links) else None))
    return tuple(chain)


def _part_exception(part: Sequence[str]) -> tuple[str, str | None] | None:
    """The type and whole message of one exception's part of a chained section: its last
    `E` block (long's `path:line: Type` naming the type where the block does not, pytest's
    `assert ...` an AssertionError's, as pytest strips `AssertionError: ` from exactly that),
    or, with no `E` line and no frame, its own lines (a cause never raised); None where it
    says no type."""
    block = _last_e_block(part, whole=True)
    if not block:
        block = [line for line in part if line.strip()]
        if not block or any(_RAISED_AT.match(line) or _SHORT_FRAME.match(line) for line in block):
            return None  # a part with frames and no `E` line: not read
    first, rest = block[0], block[1:]
    typed = _TYPED.match(first)
    raised = [m["type"] for line in part if (m := _RAISED_AT.match(line))]
    last = raised[-1] if raised else None
    if typed is not None and last in (None, bare_type(typed["type"])):
        return typed["type"], "\n".join([typed["message"], *rest]).strip() or None
    if _BARE_TYPE.match(first) and last in (None, bare_type(first)):
        return first, "\n".join(rest).strip() or None
    if last is None and first.startswith("assert "):
        last = "AssertionError"
    if last is None:
        return None
    return last, "\n".join(block).strip() or None


def _last_e_block(section: Sequence[str], *, whole: bool = False) -> list[str]:
    """The last run of `E   ` lines (the exception pytest reports), without the `E`: each
    stripped and the blank ones left out, or (`whole`) as the message holds them, only the
    first line's indent taken off each and its blank lines kept (a chain's link's message,
    read whole as `--tb=native` prints it)."""
    blocks: list[list[str]] = []
    previous = False
    for line in section:
        if _E_LINE.match(line):
            if not previous:
                blocks.append([])
            blocks[-1].append(line[1:])
            previous = True
        else:
            previous = False
    if not blocks:
        return []
    if not whole:
        return [line.strip() for line in blocks[-1] if line.strip()]
    indent = len(blocks[-1][0]) - len(blocks[-1][0].lstrip(" "))
    return [line[min(indent, len(line) - len(line.lstrip(" "))) :].rstrip() for line in blocks[-1]]


# pytest-xdist's report of a worker that died running a test (a segfault in it): the test
# it names is the crash's, where `-v`'s lines are the workers' tests in any order.
# The test is written as Python's repr writes it: in double quotes where its id holds a `'`
# (`test_x[it's]`), with spaces as they are (`test_x[a b]`).
_WORKER_CRASHED = Lazy(
    r"""worker '[^']+' crashed while running (?:'(?P<single>[^'\n]+)'|"(?P<double>[^"\n]+)")"""
)


# What the classifier's detail says of a child it knows was a pytest-xdist worker (the
# line above named the test it died running): capture's title and comment say "in a
# pytest-xdist worker", where "in a child process" named no process a reader knows.
XDIST_CRASHED = "pytest-xdist reports it crashed running"


def xdist_worker_crash(where: str | None, detail: str | None) -> bool:
    """Whether an outcome (`where`, `detail`) is the crash of a pytest-xdist worker."""
    return where == "child" and f"; {XDIST_CRASHED} " in (detail or "")


def crashed_test(text: str) -> str | None:
    """The test a pytest-xdist worker died running (`worker 'gw1' crashed while running
    'tests/test_x.py::test_crash'`), or None."""
    if "crashed while running" not in text:
        return None
    found = _WORKER_CRASHED.search(text)
    return (found["single"] or found["double"]) if found is not None else None


# pytest's exit statuses of a run that ran no test (_pytest.config.ExitCode): 4, a usage
# error it words on stderr as `ERROR: ...`, and 5, no test collected or selected.
PYTEST_USAGE_ERROR = 4
PYTEST_NO_TESTS = 5
# The usage errors that say the command line named nothing to run: a test id or a path that
# is not there (a typo), or an option it does not know (argparse's `PROG: error: ...` line
# after the usage). Other usage errors (`ImportError while loading conftest`, a plugin that
# fails to import) are the program's own failure, which a spec may well be about.
_NOT_FOUND = Lazy(r"^ERROR: (?P<what>(?:file or directory )?not found: [^\n]+)$", re.MULTILINE)
_BAD_OPTION = Lazy(r"^ERROR: usage: [^\n]*\n[^\n]*?: error: (?P<what>[^\n]+)$", re.MULTILINE)
_COLLECTED = Lazy(r"\bcollected \d+ items?[^\n]*?(?= in [\d.]+s\b|\s*$)", re.MULTILINE)
# The counts of pytest's last line (`==== 1 skipped, 2 deselected in 0.03s ====`, bare under
# -q), and what a test that ran counts as: a skip, a deselection, a warning are none.
_COUNTS = Lazy(r"^=*\s*(?P<counts>\d+ [a-z]+(?:, \d+ [a-z]+)*) in [\d.]+s\b", re.MULTILINE)
_RAN = frozenset({"passed", "failed", "xfailed", "xpassed", "error", "errors", "rerun"})
# Why: `-v`'s `t.py::test_x SKIPPED (no GPU)  [100%]`, `-rs`'s `SKIPPED [1] t.py:3: no GPU`.
_SKIP_WHY = Lazy(
    r"\bSKIPPED (?:\((?P<verbose>[^\n]*)\)(?=[ \t]*(?:\[ *\d+%\])?[ \t]*$)"
    r"|\[\d+\] \S+?:\d+: (?P<summary>[^\n]+))",
    re.MULTILINE,
)


RAN_NO_TEST = "pytest ran no test"


def skipped_each(reason: str) -> bool:
    """Whether an infra-error's `reason` is `ran_no_test`'s of a run whose every test pytest
    skipped (exit 0): the pytest plugin's item is then a skip, as pytest's own was."""
    return reason.startswith(f"{RAN_NO_TEST}: ") and reason.endswith("(exit 0)")


def ran_no_test(code: int | None, stderr: str, stdout: str) -> str | None:
    """Why a pytest command ran no test at all, as an infra-error's reason: a node id or a
    path it did not find, an option it does not know (exit 4), nothing collected or
    selected (exit 5, `-k` that matched nothing), every test it selected skipped (exit 0:
    a `skipif` no GPU, on this machine); else None. Such a run did not run the test the
    spec is about, so its `error exit 4` must not meet an `expect: error` (a typo in the
    test id read as reproduced), nor its exit 0 an `expect: pass` (a skipped test read as
    one that passed), nor read as the test's failure or its not failing."""
    if code == 0:
        counts = [found["counts"] for found in _COUNTS.finditer(stdout)]
        said = counts[-1] if counts else ""
        kinds = {count.partition(" ")[2] for count in said.split(", ")}
        if "skipped" not in kinds or kinds & _RAN:
            return None
        why = _SKIP_WHY.search(stdout)
        reason = f": {why['verbose'] or why['summary']}".rstrip() if why is not None else ""
        return f"{RAN_NO_TEST}: {said}{reason} (exit 0)"
    if code == PYTEST_USAGE_ERROR:
        found = _NOT_FOUND.search(stderr) or _BAD_OPTION.search(stderr)
        if found is None:
            return None
        return f"{RAN_NO_TEST}: {found['what'].strip()} (exit 4)"
    if code == PYTEST_NO_TESTS:
        collected = _COLLECTED.search(stdout)
        said = f": {collected[0].strip()}" if collected is not None else ""
        return f"{RAN_NO_TEST}, none collected or selected{said} (exit 5)"
    return None


# pytest-xdist's `-v` lines: `tests/test_x.py::test_y ` as a worker starts a test (its own
# line: the workers' reports interleave), `[gw0] [ 25%] PASSED tests/test_x.py::test_y` as
# it ends. RERUN (pytest-rerunfailures) is no end: the test runs again.
# Its header under -v: `created: 2/2 workers`, `2 workers [4 items]` (a hang where no test
# ended has no `[gw0]` line at all).
_XDIST_HEADER = Lazy(r"^(?:created: \d+/\d+ workers|\d+ workers \[\d+ items?\])", re.MULTILINE)
_XDIST_STARTED = Lazy(rf"^(?P<test>{PYTEST_NODE_ID}) *$", re.MULTILINE)
_XDIST_ENDED = Lazy(
    rf"^\[gw\d+\] \[ *\d+%\] (?P<status>[A-Z]+) (?P<test>{PYTEST_NODE_ID}) *$", re.MULTILINE
)


def xdist_running(text: str) -> tuple[str, ...] | None:
    """The tests pytest-xdist's workers had started and not ended, in the order they
    started, by its `-v` lines (a hang's: the test or tests that were running when it
    timed out); None where the text has no xdist header (`2 workers [4 items]`).
    The last test line is not the hung one: the other workers start and end theirs after
    it (a worker's test that passed after the hung one began was the phase)."""
    if _XDIST_HEADER.search(text) is None:
        return None
    ended = [m["test"] for m in _XDIST_ENDED.finditer(text) if m["status"] != "RERUN"]
    started = [m["test"] for m in _XDIST_STARTED.finditer(text)]
    if not started and not ended:
        return None
    left = list(started)
    for test in ended:
        if test in left:
            left.remove(test)
    return tuple(left)


def pytest_args_start(argv: Sequence[str]) -> int | None:
    """Where pytest's own arguments begin in a command that runs pytest (after `pytest`,
    `python -m pytest`, `VAR=value`, `env`, a wrapper's words (`timeout 60`, `nice -n 5`:
    plan/wrappers.py), a launcher's `run` and its options: `uv run
    --with pytest-xdist pytest`, `uvx pytest`, `poetry run`, `hatch run` (`hatch run
    test:pytest`, hatch's environment before the colon), `pipx run --spec pytest==8
    pytest`): None for one read another way (`sh -c '...'`) or no pytest at all."""
    words = list(argv)
    # Past `VAR=value`, `env` and wrappers (`timeout 60 python3 -m pytest`): the first
    # word alone made that no pytest run, its failure no test's.
    start = program_start(words)
    if start is None:
        return None
    index = _after_launcher(words, start)
    if index >= len(words):
        return None
    program = words[index].rsplit("/", 1)[-1]
    if index > 0 and "hatch" in words[:index] and ":" in program:
        # `hatch run test:pytest`: hatch runs `pytest` in its environment `test`.
        program = program.partition(":")[2]
    if program in ("pytest", "py.test"):
        return index + 1
    if not is_python(program):
        return None
    found = python_program(words[index + 1 :])  # `python -X dev -m pytest`, `-mpytest`
    return index + 1 + found.end if found.kind == "module" and found.target == "pytest" else None


# A launcher's options that take the next word as their value (`uv run --with pytest-xdist
# pytest`: `pytest-xdist` is no program), by the launchers' own help; any other option is
# read as a switch, as every one was before.
_LAUNCHER_VALUES = frozenset(
    [
        "--with",
        "--with-editable",
        "--with-requirements",
        "--from",
        "--extra",
        "--no-extra",
        "--group",
        "--no-group",
        "--only-group",
        "--package",
        "--python",
        "-p",
        "--env-file",
        "--directory",
        "--project",
        "-P",
        "-C",
        "--index",
        "--default-index",
        "--index-url",
        "-i",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--config-file",
        "--config-setting",
        "--cache-dir",
        "--index-strategy",
        "--keyring-provider",
        "--resolution",
        "--prerelease",
        "--exclude-newer",
        "--link-mode",
        "--refresh-package",
        "--reinstall-package",
        "--upgrade-package",
        "--no-build-package",
        "--no-binary-package",
        "--color",
        "--allow-insecure-host",
        "--python-platform",
        "--venv",
        # pipx run's
        "--spec",
        "--pip-args",
    ]
)


def _after_launcher(words: Sequence[str], index: int) -> int:
    """Where the program a launcher runs is named (`uv run [OPTIONS] PROGRAM`, `uvx`,
    `poetry run`, `pdm run`, `pipenv run`, `hatch run` (also after hatch's own options,
    `hatch -e ENV run`, `hatch --env=ENV run`, `hatch -eENV run`; its matrix selectors
    `+py=3.11`, and its `ENV:PROGRAM`, read by the caller), `rye run`, `pipx run`), after
    its options and their values and a `--`; `index` itself where `words[index]` is no
    launcher."""
    if words[index : index + 1] == ["uvx"]:
        at = index + 1
    elif words[index : index + 3] == ["uv", "tool", "run"]:
        at = index + 3
    elif (
        words[index : index + 1] == ["hatch"] and (run := _hatch_run(words, index + 1)) is not None
    ):
        at = run + 1
    elif index + 1 < len(words) and words[index] in _WRAPPERS and words[index + 1] == "run":
        at = index + 2
    else:
        return index
    hatch = words[index] == "hatch"
    # hatch run's matrix selectors: `+py=3.11` includes, `-py=3.9` excludes.
    while at < len(words) and (
        words[at].startswith("-") or (hatch and words[at].startswith("+") and "=" in words[at])
    ):
        if words[at] == "--":
            return at + 1
        at += 2 if words[at] in _LAUNCHER_VALUES else 1
    return at


# hatch's own options that take the next word as their value (`hatch --env test run`), by
# its help; `--env=test` and `-etest` are one word.
_HATCH_VALUES = frozenset(
    ["-e", "--env", "-p", "--project", "--data-dir", "--cache-dir", "--config"]
)


def _hatch_run(words: Sequence[str], at: int) -> int | None:
    """Where hatch's `run` is, after hatch's own options from `at` (`hatch -e test run`,
    `hatch --env=test run`, `hatch -etest run`, `hatch -v run`); None: no `run` there."""
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in _HATCH_VALUES else 1
    return at if words[at : at + 1] == ["run"] else None


# The words that make pytest quieter than its default, which cancel a `-v`.
_QUIET = ("-q", "-qq", "-qqq", "--quiet")
_VERBOSE = ("-v", "-vv", "-vvv", "--verbose")


def pytest_verbose(argv: Sequence[str], quiet: int = 0) -> list[str]:
    """A pytest command that prints each test's id as it runs (`-v`, what the pytest
    preset reads): `-v` last (before it, `-v tests/` would read as a setting and its
    value), any `-q` of pytest's left out (it cancels `-v`; also out of `-qx`; `python -q
    -m pytest`'s is Python's own), and one more `-v` for each of the `quiet` that its ini
    file's `addopts` adds (`ini_quiet`), which the command line cannot leave out. A
    command that asks for `-v` already is as it is."""
    words = list(argv)
    start = pytest_args_start(words)
    if start is None:  # `sh -c 'pytest ...'`: a word added would be the shell's
        return words
    own = words[start:]
    if any(word in _VERBOSE or word.startswith("--verbosity") for word in own):
        return words
    kept = [_unquiet(word) for word in own if word not in _QUIET]
    kept = [word for word in kept if word]
    # Before a `--`, after which pytest reads every word as a test path.
    end = kept.index("--") if "--" in kept else len(kept)
    return [*words[:start], *kept[:end], *["-v"] * (1 + quiet), *kept[end:]]


def prints_test_ids(argv: Sequence[str]) -> bool | None:
    """Whether a pytest command prints each test's id as the test starts, the line the
    pytest preset reads (`tests/test_x.py::test_y ` ended by its status): only a verbosity
    above pytest's default does (`-v`, `-sv`, `--verbose`, `--verbosity=1`, less each
    `-q`); `-rA`'s summary names the tests only once they all ended, each after its status
    word, which no hang or crash reaches. None for a command that is no plain pytest (`sh
    -c '...'`). What its ini file's `addopts` or `PYTEST_ADDOPTS` add is not read here."""
    words = list(argv)
    start = pytest_args_start(words)
    if start is None:
        return None
    verbosity = 0
    own = words[start:]
    for index, word in enumerate(own):
        if word == "--":  # the rest are test paths
            break
        if word == "--verbose":
            verbosity += 1
        elif word == "--quiet":
            verbosity -= 1
        elif word.startswith("--verbosity"):
            value = word.partition("=")[2] if "=" in word else "".join(own[index + 1 : index + 2])
            if value.isdigit():  # pytest sets it, and a later -v or -q moves it
                verbosity = int(value)
        elif _short_switches(word):
            verbosity += word.count("v") - word.count("q")
    return verbosity > 0


def ini_quiet(folder: Path, environ: Mapping[str, str]) -> int:
    """How much quieter pytest run in `folder` is made than its default by what no
    command line shows: its ini file's `addopts` (the first of pytest.ini, .pytest.ini,
    pyproject.toml's [tool.pytest.ini_options], tox.ini's [pytest], setup.cfg's
    [tool:pytest] in the folder or the nearest one above it, as pytest finds it for a
    run in that folder) and `PYTEST_ADDOPTS`: each `-q` (`addopts = -ra -q`, pytest's
    own example, cancelled the `-v` capture adds). A file that does not read is none."""
    words = _split(environ.get("PYTEST_ADDOPTS", ""))
    for place in (folder, *folder.parents):
        found = _addopts(place)
        if found is not None:
            words += _split(found)
            break
    return sum(_quiet_count(word) for word in words)


def _addopts(folder: Path) -> str | None:
    """The `addopts` of the ini file pytest takes in `folder` ("" for one without it), or
    None where none of its files is there."""
    import configparser

    for name, section in (
        ("pytest.ini", "pytest"),
        (".pytest.ini", "pytest"),
        ("pyproject.toml", None),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        path = folder / name
        if not path.is_file():
            continue
        try:
            if section is None:
                try:
                    import tomllib
                except ModuleNotFoundError:  # Python 3.10: its pyproject.toml goes unread
                    continue
                tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
                table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
                options = table.get("ini_options", table) if isinstance(table, dict) else None
                if not isinstance(options, dict) or not table:
                    continue  # a pyproject.toml without pytest's table is no ini file of it
                value = options.get("addopts", "")
                return " ".join(value) if isinstance(value, list) else str(value)
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, configparser.Error):
            return None
        if parser.has_section(section):
            return parser.get(section, "addopts", fallback="")
        if name in ("pytest.ini", ".pytest.ini"):
            return ""  # pytest takes it even without a [pytest] section
    return None


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _quiet_count(word: str) -> int:
    if word == "--quiet":
        return 1
    if _short_switches(word):
        return word.count("q")
    return 0


def _unquiet(word: str) -> str:
    """`-qx` -> `-x`: a cluster of pytest's one-letter switches without its `q`s."""
    if _short_switches(word) and "q" in word:
        rest = word[1:].replace("q", "")
        return f"-{rest}" if rest else ""
    return word


# pytest's options that take the next word as their value (`-k expr`, `--ignore path`), and
# the long ones that take none: a test path is a word neither kind takes.
_TAKES_VALUE = frozenset(
    [
        "-k",
        "-m",
        "-p",
        "-n",
        "-c",
        "-o",
        "-W",
        "-r",
        "--maxfail",
        "--durations",
        "--durations-min",
        "--basetemp",
        "--rootdir",
        "--confcutdir",
        "--ignore",
        "--ignore-glob",
        "--deselect",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--tb",
        "--capture",
        "--import-mode",
        "--log-level",
        "--log-file",
        "--log-file-level",
        "--log-format",
        "--log-date-format",
        "--log-cli-level",
        "--override-ini",
        "--dist",
        "--tx",
        "--numprocesses",
        "--maxprocesses",
        "--reruns",
        "--reruns-delay",
        "--only-rerun",
        "--timeout",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--lfnf",
        "--last-failed-no-failures",
        "--pythonwarnings",
        "--config-file",
        "--hypothesis-seed",
        "--hypothesis-profile",
        "--random-order-seed",
        "-P",
        "--inifile",
    ]
)
_SWITCHES = frozenset(
    [
        "--lf",
        "--last-failed",
        "--ff",
        "--failed-first",
        "--nf",
        "--new-first",
        "--sw",
        "--stepwise",
        "--sw-skip",
        "--stepwise-skip",
        "--pdb",
        "--trace",
        "--pyargs",
        "--strict-markers",
        "--strict-config",
        "--strict",
        "--runxfail",
        "--disable-warnings",
        "--disable-pytest-warnings",
        "--showlocals",
        "-l",
        "--full-trace",
        "--collect-only",
        "--co",
        "--exitfirst",
        "--no-header",
        "--no-summary",
        "--setup-show",
        "--setup-only",
        "--setup-plan",
        "--doctest-modules",
        "--cache-clear",
        "--cache-show",
        "--verbose",
        "--quiet",
        "--version",
        "--help",
        "--forked",
        "--looponfail",
        "--fixtures",
        "--fixtures-per-test",
        "--keep-duplicates",
        "--continue-on-collection-errors",
        "--debug",
        "--noconftest",
    ]
)


def takes_value(word: str) -> bool:
    """Whether pytest's option `word` takes the next word as its value (`-p`, `-k`,
    `--ignore`, and the plugins' `-n`, `--timeout`): one value, never the test paths after
    it."""
    return word in _TAKES_VALUE


def narrowed_to(argv: Sequence[str], test: str, workdir: Path) -> list[str] | None:
    """The pytest command that runs `test` (a node id) alone: its test paths (the words
    that are no option's value and name a file or folder of `workdir`, or a node id of
    one) replaced by `test` where the first of them stood, every option kept (`-k`, `-x`,
    xdist's `-n 2`). None where that is not sure: the node's file is not in `workdir`
    (pytest named it from another rootdir), the command already runs it alone, it names
    no test path, or a long option unknown here stands before a word that may be its
    value or a path."""
    words = list(argv)
    start = pytest_args_start(words)
    path, _, name = test.partition("::")
    if start is None or not name or not (workdir / path).is_file():
        return None
    places: list[int] = []
    index = start
    while index < len(words):
        word = words[index]
        if word == "--":  # the rest are paths
            places += [at for at in range(index + 1, len(words)) if _names(workdir, words[at])]
            break
        if word.startswith("-") and word != "-":
            if "=" in word or word in _SWITCHES or _short_switches(word):
                index += 1
                continue
            if word in _TAKES_VALUE or (len(word) > 2 and word[:2] in _TAKES_VALUE):
                index += 1 if len(word) > 2 and not word.startswith("--") else 2
                continue
            following = words[index + 1] if index + 1 < len(words) else None
            if following is not None and not following.startswith("-"):
                return None  # `--cov-x pkg`: its value or a path, which is not sure
            index += 1
            continue
        if _names(workdir, word):
            places.append(index)
        index += 1
    if not places or [words[at] for at in places] == [test]:
        return None
    first = places[0]
    return [
        *words[:first],
        test,
        *(w for at, w in enumerate(words) if at > first and at not in places),
    ]


def _names(workdir: Path, word: str) -> bool:
    """Whether `word` is a test path of `workdir`: a file or folder there, or a node id of
    one (`tests/test_x.py::test_y`)."""
    return bool(word) and (workdir / word.partition("::")[0]).exists()


def _short_switches(word: str) -> bool:
    """`-x`, `-vs`, `-qx`: one or more of pytest's one-letter switches together."""
    return (
        not word.startswith("--")
        and len(word) > 1
        and all(letter in "qvxslV" for letter in word[1:])
    )
