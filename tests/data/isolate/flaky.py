"""Dies of a real SIGSEGV in about RATE of its runs (default 0.3), whatever else is set.

A flaky crash that no difference of the environment causes: isolating it between two
configurations must find that the passing side fails too. Whether a run crashes is
SEED's pseudo-random stream at the run's number, counted in the file COUNTER under a
lock, so a test sees the same sequence every time it runs (a crash drawn from
os.urandom would make a test that fails at the search's stated error, 0.5%, by chance).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import random
from pathlib import Path

with Path(os.environ["COUNTER"]).open("a+") as counter:
    fcntl.flock(counter, fcntl.LOCK_EX)  # concurrent attempts (-j) each take their own number
    counter.seek(0)
    number = len(counter.read())
    counter.write("x")
if random.Random(f"{os.environ['SEED']}:{number}").random() < float(os.environ.get("RATE", "0.3")):
    ctypes.string_at(0)  # a real invalid read at address 0: SIGSEGV
print("ok")
