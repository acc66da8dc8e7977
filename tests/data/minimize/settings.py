"""The program of settings.yaml: a real SIGSEGV (ctypes reads address 0) when workers pin
memory; the log level (argv[3]) changes nothing. Already small: that test is about the
settings, the program's own shrinking is crash.py's."""

import ctypes
import sys

workers = int(sys.argv[1])
pinned = sys.argv[2] == "true"
if workers > 0 and pinned:
    ctypes.string_at(0)
