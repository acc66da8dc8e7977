"""How long a verify attempt of a captured hang waits, and why that is still a hang.

A hang is seen only at the timeout: capture's first run waits all of `--timeout`
(300 s by default), and so did every verify rerun of it. A hang that needs a variable of
the shell costs one rerun per half of the search and one more in a copy: about six
whole timeouts, half an hour at the default, with nothing on the console but
"verifying ...".

The first run says more than "it hung": its progress events (the spec's markers, a
command's own events) show when it last made progress and how far apart its progress
came before. An attempt whose progress came at most G seconds apart and then stopped
for Q seconds, to the timeout, is the hang the spec expects. The verify's runs get a
`run.stall` (the engine's own rule for a hang called early: spec-format.md, "stall"): ten
times the longest gap between progress, at least `MIN_STALL_S`, and only where the hang
went at least twice that long without progress. An attempt the stall ends is a `hang` by
the engine's rules, located and signed as at the timeout, and judged by the same
`expect`; the written spec keeps the user's timeout (no stall is written: a reader's
machine may go quiet longer), and capture says which limit its verifies used, and how to
use the same in a reader's runs. A hang with no progress before it (a hang at import, a
command without markers or events) gives the verify nothing to call early: it waits the
timeout, and capture says so before each verify, with how to shorten it.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from reprospec.capture.footprint import attempt_output
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.results import AttemptResult
from reprospec.core.units import format_duration
from reprospec.outcome.evidence import iter_events
from reprospec.outcome.pytestreport import xdist_running
from reprospec.process import tree
from reprospec.process.cpuwait import thread_readings
from reprospec.process.progress import is_progress_event
from reprospec.spec.presets import PRESETS

# The least stall a verify is given: above the quiet stretches of a healthy program that a
# first run's few steps may not have shown (a slower machine, a cache warming up).
MIN_STALL_S = 10.0
# The stall is this many times the longest gap between the captured hang's progress events.
GAP_FACTOR = 10.0
# A hang whose every attempt ended before this share of the timeout ended itself.
_SOONER = 0.5
# The least margin a rerun alone is given over the time the first run left its test unended.
_ALONE_MARGIN_S = 2.0


@frozen
class VerifyWait:
    """How long each verify attempt may wait for the captured hang, and why.

    `stall_s`: the verify's own `run.stall` (never written into the spec); None where the
    first run gave nothing to call the hang early by, and the timeout alone applies.
    """

    timeout_s: float
    stall_s: float | None = None
    quiet_s: float | None = None  # the least time a captured hang went without progress
    # The longest gap between its progress events before it; None: it made progress once.
    gap_s: float | None = None

    @property
    def overrides(self) -> tuple[str, ...]:
        """The `--set` overrides the verify's runs load the spec with."""
        return () if self.stall_s is None else (f"run.stall={format_duration(self.stall_s)}",)

    def note(self) -> str:
        """Said before each verify run: how long its attempts may wait, and how to shorten it."""
        timeout = format_duration(self.timeout_s)
        if self.stall_s is None:
            return (
                f"a hang waits the spec's timeout, {timeout}, in each attempt: "
                "capture --timeout D shortens it"
            )
        return (
            f"a hang is called after {format_duration(self.stall_s)} without progress "
            f"(the verify's run.stall), not at the {timeout} timeout"
        )

    def said(self) -> str:
        """capture's line on it, after the verify: what was used, why, and how to use it."""
        timeout = format_duration(self.timeout_s)
        if self.stall_s is None:
            return (
                f"the verify's attempts waited the spec's timeout, {timeout}, for the hang (the "
                "captured one gave no stall well below it: no progress before it, or too little "
                "time after): capture --timeout D shortens it"
            )
        stall = format_duration(self.stall_s)
        return (
            f"the verify called a hang after {stall} without progress (run.stall, its own): the "
            f"captured hang went {self.quiet_s or 0:.1f} s without progress to the timeout, "
            + (
                "after its only progress"
                if self.gap_s is None
                else f"after progress at most {self.gap_s:.1f} s apart"
            )
            + "; the "
            f"spec keeps its {timeout} timeout: `--set run.stall={stall}` calls it early in "
            "your runs too"
        )


@frozen
class HungAttempt:
    """One attempt of a captured hang, as its progress says: when it started and ended (the
    events' clock; `started` None where its start cannot be read), the times of its progress
    events, sorted, and whether pytest-xdist's workers ran its tests side by side."""

    started: float | None
    ended: float
    times: tuple[float, ...]
    xdist: bool


@frozen
class HangRead:
    """The progress of a captured hang's attempts, read once (`read_hang`): the verify's
    wait, whether it was still moving and the bound of a test's rerun alone are each asked
    of it, where each read every attempt's events.jsonl again (and the output, for xdist)."""

    attempts: tuple[HungAttempt, ...]


def read_hang(
    signature: str, run_dir: Path, attempts: Sequence[AttemptResult], presets: Sequence[str]
) -> HangRead | None:
    """The attempts of the captured hang `signature` and their progress; None for a
    signature that is no hang.

    Progress is what the verify's own runs count as progress (progress.py): events of a
    progress kind, and of the markers only those of the spec's `presets` (the first run
    matched every preset). A spec without markers counts its output as progress: each
    marker event of the first run is a line of its output (whatever preset matched it),
    and the lines no preset matched are not seen, so the gaps read are never shorter than
    its output's, nor the stall found (a user's deadlock printed one `step 1`: no preset
    fits one line, and its hang was read as one without progress)."""
    if not signature.startswith("hang"):
        return None
    wanted = [re.compile(m.pattern) for name in presets for m in PRESETS[name].markers]
    read: list[HungAttempt] = []
    for attempt in attempts:
        if attempt.ran is None or attempt.ran.signature != signature:
            continue
        end = _ended(attempt)
        if end is None:
            continue
        try:
            started: float | None = datetime.fromisoformat(attempt.started).timestamp()
        except ValueError:
            started = None
        times = sorted(
            t
            for event in iter_events(run_dir / attempt.logs / "events.jsonl")
            if _is_progress(event, wanted if presets else None)
            if isinstance(t := event.get("t"), (int, float))
        )
        xdist = xdist_running(attempt_output(run_dir, attempt)) is not None
        read.append(HungAttempt(started, end, tuple(float(t) for t in times), xdist))
    return HangRead(tuple(read))


def verify_wait(hang: HangRead | None, timeout_s: float) -> VerifyWait | None:
    """The verify's wait for the captured failure: None unless it is a hang (`hang`) the
    timeout ended."""
    if hang is None or _ended_itself(hang, timeout_s):
        return None
    quiet, gap = _quiet(hang)
    if not quiet:
        return VerifyWait(timeout_s)
    stall = float(math.ceil(max(MIN_STALL_S, GAP_FACTOR * (gap or 0.0))))
    if 2 * stall > min(quiet):
        return VerifyWait(timeout_s)  # the timeout is about as soon
    return VerifyWait(timeout_s, stall, min(quiet), gap)


def _ended_itself(hang: HangRead, timeout_s: float) -> bool:
    """Whether every attempt of the captured hang ended well before the timeout: the program
    timed itself out (its faulthandler watchdog, outcome/watchdog.py), and a verify of it
    waits for no timeout, where capture said its attempts "waited the spec's timeout, 5m"
    after they ended in half a second."""
    ended = [a.ended - a.started for a in hang.attempts if a.started is not None]
    return bool(ended) and len(ended) == len(hang.attempts) and max(ended) < _SOONER * timeout_s


def _quiet(hang: HangRead) -> tuple[list[float], float | None]:
    """How long each attempt of the captured hang went without progress to its end (of
    those with progress before it), and the longest gap between its progress before that
    (None: none had two progress events)."""
    quiet: list[float] = []
    gap: float | None = None
    for attempt in hang.attempts:
        if not attempt.times:
            continue  # no progress before this hang: nothing says when it stopped
        quiet.append(attempt.ended - attempt.times[-1])
        gaps = [b - a for a, b in itertools.pairwise(attempt.times)]
        gap = max([gap, *gaps]) if gap is not None else max(gaps, default=None)
    return quiet, gap


@frozen
class StillMoving:
    """A captured hang whose every attempt made progress, at its pace, up to its timeout:
    its last progress at most `quiet_s` before the end, after progress at most `gap_s`
    apart. The step it was at is where the timeout found it, not where it stuck."""

    quiet_s: float
    gap_s: float

    def said(self, timeout_s: float) -> str:
        return (
            f"the hang was still making progress when the {format_duration(timeout_s)} "
            f"timeout ended it (its last progress {self.quiet_s:.1f} s before, after progress "
            f"at most {self.gap_s:.1f} s apart): it may be a slow run, not a stuck one, so the "
            "spec expects no step; capture again with a longer --timeout to tell"
        )


def still_moving(hang: HangRead | None) -> StillMoving | None:
    """Whether the captured hang `signature` was still making progress at its timeout: each
    attempt's last progress came within twice the longest gap between its progress before.
    A slow run cut by `--timeout 4s` (`step N` every 0.5 s) was written `expect: {outcome:
    hang, step: 7}`, the step the timeout found, which a slower machine does not reach."""
    if hang is None:
        return None
    quiet, gap = _quiet(hang)
    if not quiet or not gap or max(quiet) > 2 * gap:
        return None
    return StillMoving(max(quiet), gap)


def _is_progress(event: JsonObject, wanted: Sequence[re.Pattern[str]] | None) -> bool:
    """progress.is_progress, with a marker counted only where the spec keeps its preset
    (`wanted`'s patterns), or as a line of output where it has no markers (None)."""
    kind = event.get("event")
    if kind == "marker":
        line = event.get("line")
        return isinstance(line, str) and (wanted is None or any(p.search(line) for p in wanted))
    return is_progress_event(event)


def _ended(attempt: AttemptResult) -> float | None:
    """When the attempt ended, in the events' clock (seconds since the epoch)."""
    try:
        return datetime.fromisoformat(attempt.started).timestamp() + attempt.duration_s
    except ValueError:
        return None


# A line the program left unended (pytest -v's `path::test ` as a test starts, ended by its
# PASSED when it ends) is scanned when the stream closes, after the kill: an event this near
# the attempt's end tells when the stream closed, not when the program wrote it.
_CLOSED_S = 0.25


def alone_timeout(hang: HangRead | None, timeout_s: float) -> float | None:
    """How long a rerun of a captured pytest hang's test alone may take before it is called
    the same hang (None for a signature that is no hang): as long as the first run went
    with that test unended, at most the timeout. That is the first run's start-up (to its
    first progress: pytest's start, collection, the first test) and the time from its last
    progress (the test before the hung one ending) to the kill; where it made no progress
    before the hang (the first test hung), or ran under pytest-xdist (other workers' tests
    end beside the hung one), its whole duration. The hung test's own `-v`
    line, unended while it ran, is no progress.

    No stall calls the rerun early: a test that alone sleeps 20 s and then passes has a
    stack that does not move and prints nothing for those 20 s, as a hung one does, and
    a bound of start-up and a 10 s stall called it "hung alone" (pt40). The first run
    showed only that the test did not end within that time: the rerun is a hang where it
    does not end within as long, and a test that alone ends sooner, slow or not, is none.
    One that reaches this bound still using CPU (`moving_at_bound`) is rerun at the
    timeout: the bound is shorter than the first run's wait, and work may end between."""
    if hang is None:
        return None
    bound = 0.0
    for attempt in hang.attempts:
        if attempt.started is None:
            continue
        times = [t for t in attempt.times if t < attempt.ended - _CLOSED_S]
        if not times or attempt.xdist:
            # No progress before it, or pytest-xdist's workers, whose tests run beside the
            # hung one: another worker's test ending says nothing of when it began.
            unended = attempt.ended - attempt.started
        else:
            unended = (times[0] - attempt.started) + (attempt.ended - times[-1])
        bound = max(bound, unended)
    if bound <= 0:
        return timeout_s
    # A margin for the rerun's own start-up, which a loaded machine may make slower.
    return min(timeout_s, float(math.ceil(bound + max(_ALONE_MARGIN_S, 0.1 * bound))))


# A rerun alone that reached its bound is a hang only where its processes were still: their
# CPU time over this long before the bound (or since its test began, where shorter).
STILL_WINDOW_S = 5.0
# How often the CPU time of the rerun's processes is read.
_SAMPLE_S = 0.5
# CPU time that counts as moving: 1% of one CPU over the window. A hung pytest (a sleep, a
# lock, a read) uses none, a thread that polls a few times a second far less; a test that
# sleeps and works in steps, or a busy loop, far more.
MOVING_SHARE = 0.01
# The window ends this long before the bound: the engine's kill begins at it (its stack
# dumps, native readers), which is no work of the test's.
_BEFORE_KILL_S = 0.2

# One reading: (time.time(), each thread's CPU nanoseconds by (pid, thread id)).
CpuReading = tuple[float, Mapping[tuple[int, int], int]]


class CpuTrail:
    """The CPU time of every thread of the engine's attempts (its own process tree less its
    helpers: the subreaper keeps every process of an attempt in it), and of the children
    each process waited for (`reaped_cpu`), read every half second
    on a thread of its own while a rerun runs. Nothing is read where the tree cannot be
    (no subreaper, no `children` files): then no rerun is known to move."""

    def __init__(self) -> None:
        self.readings: list[CpuReading] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reprospec-cpu-trail", daemon=True)

    def __enter__(self) -> CpuTrail:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(_SAMPLE_S):
            pids = tree.own_tree()
            if pids is None:
                continue
            helpers = tree.helper_pids()
            theirs = [pid for pid in pids if pid not in helpers]
            read = thread_readings(theirs)
            cpu = {key: used for key, (used, _) in read.items()}
            cpu.update(reaped_cpu(theirs))
            self.readings.append((time.time(), cpu))


def reaped_cpu(pids: Sequence[int]) -> dict[tuple[int, int], int]:
    """Per process, by (pid, 0) (no thread has id 0), the CPU nanoseconds of the children
    it has waited for: a command a test runs and waits for ends between two readings, and
    its threads are read in neither (a CLI's tests: `subprocess.run` in a loop, the test
    itself waiting). Processes gone or unreadable are left out."""
    found: dict[tuple[int, int], int] = {}
    for pid in pids:
        used = tree.reaped_children_cpu(pid)
        if used is not None:
            found[pid, 0] = used
    return found


def cpu_moved(readings: Sequence[CpuReading], since: float, until: float) -> bool | None:
    """Whether the threads read used at least MOVING_SHARE of one CPU between the first
    reading at or after `since` and the last at or before `until`: a thread read then and
    not before counts all its CPU time (it started between). None where no two readings
    at least half that time apart fall between: nothing is known."""
    inside = [r for r in readings if since <= r[0] <= until]
    if len(inside) < 2 or inside[-1][0] - inside[0][0] < (until - since) / 2:
        return None
    (first_t, first), (last_t, last) = inside[0], inside[-1]
    used = sum(max(0, cpu - first.get(key, 0)) for key, cpu in last.items())
    return used >= MOVING_SHARE * (last_t - first_t) * 1e9


def moving_at_bound(
    readings: Sequence[CpuReading],
    attempts: Sequence[AttemptResult],
    bound_s: float,
    run_dir: Path,
) -> bool:
    """Whether a rerun's attempt that hung at `bound_s` (its timeout) was still using CPU in
    the STILL_WINDOW_S before it: slow work, or a busy loop, which CPU time cannot tell
    apart. A hang whose CPU time stayed flat there, or of which nothing was read, is still.
    The window begins no sooner than the test did (its `-v` line, the hang's phase): a
    bound of a few seconds holds pytest's own start-up, no work of the test's."""
    for attempt in attempts:
        if attempt.ran is None or attempt.ran.kind != "hang":
            continue
        try:
            start = datetime.fromisoformat(attempt.started).timestamp()
        except ValueError:
            continue
        until = start + bound_s - _BEFORE_KILL_S
        since = max(start, until - STILL_WINDOW_S, _began(run_dir, attempt) or start)
        if cpu_moved(readings, since, until):
            return True
    return False


def _began(run_dir: Path, attempt: AttemptResult) -> float | None:
    """When the attempt's hung test began: the first event of its phase (pytest `-v`'s
    line, stamped as of when it began though read at the kill); None where none is."""
    phase = attempt.ran.phase if attempt.ran is not None else None
    if phase is None:
        return None
    for event in iter_events(run_dir / attempt.logs / "events.jsonl"):
        if event.get("phase") == phase and isinstance(t := event.get("t"), (int, float)):
            return float(t)
    return None
