"""The engine's peak memory and the run folder's size as the matrix grows (issue 30, item 3).

    python benchmarks/memory.py [--cells 256,4096,65536] [--jobs 2]
                                [--before /path/to/another/checkout]

Each size is a matrix of `true` (two axes: cells / 16 values by 16), one attempt per
cell, run by `reprospec run -j JOBS` in a fresh --out. For each run it prints the
engine process's peak resident memory (its own ru_maxrss, read inside it as it exits:
the children are not counted), the engine's own CPU (user + system) beside the wall
time and the whole tree's CPU, the files and disk blocks of the run folder (as `du`),
and the size of the store. With --before, the same runs are made with
the engine imported from that checkout (e.g. the main branch), alternating with this one
at each size, so both sides of a pair see the same machine load.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

# The engine in this interpreter, then its own peak RSS (KiB) and CPU into argv[1]: the
# engine process alone, apart from the children it started.
SELF_USAGE = """
import resource, sys
from reprospec import cli
report, sys.argv = sys.argv[1], ["reprospec", *sys.argv[2:]]
code = cli.main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(report, "w") as f:
    f.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime} {cli.__file__}")
sys.exit(code)
"""


@dataclass(frozen=True)
class Figures:
    """One run of the engine: what it held, spent and left on disk."""

    peak_kib: int
    engine_cpu: float
    tree_cpu: float
    wall: float
    files: int
    folder_bytes: int
    store_bytes: int


def spec_text(cells: int) -> str:
    """A matrix of `cells` (a multiple of 16) cells of `true`: axes `a` (cells / 16) x `b` (16)."""
    a = ", ".join(str(i) for i in range(cells // 16))
    b = ", ".join(str(i) for i in range(16))
    return (
        f"reprospec: 1\nname: memory\nmatrix:\n  a: [{a}]\n  b: [{b}]\n"
        "command: [true]\nrun: {repeat: 1}\nexpect: {outcome: pass}\n"
    )


def folder_size(folder: Path) -> tuple[int, int]:
    """(files, bytes on disk) under `folder`: the blocks of its files and folders, as `du`."""
    files, size = 0, os.lstat(folder).st_blocks * 512
    for base, dirs, names in os.walk(folder):
        files += len(names)
        for name in (*dirs, *names):
            size += Path(base, name).lstat().st_blocks * 512
    return files, size


def run_once(source: Path, spec: Path, out: Path, jobs: int) -> Figures | str:
    """One run's figures, or why the engine refused or failed it (its last line)."""
    report = out.parent / f"{out.name}.usage"
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(source)}
    argv: Sequence[str] = [PY, "-c", SELF_USAGE, str(report), "run", str(spec)]
    argv = [*argv, "-j", str(jobs), "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # Run from the temporary folder: `python -c` puts the working folder first on sys.path,
    # and from a checkout that would import its engine whatever PYTHONPATH says.
    done = subprocess.run(
        argv, env=env, cwd=out.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["(no output)"]
        return f"exit {done.returncode}: {lines[-1]}"
    peak, cpu, engine = report.read_text().split()
    if not Path(engine).is_relative_to(source):
        raise SystemExit(f"the engine came from {engine}, not from {source}")
    runs = out / "runs"
    (run_dir,) = list(runs.iterdir())
    files, size = folder_size(run_dir)
    store = sum(p.stat().st_size for p in out.glob("results.db*"))
    return Figures(
        peak_kib=int(peak),
        engine_cpu=float(cpu),
        tree_cpu=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        wall=took,
        files=files,
        folder_bytes=size,
        store_bytes=store,
    )


def show(label: str, cells: int, f: Figures | str) -> None:
    if isinstance(f, str):
        print(f"{label:<7} {cells:>6} cells  {f}", flush=True)
        return
    print(
        f"{label:<7} {cells:>6} cells  peak {f.peak_kib / 1024:7.1f} MiB  "
        f"engine CPU {f.engine_cpu:7.1f} s  tree CPU {f.tree_cpu:7.1f} s  wall {f.wall:7.1f} s  "
        f"run folder {f.files:>7} files {f.folder_bytes / 2**20:7.1f} MiB  "
        f"store {f.store_bytes / 2**20:6.1f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="256,4096,65536")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--before", type=Path, help="another checkout to run alternately")
    args = parser.parse_args()
    sides = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    print(f"load average at the start {os.getloadavg()[0]:.1f}; -j {args.jobs}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for round_, cells in enumerate(int(c) for c in args.cells.split(",")):
            spec = tmp / f"cells-{cells}.yaml"
            spec.write_text(spec_text(cells))
            # Alternate which side goes first from one size to the next.
            for label, source in sides[round_ % len(sides) :] + sides[: round_ % len(sides)]:
                out = tmp / f"{label}-{cells}"
                show(label, cells, run_once(source, spec, out, args.jobs))
                subprocess.run(["rm", "-rf", str(out)], check=True)
            print(f"  load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
