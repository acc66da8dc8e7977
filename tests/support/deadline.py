"""A short timeout that a child must reach a point within, on a loaded machine.

A test of what a timeout does to a hang (its stacks, its kill) gives the child a second
or two to reach its hang: the timeout counts from the child's start, and a child starved
of a CPU for its start-up (every core busy: CI runs three test workers on two cores) is
killed before it got there, as a hang somewhere else. `until_reached` runs the attempt
again with the timeout doubled until the child was seen at its point before the timeout
ran out; the last try's result is the test's to judge, whatever it reached.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

# Doubled from the test's own timeout: 1 s becomes 2, 4, 8, 16 s. A child that took
# longer than 16 s to start five times in a row is no loaded machine.
TRIES = 5


@dataclass(frozen=True)
class Try(Generic[T]):
    """The last try: what the attempt returned, its folder, and the timeout it had."""

    result: T
    folder: Path
    timeout_s: float


def _seen_within(reached: Callable[[], bool], limit_s: float, stop: threading.Event) -> list[bool]:
    """Polls `reached` from now on in a thread; the list says, once `stop` is set, whether
    it held within `limit_s` of now."""
    seen: list[bool] = []
    begin = time.monotonic()

    def watch() -> None:
        while not stop.is_set():
            if reached():
                # Seen late rather than early: the poll's lag only makes a try count less.
                seen.append(time.monotonic() - begin < limit_s)
                return
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()
    return seen


def until_reached(
    attempt: Callable[[float, Path], T],
    reached: Callable[[Path], bool],
    timeout_s: float,
    folder: Path,
) -> Try[T]:
    """`attempt(timeout, try_folder)`, each try in a fresh folder under `folder`, until
    `reached(try_folder)` held before `timeout` had passed since the try began.

    The attempt's timeout begins after this try's (the engine starts its clock when it
    starts the child), so a point seen within `timeout` of the try's beginning was
    reached before the attempt's deadline."""
    timeout = timeout_s
    for n in range(1, TRIES + 1):
        here = folder / f"try-{n}"
        here.mkdir(parents=True)
        stop = threading.Event()
        seen = _seen_within(functools.partial(reached, here), timeout, stop)
        try:
            result = attempt(timeout, here)
        finally:
            stop.set()
        if any(seen) or n == TRIES:
            return Try(result, here, timeout)
        timeout *= 2
    raise AssertionError("unreachable")  # pragma: no cover
