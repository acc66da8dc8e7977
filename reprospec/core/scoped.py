"""Values the runs of one search share: a process-wide map that lives while a block is open.

A search (isolate, minimize, amplify, bisect) runs tens to hundreds of small runs of one
program through the Python API, and each run would otherwise make again what the one
before made: its preload server and shims (`runners.local.keep_servers`), its environment
capture (`environment.probe.shared_captures`). Both keep them in a `Scoped` for as long as
the search's block is open. Blocks nest (a bisect inside an isolate, a test inside a
search): they share one map, and only the outermost block's end empties it, handing each
value to `end` (a server to stop, a folder to remove). Outside any block nothing is kept,
so a plain `run` behaves as it always did.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Scoped(Generic[K, V]):
    """Values by key while at least one `block()` is open; nothing outside one.

    `lock` is the map's own, which callers also hold to fill a value's fields lazily (one
    preload server per interpreter, however many threads ask at once).
    """

    def __init__(self, end: Callable[[V], None] | None = None) -> None:
        self.lock = threading.Lock()
        self._values: dict[K, V] = {}
        self._depth = 0
        self._end = end

    @contextlib.contextmanager
    def block(self) -> Iterator[None]:
        """Keep values until the outermost open block ends (usable as a decorator)."""
        with self.lock:
            self._depth += 1
        try:
            yield
        finally:
            with self.lock:
                self._depth -= 1
                ending = list(self._values.values()) if self._depth == 0 else []
                if not self._depth:
                    self._values.clear()
            # Outside the lock: stopping a server waits for it, and other blocks may open.
            if self._end is not None:
                for value in ending:
                    self._end(value)

    def is_open(self) -> bool:
        """Whether a block is open (values are kept)."""
        with self.lock:
            return bool(self._depth)

    def get(self, key: K) -> V | None:
        """The value kept for `key`; None when there is none or no block is open."""
        with self.lock:
            return self._values.get(key) if self._depth else None

    def keep(self, key: K, value: V) -> None:
        """Keep `value` for `key` unless one is kept already; nothing outside a block."""
        with self.lock:
            if self._depth:
                self._values.setdefault(key, value)

    def setdefault(self, key: K, make: Callable[[], V]) -> V | None:
        """The value kept for `key`, made (under the lock) when there is none; None
        outside a block. `make` must be cheap: every other caller waits for it."""
        with self.lock:
            if not self._depth:
                return None
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = make()
            return value
