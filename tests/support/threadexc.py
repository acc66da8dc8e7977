"""A program whose threads die of an exception as its main thread does.

Theirs and the main thread's tracebacks print on one stderr at one moment, interleaved:
what the local runner's (tests/functional/outcome/test_thread_exceptions.py) and the docker
runner's (tests/real/docker/test_thread_exceptions.py) tests of the exception that ended
the process run, and how they read each attempt's outcome.
"""

from __future__ import annotations

import collections
from typing import Any

# Eight threads and the main thread raise at one moment (a barrier), the threads' tracebacks
# deep (30 frames) so that theirs and the main thread's overlap on stderr in every attempt.
PROGRAM = """\
import sys, threading

THREADS = 8
gate = threading.Barrier(THREADS + 1)


def deep(n):
    if n:
        return deep(n - 1)
    raise TypeError("worker failed")


def work():
    gate.wait()
    deep(30)


threads = [threading.Thread(target=work) for _ in range(THREADS)]
for thread in threads:
    thread.start()
gate.wait()
if sys.argv[1] == "main":
    try:
        {}["k"]
    except KeyError as exc:
        raise RuntimeError("main failed") from exc
for thread in threads:
    thread.join()
sys.exit(1 if sys.argv[1] == "exit1" else 0)
"""


def seen(attempts: list[dict[str, Any]]) -> collections.Counter[tuple[object, ...]]:
    return collections.Counter(
        (
            a["outcome"]["kind"],
            a["outcome"].get("exception"),
            a["outcome"].get("message"),
            tuple((link["type"], link.get("link")) for link in a["outcome"].get("chain") or ()),
        )
        for a in attempts
    )
