"""Child of the isolate tests: dies of a real SIGSEGV when the toggles it is given say so.

    python toggles.py a=true b=false ...

Environment: RULE, the names that must all be true for the bug ("b,e"; a name
not among the arguments is read from the environment, "1" meaning true); RATE,
the probability the bug fires then (seeded: COUNTER names a folder where each
attempt takes the next number, so a run at -j 1 is the same every time); OTHER,
names any of which makes it abort instead (SIGABRT: a different crash) when the
bug does not fire; SLEEP, seconds to wait first.
"""

import ctypes
import os
import random
import signal
import sys
import time
from pathlib import Path


def truthy(name: str, given: dict[str, str]) -> bool:
    value = given.get(name, os.environ.get(name, "false"))
    return value.lower() in ("true", "1")


def next_number(folder: str) -> int:
    number = 0
    while True:
        try:
            os.close(os.open(Path(folder) / str(number), os.O_CREAT | os.O_EXCL))
            return number
        except FileExistsError:
            number += 1


given = dict(arg.split("=", 1) for arg in sys.argv[1:])
time.sleep(float(os.environ.get("SLEEP") or 0))
rule = [n for n in os.environ.get("RULE", "").split(",") if n]
rate = float(os.environ.get("RATE") or 1)
counter = os.environ.get("COUNTER")
draw = random.Random(next_number(counter)).random() if counter else 0
if rule and all(truthy(n, given) for n in rule) and draw < rate:
    ctypes.string_at(0)  # a real invalid read: SIGSEGV
other = [n for n in os.environ.get("OTHER", "").split(",") if n]
if any(truthy(n, given) for n in other):
    os.kill(os.getpid(), signal.SIGABRT)
print("ok")
