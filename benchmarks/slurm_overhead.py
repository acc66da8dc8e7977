"""Slurm job arrays: per-task overhead, and `reprospec slurm` wall time against a local run.

Needs a Slurm that answers (scripts/slurm-setup.sh: one host, its CPUs as task slots).

    python benchmarks/slurm_overhead.py [--tasks 20] [--cells 8] [--workload]

1. Bare Slurm: an array of `--tasks` tasks running `true`; wall time from `sbatch` until
   the last task ended, per task and per slot-round (tasks / slots run at once).
2. A spec of `--cells` cells running `python -c pass`: `reprospec run -j SLOTS` locally,
   then `reprospec slurm --shards N` for N = SLOTS and N = cells, submit to merged
   results.json. The difference over the local run, divided by the rounds of tasks, is
   what each array task costs (Slurm scheduling + a `reprospec run` start-up with its
   environment capture + the merge job).
3. With --workload: specs/segfault.yaml (real torch attempts), local `-j 2` vs `--shards 2`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reprospec.core.words import plural

ROOT = Path(__file__).resolve().parent.parent
REPROSPEC = [sys.executable, "-m", "reprospec"]
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


def slots() -> int:
    """CPUs of the partition's nodes: how many one-CPU tasks run at once."""
    out = subprocess.run(
        ["sinfo", "--noheader", "--format=%C"], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0].split("/")[-1])  # allocated/idle/other/total


def bare_array(tasks: int, logs: Path) -> float:
    """Seconds from sbatch to the end of the last of `tasks` `true` tasks."""
    begin = time.perf_counter()
    job = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--array=1-{tasks}",
            f"--output={logs}/bare-%a.out",
            "--wrap",
            "true",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    while True:
        states = subprocess.run(
            ["squeue", "--noheader", "--array", "--states=all", f"--jobs={job}", "--format=%T"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        if len(states) >= tasks and all(s in ENDED for s in states):
            return time.perf_counter() - begin
        time.sleep(0.05)


def local_run(spec: Path, jobs: int, out: Path) -> float:
    begin = time.perf_counter()
    proc = subprocess.run(
        [*REPROSPEC, "run", str(spec), "-j", str(jobs), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return time.perf_counter() - begin


def slurm_run(spec: Path, shards: int, out: Path) -> tuple[float, dict[str, object]]:
    """Seconds from `reprospec slurm` to the merged results.json, and those results."""
    begin = time.perf_counter()
    proc = subprocess.run(
        [*REPROSPEC, "slurm", str(spec), "--shards", str(shards), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (out / "slurm").iterdir()
    merged = run_dir / "merged" / "runs"
    while True:
        found = list(merged.glob("*/results.json")) if merged.is_dir() else []
        if found:
            took = time.perf_counter() - begin
            return took, json.loads(found[0].read_text())
        failed = list((run_dir / "logs").glob("merge-*.out"))
        if failed and "reprospec-slurm: exit" in failed[0].read_text():
            raise SystemExit(f"merge failed: {failed[0].read_text()}")
        time.sleep(0.05)


def _env() -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1"}


def trivial_spec(folder: Path, cells: int) -> Path:
    path = folder / "trivial.yaml"
    path.write_text(
        "reprospec: 1\nname: slurm-bench\n"
        f"matrix:\n  i: [{', '.join(str(i) for i in range(cells))}]\n"
        "command: python -c pass\nexpect: {outcome: pass}\n",
        encoding="utf-8",
    )
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--workload", action="store_true", help="also specs/segfault.yaml")
    args = parser.parse_args()
    n_slots = slots()
    with tempfile.TemporaryDirectory(prefix="reprospec-slurm-bench-") as tmp:
        folder = Path(tmp)
        wall = bare_array(args.tasks, folder)
        rounds = math.ceil(args.tasks / n_slots)
        print(
            f"bare Slurm: {args.tasks} `true` tasks on {plural(n_slots, 'slot')}: {wall:.2f} s "
            f"({wall / args.tasks:.2f} s per task, {wall / rounds:.2f} s per slot-round)"
        )

        spec = trivial_spec(folder, args.cells)
        local_run(spec, n_slots, folder / "warm")  # warm the environment-capture cache
        local = local_run(spec, n_slots, folder / "local")
        print(
            f"local: reprospec run, {args.cells} cells x `python -c pass`, -j {n_slots}: "
            f"{local:.2f} s"
        )
        for shards in sorted({n_slots, args.cells}):
            took, results = slurm_run(spec, shards, folder / f"slurm-{shards}")
            summary = results["summary"]
            assert isinstance(summary, dict), summary
            assert summary["reproduced"] == args.cells, summary
            rounds = math.ceil(shards / n_slots)
            print(
                f"slurm: --shards {shards}: {took:.2f} s to the merged report "
                f"({took / local:.1f}x local; {(took - local) / rounds:.2f} s per task "
                f"slot-round over local, merge job included)"
            )

        if args.workload:
            spec = ROOT / "specs" / "segfault.yaml"
            local = local_run(spec, 2, folder / "wl-local")
            took, _ = slurm_run(spec, 2, folder / "wl-slurm")
            print(
                f"segfault.yaml: local -j 2 {local:.1f} s, slurm --shards 2 {took:.1f} s "
                f"({took / local:.2f}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
