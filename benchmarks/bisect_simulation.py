"""The bisect search against a simulated flaky oracle: right answers and attempts.

    python benchmarks/bisect_simulation.py [--versions 64] [--rate 0.3] [--trials 1000]

No processes: version i is bad from the (random) first-bad index on, and an
attempt at a bad version shows the matching failure with probability `--rate`
(a good version never does). Every trial runs the whole search, both end checks
included, and counts every attempt. Goal (issue 11): at least 99% right answers
within 50 attempts on average at 64 versions and rate 0.3.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reprospec.bisect.search import DEFAULT_ERROR, Trial, bisect


def simulate(
    versions: int, rate: float, trials: int, seed: int, error: float, budget: int, skip: float
) -> dict[str, float]:
    rng = random.Random(seed)
    names = [f"1.{i}" for i in range(versions)]
    right = undecided = refused = 0
    attempts: list[int] = []
    calls: list[int] = []
    for _ in range(trials):
        first_bad = rng.randrange(1, versions)
        # Some middle versions cannot be installed (no wheel): never the ends or the answer.
        broken = {i for i in range(1, versions - 1) if i != first_bad and rng.random() < skip}
        made = [0]

        def oracle(
            version: str,
            n: int,
            first_bad: int = first_bad,
            broken: set[int] = broken,
            made: list[int] = made,
        ) -> Trial:
            made[0] += 1
            index = names.index(version)
            if index in broken:
                return Trial(version, infra_error="no wheel for this Python")
            for attempt in range(1, n + 1):
                if index >= first_bad and rng.random() < rate:
                    return Trial(version, attempt, 1)
            return Trial(version, n, 0)

        result = bisect(names, oracle, error=error, budget=budget)
        attempts.append(result.attempts)
        calls.append(made[0])
        expected_first = first_bad
        if result.status == "found" and result.first_bad == names[expected_first]:
            right += 1
        elif result.status == "undecided":
            undecided += 1
        elif result.status == "refused":
            refused += 1
    return {
        "right": right / trials,
        "undecided": undecided / trials,
        "refused": refused / trials,
        "mean_attempts": statistics.fmean(attempts),
        "p95_attempts": sorted(attempts)[int(0.95 * trials) - 1],
        "max_attempts": max(attempts),
        "mean_calls": statistics.fmean(calls),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=64)
    parser.add_argument("--rate", type=float, nargs="+", default=[0.3])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--error", type=float, default=DEFAULT_ERROR)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument(
        "--skip",
        type=float,
        default=0.0,
        help="fraction of middle versions that cannot be installed",
    )
    args = parser.parse_args()
    print(
        f"{args.versions} versions, {args.trials} trials, stated error {args.error:g}, "
        f"{args.skip:.0%} untestable"
    )
    print(
        f"{'rate':>5} {'right':>7} {'undecided':>9} {'attempts':>9} {'p95':>5} {'max':>5} "
        f"{'calls':>6} {'s/trial':>8}"
    )
    ok = True
    for rate in args.rate:
        start = time.perf_counter()
        got = simulate(
            args.versions, rate, args.trials, args.seed, args.error, args.budget, args.skip
        )
        per = (time.perf_counter() - start) / args.trials
        print(
            f"{rate:>5.2f} {got['right']:>7.1%} {got['undecided']:>9.1%} "
            f"{got['mean_attempts']:>9.1f} {got['p95_attempts']:>5} {got['max_attempts']:>5} "
            f"{got['mean_calls']:>6.1f} {per:>8.3f}"
        )
        if args.versions == 64 and rate == 0.3:
            ok = got["right"] >= 0.99 and got["mean_attempts"] <= 50
            print(f"goal (>= 99% right, <= 50 attempts on average): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
