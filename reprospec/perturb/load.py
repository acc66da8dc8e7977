"""`python -S -E load.py --cpu N --io M --dir DIR [--cpus 0,1]`: competitors beside an attempt.

N processes spin on a CPU, M processes write and fsync 1 MiB at a time into DIR,
all on the attempt's CPUs (`--cpus`). Stdlib only. The engine starts this in a
process group of its own and kills the group when the attempt ends; should the
engine itself die, this notices it has a new parent and ends its group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time


def spin() -> None:
    n = 0
    while True:
        n = (n * 1103515245 + 12345) & 0x7FFFFFFF


def write(folder: str, index: int) -> None:
    path = os.path.join(folder, f"io-load-{index}.bin")
    block = b"\xa5" * 2**20
    try:
        while True:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            for _ in range(16):
                os.write(fd, block)
                os.fsync(fd)
            os.close(fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def main(argv: list[str]) -> int:
    options = dict(zip(argv[::2], argv[1::2], strict=False))
    cpus = options.get("--cpus")
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    parent = os.getppid()
    children = []
    jobs = [("cpu", i) for i in range(int(options.get("--cpu", "0")))]
    jobs += [("io", i) for i in range(int(options.get("--io", "0")))]
    for kind, index in jobs:
        pid = os.fork()
        if pid == 0:
            if kind == "cpu":
                spin()
            else:
                write(options.get("--dir", "."), index)
            os._exit(0)
        children.append(pid)
    while os.getppid() == parent:
        time.sleep(0.5)
    os.killpg(0, signal.SIGKILL)  # the engine is gone: so are we
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
