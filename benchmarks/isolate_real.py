"""Isolation with real processes: a real SIGSEGV, half the time, when two of ten toggles are on.

    python benchmarks/isolate_real.py [--trials 3] [-j 2]

The spec has ten boolean axes (1024 cells). Its child dies of a real invalid
read with probability 0.5 (true randomness) when a3 and a7 are both on, and
passes otherwise. `reprospec isolate` runs between the all-on and the all-off
cell through the Python API; this prints its wall time and attempts to the
right answer, and the cost of the full factorial estimated from the time one
attempt takes in an ordinary run of the same spec (running all 1024 cells
would take most of an hour here): one attempt per cell, and the attempts a
factorial needs to call each cell at the same error level as isolate's checks.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

AXES = [f"a{i}" for i in range(10)]
CULPRITS = ("a3", "a7")
RATE = 0.5

CHILD = """\
import ctypes, os, sys
on = {a.split("=")[0] for a in sys.argv[1:] if a.endswith("=true")}
if {"a3", "a7"} <= on and os.urandom(1)[0] < 128:
    ctypes.string_at(0)  # a real SIGSEGV, half the time
print("ok")
"""


def write_spec(folder: Path) -> Path:
    (folder / "child.py").write_text(CHILD)
    axes = "\n".join(f"  {axis}: [false, true]" for axis in AXES)
    args = " ".join(f"{axis}=${{{{ matrix.{axis} }}}}" for axis in AXES)
    spec = folder / "ten-toggles.yaml"
    spec.write_text(
        f"""reprospec: 1
name: ten-toggles
matrix:
{axes}
command: python child.py {args}
run:
  timeout: 30s
expect:
  outcome: crash
  signal: SIGSEGV
"""
    )
    return spec


def cell(value: bool) -> str:
    return ",".join(f"{axis}={'true' if value else 'false'}" for axis in AXES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args(argv)

    import reprospec
    from reprospec.isolation.driver import IsolateOptions, isolate_spec

    with tempfile.TemporaryDirectory(prefix="reprospec-isolate-bench-") as tmp:
        folder = Path(tmp)
        spec = write_spec(folder)
        walls: list[float] = []
        attempts: list[int] = []
        right = 0
        for trial in range(args.trials):
            out = folder / f"out-{trial}"
            options = IsolateOptions(
                failing=cell(True),
                passing=cell(False),
                run=reprospec.RunOptions(jobs=args.jobs, out=out, purpose="isolate"),
            )
            start = time.perf_counter()
            found = isolate_spec(spec, options)
            walls.append(time.perf_counter() - start)
            attempts.append(found.result.attempts)
            names = tuple(d.name for d in found.culprits)
            right += found.result.status == "isolated" and names == CULPRITS
            print(
                f"trial {trial + 1}: {found.result.status} {names} in "
                f"{found.result.attempts} attempts, {walls[-1]:.1f} s",
                flush=True,
            )

        # One attempt of an ordinary run, from 32 cells of the same spec.
        sample = [f"a{i}=false" for i in range(5)]  # 2^5 = 32 cells
        start = time.perf_counter()
        result = reprospec.run(
            spec,
            reprospec.RunOptions(
                jobs=args.jobs, repeat=1, matrix_filters=tuple(sample), out=folder / "sample"
            ),
        )
        per_attempt = (time.perf_counter() - start) / sum(len(c.attempts) for c in result.cells)

    cells = 2 ** len(AXES)
    failing = cells // 4  # a3 and a7 both on
    # A factorial that calls every cell at isolate's stated error: a crashing cell stops
    # at its first crash (2 attempts on average at rate 0.5), a passing one needs n clean
    # attempts with (1 - 0.5)^n <= error (the rate known, which isolate is not told).
    from reprospec.isolation import Settings

    clean = math.ceil(math.log(Settings().error) / math.log(1 - RATE))
    checked = failing * (1 / RATE) + (cells - failing) * clean
    print()
    print("| | attempts | wall time |")
    print("|---|---|---|")
    print(
        f"| `reprospec isolate`, mean of {args.trials} ({right}/{args.trials} right) | "
        f"{statistics.fmean(attempts):.0f} | {statistics.fmean(walls):.0f} s |"
    )
    print(
        f"| full factorial, 1 attempt per cell (estimated) | {cells} | "
        f"{cells * per_attempt:.0f} s |"
    )
    print(
        f"| full factorial, each cell called at isolate's error level (estimated) | "
        f"{checked:.0f} | {checked * per_attempt:.0f} s |"
    )
    print(f"\none attempt of an ordinary run (-j {args.jobs}): {per_attempt * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
