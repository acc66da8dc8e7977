"""What a run holds per judged cell, and what its end costs, without running the attempts.

    python benchmarks/held_cells.py [--cells 16384] [--before /path/to/another/checkout]

An in-process replay of a large run's judging and end (issue 30, item 3): a matrix of
`true` (axes cells / 16 by 16) is planned, and each cell is handed to the run's judge as
the scheduler hands a finished cell over (one passing attempt, its own timestamps, log
folder and duration, as a real attempt has), spooled as the pipeline spools it; then the
end: every cell judged, results.json, report.md and the console table written from the
result. It prints, from `tracemalloc` (allocations, not RSS): what the plan holds, what
the judged cells hold per cell once every cell is in, the end's peak above that, and the
CPU of the judging and of the end (this process's user + system). With --before, the same
replay runs in a child with that checkout's engine, alternating, in a fresh process each.
A real run (benchmarks/memory.py) takes 15-35 minutes at 65,536 cells on a loaded machine;
this takes seconds, and what it measures is what the attempts leave, not their cost.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a child with PYTHONPATH set to the checkout: prints one line of figures.
REPLAY = r"""
import io, resource, sys, tracemalloc
from pathlib import Path
from rich.console import Console

cells_n, tmp = int(sys.argv[1]), Path(sys.argv[2])

def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime

from reprospec.core.redact import Redactor
from reprospec.core.results import AttemptResult, Outcome, RunResult
from reprospec.core.runoptions import RunOptions
from reprospec.pipeline.stages import write_outputs
from reprospec.plan.run import plan_run
from reprospec.report.progress import results_table
from reprospec.spec.load import load_spec
from reprospec.store.cellspool import CellSpool
from reprospec.store.runfolder import RunFolder
try:  # this branch: the judged cells in their own module, masked as they are judged
    from reprospec.outcome.judgedcells import JudgedCells
    def judged_cells(plan, spool, redactor):
        return JudgedCells(plan, spool.add, redactor)
except ImportError:  # before: masked at the spool, and the whole result at the end
    from reprospec.outcome.judge import JudgedCells
    def judged_cells(plan, spool, redactor):
        return JudgedCells(plan, lambda n, cell: spool.add(n, redactor.value(cell)))

a = ", ".join(str(i) for i in range(cells_n // 16))
b = ", ".join(str(i) for i in range(16))
spec_file = tmp / "spec.yaml"
spec_file.write_text(
    f"reprospec: 1\nname: memory\nmatrix:\n  a: [{a}]\n  b: [{b}]\n"
    "command: [true]\nrun: {repeat: 1}\nexpect: {outcome: pass}\n"
)
spec = load_spec(spec_file)
redactor = Redactor.for_spec(spec.document)
tracemalloc.start()
plan = plan_run(spec, RunOptions(out=tmp))
planned = tracemalloc.get_traced_memory()[0]
folder = RunFolder.of(tmp.resolve(), "replay").create()
with CellSpool(folder.results_spool, len(plan.cells)) as spool:
    judged = judged_cells(plan, spool, redactor)
    start = cpu()
    for n, cell in enumerate(plan.cells):
        attempt = AttemptResult(
            1, 0.0012 + n * 1e-7, Outcome(kind="pass", exit_code=0, duration_s=0.001 + n * 1e-7,
            pid=1000 + n), True, (), logs=f"cells/{cell.id}/1",
            started=f"2026-11-29T12:00:{n:09d}", finished=f"2026-11-29T12:01:{n:09d}",
        )
        judged.add(cell, (redactor.value(attempt),))
    judging = cpu() - start
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    start = cpu()
    cells = judged.all({}, interrupted=False)
    result = RunResult("replay", "memory", str(spec_file), spec.source_text, "local", "t0",
                       "t1", {}, cells)
    result = redactor.value(result)
    write_outputs(folder, result, spool.entries(result.cells))
    Console(file=io.StringIO(), width=200).print(results_table(result))
    end = cpu() - start
    peak = tracemalloc.get_traced_memory()[1]
print(f"{planned / 2**20:.1f} {(held - planned) / cells_n:.0f} {(peak - held) / 2**20:.1f} "
      f"{judging:.2f} {end:.2f} {(folder.path / 'results.json').stat().st_size}")
"""


def replay(source: Path, cells: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(source)}
        done = subprocess.run(
            [sys.executable, "-c", REPLAY, str(cells), tmp],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{source}: {done.stderr.strip().splitlines()[-1]}")
    return done.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=16384)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--before", type=Path, help="another checkout, replayed alternately")
    args = parser.parse_args()
    sides = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    print(f"load average at the start {os.getloadavg()[0]:.1f}; {args.cells} cells", flush=True)
    for round_ in range(args.rounds):
        for label, source in sides if round_ % 2 == 0 else sides[::-1]:
            plan, per_cell, end, judging, end_cpu, size = replay(source, args.cells)
            print(
                f"{label:<7} plan {plan:>5} MiB  judged cells {per_cell:>4} B/cell  "
                f"end peak +{end:>5} MiB  CPU judging {judging:>6} s, end {end_cpu:>6} s  "
                f"results.json {size} B",
                flush=True,
            )


if __name__ == "__main__":
    main()
