"""amplify under --preload: the perturbed arm's attempts forked (this checkout) against fresh.

    python benchmarks/amplify_preload.py --before PYTHON [--rounds 2] [--budget 40]

`reprospec amplify benchmarks/data/torch-intermittent.yaml --preload torch --try
switch_interval=1e-6 --budget N -j 1` (a small torch repro: a real SIGSEGV in about 30% of
attempts, seeded by the attempt number, so both arms fail alike), by this checkout's
interpreter and by PYTHON, the interpreter of an environment with another checkout installed
(`git archive REV | tar -x -C DIR`, a venv there, `pip install -e DIR torch`): before pf42
that one ran every perturbed attempt fresh. The two alternate, --rounds pairs. Printed per
amplify: wall and the CPU of its whole tree, how the perturbed arm's attempts started and
their rate (attempts per second of their own durations), and the answer, which must be the
same on both sides.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def amplify(python: str, work: Path, out: Path, budget: int) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    spec = str(work / "torch-intermittent.yaml")
    search = ("--preload", "torch", "--try", "switch_interval=1e-6", "--budget", str(budget))
    answer = ("-j", "1", "--format", "json", "--out", str(out))
    done = subprocess.run(
        [python, "-m", "reprospec", "amplify", spec, *search, *answer],
        capture_output=True,
        text=True,
        check=False,
        cwd=work,  # not this checkout: `-m` would import its reprospec for either side
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    found = json.loads(done.stdout)
    attempts = [
        attempt
        for path in (out / "runs").glob("*/results.json")
        for cell in json.loads(path.read_text())["cells"]
        for attempt in cell["attempts"]
    ]
    perturbed = [a for a in attempts if a.get("perturbed")]
    own = sum(a["duration_s"] for a in perturbed) or float("nan")
    return {
        "wall": wall,
        "cpu": cpu,
        "launch": sorted({a["launch"] for a in perturbed}),
        "per_s": len(perturbed) / own,
        "sentence": found["sentence"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the other checkout's interpreter")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--budget", type=int, default=40)
    args = parser.parse_args()
    sides = {"after": sys.executable, "before": args.before}
    work = Path(tempfile.mkdtemp(prefix="amplify-preload-"))
    for name in ("torch-intermittent.yaml", "torch_loop.py"):
        shutil.copy(DATA / name, work / name)
    seen: dict[str, list[dict[str, object]]] = {side: [] for side in sides}
    try:
        for round_ in range(args.rounds):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for side in order:
                got = amplify(sides[side], work, work / f"{side}-{round_}", args.budget)
                seen[side].append(got)
                print(
                    f"{side}: wall {got['wall']:.1f} s, CPU {got['cpu']:.1f} s, perturbed arm "
                    f"{got['launch']} {got['per_s']:.2f} attempts/s; {got['sentence']}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for side, runs in seen.items():
        wall = statistics.median(float(str(r["wall"])) for r in runs)
        cpu = statistics.median(float(str(r["cpu"])) for r in runs)
        rate = statistics.median(float(str(r["per_s"])) for r in runs)
        print(f"median {side}: wall {wall:.1f} s, CPU {cpu:.1f} s, perturbed {rate:.2f} attempts/s")


if __name__ == "__main__":
    main()
