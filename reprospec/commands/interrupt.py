"""How a verb that drives runs is stopped: SIGTERM (CI cancelling a job, a Slurm time limit),
Ctrl-C and SIGHUP (the terminal it ran in closed) alike, with the engine told first.

`run`, `isolate` and every verb that runs attempts install it before the first attempt;
`doctor` and `slurm`'s preflight too, whose uv runs in a session of its own that only this
stop ends (venvs/build.run_uv).
"""

from __future__ import annotations

import atexit
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol, TypeVar

from reprospec.core import safepoint, stopclock
from reprospec.core.answers import Answer
from reprospec.core.logtext import printable

# The signals that stop a verb as Ctrl-C does (install_stop_handlers).
_STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def install_stop_handlers(
    cancel: threading.Event,
    deferral: safepoint.Deferral | None = None,
    *,
    raised_writes: bool = True,
    heard: Callable[[bool], bool] | None = None,
) -> None:
    """SIGTERM, Ctrl-C and SIGHUP stop the verb: partial results, exit 130. `cancel` is set
    first, in the handler, so an attempt that the same signal killed is known to have been
    stopped, not to have crashed.

    Once `deferral` has begun (the engine's run is stored: pipeline/stages.py), the stop is
    `cancel` alone, not raised: the engine stops its attempts on it and then writes all it
    has, where a KeyboardInterrupt raised in that writing lost it.

    SIGHUP is a closed terminal (or an ssh session that dropped): its default action killed
    the engine where it stood, so a run stopped so had no results.json, no report and read
    `killed` in history, where a Ctrl-C's wrote them and said `interrupted`.
    A SIGHUP already ignored (`nohup reprospec run ...`) stays ignored: the run was asked
    to outlive its terminal.

    Only the first signal stops: the ones after it (an impatient second Ctrl-C, a CI
    runner's SIGTERM after its SIGINT) would cut short the writing of what finished
    (results.json, the report, the store's `interrupted`, the command that resumes), which
    takes a moment; they are told so instead. The trees are already being killed. Where
    nothing is written, they are told only that it is stopping ("writing what finished" was
    said of doctor and slurm's preflight, which only end uv's group): a verb that gives no
    `deferral` (doctor), or whose raised stop writes nothing (`raised_writes` False: slurm,
    whose deferral covers only its submission) unless the first stop was deferred.

    `heard` is told of each stop the deferral holds (False: the first, True: a later one)
    and returns whether it told the user itself: slurm's submission, whose deferred stop
    may wait minutes for squeue (an sbatch that timed out), says how long, and a second
    stop ends that wait (slurm/submit.py's LookupWait).
    """
    stopping = threading.Event()
    # The first stop was deferred (`deferral` begun): the engine is writing what finished.
    deferred = threading.Event()
    # The stop is owed: it came where it could not be raised (core/safepoint.py) and was
    # redelivered, so the handler's next call raises it, and is not a second signal.
    owed = threading.Event()

    @safepoint.handling
    def handler(signum: int, frame: FrameType | None) -> None:
        stopclock.heard(signum)
        if stopping.is_set() and not owed.is_set():
            if heard is not None and deferred.is_set() and heard(True):
                return
            writes = deferred.is_set() or (deferral is not None and raised_writes)
            said = "stopping: writing what finished first" if writes else "already stopping"
            print(f"reprospec: {said}", file=sys.stderr)
            return
        stopping.set()
        cancel.set()
        if deferral is not None and deferral.begun:
            # The engine reads `cancel`; a stop owed from before it began is that one too.
            owed.clear()
            deferred.set()
            if heard is not None:
                heard(False)
            return
        if not safepoint.can_raise_in(frame):
            owed.set()
            safepoint.redeliver()
            return
        owed.clear()
        raise KeyboardInterrupt

    def settle() -> None:
        # At exit CPython puts the default action back for every signal with a Python
        # handler, so a second SIGTERM in the interpreter's last moments (after the
        # results are written and "interrupted" said) killed it: exit 143, not 130.
        # Ignored handlers are left alone: once stopping, the later signals stay unobeyed.
        if stopping.is_set():
            for signum in _STOPPING:
                signal.signal(signum, signal.SIG_IGN)

    previous = sys.unraisablehook

    @safepoint.handling
    def unraisable(info: sys.UnraisableHookArgs) -> None:
        # The stop raised where Python cannot raise (a weakref callback, a __del__) is
        # dropped there, printed with its traceback through this module: it is owed, and
        # raised again at the next point that can take it.
        if stopping.is_set() and isinstance(info.exc_value, KeyboardInterrupt):
            owed.set()
            safepoint.redeliver()
            return
        previous(info)

    if threading.current_thread() is threading.main_thread():
        # The stop's arrival, as it came: what ended just before it is set aside
        # (pipeline/scheduler.py), and the handler may run seconds after it.
        stopclock.install()
        for signum in _STOPPING:
            if signum != signal.SIGHUP or signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, handler)
        sys.unraisablehook = unraisable
        atexit.register(settle)


class Search(Answer, Protocol):
    """What isolate, minimize and amplify return: an answer (core/answers.py), and whether
    the search was stopped before its end."""

    @property
    def interrupted(self) -> bool: ...


S = TypeVar("S", bound=Search)


def drive_search(
    search: Callable[[Callable[[str], None] | None, threading.Event], S],
    *,
    deferral: safepoint.Deferral,
    as_json: bool,
    unsaved: Callable[[S], str] | None = None,
) -> int:
    """Run one search verb to its end or its stop, print its answer (its text, which ends
    with the report's `report:` line where a file holds it, or JSON) and give its exit code
    (the answer's own, as `reprospec.exit_code` gives it): one shape for isolate, minimize
    and amplify.

    SIGTERM stops the search like Ctrl-C; its stored probes let the same command resume.
    `unsaved`: why the answer could not be saved ("" where it was), said as a warning; the
    exit code stays the answer's. `deferral`: the one the search's probe runs are given
    (RunOptions.deferral): from each one's store row to its return a stop is `cancel`
    alone, so the probe run is written whole, never left `killed` with no report, and the
    search stops at its next probe."""
    cancel = threading.Event()
    install_stop_handlers(cancel, deferral)
    # Progress goes to stderr with --format json too: stdout stays one JSON value, and a
    # search of a minute said nothing at all while it ran.
    found = search(lambda message: print(printable(message), file=sys.stderr), cancel)
    # Why its answer could not be saved ("" where it was): the answer is printed, no
    # `report:` line names a file that is not this answer's, and a warning says so.
    why = unsaved(found) if unsaved is not None else ""
    if as_json:
        print(found.render("json"))
    else:
        print(printable(found.render("text")))
    warn_unsaved(why)
    if found.interrupted:
        print("reprospec: interrupted; run the same command again to resume", file=sys.stderr)
    elif cancel.is_set():
        return answered_though_stopped()
    return found.exit_code()


def warn_unsaved(why: str) -> None:
    """Say why a search's answer could not be saved (`why`, "" where it was: nothing is
    said): the one wording of isolate's, minimize's, amplify's and bisect's warning."""
    if why:
        print(f"reprospec: warning: {printable(why)}", file=sys.stderr)


def answered_though_stopped() -> int:
    """Say that a search stopped in the writing of its last probe's run (the stop deferred,
    `install_stop_handlers`) has its whole answer, and give the exit code of a stop: it is
    obeyed, as `run` obeys one after its last attempt, for a script that chains the next
    step."""
    from reprospec.errors import EXIT_INTERRUPTED

    print(
        "reprospec: interrupted after the search's last probe had ended: its answer is "
        "complete (nothing to resume)",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED
