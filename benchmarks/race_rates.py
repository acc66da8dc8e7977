"""The thread race's plain and amplified rates, for two shapes of the program, in paired runs.

    python benchmarks/race_rates.py [--attempts 300] [--batch 20] [-j 2]
                                    [--shapes 2000x4,125x32]

tests/data/amplify/race.py fills a cache from two threads, ROUNDS times, KEYS keys a round
(`KEYS x ROUNDS`). For each shape this runs the race plain and under
`environment.perturb.switch_interval: 1e-6` (what `reprospec amplify` names for it),
through the Python API, `--attempts` attempts each. The four arms alternate in batches of
`--batch` attempts (each block starting with the next arm), so a change of the machine's
load falls on all of them alike; the load average is printed beside each block.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RACE = Path(__file__).resolve().parent.parent / "tests" / "data" / "amplify" / "race.py"


def write_spec(folder: Path, keys: int, rounds: int, perturbed: bool) -> Path:
    name = f"race-{keys}x{rounds}-{'amplified' if perturbed else 'plain'}"
    perturb = "\n  perturb: {switch_interval: 1.0e-6}" if perturbed else ""
    spec = folder / f"{name}.yaml"
    spec.write_text(
        f"reprospec: 1\nname: {name}\ncommand: python race.py {keys} {rounds}\n"
        f"environment:\n  workdir: .{perturb}\nrun:\n  timeout: 60s\n"
        "expect:\n  outcome: error\n  exception: RuntimeError\n"
        "  message: 'cache entry built twice'\n"
    )
    return spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--shapes", default="2000x4,125x32")
    args = parser.parse_args()

    from reprospec import api
    from reprospec.core.rates import rate_of
    from reprospec.core.runoptions import RunOptions
    from reprospec.core.words import rate_phrase

    work = Path(tempfile.mkdtemp(prefix="race-rates-"))
    shutil.copy(RACE, work / "race.py")
    arms: list[tuple[str, Path]] = []
    for shape in args.shapes.split(","):
        keys, rounds = (int(n) for n in shape.split("x"))
        for perturbed in (False, True):
            label = f"{shape} {'switch_interval=1e-06' if perturbed else 'plain'}"
            arms.append((label, write_spec(work, keys, rounds, perturbed)))
    matched = {label: 0 for label, _ in arms}
    ran = {label: 0 for label, _ in arms}
    first: dict[str, int | None] = {label: None for label, _ in arms}
    blocks = -(-args.attempts // args.batch)
    loads: list[float] = []
    started = time.monotonic()
    for block in range(blocks):
        order = arms[block % len(arms) :] + arms[: block % len(arms)]
        for label, spec in order:
            count = min(args.batch, args.attempts - ran[label])
            if count <= 0:
                continue
            result = api.run(
                api.load_spec(spec),
                RunOptions(repeat=count, jobs=args.jobs, out=work / "out", purpose="benchmark"),
            )
            attempts = sorted(result.cells[0].attempts, key=lambda a: a.attempt)
            for attempt in attempts:
                if attempt.ran is None:
                    continue
                ran[label] += 1
                if attempt.matched:
                    matched[label] += 1
                    if first[label] is None:
                        first[label] = ran[label]
        loads.append(os.getloadavg()[0])
        print(
            f"block {block + 1}/{blocks}: load {loads[-1]:.1f}; "
            + "; ".join(f"{label} {matched[label]}/{ran[label]}" for label, _ in arms),
            flush=True,
        )
    print()
    print(
        f"{time.monotonic() - started:.0f} s, load average {min(loads):.1f} to {max(loads):.1f} "
        f"(median {sorted(loads)[len(loads) // 2]:.1f}) on {os.cpu_count()} CPUs, -j {args.jobs}"
    )
    print("| shape (keys x rounds) | run | rate | first failure |")
    print("|---|---|---|---|")
    for label, _ in arms:
        shape, how = label.split(" ", 1)
        print(
            f"| {shape} | {how} | {rate_phrase(rate_of(matched[label], ran[label]))} "
            f"| {first[label] or f'none in {ran[label]}'} |"
        )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
