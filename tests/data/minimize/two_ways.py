"""Step 1's other failure (tests/functional/commands/test_minimize.py): with the flag on it
crashes, a real SIGSEGV (ctypes reads address 0) where workers > 0 and a real SIGABRT
(os.abort) without them: the same expect (a crash), two different bugs."""

import ctypes
import os
import sys

workers = int(sys.argv[1])
if sys.argv[2] == "on":
    if workers > 0:
        ctypes.string_at(0)
    os.abort()
