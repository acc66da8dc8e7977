"""Isolation against a simulated oracle (no processes): attempts spent and exact answers.

    python benchmarks/isolate_simulation.py [--trials 1000] [--seed 1] [--baselines]
                                            [--row 16:2:0.3 ...] [--before main|./DIR]

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
measured first. A rate written `1:N:R` is a failure that looks deterministic for
the trial's first N attempts, then fails at R. `--before REV` runs the same
trials (same seeds) with the search of that git revision too (or of a checkout's folder
written as a path, `./DIR`: a `git worktree`, or a copy with uncommitted changes), alternating trial
by trial, so the pair is measured in one run under the same load; the CPU
milliseconds per trial are the process's own (the search runs no children).

Goals (issue 10): >= 99% of trials exact within 100 attempts at rate 0.3 for a
pair among 16 toggles; fewer than 40 attempts on average at rate 1.0 for a pair
among 12. Issue 30: at most 55 attempts at rate 0.3 for a pair among 16 (>= 99%
exact), at most 20 for a deterministic pair among 12.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.simulated import Case, source_at
from reprospec.isolation import AttemptKind, Probe
from reprospec.isolation import search as current


def search_at(revision: str) -> ModuleType:
    """The isolation search as it was at `revision` (search, hypotheses, candidates): a git
    revision, or a folder written as a path holding a checkout (simulated.source_at).

    The three modules are copied into a package of their own, their imports of each
    other renamed; they import only reprospec.core besides.
    """
    texts = {
        name: source_at(revision, f"reprospec/isolation/{name}.py")
        for name in ("candidates", "hypotheses", "search")
    }
    folder = Path(tempfile.mkdtemp(prefix="isolate-before-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # at exit: imported till then
    package = folder / "isolation_before"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in texts.items():
        (package / f"{name}.py").write_text(
            text.replace("reprospec.isolation.", "isolation_before.")
        )
    sys.path.insert(0, str(folder))
    return importlib.import_module("isolation_before.search")


@dataclass
class Oracle:
    """A hidden conjunction of toggles that fails with probability `rate` per attempt."""

    culprits: frozenset[int]
    case: Case
    seed: float
    attempts: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def attempt(self, candidate: frozenset[int]) -> bool:
        self.attempts += 1
        rate = 1.0 if self.attempts <= self.case.steady else self.case.rate
        return self.culprits <= candidate and self.rng.random() < rate

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


def run_isolation(oracle: Oracle, count: int, module: ModuleType) -> Trial:
    """The trial under the default budget, and (if that ran out) without one."""
    settings = module.Settings()

    def once(budget: int) -> tuple[int, bool, str]:
        again = Oracle(oracle.culprits, oracle.case, oracle.seed)

        def run(probes: Sequence[Probe]) -> list[tuple[list[AttemptKind], str]]:
            return [(again.probe(p), "") for p in probes]

        result = module.isolate(count, run, replace(settings, budget=budget))
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


@dataclass
class Row:
    """The trials of one method on one row."""

    trials: list[Trial]
    cpu: float = 0.0

    def figures(self) -> tuple[float, int, int, float, float]:
        """(mean attempts, 95th and 99th percentiles, % exact, % exact within budget)."""
        attempts = sorted(t.attempts for t in self.trials)
        p95 = attempts[min(len(attempts) - 1, int(0.95 * len(attempts)))]
        p99 = attempts[min(len(attempts) - 1, int(0.99 * len(attempts)))]
        exact = 100.0 * sum(t.exact for t in self.trials) / len(self.trials)
        within = 100.0 * sum(t.within_budget for t in self.trials) / len(self.trials)
        return statistics.fmean(attempts), p95, p99, exact, within


def measure(
    methods: dict[str, Callable[[Oracle, int], Trial]],
    count: int,
    size: int,
    case: Case,
    trials: int,
    seed: int,
) -> dict[str, Row]:
    """The same trials (culprits, oracle seed) for every method, alternating which goes first."""
    rng = random.Random(f"{seed}-{count}-{size}-{case.rate}" + (f"-{case}" if case.steady else ""))
    rows = {name: Row([]) for name in methods}
    for trial in range(trials):
        culprits = frozenset(rng.sample(range(count), size))
        oracle_seed = rng.random()
        order = list(methods.items())
        if trial % 2:
            order.reverse()
        for name, method in order:
            started = time.process_time()
            rows[name].trials.append(method(Oracle(culprits, case, oracle_seed), count))
            rows[name].cpu += time.process_time() - started
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baselines", action="store_true")
    parser.add_argument("--before", metavar="REV", help="also run the search of this revision")
    parser.add_argument(
        "--row",
        action="append",
        default=[],
        metavar="TOGGLES:CULPRITS:RATE",
        help="measure only these rows (default: the issue's ten); RATE may be 1:N:R",
    )
    args = parser.parse_args(argv)

    methods: dict[str, Callable[[Oracle, int], Trial]] = {}
    if args.before:
        before = search_at(args.before)
        methods[f"isolate before ({args.before})"] = lambda o, n: run_isolation(o, n, before)
    methods["isolate"] = lambda o, n: run_isolation(o, n, current)
    if args.baselines:
        methods["ddmin, 10 clean"] = lambda o, n: run_ddmin(o, n, 10)
        methods["one at a time, 10 clean"] = lambda o, n: run_linear(o, n, 10)

    rows = [(16, size, Case(rate)) for size in (1, 2, 3) for rate in (1.0, 0.5, 0.3)]
    rows.append((12, 2, Case(1.0)))
    if args.row:
        rows = []
        for row in args.row:
            n, k, rate = row.split(":", 2)
            rows.append((int(n), int(k), Case.parse(rate)))
    print(
        "| method | toggles | culprits | rate | mean attempts | p95 | p99 | exact "
        f"| exact within {BUDGET} | CPU ms/trial |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    goals: list[str] = []
    for count, size, case in rows:
        measured = measure(methods, count, size, case, args.trials, args.seed)
        for name, row in measured.items():
            mean, p95, p99, exact, within = row.figures()
            print(
                f"| {name} | {count} | {size} | {case} | {mean:.1f} | {p95} | {p99} "
                f"| {exact:.1f}% | {within:.1f}% | {row.cpu / args.trials * 1000:.0f} |",
                flush=True,
            )
        mean, _, _, exact, _ = measured["isolate"].figures()
        if (count, size, case) == (16, 2, Case(0.3)):
            ok = mean <= 55 and exact >= 99
            goals.append(
                f"pair among 16 at 0.3: {mean:.1f} attempts, {exact:.1f}% exact "
                f"(goal <= 55, >= 99%): {_met(ok)}"
            )
        if (count, size, case) == (12, 2, Case(1.0)):
            goals.append(
                f"pair among 12 at 1.0: {mean:.1f} attempts (goal <= 20): {_met(mean <= 20)}"
            )
        if case.steady:
            goals.append(
                f"{size} among {count} at {case}: {exact:.1f}% exact (goal >= 99%): "
                f"{_met(exact >= 99)}"
            )
    for line in goals:
        print(line)
    return 0


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


if __name__ == "__main__":
    sys.exit(main())
