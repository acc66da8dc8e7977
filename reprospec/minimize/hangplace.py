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
a lock's `with`, a sleep, that line's blocking call, outcome/hangsource.py's
`blocking_line`, the classifier's reading of that line too).
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

A C program's hang has no stack dump (stack.txt is empty): its place is its outcome's native
place (`Outcome.hung_native`, `lll_lock_wait@libc<-stuck@reap`), marked `NATIVE`. Read as
`UNREAD`, any C candidate that hung anywhere was the same failure. A native place is never
compared with a Python one's threads, and is compared whole (a C++ name holds `, `, which
splits a Python place into threads): a candidate whose hang moved from a mutex to a sleep
hangs elsewhere; one caught running its own code (`alpha@busy`, `native.runs_own_code`)
sits as any other caught so, as a busy thread is caught wherever it runs.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path

from reprospec import native
from reprospec.core.results import AttemptResult
from reprospec.outcome.hangsource import Source, blocking_line, blocks, source_at
from reprospec.outcome.hungstacks import hung_threads
from reprospec.process.childprotocol import STACK_TXT
from reprospec.runners import workdir_inside

UNREAD = ""
NOWHERE = "no frame of the program's own code"
# The mark of a native place (a C program's), which no Python place starts with: a Python
# place's first thread is a function's name.
NATIVE = "native: "


def place_of(stack: str | None, *, source: Source) -> str:
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
    (`BLOCKING`: threading's waits, a queue's get, selectors' select, a child's wait) are
    its innermost function and the library frames it waits in compared too, so one thread
    at a Barrier still differs from the same thread on a lock; and so are they where its
    own line waits in C code (`blocking_line`: `main -> stuck -> with`, a lock's), so a
    busy loop (`main (in stuck)`) and a deadlock under one `main()` differ. That line is
    read from `source`, the attempt's own text (`source_at`); `UNREAD` where it cannot be
    known. So are the lines that pick the hung threads (a main thread's sleep loop beside
    a thread on a lock, `hung_threads`): the live folder's files were read there, another
    candidate's (review)."""
    threads = hung_threads(stack, source=source)
    if threads is None:
        return UNREAD
    if not threads:
        return NOWHERE
    said = []
    for frame, waiting, outermost in threads:
        names = [outermost.function]
        blocked = "" if waiting else blocking_line(frame, source=source)
        if blocked is None:
            return UNREAD
        if waiting and blocks(waiting[0]):
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


# Where a thread that waits in no blocking call was caught, for the words alone: `main (in
# stuck)`; `_entries` leaves it out, as a busy thread is caught wherever it runs.
_IN = " (in "


def attempt_place(run_dir: Path, attempt: AttemptResult, source: Source) -> str:
    """The place of an attempt that hung, from its logs' stack.txt, its lines read from
    `source` (`source_at` its workdir and program); where it has none, its native place
    (`NATIVE` and `Outcome.hung_native`: a C program's); `UNREAD` for any other attempt, or
    where neither was read."""
    ran = attempt.ran
    if ran is None or ran.kind != "hang":
        return UNREAD
    text = ""
    if attempt.logs:
        with contextlib.suppress(OSError):
            path = run_dir / attempt.logs / STACK_TXT
            text = path.read_text(encoding="utf-8", errors="replace")
    if text.strip():
        return place_of(text, source=source)
    return NATIVE + ran.hung_native if ran.hung_native else UNREAD


def ran_source(
    workdir: Path, runner: str, files: Iterable[tuple[str, str]] = (), *, written: bool = True
) -> Source:
    """`source_at` for attempts that `runner` ran in `workdir`, their dumps' paths mapped
    back as the engine maps them: `workdir` as their plan named it (absolute, links kept),
    its container name (`workdir_inside`) that path's, not its real path's. The runner
    mounts the plan's path; minimize named the spec's workdir by its real path, so one
    reached through a link (`/var/tmp/proj -> /data/proj`) ran at `/work` in the container
    and was mapped from `/data/proj`, and a link to a folder under /root the other way
    round: every line of the dumps read "", and step 1 took a sleep loop's hang for the
    failing cell's lock (review). Host paths need no real path here: `source_at` reads
    the workdir by both its names."""
    return source_at(workdir, files, written=written, container=workdir_inside(runner, workdir))


def places_said(places: Iterable[str], in_: str = "in ") -> str:
    """Places as minimize's words say them: `in w1, w2 / in w2 -> threading.py:wait`; a place
    in no frame of the program's own code (`NOWHERE`: a child that is no Python program)
    `outside the program's code`. The report's, step 1's and DIR's check's alike: step 1
    said `as a hang in no frame of the program's own code` (review). A native place by its
    frames (`in lll_lock_wait@libc<-stuck@reap`), without its mark."""
    return " / ".join(
        "outside the program's code" if p == NOWHERE else in_ + p.removeprefix(NATIVE)
        for p in places
    )


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
    alone cannot tell that: the search and minimize's check of DIR look again, `LOOKS`.)

    A native place (`NATIVE`) is compared with the original's native places alone, whole
    (`_native_sits`), and a Python place with its Python ones: one side's place where the
    other read none of its kind is unread, no difference."""
    known = [p for p in original if p != UNREAD]
    ours = [p for p in known if p.startswith(NATIVE)]
    theirs = [_entries(p) for p in known if not p.startswith(NATIVE)]
    read = {p for p in places if p != UNREAD and (ours if p.startswith(NATIVE) else theirs)}
    if not read:
        return ()
    out = {
        p
        for p in read
        if not (
            any(_native_sits(p, o) for o in ours)
            if p.startswith(NATIVE)
            else any(sits_as(_entries(p), o) for o in theirs)
        )
    }
    return tuple(sorted(out)) if out == read else ()


def _native_sits(place: str, original: str) -> bool:
    """Whether a native place sits as an original's: the same, or both caught running one
    executable's own code (`alpha@busy`, `beta@busy`: one busy loop, sampled where it ran).
    A wait in a library (`gomp_barrier_wait_end@libgomp`, a deadlock at an OpenMP barrier)
    is not a busy loop (`compute@prog`), either way."""
    if place == original:
        return True
    ours, theirs = place.removeprefix(NATIVE), original.removeprefix(NATIVE)
    running = native.runs_own_code
    same_program = ours.rpartition("@")[2] == theirs.rpartition("@")[2]
    return same_program and running(ours) and running(theirs)


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
    "NATIVE",
    "NOWHERE",
    "UNREAD",
    "attempt_place",
    "moved",
    "place_of",
    "places_said",
    "ran_source",
    "sits_as",
]
