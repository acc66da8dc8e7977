"""An evictor thread races a reader over a shared cache. With `--shared true` both threads
use one cache, and in about 30% of runs the evictor frees the entry while the reader holds
it (the interleaving is drawn from the OS's randomness, not the code's): the reader then
reads freed memory, a real SIGSEGV in ctypes. With `--shared false` the reader gets a
private copy (the guard), so that cell passes. A minimal repro must keep the condition:
drop the guard and the unshared cell crashes too, as often as the shared one."""

import argparse
import ctypes
import os
import threading
import time


class Cache:
    def __init__(self, entries: dict[int, bytes] | None = None) -> None:
        self.entries = dict(entries or {})
        self.freed: set[int] = set()
        self.hits = 0

    def put(self, key: int, value: bytes) -> None:
        self.entries[key] = value

    def copy(self) -> "Cache":
        return Cache(self.entries)

    def evict(self, key: int) -> None:
        self.freed.add(key)

    def read(self, key: int) -> int:
        self.hits += 1
        buffer = ctypes.create_string_buffer(self.entries[key])
        address = 0 if key in self.freed else ctypes.addressof(buffer)
        return len(ctypes.string_at(address))


def evictor(cache: Cache, key: int, started: threading.Event) -> None:
    started.set()
    # The interleaving that loses (77 in 256): the eviction lands while the reader holds it.
    if os.urandom(1)[0] < 77:
        cache.evict(key)


def reader(cache: Cache, key: int, rounds: int, seen: list[int]) -> None:
    for _ in range(rounds):
        seen.append(cache.read(key))


def report(seen: list[int], cache: Cache, started: float) -> str:
    took = time.monotonic() - started
    return f"read {sum(seen)} bytes in {len(seen)} reads ({cache.hits} hits) in {took:.3f}s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="false")
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    began = time.monotonic()
    shared = args.shared == "true"
    cache = Cache()
    cache.put(1, b"x" * args.size)
    view = cache
    if not shared:
        view = cache.copy()
    started = threading.Event()
    evicting = threading.Thread(target=evictor, args=(cache, 1, started))
    evicting.start()
    started.wait()
    seen: list[int] = []
    reading = threading.Thread(target=reader, args=(view, 1, args.rounds, seen))
    reading.start()
    reading.join()
    evicting.join()
    if args.verbose:
        print(report(seen, view, began), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
