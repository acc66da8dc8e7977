"""A small torch repro for benchmarks/preload.py: a few steps of a tiny model (with
--optimizer, trained with SGD), and a real SIGSEGV at validation step 2 in about 30% of
attempts (seeded by --seed).

Progress goes to $REPROSPEC_EVENTS as in specs/fixtures/train_loop.py.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import time

import torch


def emit(**event: object) -> None:
    path = os.environ.get("REPROSPEC_EVENTS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps({"t": time.time(), **event}) + "\n").encode())
        finally:
            os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--crash-probability", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--optimizer",
        action="store_true",
        help="train with SGD (its first step imports torch._dynamo and sympy: preload them too)",
    )
    args = parser.parse_args()
    crash = random.Random(args.seed).random() < args.crash_probability
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1) if args.optimizer else None
    data = torch.randn(8, 16)
    target = torch.randint(0, 4, (8,))
    for phase in ("train", "validation"):
        emit(event="phase", phase=phase)
        for step in range(1, args.steps + 1):
            emit(event="step", phase=phase, step=step)
            if phase == "validation" and step == 2 and crash:
                ctypes.string_at(0)  # a real SIGSEGV
            loss = torch.nn.functional.cross_entropy(model(data), target)
            if phase == "train" and optimizer is not None:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    print(f"done, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
