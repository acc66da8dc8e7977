"""How together `run.instances` starts its copies, against `-j N` without a barrier; its cost.

    python benchmarks/instances.py [--rounds 5] [--counts 4 8]

For N copies of `python -c "print(time.monotonic_ns())"`:

- barrier: one cell with `run.instances: N`, `repeat: ROUNDS`. The engine's own figure
  (`start_spread_s`, the spread of the releases as each instance read its clock) and the
  spread of the programs' first lines (after exec and interpreter start-up).
- no barrier: N cells at `-j N` (what "run four tests at once" is without instances), one
  run per round; the spread of the programs' first lines.

Then what the barrier costs one attempt: `python -c pass` as a plain attempt vs as one
instance (launch.py's interpreter start-up and the FIFOs), median of ROUNDS attempts each.
Medians of the rounds; all figures from one run of this script.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import reprospec

PRINT = 'python -c "import time; print(time.monotonic_ns())"'


def _spec(folder: Path, name: str, body: str) -> reprospec.Spec:
    path = folder / f"{name}.yaml"
    path.write_text(f"reprospec: 1\nname: {name}\n{body}")
    return reprospec.load_spec(path)


def _first_lines(out: Path, run: reprospec.RunResult, logs: list[str]) -> list[int]:
    folder = out / "runs" / run.run_id
    return [int((folder / log / "stdout.log").read_text().split()[0]) for log in logs]


def with_barrier(folder: Path, count: int, rounds: int) -> tuple[list[float], list[float]]:
    spec = _spec(
        folder,
        f"barrier-{count}",
        f"command: {PRINT}\nrun: {{instances: {count}, repeat: {rounds}, timeout: 120s}}\n"
        "expect: {outcome: pass}\n",
    )
    out = folder / f"out-barrier-{count}"
    run = reprospec.run(spec, reprospec.RunOptions(out=out))
    releases, programs = [], []
    for attempt in run.cells[0].attempts:
        assert attempt.start_spread_s is not None, attempt
        releases.append(attempt.start_spread_s)
        starts = _first_lines(out, run, [i.logs for i in attempt.instances])
        programs.append((max(starts) - min(starts)) / 1e9)
    return releases, programs


def without_barrier(folder: Path, count: int, rounds: int) -> list[float]:
    values = ", ".join(str(n) for n in range(count))
    spec = _spec(
        folder,
        f"plain-{count}",
        f"matrix:\n  k: [{values}]\ncommand: {PRINT}\nrun: {{timeout: 120s}}\n"
        "expect: {outcome: pass}\n",
    )
    spreads = []
    for number in range(rounds):
        out = folder / f"out-plain-{count}-{number}"
        run = reprospec.run(spec, reprospec.RunOptions(out=out, jobs=count))
        starts = _first_lines(out, run, [c.attempts[0].logs for c in run.cells])
        spreads.append((max(starts) - min(starts)) / 1e9)
    return spreads


def overhead(folder: Path, rounds: int) -> tuple[float, float]:
    durations = []
    for name, extra in (("plain", ""), ("one", ", instances: 1")):
        spec = _spec(
            folder,
            f"cost-{name}",
            f"command: python -c pass\nrun: {{repeat: {rounds}{extra}}}\n"
            "expect: {outcome: pass}\n",
        )
        run = reprospec.run(spec, reprospec.RunOptions(out=folder / f"out-cost-{name}"))
        durations.append(statistics.median(a.duration_s for a in run.cells[0].attempts))
    return durations[0], durations[1]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--counts", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reprospec-bench-instances-") as tmp:
        folder = Path(tmp)
        for count in args.counts:
            releases, programs = with_barrier(folder, count, args.rounds)
            plain = without_barrier(folder, count, args.rounds)
            print(
                f"N={count}: barrier release spread {ms(statistics.median(releases))}"
                f" (max {ms(max(releases))}); program start spread with barrier"
                f" {ms(statistics.median(programs))}, at -j {count} without"
                f" {ms(statistics.median(plain))}"
                f" ({statistics.median(plain) / max(statistics.median(programs), 1e-9):.1f}x)"
            )
        plain_s, one_s = overhead(folder, args.rounds)
        print(
            f"python -c pass: plain attempt {ms(plain_s)}, as one instance {ms(one_s)}"
            f" (+{ms(one_s - plain_s)})"
        )


if __name__ == "__main__":
    main()
