"""The child: a real invalid read (ctypes) when it has workers."""

import ctypes
import sys

if int(sys.argv[1]) > 0:
    ctypes.string_at(0)
print("child done")
