"""Engine costs, measured in one run so the figures are ratios on the same machine.

1. CLI start-up: `reprospec --version` and `import reprospec.cli` against `python -c "import yaml"`.
2. Per-attempt overhead: a trivial child run bare (subprocess) vs through the local runner
   (process group, capped logs, events, classification) vs a whole `reprospec run`.

    python benchmarks/engine_overhead.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan
    from reprospec.core.results import Execution

# What one timed attempt leaves: its execution, its plan, the wall time of runner.run.
AttemptFacts: TypeAlias = "tuple[Execution, AttemptPlan, float]"

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], rounds: int, cwd: Path | None = None) -> float:
    """Median wall time of `argv` over `rounds` runs, in seconds."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(
            argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd
        )
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def timed_attempts(spec_text: str, rounds: int, measure: Callable[[AttemptFacts], float]) -> float:
    """Median of `measure(execution)` over `rounds` attempts of a one-cell spec, LocalRunner."""
    from reprospec.plan.attempt import plan_attempt
    from reprospec.runners.local import LocalRunner
    from reprospec.spec.load import load_spec
    from reprospec.spec.matrix import expand

    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "bench.yaml"
        spec_path.write_text(spec_text)
        spec = load_spec(spec_path)
        cell = expand(spec)[0]
        runner = LocalRunner(python=sys.executable)
        plans = [plan_attempt(spec, cell, n) for n in range(1, rounds + 1)]
        runner.prepare(plans)
        samples = []
        for plan in plans:
            log_dir = Path(tmp) / "logs" / str(plan.attempt)
            log_dir.mkdir(parents=True)
            start = time.perf_counter()
            execution = runner.run(plan, log_dir)
            samples.append(measure((execution, plan, time.perf_counter() - start)))
        return statistics.median(samples)


def runner_attempts(rounds: int) -> float:
    """Median wall time of one trivial attempt through LocalRunner.run + classify."""
    from reprospec.outcome.classify import classify

    def wall_with_classify(facts: AttemptFacts) -> float:
        execution, _, wall = facts
        start = time.perf_counter()
        classify(execution)
        return wall + time.perf_counter() - start

    spec = "reprospec: 1\nname: trivial\ncommand: [python, -c, pass]\nexpect: {outcome: pass}\n"
    return timed_attempts(spec, rounds, wall_with_classify)


def hang_report_delay(rounds: int) -> float:
    """Median seconds between a hang's timeout and the attempt's end (stacks taken, tree killed)."""
    spec = (
        "reprospec: 1\nname: hang\n"
        "command: [python, -c, 'import threading; l = threading.Lock(); l.acquire(); "
        "l.acquire()']\nrun: {timeout: 1s}\nexpect: {outcome: hang}\n"
    )
    return timed_attempts(spec, rounds, lambda facts: facts[0].duration_s - facts[1].timeout_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    py = sys.executable
    exe = str(Path(py).parent / "reprospec")

    baseline_yaml = timed([py, "-c", "import yaml"], args.rounds)
    import_cli = timed([py, "-c", "import reprospec.cli"], args.rounds)
    version = timed([exe, "--version"], args.rounds)
    bare = timed([py, "-c", "pass"], args.rounds)
    through_runner = runner_attempts(args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "trivial.yaml"
        spec.write_text(
            "reprospec: 1\nname: trivial\ncommand: [python, -c, pass]\nexpect: {outcome: pass}\n"
        )
        whole_run = timed(
            [exe, "run", str(spec), "--out", str(Path(tmp) / "out")],
            max(3, args.rounds // 4),
            cwd=Path(tmp),
        )

    print(f"rounds: {args.rounds} (medians)")
    print(f"python -c 'import yaml'        {baseline_yaml * 1000:8.1f} ms  (1.00x)")
    print(
        f"python -c 'import reprospec.cli' {import_cli * 1000:6.1f} ms  "
        f"({import_cli / baseline_yaml:.2f}x)"
    )
    print(
        f"reprospec --version             {version * 1000:7.1f} ms  "
        f"({version / baseline_yaml:.2f}x)"
    )
    print(f"bare child: python -c pass      {bare * 1000:7.1f} ms  (1.00x)")
    print(
        f"same child through LocalRunner  {through_runner * 1000:7.1f} ms  "
        f"({through_runner / bare:.2f}x, +{(through_runner - bare) * 1000:.1f} ms per attempt)"
    )
    delay = hang_report_delay(max(3, args.rounds // 4))
    print(f"hang: end of attempt after the timeout {delay * 1000:7.1f} ms  (budget 2000 ms)")
    print(f"whole `reprospec run` (1 cell)  {whole_run * 1000:7.1f} ms  ({whole_run / bare:.2f}x)")


if __name__ == "__main__":
    main()
