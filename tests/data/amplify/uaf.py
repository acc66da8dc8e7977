"""Open a session, close it, then ask its name: a use-after-free in libsession.so.

Usage: python uaf.py LIBRARY. Plain runs print 6 (the freed memory still holds the
old pointer); under malloc perturbation the read faults (SIGSEGV).
"""

import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.session_open.restype = ctypes.c_void_p
lib.session_open.argtypes = [ctypes.c_long]
lib.session_close.argtypes = [ctypes.c_void_p]
lib.session_name_length.restype = ctypes.c_size_t
lib.session_name_length.argtypes = [ctypes.c_void_p]

session = lib.session_open(7)
lib.session_close(session)
print(lib.session_name_length(session))  # the bug: the session is closed
