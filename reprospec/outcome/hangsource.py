"""The text a hung thread's own line is read from, and what that line waits in.

faulthandler's dump says where a thread is, not whether it runs: a lock's wait and a sleep
both stop in C code, below the user's line. That line, read from the text the attempt ran,
says which: the classifier ranks a join's threads by it (hungstacks.py's `_stuck_rank`:
one on a lock before one that sleeps) and minimize compares two hangs by it
(minimize/hangplace.py's `place_of`). One reading for both: the two kept their own copies
of the comment rule and of the blocking calls, and they disagreed (`", ".join(parts)` read
as a join that waits, by the classifier alone).

The text is a `Source`'s, by the path the dump names: under the docker runner that is the
container's (`/work/...` for a workdir under /root, /opt, /usr or /var), which the host
must map back to the workdir (`source_at`), not read where it names (another file's line,
or none).
"""

from __future__ import annotations

import ast
import functools
import io
import posixpath
import re
import tokenize
from collections.abc import Callable, Iterable
from pathlib import Path

from reprospec.core.results import PythonFrame as Frame

# The text of the file a dump's frame names (`blocking_line` reads its line), as the attempt
# ran it: "" where there is no such file to read, for every attempt alike (`<string>`, a
# file gone); None where this attempt's text cannot be known (a candidate's file since
# rewritten, or removed): minimize's place is then `UNREAD`, no difference.
Source = Callable[[str], "str | None"]


def on_disk(path: str) -> str:
    """A file's text read where the dump names it, on this host ("" where it cannot be)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return ""


def remembered(source: Source) -> Source:
    """`source`, each file read once: a hang's dump is read several times over (its
    processes, the child it waits for, its threads' ranks as a sort's key), a file's line
    for each thread, so a join of N threads in one large module read it 3N times and
    more (review). For one attempt's readings: its files do not change meanwhile."""
    texts: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path not in texts:
            texts[path] = source(path)
        return texts[path]

    return read


def unread(path: str) -> str:
    """No file's text: a dump read again after its attempt (a report of a stored run, of a
    bundle on another machine, of a program since edited) has no files of the attempt's to
    read, and today's are not them."""
    del path
    return ""


def source_at(
    workdir: Path,
    files: Iterable[tuple[str, str]] = (),
    *,
    written: bool = True,
    container: str | None = None,
) -> Source:
    """The text of the files an attempt that ran in `workdir` had, by the path its dump names:
    `files` (a candidate's program files, by their path relative to the workdir) from
    there, every other file of the workdir from it, on this host, and a file elsewhere
    where the dump names it.

    A path is the workdir's as this host names it, by its real path, or, where the attempt
    ran in a container (`container`: the workdir as it named it, Execution's
    `container_workdir`: the docker runner's `/work` for a workdir under /root, /opt, /usr
    or /var), as the container does, which cannot be read on the host: every place there
    fell back to `main (in stuck)`, so a busy loop and a deadlock were one place under
    docker alone (review). Only there: a
    local attempt's `/work/...` is that host file, and read as the workdir's it was
    another file's line, or none (a workdir under /root and a module under /work/lib).
    The text is the attempt's, not the folder's when the place is read: a live search
    (run.preload) rewrites one folder for each candidate, and a stored probe read again
    (probes.reread) read the last candidate's lines. The text of a file of a folder gone
    (but `files`) is unknown (None), and so, `written` False, is that of the folder's own
    files (no link to the original's): not this attempt's (that live folder, read again).
    A container's file outside its workdir (the interpreter's threading.py, the image's
    packages) is the image's, no file of this host's: none to read (""), where the host's
    file at that path, of another version, said anything at that line."""
    own = dict(files)
    roots: list[str] = []  # each ending in "/"
    named = (workdir.as_posix(), workdir.resolve().as_posix())
    for root in (*named, container) if container is not None else named:
        root = root.rstrip("/") + "/"
        if root not in roots:
            roots.append(root)

    def read(path: str) -> str | None:
        for root in roots:
            if not path.startswith(root):
                continue
            relative = posixpath.normpath(path[len(root) :])
            if relative.startswith("../"):
                continue
            if relative in own:
                return own[relative]
            host = workdir / relative
            if not workdir.is_dir() or (not written and host.is_file() and not host.is_symlink()):
                return None
            return on_disk(str(host))
        return "" if container is not None else on_disk(path)

    return remembered(read)


def code_at(frame: Frame, *, source: Source) -> str | None:
    """The line of its file a frame is at, as `source` has it, up to its comment and
    stripped: "" where there is no such file or line, None where the attempt's text is
    unknown."""
    if frame.line < 1:
        return ""
    text = source(frame.path)
    if text is None:
        return None
    lines = _numbered(text)
    line = lines[frame.line - 1] if frame.line <= len(lines) else ""
    return _without_comment(line).strip()


def loop_at(frame: Frame, *, source: Source) -> tuple[str, ...]:
    """The loop a frame's line is in, as `source` has it: the outermost `while` or `for`
    of its function that holds the line (`_loops`, read with `ast`: a header split over
    lines, `while (\n w.is_alive()\n ...\n):`, a loop in a loop, a body of any length), from
    its header to its last line, each line up to its comment and stripped, blank ones
    left out; () where the line is in no loop, or cannot be read. Where the text is no
    Python `ast` parses, the innermost loop above it by indentation (`_loop_by_indent`).
    What a sleep loop polls is said there (hungstacks' `_polls_a_thread`): `while
    w.is_alive():`, or an `if not w.is_alive(): break` in it, or in an outer loop."""
    if frame.line < 1:
        return ()
    text = source(frame.path)
    if not text:
        return ()
    lines = _numbered(text)
    if frame.line > len(lines):
        return ()
    parsed = _loops(text)
    if parsed is None:
        body = _loop_by_indent(lines, frame.line)
    else:
        loops, scopes = parsed
        scope = max((first for first, last in scopes if first < frame.line <= last), default=0)
        held = [(first, last) for first, last in loops if scope < first <= frame.line <= last]
        if not held:
            return ()
        first, last = min(held)
        body = list(lines[first - 1 : last])
    return tuple(code for line in body if (code := _without_comment(line).strip()))


def under_timeout(frame: Frame, *, source: Source) -> bool:
    """Whether a frame's line is in the body of a `with` (or `async with`) of a timeout
    in its own function, as `source` has it: `async with asyncio.timeout(1): await
    ev.wait()`, which leaves no frame of its own in a task's stack (`asyncio.timeout`,
    `timeout_at`, async_timeout's `timeout`, anyio's `fail_after` and `move_on_after`).
    False where the text cannot be read or parsed."""
    text = source(frame.path) if frame.line >= 1 else None
    if not text:
        return False
    parsed = _timeout_blocks(text)
    if parsed is None:
        return False
    blocks, scopes = parsed
    scope = max((first for first, last in scopes if first < frame.line <= last), default=0)
    return any(scope < first < frame.line <= last for first, last in blocks)


# The calls a timeout's `with` names (its last dotted part).
_TIMEOUTS = frozenset(
    {"timeout", "timeout_at", "fail_after", "fail_at", "move_on_after", "move_on_at"}
)


@functools.lru_cache(maxsize=8)
def _timeout_blocks(text: str) -> tuple[_Spans, _Spans] | None:
    """A file's `with` statements of a timeout (`_TIMEOUTS`) and its scopes, each from its
    first line to its last; None where `ast` cannot parse it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    blocks: list[tuple[int, int]] = []
    scopes: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
            isinstance(call := item.context_expr, ast.Call) and _called_name(call) in _TIMEOUTS
            for item in node.items
        ):
            blocks.append((node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            scopes.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(blocks), tuple(scopes)


def _called_name(call: ast.Call) -> str:
    """The name a call calls by (`asyncio.timeout(1)`'s `timeout`), "" where none."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else ""


def _loop_by_indent(lines: tuple[str, ...], number: int) -> list[str]:
    """`loop_at`'s loop of line `number` where the text cannot be parsed: the innermost
    `while` or `for` line above it (within `_LOOP_REACH` lines, less indented; the line
    itself for a one-line loop, `while w.is_alive(): time.sleep(0.1)`) and that loop's
    body (up to `_LOOP_REACH` lines); [] where the line is in no loop so near."""
    start, indent = number - 1, _indent(lines[number - 1])
    while not _LOOP.match(lines[start].strip()):
        start -= 1
        # Blank lines and deeper ones (an `if`'s body above the sleep) are the loop's body.
        while start >= 0 and (not lines[start].strip() or _indent(lines[start]) >= indent):
            start -= 1
        if start < 0 or number - 1 - start > _LOOP_REACH or _SCOPE.match(lines[start].strip()):
            return []
        indent = _indent(lines[start])
    body = [lines[start]]
    for line in lines[start + 1 : start + 1 + _LOOP_REACH]:
        if line.strip() and _indent(line) <= _indent(lines[start]):
            break
        body.append(line)
    return body


# How far a loop's line may sit above a frame's line, and how much of its body is read,
# where the text is read by indentation (`_loop_by_indent`).
_LOOP_REACH = 12
_LOOP = re.compile(r"(?:async\s+)?(?:while|for)\b")
_SCOPE = re.compile(r"(?:async\s+)?(?:def|class)\b")

_Spans = tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=8)
def _loops(text: str) -> tuple[_Spans, _Spans] | None:
    """A file's loops (`while`, `for`, `async for`) and scopes (functions, classes,
    lambdas), each from its first line to its last; None where `ast` cannot parse it.
    Kept for the few texts last read, as `_numbered` is."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    loops: list[tuple[int, int]] = []
    scopes: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.While, ast.For, ast.AsyncFor)):
            loops.append((node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            scopes.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(loops), tuple(scopes)


@functools.lru_cache(maxsize=8)
def _numbered(text: str) -> tuple[str, ...]:
    """The lines of a file's text as Python numbers them (split at LF, CRLF or CR), not
    `splitlines`'s (a form feed). Kept for the few texts last split: each thread's line of
    one file is read from one text (a `remembered` source's, the same string)."""
    return tuple(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def blocking_line(frame: Frame, *, source: Source) -> str | None:
    """What a thread waits in where its own line blocks in C code, read from that line of
    its file (its text `source`'s): `with` (a lock's, or a condition's, `with lock:`), or
    the blocking call the line makes, by name (`acquire()`, `sleep()`, `recv()`); "" where
    the line runs Python (`while True: pass`, `x += 1`, a call of nothing that blocks) or
    cannot be read (no such file or line); None where the attempt's text is unknown.

    faulthandler's dump says where a thread is, not whether it runs: under one `main()` a
    busy loop and a lock's deadlock were both `main` (`main (in stuck)` in words alone), so
    a candidate that turned the deadlock into an endless loop hung "where the original did".
    Names, not the line's text, are compared: the literals of `time.sleep(100)` shrink."""
    code = code_at(frame, source=source)
    if not code:
        return code
    if _WITH.match(code):
        return WITH
    names = [name for name in _CALLED.findall(code) if name in BLOCKING_CALLS]
    return called(names[-1]) if names else ""


# `blocking_line`'s words, which its readers compare with (hungstacks' ranking): a `with`
# statement's, and a blocking call's by its name (`acquire()`, `sleep()`).
WITH = "with"


def called(name: str) -> str:
    """`blocking_line`'s word for a line that calls `name` (`sleep()`)."""
    return f"{name}()"


def _without_comment(line: str) -> str:
    """`line` up to its comment, by Python's tokenizer: a `#` inside a string is no comment
    (`print("#"); time.sleep(9)` read as a busy loop where the line was cut at it). A line
    the tokenizer cannot read alone (inside a string that spans lines) is kept whole."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[: token.start[1]]
    except (tokenize.TokenError, SyntaxError):
        pass  # an open bracket or string: read up to where it stopped, the rest kept
    return line


_WITH = re.compile(r"(?:async\s+)?with\b")
_CALLED = re.compile(r"(\w+)\s*\(")
# The calls that block in C code until another thread or process acts (threading's lock,
# time's sleep, a socket's, a pipe's or a child's wait), by the name a line calls them by.
# Not `join`, `get` or `put`: a thread's join and a queue's get wait in the library's Python
# frames (`BLOCKING`), and `", ".join`, a dict's get, run.
BLOCKING_CALLS = frozenset(
    (
        "acquire",
        "sleep",
        "wait",
        "waitpid",
        "wait4",
        "recv",
        "recv_into",
        "recvfrom",
        "accept",
        "read",
        "readline",
        "readinto",
        "select",
        "poll",
        "pause",
        "sigwait",
        "input",
        "lockf",
        "flock",
    )
)


# Whom a `BLOCKING` call waits for: another thread of the process (a lock, a join, a
# queue's or a future's wait), or anything else (a child, a socket's peer, a file).
THREAD = "thread"
OTHER = "other"

# The library's calls that block a thread until another thread or process acts, by their
# file's last parts and function (the innermost library frame of a waiting thread), and whom
# each waits for: a thread in one of them waits there at every dump, where one in any other
# library frame (json's encoder, re's compile, threading's `enumerate` in a busy loop) is
# only passing through it. The one table of them: minimize compares two hangs by it
# (`blocks`), the classifier ranks a join's threads by it (`waits_for_a_thread`); a second
# table of the thread waits' files alone, beside it, ranked a busy thread caught in
# threading's `enumerate` as one blocked for good, and titled the hang by it (review).
BLOCKING = (
    (
        "threading.py",
        (
            "wait",
            "wait_for",
            "acquire",
            "_acquire_restore",
            "__enter__",
            "join",
            "_wait_for_tstate_lock",
        ),
        THREAD,
    ),
    ("queue.py", ("get", "put", "join"), THREAD),
    ("concurrent/futures/_base.py", ("result", "wait", "as_completed"), THREAD),
    ("selectors.py", ("select",), OTHER),
    ("subprocess.py", ("_try_wait", "wait", "_wait", "communicate", "_communicate"), OTHER),
    (
        "multiprocessing/connection.py",
        ("_recv", "recv", "_recv_bytes", "poll", "wait", "accept"),
        OTHER,
    ),
    ("multiprocessing/synchronize.py", ("acquire", "wait", "__enter__"), OTHER),
    ("socket.py", ("accept", "readinto"), OTHER),
)


def in_file(frame: Frame, path: str) -> bool:
    """Whether a frame is in the file `path` names by its last parts (`threading.py`,
    `multiprocessing/connection.py`): the whole path or its end after a `/` (py-spy names
    the library's files short), never a file whose name only ends so (`mythreading.py`,
    `websocket.py`), which was taken for the library's (review)."""
    return frame.path == path or frame.path.endswith("/" + path)


def blocks(frame: Frame) -> bool:
    """Whether a library frame is one of `BLOCKING`'s calls (`in_file`: `mythreading.py`'s
    `wait` is none)."""
    return _waits_for(frame) is not None


def waits_for_a_thread(frame: Frame) -> bool:
    """Whether a library frame is one of `BLOCKING`'s calls that wait for another thread
    (a lock's, a join's, a queue's or a future's wait)."""
    return _waits_for(frame) == THREAD


def _waits_for(frame: Frame) -> str | None:
    """Whom the `BLOCKING` call a library frame is in waits for; None where it is none."""
    return next(
        (
            whom
            for path, names, whom in BLOCKING
            if in_file(frame, path) and frame.function in names
        ),
        None,
    )


__all__ = [
    "BLOCKING",
    "BLOCKING_CALLS",
    "OTHER",
    "THREAD",
    "WITH",
    "Source",
    "blocking_line",
    "blocks",
    "called",
    "code_at",
    "in_file",
    "loop_at",
    "on_disk",
    "remembered",
    "source_at",
    "unread",
    "waits_for_a_thread",
]
