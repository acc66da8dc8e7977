"""Where a hang sits, as minimize compares two of them: the same failure, for the same reason.

A crash keeps its place in its signature (`crash:SIGSEGV:main:frame`); a hang's signature is
`hang`, wherever it sits. A user's two-lock deadlock (threads w1 and w2, each waiting in its
`with` for the lock the other holds) was minimized to one thread waiting on a
`threading.Barrier` no other thread reached: no lock left, "fails as hang in 20/20", and its
report kept the original's title. Here a hang's place is read from the attempt's stack dump
(stack.txt), as `Outcome.hung_in` is (outcome/hungstacks.py's `hung_threads`): each hung
thread's outermost function of the program's own code (a busy thread's innermost one
changes from dump to dump; the main thread's below its `<module>`), and where it waits in
a blocking call of the library, its innermost one and what it waits in below it (the
library's frames: Barrier.wait's threading.py frames; where its own line waits in C code,
a lock's `with`, a sleep, that line's blocking call, `blocking_line`).
Line numbers are left out (the program shrinks), and so are its files' paths (each
candidate runs in its own folder).

A place is text, stored with each probe's attempts (StoredProbe.places), so that a replayed
search compares what the first one compared: `UNREAD` ("") where no stacks were read (no
dump, an older state, not a hang): never a difference, as native.agrees treats unread
native stacks; `NOWHERE` where the stacks show no thread in the program's own code to hang
in: a child that is no Python program (`subprocess` running `sleep`), a root with no frame
of its own code, a main thread that waits at exit for no thread in it. (A main thread that
left the program's code and waits at exit for threads it never joined hangs in those
threads, as a join's.)
"""

from __future__ import annotations

import io
import posixpath
import re
import tokenize
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from reprospec.core.results import AttemptResult
from reprospec.outcome.hungstacks import Frame, hung_threads, in_file
from reprospec.process.childprotocol import STACK_TXT

UNREAD = ""
NOWHERE = "no frame of the program's own code"

# The text of the file a dump's frame names (`blocking_line` reads its line), as the attempt
# ran it: "" where there is no such file to read, for every attempt alike (`<string>`, a
# file gone); None where this attempt's text cannot be known (a candidate's file since
# rewritten, or removed): its place is then `UNREAD`, no difference.
Source = Callable[[str], "str | None"]


def on_disk(path: str) -> str:
    """A file's text read where the dump names it, on this host ("" where it cannot be)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return ""


def source_at(
    workdir: Path,
    files: Iterable[tuple[str, str]] = (),
    *,
    written: bool = True,
    docker: bool = False,
) -> Source:
    """The text of the files an attempt that ran in `workdir` had, by the path its dump names:
    `files` (a candidate's program files, by their path relative to the workdir) from
    there, every other file of the workdir from it, on this host, and a file elsewhere
    where the dump names it.

    A path is the workdir's as this host names it, by its real path, or, where the attempt
    ran in the docker runner's container (`docker`), as the container does
    (`container_workdir`: `/work` for a workdir under /root, /opt, /usr or /var), which
    cannot be read on the host: every place there fell back to `main (in stuck)`, so a
    busy loop and a deadlock were one place under docker alone (review). Only there: a
    local attempt's `/work/...` is that host file, and read as the workdir's it was
    another file's line, or none (a workdir under /root and a module under /work/lib).
    The text is the attempt's, not the folder's when the place is read: a live search
    (run.preload) rewrites one folder for each candidate, and a stored probe read again
    (probes.reread) read the last candidate's lines. The text of a file of a folder gone
    (but `files`) is unknown (None), and so, `written` False, is that of the folder's own
    files (no link to the original's): not this attempt's (that live folder, read again)."""
    from reprospec.runners.docker.container import container_workdir

    own = dict(files)
    roots: list[str] = []  # each ending in "/"
    for folder in (workdir, workdir.resolve()):
        named = (folder.as_posix(), container_workdir(folder)) if docker else (folder.as_posix(),)
        for root in named:
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
        return on_disk(path)

    return read


def place_of(stack: str | None, source: Source = on_disk) -> str:
    """A hang's place read from its stack dump: `w1 -> with, w2 -> with` (a deadlock of
    two threads, each in its `with` for a lock; `w1, w2` where their file cannot be read),
    `w2 -> threading.py:wait -> threading.py:_wait -> threading.py:wait` (a Barrier's
    wait, the outermost call first); `UNREAD` or `NOWHERE`.

    A thread is named by its outermost function of the program's own (the thread's target,
    the main thread's outermost function below its `<module>`: `main`, `train`, a test;
    `<module>` where it hangs at module level), not its innermost: a busy thread (an
    endless loop, a livelock) is caught wherever it runs, in `step` in one dump and in
    `check` in the next, or in json's encoder at one depth and its decoder at another, and
    a lone busy thread read so was another hang at almost every sighting (review). Its
    innermost is said beside it for the words (`main (in stuck)`), not compared
    (`_entries`). Only where it waits in a known blocking call of the library
    (`_BLOCKING`: threading's waits, a queue's get, selectors' select, a child's wait) are
    its innermost function and the library frames it waits in compared too, so one thread
    at a Barrier still differs from the same thread on a lock; and so are they where its
    own line waits in C code (`blocking_line`: `main -> stuck -> with`, a lock's), so a
    busy loop (`main (in stuck)`) and a deadlock under one `main()` differ. That line is
    read from `source`, the attempt's own text (`source_at`); `UNREAD` where it cannot be
    known."""
    threads = hung_threads(stack)
    if threads is None:
        return UNREAD
    if not threads:
        return NOWHERE
    said = []
    for frame, waiting, outermost in threads:
        names = [outermost.function]
        blocked = "" if waiting else blocking_line(frame, source)
        if blocked is None:
            return UNREAD
        if waiting and _blocks(waiting[0]):
            if frame != outermost:
                names.append(frame.function)
            names += [f"{f.path.rsplit('/', 1)[-1]}:{f.function}" for f in reversed(waiting)]
        elif blocked:
            if frame != outermost:
                names.append(frame.function)
            names.append(blocked)
        elif frame.function != outermost.function:
            names[0] += f"{_IN}{frame.function})"
        said.append(" -> ".join(names))
    return ", ".join(sorted(said))


def blocking_line(frame: Frame, source: Source = on_disk) -> str | None:
    """What a thread waits in where its own line blocks in C code, read from that line of
    its file (its text `source`'s): `with` (a lock's, or a condition's, `with lock:`), or
    the blocking call the line makes, by name (`acquire()`, `sleep()`, `recv()`); "" where
    the line runs Python (`while True: pass`, `x += 1`, a call of nothing that blocks) or
    cannot be read (no such file or line); None where the attempt's text is unknown.

    faulthandler's dump says where a thread is, not whether it runs: under one `main()` a
    busy loop and a lock's deadlock were both `main` (`main (in stuck)` in words alone), so
    a candidate that turned the deadlock into an endless loop hung "where the original did".
    Names, not the line's text, are compared: the literals of `time.sleep(100)` shrink."""
    if frame.line < 1:
        return ""
    text = source(frame.path)
    if text is None:
        return None
    # The lines as Python numbers them (\n, \r\n or \r), not `splitlines`'s (a form feed).
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    line = lines[frame.line - 1] if frame.line <= len(lines) else ""
    code = _without_comment(line).strip()
    if _WITH.match(code):
        return "with"
    called = [name for name in _CALLED.findall(code) if name in _BLOCKING_CALLS]
    return f"{called[-1]}()" if called else ""


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
# frames (`_BLOCKING`), and `", ".join`, a dict's get, run.
_BLOCKING_CALLS = frozenset(
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


# Where a thread that waits in no blocking call was caught, for the words alone: `main (in
# stuck)`; `_entries` leaves it out, as a busy thread is caught wherever it runs.
_IN = " (in "


# The library's calls that block a thread until another thread or process acts, by their
# file's last parts and function (the innermost library frame of a waiting thread): a thread in
# one of them waits there at every dump, where one in any other library frame (json's
# encoder, re's compile) is only passing through it.
_BLOCKING = (
    ("threading.py", ("wait", "wait_for", "acquire", "join", "_wait_for_tstate_lock")),
    ("queue.py", ("get", "put", "join")),
    ("selectors.py", ("select",)),
    ("subprocess.py", ("_try_wait", "wait", "_wait", "communicate", "_communicate")),
    ("multiprocessing/connection.py", ("_recv", "recv", "_recv_bytes", "poll", "wait", "accept")),
    ("multiprocessing/synchronize.py", ("acquire", "wait", "__enter__")),
    ("concurrent/futures/_base.py", ("result", "wait", "as_completed")),
    ("socket.py", ("accept", "readinto")),
)


def _blocks(frame: Frame) -> bool:
    """Whether a library frame is one of `_BLOCKING`'s calls (`in_file`: `mythreading.py`'s
    `wait` is none)."""
    return any(in_file(frame, path) and frame.function in names for path, names in _BLOCKING)


def attempt_place(run_dir: Path, attempt: AttemptResult, source: Source) -> str:
    """The place of an attempt that hung, from its logs' stack.txt, its lines read from
    `source` (`source_at` its workdir and program); `UNREAD` for any other attempt, or where
    the dump is missing or unreadable."""
    if attempt.ran is None or attempt.ran.kind != "hang" or not attempt.logs:
        return UNREAD
    try:
        text = (run_dir / attempt.logs / STACK_TXT).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return UNREAD
    return place_of(text, source) if text.strip() else UNREAD


def places_said(places: Iterable[str], in_: str = "in ") -> str:
    """Places as minimize's words say them: `in w1, w2 / in w2 -> threading.py:wait`; a place
    in no frame of the program's own code (`NOWHERE`: a child that is no Python program)
    `outside the program's code`. The report's, step 1's and DIR's check's alike: step 1
    said `as a hang in no frame of the program's own code` (review)."""
    return " / ".join("outside the program's code" if p == NOWHERE else in_ + p for p in places)


def _entries(place: str) -> tuple[str, ...]:
    """A place's entries, one per hung thread (`w1, w2`: `w1` and `w2`; `main (in stuck)`:
    `main`), as they are compared, with their repeats: two `Worker(Thread).run` threads
    waiting at one `with` are two `run -> with` (`sits_as` counts them); `NOWHERE` is one."""
    return tuple(thread.split(_IN, 1)[0] for thread in place.split(", "))


def moved(places: Iterable[str], original: Iterable[str]) -> tuple[str, ...]:
    """The places in `places` that do not sit as one of the original's did (sorted), () where
    either side's are all unread: an unread place is no difference.

    A place is compared by its threads, not whole: it sits as an original's place where its
    threads hold at least half of that place's and no thread the original caught waiting
    now waits elsewhere (`sits_as`). A candidate that dropped a monitor thread beside the
    deadlock (`w1, w2` where the original hung in `monitor, w1, w2`), or one of three
    `transfer` threads, hangs where the original did, and so does one whose busy thread was
    caught in another function than in any attempt of the original's, or running where the
    original's was caught in a blocking call, beside the consumer hung as the original's
    was. One that kept the monitor alone, the deadlock's two threads gone (`monitor`
    against `monitor, w1, w2`), whose threads sit as none of the original's, or where one
    of the deadlock's threads now waits at a Barrier (`w1 -> threading.py:wait -> ..., w2
    -> with` against `w1 -> with, w2 -> with`), moved: a thread that now runs has not.

    The places are compared as a set, () where any of them sits as an original's: a
    thread busy around a blocking call (a loop of `queue.get(timeout=...)`) is caught in
    it at one dump, `worker -> queue.py:get`, and outside it at the next, `worker (in
    step)` (the original's `worker`), and hangs where the original did. (One sighting
    alone cannot tell that: the search and minimize's check of DIR look again, `LOOKS`.)"""
    known = [_entries(p) for p in original if p != UNREAD]
    if not known:
        return ()
    read = {p for p in places if p != UNREAD}
    out = {p for p in read if not any(sits_as(_entries(p), o) for o in known)}
    return tuple(sorted(out)) if out == read else ()


# The hangs (matched attempts, their place read or not) that reject a hang seen elsewhere:
# a busy thread is caught wherever it runs, in a blocking call or out of it, so one sighting
# none of the original's attempts showed is looked at again before the candidate is called
# another hang.
LOOKS = 2


def sits_as(threads: Collection[str], original: Collection[str]) -> bool:
    """Whether a hang of `threads` sits as the original's hang of `original` did: they share
    at least half of the original's threads, and none of the original's threads hangs
    elsewhere. One shared thread was too little: a monitor thread's endless loop, kept
    where the deadlock beside it was cut away, still hangs, and read as the original's hang
    (review). Half was not enough either: a two-lock deadlock (`w1 -> with, w2 -> with`)
    was minimized to w1 waiting forever at a `Barrier(0)` with its lock held and w2 on that
    lock (`w1 -> threading.py:wait -> ..., w2 -> with`), which shares w2 alone; a thread of
    the original's (by its outermost function) that now waits somewhere else is another
    hang. A thread the original's place does not name (a monitor beside it) is none, nor
    is one the original caught running (`worker`, busy around a `queue.get(timeout=...)`,
    is caught in it at some dumps), nor one that now runs (the same `worker` caught out of
    the `get` it was caught in, or a main thread's `while t.is_alive(): t.join(0.5)` caught
    in its loop): only a thread that waits, and elsewhere, moved.

    The entries are compared as multisets (`threads` and `original` may repeat one), as
    threads are named by their outermost function: every `Thread` subclass's is `run`,
    and two `run -> with` deadlocked beside a `run` monitor polling, caught once in its
    `sleep()` (`run -> with, run -> with, run -> sleep()`), lost the busy `run` alone and
    sits. The share of half is of distinct entries (one of three `transfer` threads
    sits)."""
    have, had = Counter(threads), Counter(original)
    lost = {_thread(t) for t in had - have if " -> " in t}
    if lost & {_thread(t) for t in have - had if " -> " in t}:
        return False
    distinct, known = set(have), set(had)
    return 2 * len(distinct & known) >= len(known)


def _thread(entry: str) -> str:
    """Which thread a place's entry is, by its outermost function: `w1` of `w1 -> with`."""
    return entry.split(" -> ", 1)[0]


__all__ = [
    "LOOKS",
    "NOWHERE",
    "UNREAD",
    "Source",
    "attempt_place",
    "blocking_line",
    "moved",
    "on_disk",
    "place_of",
    "places_said",
    "sits_as",
    "source_at",
]
