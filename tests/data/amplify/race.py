"""A check-then-act race: two threads fill one cache, and a key made twice is the bug.

`get` checks the cache, builds the value, then stores it: a thread switch between
the check and the store lets the other thread build the same key again. With the
interpreter's default 5 ms switch interval a thread fills a round's cache (well under a
millisecond) before the other is let in, so plain runs almost never fail; a short
interval (perturb.switch_interval) lets threads switch inside the window.

Many short rounds rather than a few long ones: the perturbed program fails at the start
of a round, where the barrier releases both threads at key 0, so each round is a chance;
the plain program fails only when a forced 5 ms switch (a thread kept off the CPU by the
machine's load) lands inside a window, so its chances grow with the time all rounds take,
not with their number (125 keys x 32 rounds against the first 2000 x 4: paired figures
from benchmarks/race_rates.py in docs/performance.md).

Usage: python race.py [KEYS [ROUNDS [THREADS]]] (125 keys, 32 rounds, 2 threads).
"""

import sys
import threading

KEYS = int(sys.argv[1]) if len(sys.argv) > 1 else 125
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 32
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
