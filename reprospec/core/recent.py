"""Answers kept for a moment: a lookup asked once per attempt whose answer rarely changes.

An attempt of a short command starts many times a second, and some of what starting it
asks (a program's place on PATH, a workdir's real path) walks the file system in Python for
an answer that is the same as a moment ago. `Recent` keeps each answer for a time the caller
names at each read, so a change on disk is seen at most that late; the engine's threads
share it, and it holds a bounded number of keys (a run asks of few).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """Values by key, each with the moment it was kept; at most `size` keys (then it starts
    over: the keys of one run are few, and a lookup is the cost anyway)."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._kept: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, within_s: float) -> V | None:
        """The value kept for `key` less than `within_s` seconds ago, else None."""
        with self._lock:
            kept = self._kept.get(key)
        if kept is None or time.monotonic() - kept[0] >= within_s:
            return None
        return kept[1]

    def put(self, key: K, value: V) -> V:
        """Keep `value` for `key` from now; returns it."""
        with self._lock:
            if len(self._kept) >= self._size:
                self._kept.clear()
            self._kept[key] = (time.monotonic(), value)
        return value


__all__ = ["Recent"]
