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

_LIBSTDCXX = Lazy(r"^terminate called after throwing an instance of '(?P<type>[^']+)'\s*$")
_WHAT = Lazy(r"^\s*what\(\):\s*(?P<what>.*?)\s*$")
_LIBCXX = Lazy(
    r"^libc\+\+abi(?:\.dylib)?: terminating (?:due to|with) uncaught exception of type "
    r"(?P<type>.+?)(?:: (?P<what>.*?))?\s*$"
)
# What every report holds: a text without it is not read further.
_WORDS = ("terminate called after throwing", "terminating due to", "terminating with")


@frozen
class Terminated:
    """An uncaught C++ exception: its type as printed (`std::runtime_error`) and the first
    line of its `what()` (None where it printed none or an empty one: a type that is no
    `std::exception`)."""

    type: str
    message: str | None


def uncaught_cxx(text: str) -> Terminated | None:
    """The last uncaught C++ exception `text` reports; None where it reports none.

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
    return None


__all__ = ["Terminated", "uncaught_cxx"]
