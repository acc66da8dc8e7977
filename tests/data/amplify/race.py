"""A check-then-act race: two threads fill one cache, and a key made twice is the bug.

`get` checks the cache, builds the value, then stores it: a thread switch between
the check and the store lets the other thread build the same key again. With the
interpreter's default 5 ms switch interval a thread fills a round's cache (about a
millisecond) before the other is let in, so plain runs almost never fail; a short
interval (perturb.switch_interval) lets threads switch inside the window.

Usage: python race.py [KEYS [ROUNDS [THREADS]]] (2000 keys, 4 rounds, 2 threads).
"""

import sys
import threading

KEYS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
cache: dict[int, object] = {}
made: list[int] = []
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
start = threading.Barrier(THREADS)


def build(key: int) -> object:
    made.append(key)
    return key


def get(key: int) -> object:
    if key not in cache:  # check
        value = build(key)  # a call: a thread may switch here
        cache[key] = value  # act
    return cache[key]


def fill() -> None:
    start.wait()
    total = 0
    for key in range(KEYS):
        total += key  # the work between lookups
        get(key)


for _ in range(ROUNDS):  # each round a fresh cache, filled by threads started together
    cache.clear()
    made.clear()
    threads = [threading.Thread(target=fill) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(made) != KEYS:
        raise RuntimeError(f"cache entry built twice: {len(made) - KEYS} duplicate(s)")
print("cache filled once")
