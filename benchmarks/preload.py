"""Preloaded fork server vs fresh interpreters on a torch repro (issue 15, part 1).

    python benchmarks/preload.py [--repeat 50] [--rounds 3] [--native]
                                 [--before CHECKOUT] [--no-fresh]

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
seconds per crash, the same with or without preload (`--native` keeps it). CPU is the
whole tree's (engine, server, attempts), with the engine process's own beside it.
`--before DIR` adds forked runs of the code in DIR (e.g. `git archive main | tar -x -C
DIR`), alternating with the others: what a change did to the forked path, in one run.
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
sys.path.insert(0, str(ROOT))

from benchmarks.enginecpu import SELF_CPU  # noqa: E402  (after the path it needs)

SPEC = ROOT / "benchmarks" / "data" / "torch-intermittent.yaml"
PRELOAD = "torch"
PRELOAD_OPTIMIZER = "torch,torch._dynamo"


COMMAND = "python torch_loop.py --steps 3 --crash-probability 0.3 --seed ${{ attempt }}"


def run(
    mode: str,
    repeat: int,
    out: Path,
    native: bool,
    empty: Path,
    optimizer: bool = False,
    root: Path = ROOT,
) -> dict[str, Any]:
    """One `reprospec run` of the code in `root`; its wall time, CPU (the whole tree's and
    the engine process's own), the attempts' window and what it decided."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NO_COLOR="1", PYTHONPATH=str(root), ENGINE_CPU=str(out.parent / "engine-cpu"))
    if not native:
        env["PATH"] = str(empty)  # no gdb (and nothing else: the runner finds python itself)
    preload = (PRELOAD_OPTIMIZER if optimizer else PRELOAD) if mode != "fresh" else "none"
    spec = root / SPEC.relative_to(ROOT)
    argv = [sys.executable, "-c", SELF_CPU, "run", str(spec), "--repeat", str(repeat)]
    argv += ["--preload", preload, "--out", str(out), "--format", "json"]
    if optimizer:
        argv += ["--set", f"command={COMMAND} --optimizer"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The engine, its fork servers and every attempt (all reaped within the run).
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    engine = float(Path(env["ENGINE_CPU"]).read_text())
    if done.returncode not in (0, 1, 4):  # 4: undecided (a one-attempt warm-up may be)
        raise SystemExit(f"{mode} run failed ({done.returncode}): {done.stderr[-3000:]}")
    result = json.loads(done.stdout[done.stdout.index("{") :])
    (cell,) = result["cells"]
    attempts = cell["attempts"]
    first = min(datetime.fromisoformat(a["started"]) for a in attempts)
    last = max(datetime.fromisoformat(a["finished"]) for a in attempts)
    return {
        "wall": wall,
        "cpu": cpu,
        "engine": engine,
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
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout of the code before a change: its forked runs alternate with these",
    )
    parser.add_argument("--no-fresh", action="store_true", help="forked runs only")
    args = parser.parse_args()
    modes = [
        *(() if args.no_fresh else ("fresh",)),
        "forked",
        *(("before",) if args.before else ()),
    ]
    roots = {"fresh": ROOT, "forked": ROOT, "before": args.before or ROOT}
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        empty = tmp / "empty-path"
        empty.mkdir()
        outs = {mode: tmp / mode / "out" for mode in modes}
        for mode in modes:
            outs[mode].parent.mkdir()
            # As the other -j figures: a warm environment cache (the capture's one `import
            # torch` per interpreter, cached in OUT/cache, is not what is compared here).
            if mode != "fresh":
                run(mode, 1, outs[mode], args.native, empty, args.optimizer, roots[mode])
        if "fresh" in modes:
            outs["fresh"] = outs["forked"]  # one cache, warmed above
        for r in range(args.rounds):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                seen = run(
                    mode, args.repeat, outs[mode], args.native, empty, args.optimizer, roots[mode]
                )
                runs[mode].append(seen)
                rate = seen["rate"]
                print(
                    f"round {r + 1} {mode:6}: {seen['wall']:7.1f} s, "
                    f"attempts {seen['window']:7.1f} s, CPU {seen['cpu']:6.1f} s "
                    f"(engine {seen['engine']:5.2f} s), {seen['verdict']}, "
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
    for mode, got in runs.items():
        wall = statistics.median(s["wall"] for s in got)
        window = statistics.median(s["window"] for s in got)
        cpu[mode] = statistics.median(s["cpu"] for s in got)
        engine = statistics.median(s["engine"] for s in got)
        per_minute[mode] = (args.repeat / wall * 60, args.repeat / window * 60)
        print(
            f"{mode:6}  whole run {wall:7.1f} s = {per_minute[mode][0]:7.1f} attempts/min;"
            f"  attempts alone {window:7.1f} s = {per_minute[mode][1]:7.1f} attempts/min;"
            f"  CPU {cpu[mode]:6.1f} s (engine process {engine:5.2f} s)"
        )
    if "before" in runs:
        print(
            f"forked / forked before: {cpu['before'] / cpu['forked']:.2f}x less CPU, "
            f"{per_minute['forked'][0] / per_minute['before'][0]:.2f}x faster whole run"
        )
    if "fresh" not in runs:
        return
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
