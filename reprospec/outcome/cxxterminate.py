"""C++'s report of an exception no handler caught: the type and `what()` std::terminate prints.

libstdc++'s verbose terminate handler (g++'s default) prints, before it calls abort():

    terminate called after throwing an instance of 'std::runtime_error'
      what():  bad shape 3 != 4

and libc++'s (clang's, macOS's) one line: `libc++abi: terminating due to uncaught exception
of type std::runtime_error: bad shape 3 != 4` (older: `terminating with uncaught ...`).
Either way the process then dies of SIGABRT: a program's own, a shell's exit status 134, a
child's death, a pasted ticket with no signal line at all. This is the one reader of those
words: the outcome's crash (classify.py), a ticket's failure (capture/ticket.py) and
cuda-gdb's own abort on a core (cudacore.py) all ask it.
"""

from __future__ import annotations

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.signals import signal_from_description
from reprospec.outcome.tracebacks import FATAL_HEADER, SANITIZER_ABORT

_LIBSTDCXX = Lazy(r"^terminate called after throwing an instance of '(?P<type>[^']+)'\s*$")
_WHAT = Lazy(r"^\s*what\(\):\s*(?P<what>.*?)\s*$")
_LIBCXX = Lazy(
    r"^libc\+\+abi(?:\.dylib)?: terminating (?:due to|with) uncaught exception of type "
    r"(?P<type>.+?)(?:: (?P<what>.*?))?\s*$"
)
# What every report holds: a text without it is not read further.
_WORDS = ("terminate called after throwing", "terminating due to", "terminating with")
# Another abort's report, printed after a terminate's: that report is not the crash's (a
# child's std::bad_alloc, handled by its parent, then the parent's failed assert() read as
# the parent's SIGABRT, and as the memory limit's). glibc's failed assert() (`prog: f.c:3:
# main: Assertion `n > 0' failed.`; libstdc++'s _GLIBCXX_ASSERTIONS quote it '...'), its
# heap checks (`free(): invalid pointer`, `double free or corruption (out)`), the stack
# protector's and _FORTIFY_SOURCE's (`*** stack smashing detected ***: terminated`); musl's
# failed assert() (`Assertion failed: n > 0 (f.c: main: 3)`: an Alpine image's), not its
# heap checks, which print nothing; also a sanitizer's `==PID==ABORTING` and a Python's fatal
# error (`_is_another_abort`).
_LIBC_ABORT = Lazy(
    r"^(?:.*: Assertion [`'].*' failed\.|\*\*\* .* \*\*\*: terminated"
    r"|Assertion failed: .* \([^()]*: [^()]*: \d+\)"
    r"|(?:free|malloc|realloc|calloc|munmap_chunk|malloc_consolidate)\(\): \S.*"
    r"|double free or corruption \(\w+\)|corrupted size vs\. prev_size.*)\s*$"
)


@frozen
class Terminated:
    """An uncaught C++ exception: its type as printed (`std::runtime_error`) and the first
    line of its `what()` (None where it printed none or an empty one: a type that is no
    `std::exception`)."""

    type: str
    message: str | None


def uncaught_cxx(text: str) -> Terminated | None:
    """The last uncaught C++ exception `text` reports; None where it reports none, or where
    another abort is reported after it (`_is_another_abort`): then the terminate was
    another process's, or an earlier one, and the abort that ended it is not its.

    Only `what()`'s first line is the message: a multi-line one (c10::Error's) goes on with
    a backtrace of frames and addresses, which differ from build to build."""
    if not any(words in text for words in _WORDS):
        return None
    lines = text.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if (found := _LIBSTDCXX.match(line)) is not None:
            what = _WHAT.match(lines[index + 1]) if index + 1 < len(lines) else None
            return Terminated(found["type"], (what["what"] or None) if what else None)
        if (found := _LIBCXX.match(line)) is not None:
            return Terminated(found["type"], found["what"] or None)
        if _is_another_abort(line):
            return None
    return None


def _is_another_abort(line: str) -> bool:
    """Whether `line` reports an abort of its own (`_LIBC_ABORT`, a sanitizer's, a
    Python's fatal error); not faulthandler's `Fatal Python error: Aborted` nor a shell's
    `Aborted (core dumped)`, which report the terminate's own abort, as the process that
    took it, or its parent, saw it."""
    if line.startswith(FATAL_HEADER):
        return signal_from_description(line[len(FATAL_HEADER) :].strip()) != "SIGABRT"
    return bool(_LIBC_ABORT.match(line) or SANITIZER_ABORT.match(line))


__all__ = ["Terminated", "uncaught_cxx"]
