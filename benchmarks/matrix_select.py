"""`-m` on a large matrix, and `plan | head`, against another checkout.

    python benchmarks/matrix_select.py --before /path/to/another/checkout [--pairs 3]

The matrix is four axes of 16 values (65,536 cells of `true`), as a user's huge.yaml. Each
workload is run from the command line in a child process, as a user runs it:

    run -m        reprospec run huge.yaml -m a=1 -m b=2 -m c=3 -j 2   (16 cells)
    run small16   reprospec run small16.yaml -j 2   (the same 16 cells, one 16-value axis:
                  what the filtered run should cost)
    plan -m       reprospec plan huge.yaml -m a=1 -m b=2 -m c=3 > /dev/null
    plan | head   reprospec plan huge.yaml, its stdout read for 3 lines and then closed, as
                  `| head -3` does; wall until the process ended
    plan whole    reprospec plan huge.yaml, its stdout read to the end (all 65,536 cells)

For each it prints the wall time and the engine process's own CPU (user + system of the
reprospec process, read inside it as it exits: the attempts it started are not counted).
With --before, each pair runs the workload once with the engine imported from that
checkout and once with this one, the side that goes first alternating from pair to pair,
so that both sides of a pair see the same load; the medians and the median of the pairs'
ratios are printed per workload.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

# The console script's entry (cli.main() reads sys.argv, so the collector is set up as the
# `reprospec` command sets it), then the process's own CPU into argv[1] as it exits.
SELF_USAGE = """
import resource, sys
from reprospec import cli
report, sys.argv = sys.argv[1], ["reprospec", *sys.argv[2:]]
try:
    code = cli.main()
finally:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(report, "w") as f:
        f.write(f"{usage.ru_utime + usage.ru_stime} {cli.__file__}")
sys.exit(code)
"""

AXIS = "[" + ", ".join(str(i) for i in range(16)) + "]"
HUGE = (
    f"reprospec: 1\nname: huge\nmatrix:\n  a: {AXIS}\n  b: {AXIS}\n  c: {AXIS}\n  d: {AXIS}\n"
    'command: "true"\nexpect: {outcome: pass}\n'
)
SMALL = (
    f"reprospec: 1\nname: small16\nmatrix:\n  a: {AXIS}\n"
    'command: "true"\nexpect: {outcome: pass}\n'
)
FILTERS = ["-m", "a=1", "-m", "b=2", "-m", "c=3"]
# (label, the verb's words, lines read before stdout is closed: None reads it all)
WORKLOADS: list[tuple[str, list[str], int | None]] = [
    ("run -m", ["run", "huge.yaml", *FILTERS, "-j", "2"], None),
    ("run small16", ["run", "small16.yaml", "-j", "2"], None),
    ("plan -m", ["plan", "huge.yaml", *FILTERS], None),
    ("plan | head", ["plan", "huge.yaml"], 3),
    ("plan whole", ["plan", "huge.yaml"], None),
]


@dataclass(frozen=True)
class Figures:
    """One command: its wall time, its own CPU and its exit status."""

    wall: float
    cpu: float
    code: int


def run_once(source: Path, folder: Path, words: list[str], lines: int | None) -> Figures:
    """`reprospec WORDS` with the engine from `source`, run in `folder`."""
    report = folder / "usage"
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(source)}
    env.pop("PYTHONUNBUFFERED", None)  # a pipe is block-buffered, as on a user's machine
    argv = [PY, "-c", SELF_USAGE, str(report), *words]
    if words[0] == "run":
        argv += ["--out", str(folder / "out")]
    start = time.perf_counter()
    # Run from the temporary folder: `python -c` puts the working folder first on sys.path,
    # and from a checkout that would import its engine whatever PYTHONPATH says.
    child = subprocess.Popen(
        argv, env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert child.stdout is not None
    if lines is None:
        child.stdout.read()
    else:
        for _ in range(lines):
            child.stdout.readline()
    child.stdout.close()  # `head` exits: the pipe's reader is gone
    code = child.wait()
    wall = time.perf_counter() - start
    cpu, engine = report.read_text().split()
    if not Path(engine).is_relative_to(source):
        raise SystemExit(f"the engine came from {engine}, not from {source}")
    subprocess.run(["rm", "-rf", str(folder / "out"), str(report)], check=True)
    return Figures(wall, float(cpu), code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout, run alternately")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--only", help="the workloads to run, by label, comma-separated (default: all)"
    )
    args = parser.parse_args()
    sides = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    for _, source in sides:
        # Byte code for both sides, as an install has it: without it (PYTHONDONTWRITEBYTECODE,
        # a fresh worktree) a side compiles every module at every start, ~1 s of CPU.
        subprocess.run([PY, "-m", "compileall", "-q", str(source / "reprospec")], check=True)
    print(f"load average at the start {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "huge.yaml").write_text(HUGE, encoding="utf-8")
        (folder / "small16.yaml").write_text(SMALL, encoding="utf-8")
        chosen = args.only.split(",") if args.only else [label for label, _, _ in WORKLOADS]
        for label, words, lines in (w for w in WORKLOADS if w[0] in chosen):
            seen: dict[str, list[Figures]] = {side: [] for side, _ in sides}
            for pair in range(args.pairs):
                order = sides[pair % len(sides) :] + sides[: pair % len(sides)]
                for side, source in order:
                    f = run_once(source, folder, words, lines)
                    seen[side].append(f)
                    print(
                        f"{label:<12} {side:<6} wall {f.wall:6.2f} s  CPU {f.cpu:6.2f} s  "
                        f"exit {f.code}  (load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
            for side, figures in seen.items():
                wall = statistics.median(f.wall for f in figures)
                cpu = statistics.median(f.cpu for f in figures)
                print(f"{label:<12} {side:<6} median wall {wall:6.2f} s  CPU {cpu:6.2f} s")
            if args.before:
                for what in ("wall", "cpu"):
                    ratios = [
                        getattr(b, what) / getattr(a, what)
                        for a, b in zip(seen["after"], seen["before"], strict=True)
                    ]
                    print(
                        f"{label:<12} before/after {what}: median of the pairs "
                        f"{statistics.median(ratios):.1f}x "
                        f"({', '.join(f'{r:.1f}' for r in ratios)})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
