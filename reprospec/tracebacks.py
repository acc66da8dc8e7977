"""Python tracebacks in a log: the exception that ended the process, its type and message.

CPython prints an uncaught exception as a `Traceback (most recent call last):`
block ending in `Type: message`; chained exceptions print several blocks (the
last one is what ended the process), exception groups prefix every line with
`| `, and shutdown noise ("Exception ignored in ...", atexit errors, threads)
prints blocks of its own that must not pose as the real one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MAX_MESSAGE_LINES = 30

_TB_HEADER = re.compile(
    r"^(?:\s*\+ )?(?:Exception Group )?Traceback \(most recent call last\):\s*$"
)
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::(?: (?P<message>.*))?)?$")
_GROUP_PREFIX = re.compile(r"^\s*\| ?")
# Lines that end an exception message: the next report, a logger, a warning.
_MESSAGE_END = re.compile(
    r"^(?:During handling of the above exception|The above exception was the direct cause"
    r"|Exception ignored|Exception in thread|Fatal Python error|ERROR: Unexpected"
    r"|\[[A-Z]\d{4} |\S+:\d+: \w*Warning:|\[\.\.\. \d+ bytes omitted)"
)
# CPython's last resort when it cannot print a traceback (e.g. "lost sys.stderr").
_OBJECT_DUMP_TYPE = re.compile(r"^object type name: (?P<type>\S+)\s*$", re.M)
_OBJECT_DUMP_REPR = re.compile(r"^object repr\s*: (?P<repr>.*)$", re.M)


@dataclass(frozen=True)
class PythonException:
    """The exception line of a printed traceback: type as printed, message (may span lines)."""

    type: str
    message: str | None


def parse_exception(text: str) -> PythonException | None:
    """The exception of the last uncaught traceback in `text` (chained: the last one)."""
    lines = text.splitlines()
    found: dict[str, PythonException] = {}
    for index, line in enumerate(lines):
        if not _TB_HEADER.match(line):
            continue
        exception = _exception_after(lines, index)
        if exception is not None:
            found[_traceback_context(lines, index)] = exception
    if "uncaught" in found:
        return found["uncaught"]
    # An exception in a thread does not end the process, but when nothing else was
    # printed it is the best clue; "Exception ignored" reports never are.
    if "thread" in found:
        return found["thread"]
    dumped = _OBJECT_DUMP_TYPE.search(text)
    if dumped:
        shown = _OBJECT_DUMP_REPR.search(text)
        return PythonException(dumped["type"], shown["repr"].strip() if shown else None)
    return None


def _exception_after(lines: list[str], header: int) -> PythonException | None:
    group = "Exception Group" in lines[header]
    index = header + 1
    while index < len(lines):
        line = _GROUP_PREFIX.sub("", lines[index]) if group else lines[index]
        if line[:1].isspace():
            index += 1
            continue
        match = _EXC_LINE.match(line.rstrip())
        if match is None:
            return None  # interleaved output: not a traceback we can trust
        message_lines = [match["message"]] if match["message"] is not None else []
        for extra in lines[index + 1 : index + _MAX_MESSAGE_LINES]:
            if group:
                # Inside a group every message line is prefixed; "+-+----" starts a member.
                if not _GROUP_PREFIX.match(extra):
                    break
                extra = _GROUP_PREFIX.sub("", extra)
            if not extra.strip() or _TB_HEADER.match(extra) or _MESSAGE_END.match(extra):
                break
            if not message_lines:
                break  # `KeyboardInterrupt` alone: what follows is other output
            message_lines.append(extra)
        message = "\n".join(message_lines).strip() or None
        return PythonException(match["type"], message)
    return None


def _traceback_context(lines: list[str], header: int) -> str:
    previous = lines[header - 1] if header > 0 else ""
    first_frame = lines[header + 1] if header + 1 < len(lines) else ""
    # Reports printed while the interpreter shuts down come after the real one:
    # "Exception ignored in ...", atexit errors, and weakref finalizers (which
    # print through sys.excepthook with no header at all).
    if (
        previous.startswith(("Exception ignored", "Error in atexit"))
        or "in _exitfunc" in first_frame
    ):
        return "ignored"
    if previous.startswith("Exception in thread"):
        return "thread"
    return "uncaught"


def last_line(text: str) -> str | None:
    """The last non-blank line of `text`, stripped (`sys.exit("msg")` prints only that)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return None
