"""Segfaults (a real invalid read) only when CRASH_ON is 1: the variable is the condition."""

import ctypes
import os

if os.environ.get("CRASH_ON") == "1":
    ctypes.string_at(0)
print("clean")
