"""A real deadlock in C: pthread mutexes through ctypes, in every thread of two processes.

Each process locks a mutex, starts a thread that blocks locking it, then locks it again
itself (a default mutex relocked by its owner waits forever). With `fork`, a forked child
does the same. Each process writes `<ready dir>/<pid>.ready` just before it blocks.
"""

import ctypes
import os
import sys
import threading
import time
from pathlib import Path


def deadlock(ready_dir: str) -> None:
    libc = ctypes.CDLL(None)
    mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER
    libc.pthread_mutex_lock(mutex)
    waiter = threading.Thread(target=libc.pthread_mutex_lock, args=(mutex,), name="waiter")
    waiter.start()
    time.sleep(0.05)  # let the waiter reach the lock (the rendezvous is the ready file)
    (Path(ready_dir) / f"{os.getpid()}.ready").write_text(str(os.getpid()))
    libc.pthread_mutex_lock(mutex)


if __name__ == "__main__":
    ready = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "fork" and os.fork() == 0:
        deadlock(ready)
    deadlock(ready)
