"""A real SIGBUS in the main thread while two other threads keep running Python code.

The touch of a page truncated under its mapping is a foreign call (ctypes.memset),
which releases the GIL: the other threads go on changing their frames while the
process takes the signal and faulthandler reports it.
"""

import ctypes
import io
import mmap
import os
import pickle
import tempfile
import threading
import traceback
from pathlib import Path


def busy() -> None:
    while True:
        try:
            pickle.dumps([list(range(50)) for _ in range(3)])
            raise RuntimeError("busy")
        except RuntimeError:
            traceback.print_exc(file=io.StringIO())


threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
for thread in threads:
    thread.start()
fd, path = tempfile.mkstemp()
os.ftruncate(fd, 1 << 22)
block = mmap.mmap(fd, 1 << 22)
Path(path).unlink()
os.ftruncate(fd, 0)  # the pages under the mapping are gone: touching one is a SIGBUS
print("about to touch", flush=True)
ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(block)), 1, 1 << 22)
