"""Log text made fit for a bug report: control noise removed, the relevant lines kept."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence

from reprospec.core.lazyre import Lazy

# The patterns are strings, compiled on first use (re caches them): `validate` and `plan`
# start without compiling those only a run's logs need.

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks), two-byte escapes.
_ANSI = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[@-Z\\-_]"
)
# The one pattern of a terminal escape: the output scanner (a line for the markers), preset
# detection, the classifier's messages, a docker build's log and a pasted ticket all take
# them out with it, so no two of them read one line two ways (a title escape left in a
# line by one copy, a `\x1b[<u` by another). Compiled at its first use, as `Lazy` is:
# the output scanner calls it on every line an attempt prints.
_ESCAPES = Lazy(_ANSI)
# C0 controls other than tab and newline; \r is handled before this runs.
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f]"
# What a traceback is titled (rich's box has it too, with no colon), and the line CPython
# prints before an uncaught exception's frames: one literal for every reader that asks
# whether a text holds a traceback.
TRACEBACK_TITLE = "Traceback (most recent call last)"
TRACEBACK_HEADER = f"{TRACEBACK_TITLE}:"
_ANCHORS = (TRACEBACK_HEADER, "Fatal Python error:")


def without_escapes(text: str) -> str:
    """`text` without its terminal escapes (colours, cursor moves, titles): as a program's
    words read, in a log a CI service or a terminal coloured."""
    return _ESCAPES.sub("", text)


def clean_log(text: str) -> str:
    """Drop ANSI escapes, NUL and control bytes; collapse `\\r` redraws to their final state."""
    control = re.compile(_CONTROL)  # (once per log: re's cache is looked up here, not per line)
    text = without_escapes(text.replace("\r\n", "\n"))
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            # A progress bar redraws after each \r: a terminal shows the last non-empty draw.
            parts = [part for part in line.split("\r") if part.strip()]
            line = parts[-1] if parts else ""
        lines.append(control.sub("", line).rstrip())
    return "\n".join(lines)


def _trim(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]}… (+{len(line) - width} chars)"


def _collapse_repeats(lines: list[str]) -> list[str]:
    """Identical consecutive lines become one line and a count: a flood cannot fill the excerpt."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        out.append(lines[i])
        # Blank lines are one blank line: faulthandler's report of a thread with no Python
        # state is two, which read "[previous line repeated 1 more times]" under nothing.
        if j > i and lines[i].strip():
            times = "time" if j - i == 1 else "times"
            out.append(f"[previous line repeated {j - i} more {times}]")
        i = j + 1
    return out


_KEY_LINES = ("ERROR: Unexpected ", "Fatal Python error:")
# The line core/capped.py puts where a log's middle was not read (a log is read as its
# head and tail): lines were left out there too, but how many is not known.
_UNREAD = r"^\[\.\.\. (\d+) bytes omitted \.\.\.\]$"


def _omitted(dropped: list[str], where: str) -> str:
    """`… (N earlier lines omitted)` (`1 earlier line`), true also when the dropped lines hold
    an unread middle.

    Counting the lines read would undercount: a 5,000-line log read as its head and
    tail said "4725 earlier lines omitted" where 4961 were. The unread bytes are
    named instead, as the bytes they are.
    """
    # Here, not at the top: `validate` and `plan` import this module, and words' own
    # imports only a log with lines left out needs (as atomicfile.unsaved_sentence's).
    from reprospec.core.words import plural

    marks = (line for line in dropped if line.startswith("[... "))
    unread = [int(m[1]) for line in marks if (m := re.match(_UNREAD, line))]
    count = len(dropped) - len(unread)
    lines = plural(count, f"{where}line")
    if not unread:
        return f"… ({lines} omitted)"
    # A gap that is only the unread middle's mark (a key line kept right above it) read
    # "0 earlier lines and 5000 unread bytes omitted": the bytes are said alone.
    if count == 0:
        return f"… ({plural(sum(unread), 'unread byte')} omitted)"
    return f"… ({lines} and {plural(sum(unread), 'unread byte')} omitted)"


def _frame_start(lines: list[str], start: int) -> int:
    """`start`, or the `File "..."` line of the frame `start` falls inside: a window of a
    log's last lines began on a frame's `^^^^` line (or its source line), the `File` line
    that says where it is left out above it. That line is looked for above `start` (up to
    3 lines: the window then grows by them), else just below it (the frame skipped); only
    indented lines are walked, so a log indented as a whole keeps its start."""
    if start < len(lines) and lines[start].startswith("    "):
        for i in range(start - 1, max(start - 4, -1), -1):
            if lines[i].startswith('  File "'):
                return i
            if not lines[i].startswith("    "):
                break
    for i in range(start, min(start + 4, len(lines))):
        line = lines[i]
        if line.startswith('  File "') and i > start:
            return i
        if not line.startswith("    "):
            return start
    return start


def _stretch(
    dropped: list[str], where: str, seen: set[str], shown: set[str], *, counted: bool
) -> list[str]:
    """A stretch of lines left out: its omission marks, with the key lines kept in their places.

    The one line a DataLoader worker prints as it dies says more than the main process's
    varying last exception, so it is kept even far above the window. It stands where it
    was, between the marks of the lines left out above and below it: put on top of one
    `… (3 earlier lines omitted)` that counted it, torch's `ERROR: Unexpected segmentation
    fault` read as if three lines had come between it and the traceback right under it.
    The stretches of one excerpt (the lines above its window, a long traceback's middle)
    share `seen`: 3 distinct key lines in all, each once, and none the excerpt's `shown`
    lines hold already (several workers dying print the same line). `where` words the
    first mark (`earlier `); `counted`: the marks give the count, else they are a bare `…`
    (the lines above a long traceback, as that window has always marked them).
    """
    pieces: list[str] = []
    gap_start = 0

    def mark(gap: list[str]) -> None:
        if len(gap) == 1 and not re.match(_UNREAD, gap[0]):
            pieces.append(gap[0])  # its mark would take its place: the line says more
        elif gap:
            pieces.append(_omitted(gap, "" if pieces else where) if counted else "…")

    for i, line in enumerate(dropped):
        key = line.lstrip().startswith(_KEY_LINES)
        if key and line not in shown and line not in seen and len(seen) < 3:
            mark(dropped[gap_start:i])
            pieces.append(line)
            seen.add(line)
            gap_start = i + 1
    mark(dropped[gap_start:])
    return pieces


def excerpt(text: str, max_lines: int = 40, width: int = 240) -> str:
    """The most relevant lines of a log: the last traceback and the tail, cleaned and trimmed."""
    lines = clean_log(text).split("\n")
    # Blank lines around the log first: collapsed, they would read as a repeated line.
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    lines = _collapse_repeats(lines)
    anchor = max(
        (i for i, line in enumerate(lines) if line.lstrip().startswith(_ANCHORS)), default=None
    )
    seen: set[str] = set()  # the key lines kept out of the stretches left out
    if len(lines) <= max_lines:
        kept = lines
    elif anchor is not None and len(lines) - anchor > max_lines:
        # A traceback longer than the budget: its start says where, its end says what.
        head = max_lines // 2
        # Its frame's `File` line above may reach back into the head: never before its end.
        tail = max(anchor + head, _frame_start(lines, len(lines) - (max_lines - head)))
        shown = {*lines[anchor : anchor + head], *lines[tail:]}
        kept = [
            *_stretch(lines[:anchor], "earlier ", seen, shown, counted=False),
            *lines[anchor : anchor + head],
            # A key line in the traceback's middle (rare) stands in its place there too.
            *_stretch(lines[anchor + head : tail], "", seen, shown, counted=True),
            *lines[tail:],
        ]
    else:
        start = _frame_start(lines, len(lines) - max_lines)
        shown = set(lines[start:])
        kept = [*_stretch(lines[:start], "earlier ", seen, shown, counted=True), *lines[start:]]
    return "\n".join(_trim(line, width) for line in kept)


# `quoted(both=True)` gives each log this many lines, so that both together stay about as
# short as the excerpt of one.
TAIL_LINES = 15


def quoted(logs: Mapping[str, str], *, both: bool = False) -> str:
    """What a report quotes of named logs: the first with content's `excerpt` ('' when silent).

    `both`: where every log has content, the tail of each, shorter, under its name as
    `tail` heads several files (a hang: what it printed last, on any stream, says where):

        ==> stderr.log <==
        train.py:2: UserWarning: ...

        ==> stdout.log <==
        train step 4
    """
    if both and all(text.strip() for text in logs.values()):
        return "\n\n".join(
            f"==> {name} <==\n{excerpt(text, TAIL_LINES)}" for name, text in logs.items()
        )
    for text in logs.values():
        lines = excerpt(text)
        if lines.strip():
            return lines
    return ""


# What a terminal (or a markdown viewer) would act on instead of showing: C0 controls,
# DEL, C1 controls (0x9b is CSI on some terminals), and the bidirectional overrides
# and isolates that make text read in another order than it runs ("Trojan Source").
_UNPRINTABLE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_UNPRINTABLE_OR_NEWLINE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"


def _escaped(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape(match: re.Match[str]) -> str:
    return _escaped(ord(match.group()))


# ASCII text (most text) can hold only the C0 controls and DEL of those: its escapes, for
# str.translate, which needs no pattern compiled (0.2-0.4 ms of `plan`'s start-up).
_ASCII_ESCAPES = {code: _escaped(code) for code in (*range(0x09), *range(0x0B, 0x20), 0x7F)}
_ASCII_ESCAPES_OR_NEWLINE = {**_ASCII_ESCAPES, 0x09: _escaped(0x09), 0x0A: _escaped(0x0A)}


def printable(text: str, *, one_line: bool = False) -> str:
    r"""`text` with every control character written out (`\x1b`, `\u202e`): shown, never obeyed.

    Text from a spec or a child (a matrix value, an event's phase, an exception
    message) reaches terminals and reports; an escape sequence in it must read as
    text, not move the cursor, retitle the window or hide what follows. Tabs and
    newlines stay, unless `one_line` (a table cell, a progress line) asks for them too.
    """
    if text.isprintable():
        # Nothing to write out (every character either table or pattern names is one
        # `isprintable` refuses): the common case, a progress line per attempt, at the cost
        # of one pass in C, where the translation built a copy through a dict per character.
        return text
    if text.isascii():
        return text.translate(_ASCII_ESCAPES_OR_NEWLINE if one_line else _ASCII_ESCAPES)
    return re.sub(_UNPRINTABLE_OR_NEWLINE if one_line else _UNPRINTABLE, _escape, text)


def undecodable_byte(text: str) -> int | None:
    """The first byte of `text` that was not UTF-8 where it came from (a path, an argument or
    a variable, which Python reads with each such byte as a lone surrogate), or None.

    What a run records (results.json, the store, a spec) is UTF-8: a surrogate there ends
    the writing with a UnicodeEncodeError, which the engine refuses ahead of instead."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        surrogate = ord(text[exc.start])
        return surrogate - 0xDC00 if 0xDC80 <= surrogate <= 0xDCFF else surrogate
    return None


# What a path that is not UTF-8 is refused with, where a run records it.
_RECORDED = "reprospec records it in UTF-8 (a run's store, results.json): rename the folder"


def not_utf8(what: str, text: str, *, shown: bool = True, then: str = _RECORDED) -> str | None:
    r"""`TEXT: WHAT is not UTF-8 (byte 0xNN): THEN`, the one message for a path or a word
    holding a byte that is not UTF-8 (its bytes written out, `d\xffir`); None where `text`
    is UTF-8. `shown=False` leaves TEXT out (a variable's value, which may be a secret).
    Each caller raises it as its own error (a usage error, a spec's problem, an attempt's
    infra-error)."""
    byte = undecodable_byte(text)
    if byte is None:
        return None
    head = f"{printable(with_bytes_written(text))}: {what}" if shown else what
    return f"{head} is not UTF-8 (byte 0x{byte:02x}): {then}"


# faulthandler's (and a traceback's, under backslashreplace) escape of a character it does
# not write as ASCII: `\xe9`, `\u4e2d`, `\U0001f600`; a byte that was not UTF-8 (a lone
# surrogate, as Python reads such a file name) `\udc80`.
_PYTHON_ESCAPE = Lazy(r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|U([0-9a-f]{8}))")


def _character(match: re.Match[str]) -> str:
    code = int(next(group for group in match.groups() if group is not None), 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return "\ufffd"
    # A control character (`\x0a`, `\x1b`, `\x85`, `\u2028`) stays escaped: a name holding
    # it split the one-line `hang in ...` headline and a captured spec's title.
    character = chr(code)
    return character if character.isprintable() else match.group()


def unescaped_name(text: str) -> str:
    r"""A file or function name as a stack dump escapes it (faulthandler writes every
    character that is not ASCII as `\xe9`, `\u4e2d`): the characters themselves, and each
    byte that was not UTF-8 (`\udc80`) as U+FFFD, as the report shows the output's other
    undecodable bytes; a character that is not printable as its escape. The headline read
    `hang in <module> (w\udc80x.py:2)`."""
    return _PYTHON_ESCAPE.sub(_character, text) if "\\" in text else text


def with_bytes_written(text: str) -> str:
    r"""`text` with each byte that was not UTF-8 written out as `\xff`, as a shell's $'...'
    would give it: shown, where a lone surrogate reads `\udcff`."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte was read as
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def shell_join(words: Sequence[str]) -> str:
    r"""shlex.join, where a word holding bytes that are not UTF-8 (a lone surrogate each) is
    written in bash's `$'...'` quoting (`$'b\xfe.tar.gz'`): a command line recorded in UTF-8
    (results.json, the store) that a reader pastes into bash and runs on the same bytes;
    shlex.join kept the surrogate, which ended `run` with an internal UnicodeEncodeError."""
    return " ".join(_shell_word(word) for word in words)


def shell_line(words: Sequence[str]) -> str:
    r"""`shell_join` on one line: a word holding a line break or another control character
    (`python -c 'import os<newline>os.abort()'`) written in bash's `$'...'` quoting,
    `$'import os\nos.abort()'`. Where a line can hold no break, a captured spec's header
    comment, the break became a blank there: `-c 'import os os.abort()'`, a command that
    never ran."""
    return " ".join(_shell_word(word, one_line=True) for word in words)


def shell_split(line: str) -> list[str]:
    r"""The words of `line`, the inverse of `shell_join`: shlex.split, where a `$'...'` word
    (bash's quoting, `$'b\xfe.tar.gz'`) is read back to the bytes it names, those that are
    not UTF-8 a lone surrogate each. shlex read it as `$` and a quoted `b\xfe.tar.gz`, so a
    rejoined line named another file: each such word is handed to shlex single-quoted, as
    the text its bytes make. ValueError where a quotation is not closed."""
    lexer = shlex.shlex(_ansi_c_requoted(line), posix=True)
    lexer.whitespace_split = True
    lexer.whitespace = _BLANKS
    lexer.commenters = ""
    # A word's bytes as the program gets them: `$'\xc3'$'\xa9'` is one é.
    return [
        word.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape") for word in lexer
    ]


# What separates words, as shell_split has always read them.
_BLANKS = " \t\n\r\f\v"


def words_before(line: str, at: int) -> tuple[list[str], bool]:
    r"""The words of `line[:at]`, and whether a word of its own starts at `at`: not inside
    another (`a\ --`, an escaped blank joins them into one word). ValueError where `at` is
    inside a quotation (`-k 'a -- b'`). What a reader of a typed command line asks before
    it takes an option out or puts one in as text, keeping the user's own quoting: merge
    (a shard's `-j`) and How to reproduce (`--python` before a lone `--`) ask it alike."""
    before = line[:at]
    words = shell_split(before)
    # A letter put at `at` is a word more where one starts there; after an escaped blank
    # or a closing quote (`'a'x`) it is the same word's.
    return words, len(shell_split(before + "x")) == len(words) + 1


def _ansi_c_requoted(line: str) -> str:
    """`line` with each `$'...'` outside other quotes written in shlex's single quotes."""
    parts: list[str] = []
    at = start = 0
    end = len(line)
    while at < end:
        char = line[at]
        if char == "\\":
            at += 2
        elif char == "'":
            close = line.find("'", at + 1)
            at = end if close < 0 else close + 1  # unclosed: shlex says so
        elif char == '"':
            at += 1
            while at < end and line[at] != '"':
                at += 2 if line[at] == "\\" else 1
            at += 1
        elif line.startswith("$'", at):
            close, data = _ansi_c(line, at + 2)
            parts += [line[start:at], shlex.quote(data.decode("utf-8", "surrogateescape"))]
            at = start = close + 1
        else:
            at += 1
    return "".join([*parts, line[start:]])


_ANSI_C = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}


def _ansi_c(line: str, at: int) -> tuple[int, bytes]:
    """The bytes of the `$'...'` word whose text starts at `at`, and where its `'` is."""
    data = bytearray()
    end = len(line)
    while True:
        if at >= end:
            raise ValueError("No closing quotation")
        char = line[at]
        if char == "'":
            return at, bytes(data)
        if char != "\\" or at + 1 >= end:
            data += char.encode("utf-8", "surrogateescape")
            at += 1
            continue
        code = line[at + 1]
        if code == "x":
            digits = ""
            while len(digits) < 2 and at + 2 + len(digits) < end:
                if line[at + 2 + len(digits)] not in "0123456789abcdefABCDEF":
                    break
                digits += line[at + 2 + len(digits)]
            if digits:
                data.append(int(digits, 16))
                at += 2 + len(digits)
                continue
            data += b"\\x"
        elif code in "01234567":
            digits = code
            while len(digits) < 3 and at + 1 + len(digits) < end:
                if line[at + 1 + len(digits)] not in "01234567":
                    break
                digits += line[at + 1 + len(digits)]
            data.append(int(digits, 8) & 0xFF)
            at += 1 + len(digits)
            continue
        elif code in _ANSI_C:
            data.append(_ANSI_C[code])
        elif code in "\\'\"?":
            data += code.encode()
        else:  # bash keeps an unknown escape as it is
            data += ("\\" + code).encode("utf-8", "surrogateescape")
        at += 2


# The letter escapes `_shell_word` writes in a word on one line, read back by `_ansi_c`: of
# its table, the control characters a command holds most (a line break, a tab, a carriage
# return); bash's `\'` and `\\` for the quote and the backslash.
_ANSI_C_LETTERS = {
    **{chr(_ANSI_C[letter]): "\\" + letter for letter in "ntr"},
    "'": "\\'",
    "\\": "\\\\",
}


def _ansi_c_word(word: str, keep: Callable[[str], bool], letters: Mapping[str, str]) -> str:
    r"""`word` in bash's `$'...'` quoting, as `_ansi_c` reads it back: each character `keep`
    holds as it is, another by its escape in `letters`, else as its bytes (UTF-8, a lone
    surrogate the byte that was not), `\xNN` each."""
    quoted = "".join(
        char
        if keep(char)
        else letters.get(char)
        or "".join(f"\\x{b:02x}" for b in char.encode("utf-8", "surrogateescape"))
        for char in word
    )
    return f"$'{quoted}'"


def _shell_word(word: str, *, one_line: bool = False) -> str:
    if undecodable_byte(word) is None:
        if not (one_line and any(not char.isprintable() for char in word)):
            return shlex.quote(word)
        # A character printable as it is (é) stays; another is written as its UTF-8 bytes.
        return _ansi_c_word(
            word, lambda char: char.isprintable() and char not in _ANSI_C_LETTERS, _ANSI_C_LETTERS
        )
    # Bytes that are not UTF-8: each byte but printable ASCII (its quote and backslash too)
    # written as `\xNN`, é's two as well.
    return _ansi_c_word(word, lambda char: " " <= char < "\x7f" and char not in "'\\", {})
