"""CPU and wall time of `capture --from-log` on a long pasted log, against another checkout.

    python benchmarks/fromlog.py [--lines 20000] [--pairs 3] [--before CHECKOUT]

The log is a ticket's shape at CI-log length: a prompt line, `--lines` lines of training
output, a segfault. `--before` names another checkout of reprospec (a `git worktree add`
of the commit to compare with); each pair runs it and this one alternately, so the
ratio is measured under the same load, and the median of the pairs is printed. CPU is
the child's user + system time (os.wait4), which a shared machine's neighbours do not
inflate as they do the wall time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def write_log(path: Path, lines: int) -> None:
    rng = random.Random(1)
    body = [f"step {n} loss {rng.random():.4f} lr 0.001 time 0.12s" for n in range(lines)]
    text = ["Training crashes:", "", "```", "$ python train.py --bs 32", *body]
    text += ["Segmentation fault (core dumped)", "```", ""]
    path.write_text("\n".join(text))


def measure(root: Path, log: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one `capture --from-log` by the checkout at `root`."""
    out.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "reprospec", "capture", "--from-log", str(log), "-o", str(out)]
    begin = time.monotonic()
    # Run from the log's folder: `-m` puts the working folder first on sys.path, and from a
    # checkout that is the checkout, whatever PYTHONPATH says.
    proc = subprocess.Popen(
        argv, env=env, cwd=log.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - begin
    if os.waitstatus_to_exitcode(status) != 0:
        said = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"capture failed under {root}: {said}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log, out = Path(tmp) / "ticket.md", Path(tmp) / "spec.yaml"
        write_log(log, args.lines)
        roots = {"this": HERE, **({"before": args.before} if args.before else {})}
        seen: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
        for _ in range(args.pairs):
            for name, root in roots.items():
                seen[name].append(measure(root, log, out))
        for name, runs in seen.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{name:7} {args.lines} lines: median wall {wall:.2f} s, CPU {cpu:.2f} s")
        if args.before:
            ratios = [b[1] / t[1] for b, t in zip(seen["before"], seen["this"], strict=True)]
            print(f"CPU before/this, per pair: {', '.join(f'{r:.2f}' for r in ratios)}")
            print(f"median {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
