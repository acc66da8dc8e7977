"""Matrix runs at CI scale: -j 1 vs -j 2 throughput, scheduler and store cost per attempt.

    python benchmarks/scheduler.py [--cells 64] [--work 0.25]

Each of the 64 cells burns `--work` seconds of CPU in a child (a busy loop, so two
jobs really compete for the two cores). The figures are ratios within one run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def spec_text(cells: int, work: float) -> str:
    return f"""reprospec: 1
name: bench-matrix
matrix:
  n: {list(range(cells))}
command:
  - python
  - -c
  - "import time; end = time.process_time() + {work}\\nwhile time.process_time() < end: pass"
expect: {{outcome: pass}}
"""


def run(spec: Path, out: Path, jobs: int) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "reprospec", "run", str(spec), "-j", str(jobs), "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - start


def store_cost(rounds: int) -> float:
    """Seconds per `Store.record_attempt` (one committed SQLite transaction in WAL mode)."""
    from reprospec.core.results import AttemptResult, Outcome
    from reprospec.store.db import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        store.begin_run("bench", "bench", "bench.yaml", "", "local", {}, {})
        result = AttemptResult(
            attempt=1,
            duration_s=0.1,
            outcome=Outcome(kind="pass"),
            matched=True,
            mismatches=(),
            logs="cells/x/1/",
        )
        start = time.perf_counter()
        for i in range(rounds):
            store.record_attempt("bench", f"cell-{i}", result)
        return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--work", type=float, default=0.25, help="CPU seconds per cell")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.yaml"
        spec.write_text(spec_text(args.cells, args.work))
        out = Path(tmp) / "out"
        # Warm the environment cache (the one torch import per interpreter) so both
        # figures measure scheduling, not a one-time capture.
        warm = Path(tmp) / "warm.yaml"
        warm.write_text(spec_text(1, 0.0))
        run(warm, out, 1)
        one = run(spec, out, 1)
        two = run(spec, out, 2)
    ideal = args.cells * args.work
    # Child start-up (python ~15 ms) counts as the child's own time, not the scheduler's.
    per_attempt_overhead = (one - ideal) / args.cells
    print(f"{args.cells} cells x {args.work:.2f} s CPU each (ideal serial {ideal:.1f} s)")
    print(f"-j 1: {one:6.2f} s")
    print(f"-j 2: {two:6.2f} s   speed-up {one / two:.2f}x (target >= 1.8x)")
    print(f"engine + child start-up per attempt at -j 1: {per_attempt_overhead * 1000:.1f} ms")
    print(f"store write per attempt: {store_cost(500) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
