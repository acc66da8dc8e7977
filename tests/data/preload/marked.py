"""Preloaded by the tests: reads a variable at import, as OMP_NUM_THREADS is read by libgomp."""

import os

MARK = os.environ.get("PRELOAD_MARK")
IMPORTED_IN = os.getpid()
