"""Dies of a real signal: SIGSEGV by default, or the one named in argv[1]."""

import ctypes
import os
import signal
import sys

print("about to crash", flush=True)
kind = sys.argv[1] if len(sys.argv) > 1 else "segv"
if kind == "segv":
    ctypes.string_at(0)
elif kind == "abort":
    os.abort()
else:
    os.kill(os.getpid(), getattr(signal, kind))
