"""Engine costs, measured in one run so the figures are ratios on the same machine.

1. CLI start-up: `reprospec --version` and `import reprospec.cli` against `python -c "import yaml"`.
2. Per-attempt overhead: a trivial child run bare (subprocess) vs through the local runner
   (process group, capped logs, events, classification) vs a whole `reprospec run`.

    python benchmarks/engine_overhead.py [--rounds 20]

Every comparison alternates its sides within each round (parent_costs.paired; the bare
child and the runner's attempt in turn) and gives the CPU time (user + system of the
process tree; for the in-process runner, this process's CPU plus its children's) beside
the wall time: on a shared machine the wall times move with the load. Medians.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from parent_costs import MEDIAN_CPU, paired, wall

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan
    from reprospec.core.results import Execution

# What one timed attempt leaves: its execution, its plan, the wall time of runner.run.
AttemptFacts: TypeAlias = "tuple[Execution, AttemptPlan, float]"


ROOT = Path(__file__).resolve().parent.parent


def _tree_cpu() -> float:
    """CPU seconds of this process and of its reaped children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bare_child() -> tuple[float, float]:
    """(wall, CPU) of one `python -c pass`."""
    start, cpu = time.perf_counter(), _tree_cpu()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start, _tree_cpu() - cpu


def timed_attempts(
    spec_text: str, rounds: int, measure: Callable[[AttemptFacts], float], *, paired_bare: bool
) -> tuple[float, float, float, float]:
    """Medians over `rounds` attempts of a one-cell spec through LocalRunner: `measure` of
    each and its CPU (this process's and its children's); with `paired_bare`, a bare
    `python -c pass` before or after each (in turn), and its wall and CPU (else 0.0)."""
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
        samples, cpus, bare_walls, bare_cpus = [], [], [], []
        for plan in plans:
            log_dir = Path(tmp) / "logs" / str(plan.attempt)
            log_dir.mkdir(parents=True)
            first = plan.attempt % 2 == 0
            if paired_bare and first:
                took, used = bare_child()
                bare_walls.append(took)
                bare_cpus.append(used)
            start, cpu = time.perf_counter(), _tree_cpu()
            execution = runner.run(plan, log_dir)
            samples.append(measure((execution, plan, time.perf_counter() - start)))
            cpus.append(_tree_cpu() - cpu)
            if paired_bare and not first:
                took, used = bare_child()
                bare_walls.append(took)
                bare_cpus.append(used)
        runner.close()
        pair = (
            (statistics.median(bare_walls), statistics.median(bare_cpus))
            if paired_bare
            else (0.0, 0.0)
        )
        return statistics.median(samples), statistics.median(cpus), *pair


def runner_attempts(rounds: int) -> tuple[float, float, float, float]:
    """Median (wall, CPU) of one trivial attempt through LocalRunner.run + classify, and of
    the same child run bare, alternately."""
    from reprospec.outcome.classify import classify

    def wall_with_classify(facts: AttemptFacts) -> float:
        execution, _, wall = facts
        start = time.perf_counter()
        classify(execution)
        return wall + time.perf_counter() - start

    spec = "reprospec: 1\nname: trivial\ncommand: [python, -c, pass]\nexpect: {outcome: pass}\n"
    return timed_attempts(spec, rounds, wall_with_classify, paired_bare=True)


def hang_report_delay(rounds: int) -> float:
    """Median seconds between a hang's timeout and the attempt's end (stacks taken, tree killed)."""
    spec = (
        "reprospec: 1\nname: hang\n"
        "command: [python, -c, 'import threading; l = threading.Lock(); l.acquire(); "
        "l.acquire()']\nrun: {timeout: 1s}\nexpect: {outcome: hang}\n"
    )
    return timed_attempts(
        spec, rounds, lambda facts: facts[0].duration_s - facts[1].timeout_s, paired_bare=False
    )[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    py = sys.executable
    exe = str(Path(py).parent / "reprospec")
    print(f"rounds: {args.rounds} (medians); load average {os.getloadavg()[0]:.1f}")

    baseline_yaml, import_cli, version = paired(
        args.rounds,
        lambda: wall([py, "-c", "import yaml"]),
        lambda: wall([py, "-c", "import reprospec.cli"]),
        lambda: wall([exe, "--version"]),
    )
    yaml_cpu, cli_cpu, version_cpu = MEDIAN_CPU
    print("                                     wall                 CPU (tree)")
    print(
        f"python -c 'import yaml'          {baseline_yaml * 1000:7.1f} ms  1.00x    "
        f"{yaml_cpu * 1000:7.1f} ms  1.00x"
    )
    for name, took, used in (
        ("python -c 'import reprospec.cli'", import_cli, cli_cpu),
        ("reprospec --version", version, version_cpu),
    ):
        print(
            f"{name:<32} {took * 1000:7.1f} ms  {took / baseline_yaml:.2f}x    "
            f"{used * 1000:7.1f} ms  {used / yaml_cpu:.2f}x"
        )
    through_runner, runner_cpu, bare, bare_cpu = runner_attempts(args.rounds)
    print(
        f"bare child: python -c pass       {bare * 1000:7.1f} ms  1.00x    "
        f"{bare_cpu * 1000:7.1f} ms  1.00x"
    )
    print(
        f"same child through LocalRunner   {through_runner * 1000:7.1f} ms  "
        f"{through_runner / bare:.2f}x    {runner_cpu * 1000:7.1f} ms  {runner_cpu / bare_cpu:.2f}x"
        f"  (+{(through_runner - bare) * 1000:.1f} ms wall, "
        f"+{(runner_cpu - bare_cpu) * 1000:.1f} ms CPU per attempt)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "trivial.yaml"
        spec.write_text(
            "reprospec: 1\nname: trivial\ncommand: [python, -c, pass]\nexpect: {outcome: pass}\n"
        )
        out = str(Path(tmp) / "out")
        wall([exe, "run", str(spec), "--out", out], cwd=Path(tmp))  # warm cache
        bare_run, whole_run = paired(
            max(3, args.rounds // 4),
            lambda: wall([py, "-c", "pass"]),
            lambda: wall([exe, "run", str(spec), "--out", out], cwd=Path(tmp)),
        )
        bare_run_cpu, whole_cpu = MEDIAN_CPU
    print(
        f"whole `reprospec run` (1 cell)   {whole_run * 1000:7.1f} ms  {whole_run / bare_run:.2f}x"
        f"    {whole_cpu * 1000:7.1f} ms  {whole_cpu / bare_run_cpu:.2f}x (of a bare child)"
    )
    delay = hang_report_delay(max(3, args.rounds // 4))
    print(f"hang: end of attempt after the timeout {delay * 1000:7.1f} ms  (budget 2000 ms)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
