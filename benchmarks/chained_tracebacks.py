"""What reading a log of many chained tracebacks costs, the quote check per header before and after.

    python benchmarks/chained_tracebacks.py [--rounds 5] [--chains 10000]

outcome/tracebacks.exception_after asks, of each traceback, whether it is a worker's that
its pool quoted (`_quoted`: the nearest `\"\"\"` line above it opens a RemoteTraceback's
quote). It looked back up to 1000 lines for that line from each header, so a log of
tens of thousands of chained tracebacks (a retry loop's, a worker pool's) cost 1000
regex matches a header: 20,000 chains took about 15 s of CPU in parse_chain. The lines of
three quotes are now found once for the whole log (`quote_lines`) and each header asks
by a bisect. This reads the same texts both ways in one run: `before` puts the old check
back (the per-header walk, below) in place of `_quoted`, `after` is the module as it is;
the two are measured in turn in each round (a neighbour's load falls on both alike), and
each side's median CPU and wall seconds and the median of the rounds' CPU ratios are
printed. Both sides must read the same chain: the script stops where they do not.
"""

from __future__ import annotations

import argparse
import statistics
import time

from reprospec.outcome import tracebacks
from reprospec.outcome.tracebacks import PythonException, parse_chain

# A raise from a caught KeyError, its two blocks joined by the link line.
_RAISED = """Traceback (most recent call last):
  File "/w/job.py", line 3, in load
    raise KeyError("x")
KeyError: 'x'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/job.py", line 7, in main
    raise RuntimeError("top") from e
RuntimeError: top
"""
# A process pool's failure: the worker's traceback quoted in its RemoteTraceback, the cause.
_QUOTED = '''concurrent.futures.process._RemoteTraceback:
"""
Traceback (most recent call last):
  File "/w/job.py", line 3, in work
    raise ValueError("bad item")
ValueError: bad item
"""

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/w/job.py", line 9, in main
    f.result()
ValueError: bad item
'''
TEXTS = {"raised cause": _RAISED, "pool's quoted": _QUOTED}


def _quoted_before(lines: list[str], header: int, _quotes: list[int] | None = None) -> bool:
    """The check as it was before `quote_lines`: a walk back from each header (the index of
    the quotes, `_quotes`, is not read)."""
    for index in range(header - 1, max(header - tracebacks._MAX_QUOTED_LINES, 0), -1):
        if tracebacks._QUOTES.match(lines[index]):
            return tracebacks._REMOTE_TRACEBACK.match(lines[index - 1]) is not None
    return False


def _timed(text: str) -> tuple[float, float, tuple[PythonException, ...]]:
    """parse_chain of `text`: its CPU and wall seconds, and the chain it read."""
    cpu, wall = time.process_time(), time.perf_counter()
    chain = parse_chain(text)
    return time.process_time() - cpu, time.perf_counter() - wall, chain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chains", type=int, default=10_000, help="chained tracebacks per text")
    args = parser.parse_args()
    after_check = tracebacks._quoted
    print(
        f"{'text':<14} {'MB':>5} {'before cpu s':>13} {'after cpu s':>12} "
        f"{'before wall s':>14} {'after wall s':>13} {'cpu ratio (median)':>19}"
    )
    for name, block in TEXTS.items():
        text = block * args.chains
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        wall: dict[str, list[float]] = {"before": [], "after": []}
        ratios: list[float] = []
        for round_ in range(args.rounds):
            order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
            read: dict[str, object] = {}
            for side in order:
                check = _quoted_before if side == "before" else after_check
                tracebacks._quoted = check  # type: ignore[assignment]
                try:
                    spent, waited, read[side] = _timed(text)
                finally:
                    tracebacks._quoted = after_check
                cpu[side].append(spent)
                wall[side].append(waited)
            if read["before"] != read["after"]:
                raise SystemExit(f"{name}: the two sides read {read['before']} and {read['after']}")
            ratios.append(cpu["before"][-1] / max(cpu["after"][-1], 1e-9))
        print(
            f"{name:<14} {len(text) / 1e6:>5.1f} {statistics.median(cpu['before']):>13.2f} "
            f"{statistics.median(cpu['after']):>12.2f} {statistics.median(wall['before']):>14.2f} "
            f"{statistics.median(wall['after']):>13.2f} {statistics.median(ratios):>18.1f}x"
        )


if __name__ == "__main__":
    main()
