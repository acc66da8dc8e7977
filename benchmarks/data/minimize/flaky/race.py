"""A race in miniature: with the cache shared between threads, the reader sometimes
(about 30% of runs, decided by the OS's randomness, not the code) reads a freed entry."""

import argparse
import ctypes
import os
import threading


class Cache:
    def __init__(self) -> None:
        self.entries: dict[int, bytes] = {}
        self.lock = threading.Lock()

    def put(self, key: int, value: bytes) -> None:
        with self.lock:
            self.entries[key] = value

    def get(self, key: int) -> bytes | None:
        return self.entries.get(key)


def reader(cache: Cache, shared: bool) -> None:
    value = cache.get(1) or b""
    if shared:
        # The interleaving that loses (77 in 256): the entry was freed under the reader.
        address = 0 if os.urandom(1)[0] < 77 else id(value)
        ctypes.string_at(address)
    print(len(value), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="false")
    parser.add_argument("--size", type=int, default=16)
    args = parser.parse_args()
    cache = Cache()
    cache.put(1, b"x" * args.size)
    thread = threading.Thread(target=reader, args=(cache, args.shared == "true"))
    thread.start()
    thread.join()
    print("done")


if __name__ == "__main__":
    main()
