"""Preloaded fork server vs fresh interpreters on a torch repro (issue 15, part 1).

    python benchmarks/preload.py [--repeat 50] [--rounds 3] [--native]

`benchmarks/data/torch-intermittent.yaml` is specs/intermittent.yaml with torch: a
small loop of torch.nn steps that dies of a real SIGSEGV at validation step 2 in about
30% of attempts, seeded by the attempt number. It runs `--repeat` attempts with
`--preload none` (every attempt imports torch) and with `--preload torch`. With
`--optimizer` the loop trains with SGD, whose first step imports torch._dynamo and sympy:
then `--preload torch,torch._dynamo` (preloading only torch would leave that import in
every attempt, and the attempts would say so). The two runs alternate, --rounds times;
figures are medians.

Printed: attempts per minute over the whole `reprospec run` (start-up, the server's
one import and the report included; the environment cache is warm, as for the other
`-j` figures) and over the attempts alone, their ratio, and
whether both runs gave the same verdict, rate and Wilson interval (the crashes are
seeded: they must). gdb is hidden by default: reading a torch process's core takes
seconds per crash, the same with or without preload (`--native` keeps it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "benchmarks" / "data" / "torch-intermittent.yaml"
PRELOAD = "torch"
PRELOAD_OPTIMIZER = "torch,torch._dynamo"


COMMAND = "python torch_loop.py --steps 3 --crash-probability 0.3 --seed ${{ attempt }}"


def run(
    mode: str, repeat: int, out: Path, native: bool, empty: Path, optimizer: bool = False
) -> dict[str, Any]:
    """One `reprospec run`; its wall time, the attempts' window and what it decided."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NO_COLOR="1", PYTHONPATH=str(ROOT))
    if not native:
        env["PATH"] = str(empty)  # no gdb (and nothing else: the runner finds python itself)
    preload = (PRELOAD_OPTIMIZER if optimizer else PRELOAD) if mode == "forked" else "none"
    argv = [sys.executable, "-m", "reprospec", "run", str(SPEC), "--repeat", str(repeat)]
    argv += ["--preload", preload, "--out", str(out), "--format", "json"]
    if optimizer:
        argv += ["--set", f"command={COMMAND} --optimizer"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The engine, its fork servers and every attempt (all reaped within the run).
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{mode} run failed ({done.returncode}): {done.stderr[-3000:]}")
    result = json.loads(done.stdout[done.stdout.index("{") :])
    (cell,) = result["cells"]
    attempts = cell["attempts"]
    first = min(datetime.fromisoformat(a["started"]) for a in attempts)
    last = max(datetime.fromisoformat(a["finished"]) for a in attempts)
    return {
        "wall": wall,
        "cpu": cpu,
        "window": (last - first).total_seconds(),
        "attempts": len(attempts),
        "launch": sorted({a.get("launch", "fresh") for a in attempts}),
        "verdict": cell["verdict"],
        "rate": cell["rate"],
        "outcomes": [
            (a["attempt"], (a.get("outcome") or {}).get("kind"), a["matched"]) for a in attempts
        ],
        "warnings": sorted({w for a in attempts for w in a["warnings"]}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--native", action="store_true", help="keep gdb (native crash stacks)")
    parser.add_argument(
        "--optimizer",
        action="store_true",
        help="train with SGD, preloading torch,torch._dynamo (more work per attempt)",
    )
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"fresh": [], "forked": []}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        empty = tmp / "empty-path"
        empty.mkdir()
        out = tmp / "out"
        # As the other -j figures: a warm environment cache (the capture's one `import
        # torch` per interpreter, cached in OUT/cache, is not what is compared here).
        run("forked", 1, out, args.native, empty, args.optimizer)
        for r in range(args.rounds):
            for mode in ("fresh", "forked") if r % 2 == 0 else ("forked", "fresh"):
                seen = run(mode, args.repeat, out, args.native, empty, args.optimizer)
                runs[mode].append(seen)
                rate = seen["rate"]
                print(
                    f"round {r + 1} {mode:6}: {seen['wall']:7.1f} s, "
                    f"attempts {seen['window']:7.1f} s, {seen['verdict']}, "
                    f"rate {rate['matched']}/{rate['attempts']} "
                    f"[{rate['low']:.3f}, {rate['high']:.3f}], launch {seen['launch']}",
                    flush=True,
                )
    print(
        f"\n{args.repeat} attempts per run, {args.rounds} rounds (medians); "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    per_minute = {}
    cpu = {}
    for mode, seen in runs.items():
        wall = statistics.median(s["wall"] for s in seen)
        window = statistics.median(s["window"] for s in seen)
        cpu[mode] = statistics.median(s["cpu"] for s in seen)
        per_minute[mode] = (args.repeat / wall * 60, args.repeat / window * 60)
        print(
            f"{mode:6}  whole run {wall:7.1f} s = {per_minute[mode][0]:7.1f} attempts/min;"
            f"  attempts alone {window:7.1f} s = {per_minute[mode][1]:7.1f} attempts/min;"
            f"  CPU {cpu[mode]:6.1f} s"
        )
    ratios = [f / s for f, s in zip(per_minute["forked"], per_minute["fresh"], strict=True)]
    print(
        f"forked / fresh: {ratios[0]:.1f}x (whole run), {ratios[1]:.1f}x (attempts alone), "
        f"{cpu['fresh'] / cpu['forked']:.1f}x less CPU"
    )
    same = all(
        (s["verdict"], s["rate"], s["outcomes"])
        == (runs["fresh"][0]["verdict"], runs["fresh"][0]["rate"], runs["fresh"][0]["outcomes"])
        for s in runs["fresh"] + runs["forked"]
    )
    print(f"same verdict, rate, interval and per-attempt outcomes in every run: {same}")
    for mode in ("forked", "fresh"):
        for warning in runs[mode][0]["warnings"]:
            print(f"  {mode} attempt warning: {warning}")


if __name__ == "__main__":
    main()
