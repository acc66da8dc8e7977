"""Where a Ctrl-C may be raised: anywhere but inside Python's import machinery, and never lost.

Python raises a signal's KeyboardInterrupt at the next bytecode boundary, whatever runs
there. Two places cannot take it:

- importlib's module locks (`<frozen importlib._bootstrap>`): each import ends in a weakref
  callback that takes the global import lock and then enters its `try`. A KeyboardInterrupt
  raised between the two leaves that lock held for good, and the next import on any other
  thread (the engine's watchers and workers import lazily) waits forever: a Ctrl-C while the
  CLI loaded hung `reprospec run` (the full suite's Ctrl-C sweep, in CI: past its 60 s).
- any weakref callback or `__del__`: Python cannot raise there, prints the exception as
  "Exception ignored", and drops it, so the Ctrl-C the user pressed did nothing.

So in the first the interrupt waits (`raise_here` redelivers it, to be raised at the next
boundary outside the machinery), and in the second it is delivered again (`unraisable`).
"""

from __future__ import annotations

import _imp
import _thread
import sys

# Not typing's (the console script's start-up, before any handler, stays short): mypy reads
# this name as typing.TYPE_CHECKING.
TYPE_CHECKING = False

if TYPE_CHECKING:
    # signal.py's functions are _signal's, typed (typeshed has no _signal).
    import signal as _signal
else:
    # Not signal.py: it builds its enums first (~1 ms), under Python's default handler.
    import _signal

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from concurrent.futures import Future
    from types import CodeType, FrameType
    from typing import TypeVar

    F = TypeVar("F", bound=Callable[..., object])
    T = TypeVar("T")

# The file name of importlib's own frames: its module locks and their callbacks.
IMPORT_MACHINERY = "<frozen importlib._bootstrap>"

# The code of the signal handlers and of what they call (`handling`): a signal that arrives
# while one of them runs is judged by the frame the handler itself was called in.
_HANDLING: set[CodeType] = set()


def handling(function: F) -> F:
    """Mark `function` as part of a signal handler. Python runs a handler again, nested, at
    the handler's own bytecode boundaries when the signal comes again meanwhile; that one
    must not raise in the handler that deferred the stop, which would raise it into the
    frame that could not take it."""
    _HANDLING.add(function.__code__)
    return function


def can_raise_in(frame: FrameType | None) -> bool:
    """Whether a KeyboardInterrupt may be raised in `frame`, the one a signal handler was
    given (the innermost Python frame when the handler runs), past the handlers' own."""
    while frame is not None and frame.f_code in _HANDLING:
        frame = frame.f_back
    return frame is None or frame.f_code.co_filename != IMPORT_MACHINERY


@handling
def redeliver() -> None:
    """Send SIGINT again to this thread (the main one, where Python runs its handlers), from
    a thread of its own: the handler runs again once this one has returned, and a blocking
    call the main thread has made meanwhile is woken by it. No child sees that signal.

    Not `_thread.interrupt_main`: it runs the handler at once, nested inside this one, and
    wakes no blocking call."""
    try:
        _thread.start_new_thread(_signal.pthread_kill, (_thread.get_ident(), _signal.SIGINT))
    except RuntimeError:  # the interpreter is shutting down, and starts no thread now
        raise KeyboardInterrupt from None


@handling
def raise_here(frame: FrameType | None) -> None:
    """Raise KeyboardInterrupt in `frame`, or, inside the import machinery, redeliver it to
    be raised once the machinery has returned."""
    if not can_raise_in(frame):
        redeliver()
        return
    raise KeyboardInterrupt


class Deferral:
    """Whether a verb's stop may still be raised, or only told to its engine (`begun`).

    Once the engine's run is in the store, the engine stops on the verb's cancel event
    alone: its attempts, judging and writing (the cells judged, results.json, report.md,
    the store's `interrupted`) and the verb's table and resume command after them. A
    KeyboardInterrupt raised there cut the writing short: a Ctrl-C in the moment after the
    last attempt left no report and a run `killed`, or results.json and a store that
    disagreed. From `begin` on, the verb's handler (commands/interrupt.py) sets the
    cancel event and returns; the verb reads the event once the engine has returned. `run`
    never ends it (what comes after is its own output); a verb that goes on after the
    engine (`capture`) does (`end`), and then reads the event. A search's (isolate,
    minimize, amplify, bisect) is begun by each probe's run and ended as that run returns
    (api.run): its probe runs are written whole as `run`'s are, where a stop raised in one
    left it `killed` with no report, and the search stops at its next probe, on the event.

    Begun and ended by the engines of the probes a search runs at once too, each on its
    own thread: one that ends it while another is still writing lets a stop be raised
    again, but Python raises it on the main thread alone, where such a search only waits
    for its probes (and sets the event)."""

    __slots__ = ("begun",)

    def __init__(self) -> None:
        self.begun = False

    def begin(self) -> None:
        """From here on, a stop is the cancel event's alone (one store: a signal handler
        sees it set or not, never half)."""
        self.begun = True

    def end(self) -> None:
        """A stop is raised again: the engine has returned, and its caller has work of its
        own to be stopped in. One that came before this is in the cancel event."""
        self.begun = False


def install() -> None:
    """Take over SIGINT and the unraisable hook for the command line, from its first line
    (reprospec/__main__.py). A Ctrl-C already ignored (a job started with `&` in a shell
    without job control) stays ignored."""
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, on_sigint)
    sys.unraisablehook = unraisable


def reclaim_import_lock() -> None:
    """Raise the Ctrl-C that Python's own handler dropped in an import's lock callback before
    `install` (Python's start-up, this package's first imports), where it left the global
    import lock held: that lock released, where the run went on and hung at the first import
    of another thread, and no signal ended it. Called once `install` has run, on the only
    thread, outside any import: there the lock is held by nobody else."""
    reclaimed = False
    while _imp.lock_held():
        try:
            _imp.release_lock()
        except RuntimeError:  # another thread's (one a .pth file started): not ours
            break
        reclaimed = True
    if reclaimed:
        raise KeyboardInterrupt


@handling
def on_sigint(_signum: int, frame: FrameType | None) -> None:
    """SIGINT's handler from the command line's first line (`install`) until a
    verb installs its own (commands/interrupt.py): Python's default, raising
    KeyboardInterrupt, except where it cannot be raised."""
    raise_here(frame)


@handling
def unraisable(info: sys.UnraisableHookArgs) -> None:
    """sys.unraisablehook from the command line's first line (`install`): a KeyboardInterrupt that a
    weakref callback or a `__del__` could not raise is delivered again, not printed and
    dropped; anything else is Python's to print."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        redeliver()
        return
    sys.__unraisablehook__(info)


# How long the main thread waits at a time (`result`, `each`, capped.run), in seconds.
SLICE_S = 0.1


def result(future: Future[T]) -> T:
    """`future.result()`, waited for in slices: a Ctrl-C raised (or a stop handled) on the
    main thread within one slice, wherever the kernel delivered its signal.

    Python runs signal handlers on the main thread alone; a signal the kernel hands to
    another thread of the process (any that does not block it may get it) marks the handler
    due but wakes no blocking wait of the main thread, so a plain `future.result()` held the
    stop until the future ended: an isolate stopped 0.9 s into a probe of two hangs
    stopped when they timed out, 50 s later, having run them to their end."""
    import concurrent.futures

    while not concurrent.futures.wait([future], timeout=SLICE_S).done:
        pass
    return future.result()


def each(items: Iterable[T]) -> Iterator[T]:
    """`for item in items`, each read on a thread of its own and waited for in slices, as
    `result` waits: a read blocked on the main thread is not woken by a signal the kernel
    gave another thread, so a Ctrl-C waited for the writer's next line (a venv build's uv,
    silent while a package built, was let finish its install first; a Docker build, its
    log silent while a step ran). What the reading raises is raised here."""
    import queue
    import threading

    # An item read (in a tuple: it may be None), what the reading raised, or None at the end.
    got: queue.SimpleQueue[tuple[T] | BaseException | None] = queue.SimpleQueue()

    def pump() -> None:
        try:
            for item in items:
                got.put((item,))
        except BaseException as exc:  # the caller's to see (a closed stream: a stop's)
            got.put(exc)
        else:
            got.put(None)

    threading.Thread(target=pump, name="reprospec-each", daemon=True).start()
    while True:
        try:
            message = got.get(timeout=SLICE_S)
        except queue.Empty:
            continue
        if isinstance(message, tuple):
            yield message[0]
        elif message is None:
            return
        else:
            raise message
