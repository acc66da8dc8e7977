"""The same small training loop run by the harness and as a hand-written script: wall time ratio.

    python benchmarks/harness_vs_script.py [--repeat 3] [--workers 0]

Both run in a fresh interpreter (torch import included) on the same data, model
and steps; the harness adds its events, env capture, tagged sampler and
fault checks. Prints the median of each and the ratio.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "reprospec" / "harness"
STEPS, VAL_STEPS, BATCH, SIZE = 40, 10, 32, 512

SCRIPT = """
import sys, torch, torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

class Synthetic(Dataset):
    def __len__(self): return {size}
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(10, (), generator=g), torch.randn(3, 32, 32, generator=g)

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Synthetic(), batch_size={batch}, num_workers={workers})

def batches():
    while True:
        yield from loader

it = batches()
model.train()
for step in range({steps}):
    y, x = next(it)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
model.eval()
it = batches()
with torch.no_grad():
    for step in range({val_steps}):
        y, x = next(it)
        F.cross_entropy(model(x), y)
"""


def workload(workers: int) -> dict:
    return {
        "seed": 0,
        "model": {"builtin": "cnn", "params": {"channels": 16}},
        "data": {
            "dataset": {"builtin": "synthetic", "size": SIZE, "shape": [3, 32, 32], "classes": 10},
            "loader": {"batch_size": BATCH, "num_workers": workers},
        },
        "phases": [{"name": "train", "steps": STEPS}, {"name": "validation", "steps": VAL_STEPS}],
    }


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s of the child and its workers): CPU time is steadier on a busy box."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        script = work / "plain.py"
        script.write_text(
            SCRIPT.format(
                size=SIZE, batch=BATCH, workers=args.workers, steps=STEPS, val_steps=VAL_STEPS
            )
        )
        cell = {
            "spec": "bench",
            "cell_id": "bench",
            "matrix": {},
            "attempt": 1,
            "workload": workload(args.workers),
            "environment": {},
        }
        (work / "cell.json").write_text(json.dumps(cell))
        (work / "stacks").mkdir()
        env = {
            **os.environ,
            "PYTHONPATH": str(HARNESS),
            "REPROSPEC_CELL": str(work / "cell.json"),
            "REPROSPEC_EVENTS": str(work / "events.jsonl"),
            "REPROSPEC_ENV_JSON": str(work / "env.json"),
            "REPROSPEC_STACK_DIR": str(work / "stacks"),
        }
        plain, harness = [], []
        for _ in range(args.repeat):  # interleaved, so machine noise hits both alike
            plain.append(timed([sys.executable, str(script)], dict(os.environ)))
            harness.append(timed([sys.executable, "-m", "reprospec_harness"], env))
        events = len((work / "events.jsonl").read_text().splitlines()) // args.repeat
    p, h = statistics.median(w for w, _ in plain), statistics.median(w for w, _ in harness)
    pc, hc = statistics.median(c for _, c in plain), statistics.median(c for _, c in harness)
    print(
        f"loop: cnn, {STEPS} train + {VAL_STEPS} validation steps, batch {BATCH}, "
        f"num_workers {args.workers}, {args.repeat} runs each (median, fresh interpreter)"
    )
    print(f"plain script  {p:6.2f} s wall  {pc:6.2f} s cpu")
    print(f"harness       {h:6.2f} s wall  {hc:6.2f} s cpu   ({events} events per run)")
    print(f"ratio         {h / p:6.2f}x wall  {hc / pc:5.2f}x cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
