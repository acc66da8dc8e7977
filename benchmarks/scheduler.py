"""Matrix runs at CI scale: -j 1 vs -j 2 throughput, scheduler and store cost per attempt.

    python benchmarks/scheduler.py [--cells 64] [--work 0.25] [--rounds 3]

Each of the 64 cells burns `--work` seconds of CPU in a child (a busy loop, so two
jobs really compete for the two cores). The two runs alternate, --rounds times (the
order turned each round: parent_costs.paired), and each is given with its wall time and
the CPU time (user + system) of its whole process tree: on a shared machine the wall
times move with the load, and the CPU times far less. Figures are medians; the ratios
are within one run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from parent_costs import ENV, MEDIAN_CPU, ROOT, paired, reprospec, wall


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
    """Wall seconds of one `reprospec run -j JOBS`; its tree's CPU goes to parent_costs."""
    return wall(reprospec("run", str(spec), "-j", str(jobs), "--out", str(out)), cwd=ROOT)


def store_cost(rounds: int) -> tuple[float, float]:
    """(wall, CPU) seconds per `Store.record_attempt` (one committed SQLite transaction in
    WAL mode)."""
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
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(rounds):
            store.record_attempt("bench", f"cell-{i}", result)
        took, used = time.perf_counter() - start, time.process_time() - cpu
        return took / rounds, used / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--work", type=float, default=0.25, help="CPU seconds per cell")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ENV["PATH"] = "/usr/bin:/bin"  # no gdb: the cells pass, nothing to read
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.yaml"
        spec.write_text(spec_text(args.cells, args.work))
        out = Path(tmp) / "out"
        # Warm the environment cache (the one torch import per interpreter) so both
        # figures measure scheduling, not a one-time capture.
        warm = Path(tmp) / "warm.yaml"
        warm.write_text(spec_text(1, 0.0))
        run(warm, out, 1)
        one, two = paired(args.rounds, lambda: run(spec, out, 1), lambda: run(spec, out, 2))
        one_cpu, two_cpu = MEDIAN_CPU
    ideal = args.cells * args.work
    print(
        f"{args.cells} cells x {args.work:.2f} s CPU each (ideal serial {ideal:.1f} s), "
        f"{args.rounds} rounds (medians); load average at the end {os.getloadavg()[0]:.1f}"
    )
    print("        wall        CPU (tree)")
    print(f"-j 1: {one:6.2f} s   {one_cpu:6.2f} s")
    print(
        f"-j 2: {two:6.2f} s   {two_cpu:6.2f} s   speed-up {one / two:.2f}x (target >= 1.8x), "
        f"CPU {two_cpu / one_cpu:.2f}x of -j 1's"
    )
    # The cells' own busy loops are `ideal`: the rest is the engine and the children's
    # start-up (python's ~15 ms).
    print(
        f"engine + child start-up per attempt at -j 1: wall {(one - ideal) / args.cells * 1000:.1f}"
        f" ms, CPU {(one_cpu - ideal) / args.cells * 1000:.1f} ms"
    )
    store_wall, store_cpu = store_cost(500)
    print(
        f"store write per attempt: {store_wall * 1000:.2f} ms wall, {store_cpu * 1000:.2f} ms CPU"
    )


if __name__ == "__main__":
    main()
