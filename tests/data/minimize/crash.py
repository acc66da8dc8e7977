"""A loader that dies of a real SIGSEGV when workers pin memory (ctypes reads address 0)."""

import ctypes
import json
import sys


def describe(workers: int, pinned: bool) -> str:
    return json.dumps({"workers": workers, "pinned": pinned})


def segfault() -> None:
    ctypes.string_at(0)


workers = int(sys.argv[1])
pinned = sys.argv[2] == "true"
print(describe(workers, pinned), flush=True)
if workers > 0 and pinned:
    segfault()
print("done")
