"""Leaks a real named POSIX semaphore in /dev/shm (`sem.mp-<argv[1]>`), as multiprocessing
does when a process dies before unlinking it; with argv[2], waits for that file to exist
(written by the test) before exiting, after announcing itself in argv[2] + ".ready"."""

import _multiprocessing
import os
import sys
import time

SEMAPHORE = 1  # multiprocessing.synchronize.SEMAPHORE
# unlink=False: the name stays in /dev/shm after this process is gone.
_multiprocessing.SemLock(SEMAPHORE, 1, 1, "/mp-" + sys.argv[1], False)
if len(sys.argv) > 2:
    open(sys.argv[2] + ".ready", "w").close()
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
