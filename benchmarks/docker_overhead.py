"""Per-attempt overhead of the docker runner against the local runner, on the same plans.

Each runner runs the same trivial command (`python3 -c pass`) and the same tiny
torch workload `--rounds` times; the figures are medians of `runner.run()` wall
time (container create/attach/start/wait/remove included for docker). Needs an
engine and the default runner image (scripts/docker-setup.sh).

    python benchmarks/docker_overhead.py [--rounds 10] [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reprospec.core.inputs import AttemptPlan, Cell, Expectation  # noqa: E402
from reprospec.core.sections import Command, Environment, Job, Workload  # noqa: E402
from reprospec.runners.base import Runner  # noqa: E402

WORKLOAD = {
    "seed": 0,
    "model": {"builtin": "mlp", "params": {}},
    "data": {
        "dataset": {"builtin": "synthetic", "size": 64, "shape": [3, 8, 8], "classes": 10},
        "loader": {"batch_size": 16, "num_workers": 0},
    },
    "phases": [{"name": "train", "steps": 2}],
}


def plan(
    workdir: Path, n: int, argv: Sequence[str] | None, workload: Mapping[str, Any] | None
) -> AttemptPlan:
    job: Job = Workload(dict(workload)) if workload is not None else Command(tuple(argv or ()))
    return AttemptPlan(
        spec_name="bench",
        cell=Cell(id="c", index=0, matrix={}),
        attempt=n,
        job=job,
        timeout_s=120.0,
        markers=(),
        environment=Environment(workdir=workdir),
        expectation=Expectation(outcome="pass"),
    )


def measure(runner: Runner, plans: Sequence[AttemptPlan], logs: Path, jobs: int) -> list[float]:
    """Wall time of each runner.run(); with jobs > 1, attempts run that many at once."""
    samples: list[float] = []
    lock = threading.Lock()
    queue = list(enumerate(plans))

    def work() -> None:
        while True:
            with lock:
                if not queue:
                    return
                i, p = queue.pop(0)
            begin = time.perf_counter()
            execution = runner.run(p, logs / f"{runner.name}-{id(plans)}-{i}")
            took = time.perf_counter() - begin
            assert execution.returncode == 0, (runner.name, execution)
            with lock:
                samples.append(took)

    threads = [threading.Thread(target=work) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()

    from reprospec.runners.docker.runner import DockerRunner
    from reprospec.runners.local import LocalRunner

    docker_runner = DockerRunner()
    local_runner = LocalRunner()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = {
            "python3 -c pass": (["python3", "-c", "pass"], None),
            "torch workload (mlp, 2 steps)": (None, WORKLOAD),
        }
        start = time.perf_counter()
        docker_runner.prepare([plan(work, 1, ["true"], None)])
        print(f"docker prepare (image present, engine ping): {time.perf_counter() - start:.3f} s")
        print(f"{args.rounds} attempts per figure, -j {args.jobs}, medians in ms\n")
        print(f"{'case':32} {'local':>8} {'docker':>8} {'overhead':>9}")
        for name, (argv, workload) in cases.items():
            plans = [plan(work, n, argv, workload) for n in range(1, args.rounds + 1)]
            # One warm-up each: first imports, page cache, the engine's first container.
            measure(local_runner, plans[:1], work, 1)
            measure(docker_runner, plans[:1], work, 1)
            local = statistics.median(measure(local_runner, plans, work, args.jobs)) * 1000
            docker = statistics.median(measure(docker_runner, plans, work, args.jobs)) * 1000
            print(f"{name:32} {local:8.0f} {docker:8.0f} {docker - local:+9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
