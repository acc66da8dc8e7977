"""Leaks a real named POSIX semaphore in /dev/shm (`sem.mp-<argv[1]>`), as multiprocessing
does when a process dies before unlinking it. With argv[2], it first announces itself in
argv[2] + ".ready" and waits for the file argv[2] (written by the test), then leaks and exits
at once: the leak lives only between this exit and the engine's cleanup."""

import _multiprocessing
import os
import sys
import time

SEMAPHORE = 1  # multiprocessing.synchronize.SEMAPHORE
if len(sys.argv) > 2:
    open(sys.argv[2] + ".ready", "w").close()
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
# unlink=False: the name stays in /dev/shm after this process is gone.
_multiprocessing.SemLock(SEMAPHORE, 1, 1, "/mp-" + sys.argv[1], False)
