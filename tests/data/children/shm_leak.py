"""Leaks a real named POSIX semaphore in /dev/shm (`sem.mp-<argv[1]>`), as multiprocessing
does when a process dies before unlinking it. With argv[2], it first announces itself in
argv[2] + ".ready" and waits for the file argv[2] (written by the test), then leaks and exits
at once: the leak lives only between this exit and the engine's cleanup."""

import _multiprocessing
import sys
import time
from pathlib import Path

SEMAPHORE = 1  # multiprocessing.synchronize.SEMAPHORE
if len(sys.argv) > 2:
    Path(sys.argv[2] + ".ready").write_text("")
    while not Path(sys.argv[2]).exists():
        time.sleep(0.01)
# unlink=False: the name stays in /dev/shm after this process is gone.
_multiprocessing.SemLock(SEMAPHORE, 1, 1, "/mp-" + sys.argv[1], False)
