"""A program that timed itself out: `faulthandler.dump_traceback_later(T, exit=True)`.

A common hang watchdog: when the program has not cancelled it after T seconds, CPython's
faulthandler thread writes `Timeout (0:00:05)!` and every thread's stack to stderr, then
ends the process with `_exit(1)`. The program hung, and its own watchdog, not the
engine's timeout, ended it: a live run read the exit status as `error exit 1` (its message
the dump's last frame line), where a ticket or log of the same dump was read as the hang it
is (capture/ticket.py). Both now read it as a hang.

Only a dump that ends stderr is the watchdog's end: with `exit=False` the program goes on
after the dump, and whatever ends it later is what ends it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.results import PythonFrame
from reprospec.outcome.tracebacks import FATAL_BODY

if TYPE_CHECKING:
    from reprospec.outcome.hangsource import Source

# faulthandler's header of a dump_traceback_later dump: `Timeout (0:05:00)!`, and for a
# fraction of a second `Timeout (0:00:00.500000)!`.
TIMEOUT_HEADER = Lazy(r"^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\s*$")
# The lines a dump holds under its header (a thread's line, its frames, CPython's marks of a
# stack it cut, `  ...`, or of a thread with no Python frame): a faulthandler dump's body.
_DUMP_LINE = FATAL_BODY


@frozen
class WatchdogTimeout:
    """The dump a faulthandler watchdog wrote before it ended the program."""

    header: str  # `Timeout (0:00:05)!`
    dump: str  # the header and the threads' stacks under it, as written


def watchdog_timeout(stderr: str) -> WatchdogTimeout | None:
    """The watchdog's dump where it is the last thing on stderr, else None."""
    lines = stderr.rstrip().split("\n")
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if TIMEOUT_HEADER.match(line):
            body = lines[index + 1 :]
            if not any(_DUMP_LINE.match(b) and b.strip() for b in body):
                return None  # a header with no stack under it is no dump
            return WatchdogTimeout(line.strip(), "\n".join(lines[index:]))
        if not _DUMP_LINE.match(line):
            return None  # stderr goes on after any dump: the program went on
    return None


def hung_frame(timeout: WatchdogTimeout, *, source: Source) -> PythonFrame | None:
    """The frame of the user's code the hang sat in, as the dump shows it: the dump read as
    the engine's stack dump of the one process (hungstacks.py), its lines read from
    `source` (the attempt's text, hangsource.py: a caller says whose, no default)."""
    from reprospec.outcome.hungstacks import hung_frame as frame_of

    return frame_of(f"--- pid 0 (the program) ---\n{timeout.dump}", source=source)


# pytest-timeout's rule around the stacks it dumps (`+++++ Timeout +++++`, pytest's
# terminal width): with `timeout_method = thread` its timer thread writes it, each thread's
# stack (`~~~ Stack of MainThread (140...) ~~~`), the rule again, then `os._exit(1)`; `-v`'s
# line of the running test runs on into the first one (`t.py::test_x +++++ Timeout ++...`,
# or with no space between, `before` the text it ran on into). A live run and a ticket
# read it with this one pattern.
PYTEST_TIMEOUT_RULE = Lazy(r"^(?P<before>.*?)\+{3,} Timeout \+{3,}\s*$")
# Its `signal` method's failure of the test instead (`pytest.fail`): `Failed: Timeout
# (>2.0s) from pytest-timeout.`, which pytest reports as the test's exception; its short
# summary cuts it at the terminal's width (`Failed: Timeout (>2.0s) from pytes...`).
PYTEST_TIMEOUT_FAILED = Lazy(
    r"^Timeout \(>(?P<seconds>\d+(?:\.\d+)?)s\)"
    r"(?: from pytest-timeout\.?$| from (?:p[\w-]*)?\.\.\.$| fr?o?\.\.\.$|\.\.\.$)"
)
# The header line pytest-timeout adds to pytest's: `timeout: 2.0s`.
_PYTEST_TIMEOUT_SETTING = Lazy(r"^timeout: (?P<seconds>\d+(?:\.\d+)?)s\s*$", re.M)


@frozen
class PytestTimeout:
    """A test pytest-timeout ended at its bound: the test hung, and the plugin, not the
    engine's timeout, ended it (its `thread` method the whole run with exit status 1, its
    `signal` method the test alone, as pytest's failure `Failed: Timeout (>2.0s) ...`)."""

    method: str  # "thread" or "signal"
    seconds: float | None  # its timeout, where the output says it
    # Its thread method in a pytest-xdist worker: the worker's `os._exit(1)`, its dump on
    # the worker's own output, which xdist does not show (`node down: Not properly
    # terminated`, `worker 'gw0' crashed while running 't.py::test_x'`).
    worker: bool = False

    def describe(self) -> str:
        bound = f" ({self.seconds:g}s)" if self.seconds is not None else ""
        ended = "the run" if self.method == "thread" else "the test"
        status = ", exit status 1" if self.method == "thread" else ""
        if self.worker:
            ended, status = "a pytest-xdist worker", " (it exited 1, no signal)"
        return f"pytest-timeout's {self.method} method ended {ended} at its timeout{bound}{status}"


def pytest_timeout_dump(output: str) -> PytestTimeout | None:
    """pytest-timeout's `thread` dump where it ends `output` (its closing rule last, an
    opening one before it), else None: the plugin's `os._exit(1)` after it."""
    lines = output.rstrip().split("\n")
    if not PYTEST_TIMEOUT_RULE.match(lines[-1]):
        return None
    if not any(PYTEST_TIMEOUT_RULE.match(line) for line in lines[:-1]):
        return None
    return PytestTimeout("thread", pytest_timeout_seconds(output))


def pytest_timeout_failure(message: str | None) -> PytestTimeout | None:
    """pytest-timeout's `signal` failure where `message` (a test's, pytest's `Failed`) is
    its `Timeout (>2.0s) from pytest-timeout.`, else None."""
    found = PYTEST_TIMEOUT_FAILED.match(message or "")
    if found is None:
        return None
    return PytestTimeout("signal", float(found["seconds"]))


def pytest_timeout_seconds(output: str) -> float | None:
    """pytest-timeout's timeout as its header line says it (`timeout: 2.0s`), or None."""
    found = _PYTEST_TIMEOUT_SETTING.search(output)
    return float(found["seconds"]) if found is not None else None


# pytest-timeout's header line of its method: `timeout method: thread`.
PYTEST_TIMEOUT_METHOD = Lazy(r"^timeout method: (?P<method>\w+)\s*$", re.M)


def pytest_timeout_method(output: str) -> str | None:
    """pytest-timeout's method as its header line says it (`thread`, `signal`), or None."""
    found = PYTEST_TIMEOUT_METHOD.search(output)
    return found["method"] if found is not None else None


# pytest's last line, `==== 1 failed in 2.77s ====` (`in 62.31s (0:01:02)`): how long the
# session ran.
PYTEST_SESSION_END = Lazy(r"^=+ .*\bin (?P<seconds>\d+(?:\.\d+)?)s\b.*=+\s*$", re.M)


def pytest_timeout_worker(output: str) -> PytestTimeout | None:
    """pytest-timeout's thread method, where `output`'s header says it is the one in force
    (`timeout method: thread`) and the output shows it fired: what a pytest-xdist worker
    that exited with no signal, no dump shown, ended of, else None.

    The header alone is no evidence: a worker the OOM killer (or anything) ended early is
    the same `crashed while running` line. Its dump's rule shown, or a session that ran at
    least the timeout (`1 failed in 7.70s` of a 2s bound), is."""
    if pytest_timeout_method(output) != "thread":
        return None
    seconds = pytest_timeout_seconds(output)
    ended = [float(m["seconds"]) for m in PYTEST_SESSION_END.finditer(output)]
    ruled = any(PYTEST_TIMEOUT_RULE.match(line) for line in output.split("\n"))
    if not ruled and (seconds is None or not ended or ended[-1] < seconds):
        return None
    return PytestTimeout("thread", seconds, worker=True)
