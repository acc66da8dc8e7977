"""A check-then-act race made repeatable, for tests/functional/commands/test_minimize_flaky.py.

Two threads both pass `if stock > 0` before either takes one: where `lost`, a barrier
holds each between its check and its act, so the race is lost for certain. The failing
side (`parallel`) loses it every third attempt, counted in RACE_COUNTER's file (the
attempts run one at a time, -j 1): a flaky failure at 1/3 whose sequence is fixed. In a
folder named `result-dir` (minimize's -o in the test) it never loses: DIR's check misses
for certain, with no file missing. This module lives outside the spec's workdir (on its
PYTHONPATH), so minimize cannot cut these rules out of it.
"""

import os
import threading
from pathlib import Path


def race(parallel: bool) -> None:
    lost = False
    if parallel:
        counter = Path(os.environ["RACE_COUNTER"])
        n = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(n))
        lost = n % 3 == 0 and Path.cwd().name != "result-dir"
    stock = {"n": 1}
    gate = threading.Barrier(2) if lost else None

    def buy() -> None:
        if stock["n"] > 0:  # check ...
            if gate is not None:
                gate.wait()  # both checked before either acts
            stock["n"] -= 1  # ... then act

    threads = [threading.Thread(target=buy) for _ in range(2)]
    for t in threads:
        t.start()
        if not parallel:
            t.join()
    for t in threads:
        t.join()
    assert stock["n"] >= 0, f"sold more than in stock: {stock['n']}"
