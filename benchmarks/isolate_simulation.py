"""Isolation against a simulated oracle (no processes): attempts spent and exact answers.

    python benchmarks/isolate_simulation.py [--trials 1000] [--seed 1] [--baselines]
                                            [--row 16:2:0.3 ...]

A trial hides a culprit set among N boolean toggles; a candidate reproduces when
it holds every culprit, and then each attempt fails as expected with probability
`rate` (otherwise passes). The search runs with its defaults (error 0.005, assumed
minimum rate 0.3: it is not told the rate). A trial is exact when isolation ends
`isolated` with exactly the hidden set. "Within 100" runs the trial as
`reprospec isolate` would, with the default `--budget 100` (a refusal or a spent
budget is not exact); the mean, p95 and p99 of attempts and "exact" come from
the same trial run without a budget (replayed from the same seed: the first 100
attempts are the same). `--baselines` also runs ddmin and one-toggle-at-a-time
with a fixed number of clean attempts per passing verdict, the two the issue
measured first.

Goals (issue 10): >= 99% of trials exact within 100 attempts at rate 0.3 for a
pair among 16 toggles; fewer than 40 attempts on average at rate 1.0 for a pair
among 12.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reprospec.isolation import AttemptKind, Probe, Settings, isolate


@dataclass
class Oracle:
    """A hidden conjunction of toggles that fails with probability `rate` per attempt."""

    culprits: frozenset[int]
    rate: float
    seed: float
    attempts: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def attempt(self, candidate: frozenset[int]) -> bool:
        self.attempts += 1
        return self.culprits <= candidate and self.rng.random() < self.rate

    def probe(self, probe: Probe) -> list[AttemptKind]:
        kinds: list[AttemptKind] = []
        matches = 0
        while len(kinds) < probe.attempts and matches < probe.stop_after:
            if self.attempt(probe.candidate):
                kinds.append("match")
                matches += 1
            else:
                kinds.append("pass")
        return kinds


@dataclass(frozen=True)
class Trial:
    attempts: int
    exact: bool
    within: bool | None = None  # None: exact and attempts <= BUDGET

    @property
    def within_budget(self) -> bool:
        if self.within is not None:
            return self.within
        return self.exact and self.attempts <= BUDGET


BUDGET = 100


def run_isolation(oracle: Oracle, count: int, settings: Settings) -> Trial:
    """The trial under the default budget, and (if that ran out) without one."""

    def once(budget: int) -> tuple[int, bool, str]:
        again = Oracle(oracle.culprits, oracle.rate, oracle.seed)

        def run(probes: Sequence[Probe]) -> list[tuple[list[AttemptKind], str]]:
            return [(again.probe(p), "") for p in probes]

        result = isolate(count, run, replace(settings, budget=budget))
        exact = result.status == "isolated" and frozenset(result.culprits) == oracle.culprits
        return result.attempts, exact, result.status

    attempts, exact, status = once(BUDGET)
    within = exact
    if status == "budget":
        attempts, exact, _ = once(1_000_000)
    return Trial(attempts, exact, within)


def run_ddmin(oracle: Oracle, count: int, clean: int) -> Trial:
    """Zeller's ddmin; a test fails at its first match, passes after `clean` clean attempts."""

    def fails(candidate: frozenset[int]) -> bool:
        return any(oracle.attempt(candidate) for _ in range(clean))

    current = list(range(count))
    n = 2
    while len(current) >= 2:
        size = len(current) // n
        parts = [current[i * size : (i + 1) * size] for i in range(n - 1)]
        parts.append(current[(n - 1) * size :])
        reduced = False
        for part in parts:
            if fails(frozenset(part)):
                current, n, reduced = part, 2, True
                break
        if not reduced:
            for part in parts:
                rest = [x for x in current if x not in part]
                if fails(frozenset(rest)):
                    current, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return Trial(oracle.attempts, frozenset(current) == oracle.culprits)


def run_linear(oracle: Oracle, count: int, clean: int) -> Trial:
    """One toggle at a time: drop it when the rest still fails."""
    current = set(range(count))
    for x in range(count):
        rest = frozenset(current - {x})
        if any(oracle.attempt(rest) for _ in range(clean)):
            current.discard(x)
    return Trial(oracle.attempts, frozenset(current) == oracle.culprits)


def measure(
    method: Callable[[Oracle, int], Trial],
    count: int,
    size: int,
    rate: float,
    trials: int,
    seed: int,
) -> tuple[float, int, int, float, float]:
    """(mean attempts, 95th and 99th percentiles of attempts, % exact, % exact within budget)."""
    rng = random.Random(f"{seed}-{count}-{size}-{rate}")
    results = []
    for _ in range(trials):
        culprits = frozenset(rng.sample(range(count), size))
        results.append(method(Oracle(culprits, rate, rng.random()), count))
    attempts = sorted(t.attempts for t in results)
    p95 = attempts[min(len(attempts) - 1, int(0.95 * len(attempts)))]
    p99 = attempts[min(len(attempts) - 1, int(0.99 * len(attempts)))]
    exact = 100.0 * sum(t.exact for t in results) / len(results)
    within = 100.0 * sum(t.within_budget for t in results) / len(results)
    return statistics.fmean(attempts), p95, p99, exact, within


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baselines", action="store_true")
    parser.add_argument(
        "--row",
        action="append",
        default=[],
        metavar="TOGGLES:CULPRITS:RATE",
        help="measure only these rows (default: the issue's ten)",
    )
    args = parser.parse_args(argv)
    settings = Settings()

    methods: dict[str, Callable[[Oracle, int], Trial]] = {
        "isolate": lambda o, n: run_isolation(o, n, settings),
    }
    if args.baselines:
        methods["ddmin, 10 clean"] = lambda o, n: run_ddmin(o, n, 10)
        methods["one at a time, 10 clean"] = lambda o, n: run_linear(o, n, 10)

    rows = [(16, size, rate) for size in (1, 2, 3) for rate in (1.0, 0.5, 0.3)]
    rows.append((12, 2, 1.0))
    if args.row:
        rows = [(int(n), int(k), float(r)) for n, k, r in (row.split(":") for row in args.row)]
    print(
        "| method | toggles | culprits | rate | mean attempts | p95 | p99 | exact "
        f"| exact within {BUDGET} | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, method in methods.items():
        for count, size, rate in rows:
            started = time.perf_counter()
            mean, p95, p99, exact, within = measure(
                method, count, size, rate, args.trials, args.seed
            )
            print(
                f"| {name} | {count} | {size} | {rate:g} | {mean:.1f} | {p95} | {p99} "
                f"| {exact:.1f}% | {within:.1f}% | {time.perf_counter() - started:.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
